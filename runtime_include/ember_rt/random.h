// Counter-based random numbers for generated kernels: Philox-4x32-10 (Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011), the generator of the Random123 library.
//
// A Philox draw is a pure function of a 128-bit counter and a 64-bit key, so every element
// of a tensor gets its own number without any state shared between threads, in any order,
// and a kernel computes the same number again wherever it is fused. ember's random
// operators draw for element `index` (its row-major linear index) with
//   key     = (seed low 32 bits, seed high 32 bits)
//   counter = (index low, index high, offset low, offset high)
// and keep the first of the four output words.
//
//   philox4x32_10(ctr, key)              the raw generator, four words in and out
//   philox_uniform(seed, offset, index)  a float in [0, 1): the word's top 24 bits / 2^24
//   philox_uniform_lanes<S>(seed, offset, base)
//                                        a vf whose lane i is
//                                        philox_uniform(seed, offset, base + S * i)
//
// The vector form computes the 32 x 32 -> 64-bit products with the even/odd-lane unsigned
// multiply (vpmuludq) of AVX2 or AVX-512 and agrees with the scalar form bit for bit.
#pragma once

#include <cstdint>

#include "isa.h"
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

namespace philox {
constexpr uint32_t kM0 = 0xD2511F53u;  // the round multipliers
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;  // the key schedule's increments (golden ratio, sqrt 3)
constexpr uint32_t kW1 = 0xBB67AE85u;
// A 2^-24 step: 24 random bits make every float of the grid k / 2^24 exactly.
constexpr float kUnit = 1.0f / 16777216.0f;
// The largest lane stride philox_uniform_lanes takes: lane offsets S * i stay below 2^32
// for every vector width, so the high counter word needs only a carry.
constexpr int64_t kMaxLaneStride = int64_t{1} << 27;
}  // namespace philox

// Ten rounds of Philox-4x32 on ctr[0..3] under key[0..1], in place.
EMBER_RT_LAZY
inline void philox4x32_10(uint32_t ctr[4], const uint32_t key[2]) {
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(philox::kM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(philox::kM1) * ctr[2];
    const uint32_t c1 = ctr[1], c3 = ctr[3];
    ctr[0] = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    ctr[1] = static_cast<uint32_t>(p1);
    ctr[2] = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    ctr[3] = static_cast<uint32_t>(p0);
    k0 += philox::kW0;
    k1 += philox::kW1;
  }
}

EMBER_RT_LAZY
inline float philox_uniform(int64_t seed, int64_t offset, int64_t index) {
  const auto s = static_cast<uint64_t>(seed), o = static_cast<uint64_t>(offset),
             i = static_cast<uint64_t>(index);
  uint32_t ctr[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32),
                     static_cast<uint32_t>(o), static_cast<uint32_t>(o >> 32)};
  const uint32_t key[2] = {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)};
  philox4x32_10(ctr, key);
  return static_cast<float>(ctr[0] >> 8) * philox::kUnit;
}

#if defined(EMBER_RT_AVX512)

namespace detail {
// Lanes a * m as (high, low) 32-bit halves: vpmuludq multiplies the even lanes; the odd
// lanes, shifted down, give the other half.
EMBER_RT_LAZY
inline void mulhilo32(__m512i a, __m512i m, __m512i& hi, __m512i& lo) {
  const __m512i even = _mm512_mul_epu32(a, m);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}
}  // namespace detail

