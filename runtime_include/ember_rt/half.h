// 16-bit floating-point storage types: bfloat16 and IEEE binary16.
//
// Both are storage-only: arithmetic happens in float. They are exactly two bytes and
// trivially copyable, so a bf16* / f16* can point straight into torch's bfloat16 / float16
// tensor memory. Conversions from float round to nearest, ties to even; NaN stays NaN
// (made quiet), binary16 overflows to infinity and produces subnormals exactly.
//
//   float to_float(bf16), to_float(f16)   widening (exact)
//   bf16 to_bf16(float), f16 to_f16(float) narrowing (round to nearest even)
//   bf16(x), f16(x), float(h)              the same through constructors / conversion operators
//   bf16::from_bits(b), f16::from_bits(b)  a value from its bit pattern
//
// Note: `bf16{0x3f80}` converts the NUMBER 16256 to bf16; use from_bits for bit patterns.
#pragma once

#include <bit>
#include <cstdint>

#include "isa.h"
#include "lazy.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

namespace detail {

EMBER_RT_LAZY
inline uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }
EMBER_RT_LAZY
inline float bits_float(uint32_t u) { return std::bit_cast<float>(u); }

// bfloat16 is the top half of a float: widening is a shift.
EMBER_RT_LAZY
inline float bf16_bits_to_float(uint16_t h) { return bits_float(uint32_t{h} << 16); }

EMBER_RT_LAZY
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN: keep sign and payload top, set the quiet bit
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Round to nearest even on the 16 dropped bits: add 0x7fff plus the lowest kept bit.
  // A carry out of the mantissa bumps the exponent, which is the right result (up to inf).
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
EMBER_RT_LAZY
inline float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f)  // inf, or NaN made quiet (as the hardware conversion does)
    return bits_float(sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0u));
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact in float
    const float mag = static_cast<float>(man) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  // Normal: rebias the exponent from 15 to 127.
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

EMBER_RT_LAZY
inline uint16_t float_to_f16_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) {  // inf or NaN (NaN keeps its top payload bits, made quiet)
    if (a == 0x7f800000u) return sign | 0x7c00u;
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  const int e = static_cast<int>(a >> 23);      // biased float exponent
  if (e >= 143) return sign | 0x7c00u;          // >= 2^16: overflow to inf
  uint32_t mant = (a & 0x7fffffu) | 0x800000u;  // 24-bit significand with the hidden bit
  if (e < 113) {
    // Result is a binary16 subnormal (unit 2^-24) or zero: value = mant * 2^(e-150),
    // so the subnormal count is mant >> (126 - e), rounded to nearest even.
    if (e < 102) return sign;   // below 2^-25: rounds to zero (2^-25 itself ties to 0)
    const int shift = 126 - e;  // 14 .. 24
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal: right
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: keep 10 mantissa bits, round the 13 dropped ones; a carry may reach inf: right.
  uint32_t h = (static_cast<uint32_t>(e - 112) << 10) | ((mant >> 13) & 0x3ffu);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

}  // namespace detail

struct bf16 {
  uint16_t bits;
  bf16() = default;  // uninitialized, like float
  bf16(float f) : bits(detail::float_to_bf16_bits(f)) {}
  operator float() const { return detail::bf16_bits_to_float(bits); }
  static bf16 from_bits(uint16_t b) {
    bf16 r;
    r.bits = b;
    return r;
  }
};

struct f16 {
  uint16_t bits;
  f16() = default;
  f16(float f) : bits(detail::float_to_f16_bits(f)) {}
  operator float() const { return detail::f16_bits_to_float(bits); }
  static f16 from_bits(uint16_t b) {
    f16 r;
    r.bits = b;
    return r;
  }
};

static_assert(sizeof(bf16) == 2 && alignof(bf16) == 2, "bf16 must alias torch.bfloat16 storage");
static_assert(sizeof(f16) == 2 && alignof(f16) == 2, "f16 must alias torch.float16 storage");

EMBER_RT_LAZY
inline float to_float(bf16 h) { return detail::bf16_bits_to_float(h.bits); }
EMBER_RT_LAZY
inline float to_float(f16 h) { return detail::f16_bits_to_float(h.bits); }
EMBER_RT_LAZY
inline bf16 to_bf16(float f) { return bf16::from_bits(detail::float_to_bf16_bits(f)); }
EMBER_RT_LAZY
inline f16 to_f16(float f) { return f16::from_bits(detail::float_to_f16_bits(f)); }

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
