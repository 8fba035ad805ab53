// The x86-64 instruction sets ember generates code for, and how to pick one.
//
// The ISA decides which SIMD back end the code generator uses and which -m flags the
// generated C++ is compiled with. It is part of every kernel cache key.
#pragma once

#include <string>
#include <vector>

namespace ember {

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

// Parses an ISA name as accepted by EMBER_ISA; throws ember::Error listing the valid
// names when `name` is not one of them.
Isa parse_isa(const std::string& name);

// Whether the CPU has AVX-512 BF16 (vdpbf16ps), which doubles bf16 dot-product throughput.
bool cpu_has_avx512_bf16();

// Compiler flags that enable `isa`. Avx512 adds -mavx512bf16 when the CPU has it.
std::vector<std::string> isa_flags(Isa isa);

}  // namespace ember
