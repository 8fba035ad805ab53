// Tests for runtime_include/ember_rt/half.h: bf16 / f16 storage types and their conversions,
// checked against references computed from the definitions of the formats.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "ember_rt/half.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

using ember_rt::bf16;
using ember_rt::f16;

namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_of(uint32_t u) { return std::bit_cast<float>(u); }

// Value of a bf16 pattern, from the definition (1 sign, 8 exponent, 7 mantissa bits).
double bf16_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 7) & 0xff, m = h & 0x7f;
  double v;
  if (e == 0xff) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(m, -133);  // m * 2^-126 * 2^-7
  else v = std::ldexp(128 + m, e - 134);     // (1 + m/128) * 2^(e-127)
  return s ? -v : v;
}

// Value of a binary16 pattern, from the definition (1 sign, 5 exponent, 10 mantissa bits).
double f16_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0x1f) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(m, -24);
  else v = std::ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

// Round x to a format with `mant_bits` fraction bits, minimum normal exponent `emin` and
// largest finite `maxval` by the definition: nearest representable, ties to the even
// mantissa, overflow to infinity when |x| >= maxval + half an ulp. Returns the value.
double round_by_definition(double x, int mant_bits, int emin, double maxval) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  const double a = std::fabs(x);
  int e = std::ilogb(a);
  if (e < emin) e = emin;
  const double ulp = std::ldexp(1.0, e - mant_bits);
  const double k = a / ulp;  // exact: a is a float, ulp a power of two
  double r = std::floor(k);
  const double frac = k - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0)) r += 1;
  double v = r * ulp;
  const double top_ulp = std::ldexp(1.0, std::ilogb(maxval) - mant_bits);
  if (a >= maxval + top_ulp / 2) v = INFINITY;
  return std::copysign(v, x);
}

// A sample of float bit patterns: a stride through all 2^32 plus neighbourhoods of ties.
std::vector<uint32_t> float_samples() {
  std::vector<uint32_t> v;
  for (uint64_t u = 0; u < (1ull << 32); u += 65521) v.push_back(static_cast<uint32_t>(u));
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    v.push_back(u);
    v.push_back((u & 0xffff0000u) | 0x8000u);  // bf16 tie
    v.push_back((u & 0xffffe000u) | 0x1000u);  // f16 tie (normal range)
    v.push_back((u & 0xffffe000u) | 0x1001u);
    v.push_back((u & 0xffffe000u) | 0x0fffu);
  }
  for (uint32_t e = 100; e < 115; ++e)  // f16 subnormal range and its ties
    for (uint32_t m = 0; m < (1u << 23); m += 4093) v.push_back((e << 23) | m);
  return v;
}

}  // namespace

TEST(RtHalf, LayoutAliasesTorchStorage) {
  static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2);
  static_assert(std::is_trivially_copyable_v<bf16> && std::is_trivially_copyable_v<f16>);
  static_assert(std::is_standard_layout_v<bf16> && std::is_standard_layout_v<f16>);
  bf16 arr[3];
  const uint16_t raw[3] = {0x3f80, 0xc000, 0x7f80};
  std::memcpy(arr, raw, sizeof raw);
  EXPECT_EQ(float(arr[0]), 1.0f);
  EXPECT_EQ(float(arr[1]), -2.0f);
  EXPECT_TRUE(std::isinf(float(arr[2])));
}

TEST(RtHalf, Bf16ToFloatAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = ember_rt::to_float(bf16::from_bits(static_cast<uint16_t>(h)));
    const double ref = bf16_value(static_cast<uint16_t>(h));
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(f)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), ref) << h;
      EXPECT_EQ(std::signbit(f), std::signbit(ref)) << h;
    }
  }
}

TEST(RtHalf, F16ToFloatAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const f16 x = f16::from_bits(static_cast<uint16_t>(h));
    const float f = ember_rt::to_float(x);
    const double ref = f16_value(static_cast<uint16_t>(h));
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(f)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(f), ref) << h;
      EXPECT_EQ(std::signbit(f), std::signbit(ref)) << h;
    }
    EXPECT_EQ(bits_of(float(x)), bits_of(f));
  }
}

TEST(RtHalf, Bf16RoundsToNearestEven) {
  const double bf16_max = bf16_value(0x7f7f);
  for (uint32_t u : float_samples()) {
    const float x = float_of(u);
    const bf16 h = ember_rt::to_bf16(x);
    EXPECT_EQ(bf16(x).bits, h.bits);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(ember_rt::to_float(h))) << std::hex << u;
      EXPECT_EQ(h.bits & 0x8000u, (u >> 16) & 0x8000u);
      continue;
    }
    const double ref = round_by_definition(x, 7, -126, bf16_max);
    ASSERT_EQ(bf16_value(h.bits), ref) << std::hex << u << " -> " << h.bits;
    EXPECT_EQ(std::signbit(bf16_value(h.bits)), std::signbit(x)) << std::hex << u;
  }
}

