#include "ember/jit/isa.h"

namespace ember {

std::vector<std::string> isa_flags(Isa isa) {
  std::vector<std::string> flags;
  for (const std::string& f : isa_features(isa)) flags.push_back("-m" + f);
  return flags;
}

}  // namespace ember
