// The x86-64 instruction sets ember generates code for, what this CPU supports, and which
// one to use.
//
// Below every other folder because both the compiler (which -m flags generated code gets)
// and the runtime (whether a saved model's kernels can run on this CPU) ask it.
#pragma once

#include <string>
#include <vector>

namespace ember {

// Ordered from least to most capable.
enum class Isa { Scalar, Avx2, Avx512 };

// The best ISA this CPU supports: Avx512 needs AVX-512 F, BW, DQ and VL; Avx2 needs AVX2
// and FMA; anything else is Scalar.
Isa detect_isa();

// The ISA to generate code for: EMBER_ISA=scalar|avx2|avx512 when set (lowered to what
// the CPU supports, with a warning), else detect_isa(). An unknown EMBER_ISA value throws
// ember::Error listing the valid ones.
Isa isa_from_env();

// "scalar", "avx2" or "avx512".
std::string isa_name(Isa isa);

// The float32 lanes of the ISA's vectors (ember_rt's vf::width): 16, 8, 1. The channel block
// of the blocked layout the convolutions use.
int isa_float_lanes(Isa isa);

// Parses an ISA name as accepted by EMBER_ISA; throws ember::Error listing the valid
// names when `name` is not one of them.
Isa parse_isa(const std::string& name);

// Whether the CPU has AVX-512 BF16 (vdpbf16ps), which doubles bf16 dot-product throughput.
bool cpu_has_avx512_bf16();

// The CPU features code generated for `isa` on this CPU may use, by their compiler names
// ("avx2", "fma", "f16c", "avx512f", ...): Avx512 includes "avx512bf16" when the CPU has it.
// The compiler enables them (-m<feature>); a saved model records them, and the runtime
// checks them before it loads the model's machine code.
std::vector<std::string> isa_features(Isa isa);

// Whether this CPU has `feature` (a name isa_features returns); false for unknown names.
bool cpu_supports(const std::string& feature);

}  // namespace ember