TEST(RtHalf, F16RoundsToNearestEven) {
  for (uint32_t u : float_samples()) {
    const float x = float_of(u);
    const f16 h = ember_rt::to_f16(x);
    EXPECT_EQ(f16(x).bits, h.bits);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(ember_rt::to_float(h))) << std::hex << u;
      continue;
    }
    const double ref = round_by_definition(x, 10, -14, 65504.0);
    ASSERT_EQ(f16_value(h.bits), ref) << std::hex << u << " -> " << h.bits;
    EXPECT_EQ(std::signbit(f16_value(h.bits)), std::signbit(x)) << std::hex << u;
  }
}

#if defined(__F16C__)
TEST(RtHalf, F16MatchesHardwareConversion) {
  for (uint32_t u : float_samples()) {
    const float x = float_of(u);
    const uint16_t hw = static_cast<uint16_t>(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
    EXPECT_EQ(ember_rt::to_f16(x).bits, hw) << std::hex << u;
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    const float hw = _cvtsh_ss(static_cast<unsigned short>(h));
    EXPECT_EQ(bits_of(ember_rt::to_float(f16::from_bits(static_cast<uint16_t>(h)))), bits_of(hw))
        << std::hex << h;
  }
}
#endif

TEST(RtHalf, KnownBitPatterns) {
  using ember_rt::to_bf16;
  using ember_rt::to_f16;
  EXPECT_EQ(to_bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_bf16(-2.0f).bits, 0xc000);
  EXPECT_EQ(to_bf16(float_of(0x3f808000u)).bits, 0x3f80);  // tie, even below
  EXPECT_EQ(to_bf16(float_of(0x3f818000u)).bits, 0x3f82);  // tie, even above
  EXPECT_EQ(to_bf16(float_of(0x3f808001u)).bits, 0x3f81);
  EXPECT_EQ(to_bf16(float_of(0x7f7fffffu)).bits, 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(to_bf16(INFINITY).bits, 0x7f80);
  EXPECT_EQ(to_bf16(-0.0f).bits, 0x8000);
  EXPECT_EQ(to_bf16(float_of(0x00000001u)).bits, 0x0000);  // smallest subnormal
  EXPECT_EQ(to_bf16(float_of(0x00018000u)).bits, 0x0002);  // subnormal tie
  EXPECT_EQ(to_bf16(float_of(0x7f800001u)).bits, 0x7fc0);  // signaling NaN made quiet
  EXPECT_EQ(to_bf16(float_of(0xffc00000u)).bits, 0xffc0);

  EXPECT_EQ(to_f16(1.0f).bits, 0x3c00);
  EXPECT_EQ(to_f16(-2.0f).bits, 0xc000);
  EXPECT_EQ(to_f16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(to_f16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(to_f16(65520.0f).bits, 0x7c00);  // halfway to 2^16: ties to even = inf
  EXPECT_EQ(to_f16(1e9f).bits, 0x7c00);
  EXPECT_EQ(to_f16(-INFINITY).bits, 0xfc00);
  EXPECT_EQ(to_f16(0x1p-14f).bits, 0x0400);           // smallest normal
  EXPECT_EQ(to_f16(0x1p-24f).bits, 0x0001);           // smallest subnormal
  EXPECT_EQ(to_f16(0x1p-25f).bits, 0x0000);           // tie to even: zero
  EXPECT_EQ(to_f16(0x1.000002p-25f).bits, 0x0001);    // just above the tie
  EXPECT_EQ(to_f16(0x3p-25f).bits, 0x0002);           // 1.5 units: tie to even 2
  EXPECT_EQ(to_f16(0x1.ffcp-15f).bits, 0x0400);       // 1023.5 units: up into the normals
  EXPECT_EQ(to_f16(1.0f / 3.0f).bits, 0x3555);
  EXPECT_EQ(to_f16(-0.0f).bits, 0x8000);
  EXPECT_EQ(to_f16(float_of(0x00000001u)).bits, 0x0000);
  EXPECT_EQ(to_f16(float_of(0x7f800001u)).bits & 0x7e00u, 0x7e00u);  // quiet NaN
  EXPECT_EQ(to_float(f16::from_bits(0x0001)), 0x1p-24f);
  EXPECT_EQ(to_float(f16::from_bits(0x7bff)), 65504.0f);
  EXPECT_TRUE(std::isnan(to_float(f16::from_bits(0x7c01))));
}

TEST(RtHalf, ScalarGeneratedCodeSyntax) {
  // The forms the code generator writes in scalar code.
  bf16 pb[4];
  f16 ph[4];
  const float src[4] = {1.5f, -3.25f, 1e-3f, 100000.0f};
  for (int i = 0; i < 4; ++i) {
    pb[i] = bf16(src[i]);
    ph[i] = f16(src[i] * 2.0f);
  }
  EXPECT_EQ(float(pb[0]), 1.5f);
  EXPECT_EQ(float(pb[1]) + 1.0f, -2.25f);
  EXPECT_EQ(float(ph[0]), 3.0f);
  EXPECT_TRUE(std::isinf(float(ph[3])));
  float acc = 0;
  for (int i = 0; i < 2; ++i) acc += pb[i] * ph[i];  // implicit widening
  EXPECT_EQ(acc, 1.5f * 3.0f + (-3.25f) * (-6.5f));
  bf16 q = 2.0f;  // implicit narrowing, like torch's c10::BFloat16
  EXPECT_EQ(q.bits, 0x4000);
}