template <int64_t S>
inline vf philox_uniform_lanes(int64_t seed, int64_t offset, int64_t base) {
  static_assert(S >= 0 && S <= philox::kMaxLaneStride, "lane stride out of range");
  const auto s = static_cast<uint64_t>(seed), o = static_cast<uint64_t>(offset),
             b = static_cast<uint64_t>(base);
  constexpr auto u = [](int64_t i) { return static_cast<int>(static_cast<uint32_t>(S * i)); };
  const __m512i step = _mm512_setr_epi32(u(0), u(1), u(2), u(3), u(4), u(5), u(6), u(7), u(8), u(9),
                                         u(10), u(11), u(12), u(13), u(14), u(15));
  const __m512i blo = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(b)));
  const __m512i bhi = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(b >> 32)));
  __m512i c0 = _mm512_add_epi32(blo, step);
  // The high word: the base's, plus one where the low word wrapped.
  __m512i c1 =
      _mm512_mask_add_epi32(bhi, _mm512_cmplt_epu32_mask(c0, blo), bhi, _mm512_set1_epi32(1));
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(o)));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(o >> 32)));
  uint32_t k0 = static_cast<uint32_t>(s), k1 = static_cast<uint32_t>(s >> 32);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(philox::kM0));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(philox::kM1));
  for (int round = 0; round < 10; ++round) {
    __m512i hi0, lo0, hi1, lo1;
    detail::mulhilo32(c0, m0, hi0, lo0);
    detail::mulhilo32(c2, m1, hi1, lo1);
    const __m512i x0 =
        _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
    const __m512i x2 =
        _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
    c0 = x0, c1 = lo1, c2 = x2, c3 = lo0;
    k0 += philox::kW0;
    k1 += philox::kW1;
  }
  const __m512 f = _mm512_cvtepi32_ps(_mm512_srli_epi32(c0, 8));  // < 2^24: exact
  return vf(_mm512_mul_ps(f, _mm512_set1_ps(philox::kUnit)));
}

#elif defined(EMBER_RT_AVX2)

namespace detail {
EMBER_RT_LAZY
inline void mulhilo32(__m256i a, __m256i m, __m256i& hi, __m256i& lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}
}  // namespace detail

template <int64_t S>
inline vf philox_uniform_lanes(int64_t seed, int64_t offset, int64_t base) {
  static_assert(S >= 0 && S <= philox::kMaxLaneStride, "lane stride out of range");
  const auto s = static_cast<uint64_t>(seed), o = static_cast<uint64_t>(offset),
             b = static_cast<uint64_t>(base);
  constexpr auto u = [](int64_t i) { return static_cast<int>(static_cast<uint32_t>(S * i)); };
  const __m256i step = _mm256_setr_epi32(u(0), u(1), u(2), u(3), u(4), u(5), u(6), u(7));
  const __m256i blo = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(b)));
  const __m256i bhi = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(b >> 32)));
  __m256i c0 = _mm256_add_epi32(blo, step);
  // The high word: the base's, plus one where the low word wrapped (c0 < blo unsigned:
  // max(c0, blo) != c0). no_wrap is -1 or 0, so bhi + 1 + no_wrap.
  const __m256i no_wrap = _mm256_cmpeq_epi32(_mm256_max_epu32(c0, blo), c0);
  __m256i c1 = _mm256_add_epi32(_mm256_add_epi32(bhi, _mm256_set1_epi32(1)), no_wrap);
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(o)));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(o >> 32)));
  uint32_t k0 = static_cast<uint32_t>(s), k1 = static_cast<uint32_t>(s >> 32);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(philox::kM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(philox::kM1));
  for (int round = 0; round < 10; ++round) {
    __m256i hi0, lo0, hi1, lo1;
    detail::mulhilo32(c0, m0, hi0, lo0);
    detail::mulhilo32(c2, m1, hi1, lo1);
    const __m256i x0 =
        _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    const __m256i x2 =
        _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = x0, c1 = lo1, c2 = x2, c3 = lo0;
    k0 += philox::kW0;
    k1 += philox::kW1;
  }
  const __m256 f = _mm256_cvtepi32_ps(_mm256_srli_epi32(c0, 8));  // < 2^24: exact
  return vf(_mm256_mul_ps(f, _mm256_set1_ps(philox::kUnit)));
}

#else

template <int64_t S>
inline vf philox_uniform_lanes(int64_t seed, int64_t offset, int64_t base) {
  static_assert(S >= 0 && S <= philox::kMaxLaneStride, "lane stride out of range");
  return vf(philox_uniform(seed, offset, base));
}

#endif

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
