#include "gemm_config.h"

#include <sstream>

namespace ember::codegen {

std::string GemmConfig::str() const {
  std::ostringstream os;
  os << "mc=" << mc << " nc=" << nc << " kc=" << kc << " kernel=" << kernel
     << " split_k=" << split_k;
  return os.str();
}

std::string gemm_tuning_argument(const KernelConfig& config) {
  if (config.gemm_from_global) {
    const std::string g = kTuningGlobal;
    return ", ember_rt::GemmTuning{" + g + "[0], " + g + "[1], " + g + "[2], static_cast<int>(" +
           g + "[3]), static_cast<int>(" + g + "[4])}";
  }
  const GemmConfig& c = config.gemm;
  if (c.is_default()) return "";
  std::ostringstream os;
  os << ", ember_rt::GemmTuning{" << c.mc << ", " << c.nc << ", " << c.kc << ", " << c.kernel
     << ", " << c.split_k << "}";
  return os.str();
}

}  // namespace ember::codegen
