#include "ember/support/cpu.h"

#include <atomic>
#include <cstdlib>

#include "ember/support/error.h"
#include "ember/support/log.h"

namespace ember {

Isa detect_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return Isa::Avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
  return Isa::Scalar;
}

bool cpu_has_avx512_bf16() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16");
}

bool cpu_supports(const std::string& f) {
  __builtin_cpu_init();
  // __builtin_cpu_supports takes string literals only.
  if (f == "avx2") return __builtin_cpu_supports("avx2");
  if (f == "fma") return __builtin_cpu_supports("fma");
  if (f == "f16c") return __builtin_cpu_supports("f16c");
  if (f == "avx512f") return __builtin_cpu_supports("avx512f");
  if (f == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (f == "avx512dq") return __builtin_cpu_supports("avx512dq");
  if (f == "avx512vl") return __builtin_cpu_supports("avx512vl");
  if (f == "avx512bf16") return __builtin_cpu_supports("avx512bf16");
  return false;
}

std::string isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  EMBER_ASSERT(false, "unknown Isa value " << static_cast<int>(isa));
  return "";
}

int isa_float_lanes(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return 1;
    case Isa::Avx2: return 8;
    case Isa::Avx512: return 16;
  }
  EMBER_ASSERT(false, "unknown Isa value " << static_cast<int>(isa));
  return 1;
}

Isa parse_isa(const std::string& name) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (name == isa_name(isa)) return isa;
  }
  EMBER_THROW("unknown instruction set '"
              << name << "'. Valid values are: scalar, avx2, avx512 (for EMBER_ISA, leave it "
              << "unset to use the best instruction set this CPU supports).");
}

Isa isa_from_env() {
  Isa best = detect_isa();
  const char* env = std::getenv("EMBER_ISA");
  if (env == nullptr || *env == '\0') return best;
  Isa wanted;
  try {
    wanted = parse_isa(env);
  } catch (const Error&) {
    EMBER_THROW("EMBER_ISA is set to '"
                << env << "', which is not an instruction set ember knows. Valid values are: "
                << "scalar, avx2, avx512; unset EMBER_ISA to use the best one this CPU supports.");
  }
  if (static_cast<int>(wanted) <= static_cast<int>(best)) return wanted;
  // Running code built for a wider ISA would crash with SIGILL, so lower the request and
  // say so once: the user asked for something else.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    log_warning("EMBER_ISA=" + std::string(env) + " but this CPU supports at most " +
                isa_name(best) + "; using " + isa_name(best));
  }
  return best;
}

std::vector<std::string> isa_features(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return {};
    case Isa::Avx2: return {"avx2", "fma", "f16c"};
    case Isa::Avx512: {
      std::vector<std::string> f = {"avx512f", "avx512bw", "avx512dq", "avx512vl",
                                    "fma",     "avx2",     "f16c"};
      if (cpu_has_avx512_bf16()) f.push_back("avx512bf16");
      return f;
    }
  }
  EMBER_ASSERT(false, "unknown Isa value " << static_cast<int>(isa));
  return {};
}

}  // namespace ember
