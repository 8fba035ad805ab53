// SIMD vector of float32 for generated kernels.
//
// `vf` holds vf::width floats (16 with AVX-512, 8 with AVX2, 1 in the portable fallback;
// see isa.h). Every operation below is overloaded for both `float` and `vf` with the same
// name, so the code generator emits the same text for a scalar tail and a vector body.
//
// Construction and memory
//   vf(), vf(float) / vf::broadcast(x)      zero / every lane x (implicit from float)
//   vf::load(p), v.store(p)                 width unaligned floats
//   vf::load_partial(p, n), v.store_partial(p, n)
//                                           first n lanes (0 <= n <= width), other lanes 0;
//                                           never touches memory past p[n-1]
//   load_bf16 / load_partial_bf16 / store_bf16 / store_partial_bf16, and the same for f16
// Arithmetic: + - * / (vf or float on either side), unary -, += -= *= /=
// Elementwise functions (float and vf): max min abs sqrt rsqrt fma floor ceil round neg
//   reciprocal relu, and in math.h: exp log erf tanh sigmoid gelu_erf gelu_tanh silu pow
//   max/min return NaN when either input is NaN (like torch.maximum); round is half-to-even.
// Comparisons: lt le gt ge eq ne -> bool for float, vm for vf (ordered; ne is true on NaN)
//   select(mask, a, b), logical_and / logical_or / logical_xor / logical_not on bool and vm
// Horizontal: reduce_add, reduce_max, reduce_min (vf -> float; a float passes through);
//   reduce_max / reduce_min return NaN if any lane is NaN.
//
// Call these qualified (ember_rt::exp(x)) or from code inside namespace ember_rt: after
// `using namespace ember_rt`, an unqualified exp(x) on a float can be ambiguous with the
// overloads that <math.h> / <stdlib.h> put in the global namespace.
// Bitwise agreement of scalar and vector results also needs the same floating-point
// contraction in both: every multiply-add in these headers is an explicit fma, and generated
// kernels are compiled with -ffp-contract=off (g++ would otherwise fuse a * b + c, possibly
// differently in a vector body and its scalar tail).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "half.h"
#include "isa.h"
#include "lazy.h"

#if defined(EMBER_RT_AVX512)
#include "vec_avx512.h"
#elif defined(EMBER_RT_AVX2)
#include "vec_avx2.h"
#else
#include "vec_scalar.h"
#endif

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

// ---- float versions of the elementwise API ------------------------------------------------

EMBER_RT_LAZY
inline float max(float a, float b) { return a != a ? a : (a > b ? a : b); }
EMBER_RT_LAZY
inline float min(float a, float b) { return a != a ? a : (a < b ? a : b); }
// max and min with a bound c that is not NaN (the code generator emits them for a constant
// bound: clamp, relu6, hardtanh): a when a is NaN or equal to c, as torch.clamp. The vf
// versions below are one instruction.
EMBER_RT_LAZY
inline float max_c(float a, float c) { return c > a ? c : a; }
EMBER_RT_LAZY
inline float min_c(float a, float c) { return c < a ? c : a; }
EMBER_RT_LAZY
inline float abs(float a) { return std::fabs(a); }
EMBER_RT_LAZY
inline float sqrt(float a) { return std::sqrt(a); }
EMBER_RT_LAZY
inline float rsqrt(float a) { return 1.0f / std::sqrt(a); }
EMBER_RT_LAZY
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
EMBER_RT_LAZY
inline float floor(float a) { return std::floor(a); }
EMBER_RT_LAZY
inline float ceil(float a) { return std::ceil(a); }
EMBER_RT_LAZY
inline float round(float a) { return std::nearbyint(a); }  // default mode: half to even
EMBER_RT_LAZY
inline float neg(float a) { return -a; }
EMBER_RT_LAZY
inline float reciprocal(float a) { return 1.0f / a; }
// 0 > a ? 0 : a, the same expression as the vector version: NaN and -0 pass through.
EMBER_RT_LAZY
inline float relu(float a) { return 0.0f > a ? 0.0f : a; }

