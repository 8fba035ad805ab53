// The compiler flags of an instruction set (the ISA itself, its detection and EMBER_ISA are
// in ember/support/cpu.h). The ISA decides which SIMD back end the code generator uses and
// which -m flags the generated C++ is compiled with. It is part of every kernel cache key.
#pragma once

#include <string>
#include <vector>

#include "ember/support/cpu.h"

namespace ember {

// Compiler flags that enable `isa`: -m<feature> for each of isa_features(isa).
std::vector<std::string> isa_flags(Isa isa);

}  // namespace ember