EMBER_RT_LAZY
inline bool lt(float a, float b) { return a < b; }
EMBER_RT_LAZY
inline bool le(float a, float b) { return a <= b; }
EMBER_RT_LAZY
inline bool gt(float a, float b) { return a > b; }
EMBER_RT_LAZY
inline bool ge(float a, float b) { return a >= b; }
EMBER_RT_LAZY
inline bool eq(float a, float b) { return a == b; }
EMBER_RT_LAZY
inline bool ne(float a, float b) { return a != b; }
EMBER_RT_LAZY
inline float select(bool m, float a, float b) { return m ? a : b; }
EMBER_RT_LAZY
inline bool logical_and(bool a, bool b) { return a && b; }
EMBER_RT_LAZY
inline bool logical_or(bool a, bool b) { return a || b; }
EMBER_RT_LAZY
inline bool logical_xor(bool a, bool b) { return a != b; }
EMBER_RT_LAZY
inline bool logical_not(bool a) { return !a; }

EMBER_RT_LAZY
inline float reduce_add(float a) { return a; }
EMBER_RT_LAZY
inline float reduce_max(float a) { return a; }
EMBER_RT_LAZY
inline float reduce_min(float a) { return a; }

// ---- vf versions built on the ISA layer ----------------------------------------------------

EMBER_RT_LAZY
inline vf max(vf a, vf b) { return select(detail::isnan(a), a, detail::max_raw(a, b)); }
EMBER_RT_LAZY
inline vf min(vf a, vf b) { return select(detail::isnan(a), a, detail::min_raw(a, b)); }
EMBER_RT_LAZY
inline vf rsqrt(vf a) { return vf(1.0f) / sqrt(a); }
EMBER_RT_LAZY
inline vf neg(vf a) { return -a; }
EMBER_RT_LAZY
inline vf reciprocal(vf a) { return vf(1.0f) / a; }
// x86 max returns its second operand when they compare equal or unordered: 0 > a ? 0 : a.
EMBER_RT_LAZY
inline vf relu(vf a) { return detail::max_raw(vf(0.0f), a); }
// The same for any bound c that is not NaN: c > a ? c : a and c < a ? c : a.
EMBER_RT_LAZY
inline vf max_c(vf a, vf c) { return detail::max_raw(c, a); }
EMBER_RT_LAZY
inline vf min_c(vf a, vf c) { return detail::min_raw(c, a); }

EMBER_RT_LAZY
inline float reduce_add(vf a) { return detail::hsum(a); }
EMBER_RT_LAZY
inline float reduce_max(vf a) {
  return detail::any(detail::isnan(a)) ? std::numeric_limits<float>::quiet_NaN()
                                       : detail::hmax_raw(a);
}
EMBER_RT_LAZY
inline float reduce_min(vf a) {
  return detail::any(detail::isnan(a)) ? std::numeric_limits<float>::quiet_NaN()
                                       : detail::hmin_raw(a);
}

// ---- helpers shared by the math functions (float and vf) -----------------------------------

namespace detail {

EMBER_RT_LAZY
inline bool isnan(float a) { return a != a; }
// x86 semantics: a > b ? a : b, so the second operand when either is NaN.
EMBER_RT_LAZY
inline float max_raw(float a, float b) { return a > b ? a : b; }
EMBER_RT_LAZY
inline float min_raw(float a, float b) { return a < b ? a : b; }

// Multiply-add used inside polynomials: fused when the hardware has FMA (so vector and scalar
// code round identically), a plain a*b+c otherwise (std::fma is a slow library call there).
EMBER_RT_LAZY
inline float madd(float a, float b, float c) {
#if defined(EMBER_RT_HAS_FMA)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}
EMBER_RT_LAZY
inline vf madd(vf a, vf b, vf c) {
#if defined(EMBER_RT_SCALAR)
  return vf(madd(a.v, b.v, c.v));
#else
  return fma(a, b, c);
#endif
}

// 2^n for integral n in [-126, 127], given as float.
EMBER_RT_LAZY
inline float exp2i(float n) {
  return bits_float(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
}
// For positive normal finite x: returns m in [1, 2) and sets e so that x = m * 2^e.
EMBER_RT_LAZY
inline float split_exponent(float x, float& e) {
  const uint32_t u = float_bits(x);
  e = static_cast<float>(static_cast<int32_t>(u >> 23) - 127);
  return bits_float((u & 0x007fffffu) | 0x3f800000u);
}

}  // namespace detail

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
