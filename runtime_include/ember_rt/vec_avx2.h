// AVX2 + FMA implementation of vf / vm (8 float lanes, all-ones/all-zeros lane masks).
// Included by vec.h only. fp16 uses F16C when the flags enable it (-mf16c), else software.
#pragma once

#include "half.h"
#include "isa.h"
#include "lazy.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

// Lane mask produced by comparisons on vf: each lane all ones (true) or all zeros (false).
// In memory a lane is a bool: one byte, 0 or 1 (any nonzero byte loads as true).
struct vm {
  __m256 m;

  static vm broadcast(bool b) { return vm{_mm256_castsi256_ps(_mm256_set1_epi32(b ? -1 : 0))}; }
  static vm load(const bool* p) {
    return from_bytes(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static vm load_partial(const bool* p, int n) {
    uint64_t bytes = 0;
    std::memcpy(&bytes, p, static_cast<size_t>(n <= 0 ? 0 : n < 8 ? n : 8));
    return from_bytes(_mm_cvtsi64_si128(static_cast<long long>(bytes)));
  }
  void store(bool* p) const { _mm_storel_epi64(reinterpret_cast<__m128i*>(p), to_bytes()); }
  void store_partial(bool* p, int n) const {
    const uint64_t bytes = static_cast<uint64_t>(_mm_cvtsi128_si64(to_bytes()));
    std::memcpy(p, &bytes, static_cast<size_t>(n <= 0 ? 0 : n < 8 ? n : 8));
  }
  // 8 bytes (the low half of b) -> lanes: true where the byte is not 0.
  static vm from_bytes(__m128i b) {
    const __m256i w = _mm256_cvtepu8_epi32(b);
    return vm{_mm256_castsi256_ps(_mm256_cmpgt_epi32(w, _mm256_setzero_si256()))};
  }
  // lanes -> 8 bytes of 0 or 1 (the low half of the result).
  __m128i to_bytes() const {
    const __m256i one = _mm256_srli_epi32(_mm256_castps_si256(m), 31);
    const __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(one), _mm256_extracti128_si256(one, 1));
    return _mm_packs_epi16(words, words);
  }
};

namespace detail {
// Integer lane mask of the first n lanes, for maskload / maskstore.
EMBER_RT_LAZY
inline __m256i tail_mask8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
EMBER_RT_LAZY
inline __m256 bf16x8_to_ps(__m128i h) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
// floats -> 8 bf16, round to nearest even, NaN made quiet (same rule as float_to_bf16_bits).
EMBER_RT_LAZY
inline __m128i ps_to_bf16x8(__m256 x) {
  const __m256i u = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  const __m256i quiet_nan = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256i r = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet_nan), nan));
  const __m256i hi = _mm256_srli_epi32(r, 16);         // 0 .. 0xffff, so the unsigned pack is exact
  const __m256i packed = _mm256_packus_epi32(hi, hi);  // per 128-bit half: [a0..a3 a0..a3]
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));  // [a0..a3 a4..a7]
}
EMBER_RT_LAZY
inline __m128i load_u16x8_partial(const uint16_t* p, int n) {
  uint16_t tmp[8] = {};
  std::memcpy(tmp, p, sizeof(uint16_t) * static_cast<unsigned>(n < 8 ? n : 8));
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(tmp));
}
EMBER_RT_LAZY
inline void store_u16x8_partial(uint16_t* p, __m128i h, int n) {
  uint16_t tmp[8];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(tmp), h);
  std::memcpy(p, tmp, sizeof(uint16_t) * static_cast<unsigned>(n < 8 ? n : 8));
}
EMBER_RT_LAZY
inline __m256 f16x8_to_ps(__m128i h) {
#if defined(__F16C__)
  return _mm256_cvtph_ps(h);
#else
  uint16_t in[8];
  float out[8];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(in), h);
  for (int i = 0; i < 8; ++i) out[i] = f16_bits_to_float(in[i]);
  return _mm256_loadu_ps(out);
#endif
}
EMBER_RT_LAZY
inline __m128i ps_to_f16x8(__m256 x) {
#if defined(__F16C__)
  return _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
  float in[8];
  uint16_t out[8];
  _mm256_storeu_ps(in, x);
  for (int i = 0; i < 8; ++i) out[i] = float_to_f16_bits(in[i]);
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(out));
#endif
}
}  // namespace detail

struct vf {
  static constexpr int width = 8;
  __m256 v;

  vf() : v(_mm256_setzero_ps()) {}
  vf(float x) : v(_mm256_set1_ps(x)) {}
  explicit vf(__m256 x) : v(x) {}

  static vf broadcast(float x) { return vf(x); }
  static vf load(const float* p) { return vf(_mm256_loadu_ps(p)); }
  static vf load_partial(const float* p, int n) {
    return vf(_mm256_maskload_ps(p, detail::tail_mask8(n)));
  }
  void store(float* p) const { _mm256_storeu_ps(p, v); }
  void store_partial(float* p, int n) const { _mm256_maskstore_ps(p, detail::tail_mask8(n), v); }

  static vf load_bf16(const bf16* p) {
    return vf(detail::bf16x8_to_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static vf load_partial_bf16(const bf16* p, int n) {
    return vf(detail::bf16x8_to_ps(detail::load_u16x8_partial(&p->bits, n)));
  }
  void store_bf16(bf16* p) const {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), detail::ps_to_bf16x8(v));
  }
  void store_partial_bf16(bf16* p, int n) const {
    detail::store_u16x8_partial(&p->bits, detail::ps_to_bf16x8(v), n);
  }

  static vf load_f16(const f16* p) {
    return vf(detail::f16x8_to_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static vf load_partial_f16(const f16* p, int n) {
    return vf(detail::f16x8_to_ps(detail::load_u16x8_partial(&p->bits, n)));
  }
  void store_f16(f16* p) const {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), detail::ps_to_f16x8(v));
  }
  void store_partial_f16(f16* p, int n) const {
    detail::store_u16x8_partial(&p->bits, detail::ps_to_f16x8(v), n);
  }

  vf& operator+=(vf o) {
    v = _mm256_add_ps(v, o.v);
    return *this;
  }
  vf& operator-=(vf o) {
    v = _mm256_sub_ps(v, o.v);
    return *this;
  }
  vf& operator*=(vf o) {
    v = _mm256_mul_ps(v, o.v);
    return *this;
  }
  vf& operator/=(vf o) {
    v = _mm256_div_ps(v, o.v);
    return *this;
  }
};

EMBER_RT_LAZY
inline vf operator+(vf a, vf b) { return vf(_mm256_add_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf operator-(vf a, vf b) { return vf(_mm256_sub_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf operator*(vf a, vf b) { return vf(_mm256_mul_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf operator/(vf a, vf b) { return vf(_mm256_div_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf operator-(vf a) { return vf(_mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f))); }

EMBER_RT_LAZY
inline vf fma(vf a, vf b, vf c) { return vf(_mm256_fmadd_ps(a.v, b.v, c.v)); }
EMBER_RT_LAZY
inline vf sqrt(vf a) { return vf(_mm256_sqrt_ps(a.v)); }
EMBER_RT_LAZY
inline vf abs(vf a) { return vf(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v)); }
EMBER_RT_LAZY
inline vf floor(vf a) {
  return vf(_mm256_round_ps(a.v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
}
EMBER_RT_LAZY
inline vf ceil(vf a) { return vf(_mm256_round_ps(a.v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC)); }
EMBER_RT_LAZY
inline vf round(vf a) {
  return vf(_mm256_round_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

EMBER_RT_LAZY
inline vm lt(vf a, vf b) { return vm{_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)}; }
EMBER_RT_LAZY
inline vm le(vf a, vf b) { return vm{_mm256_cmp_ps(a.v, b.v, _CMP_LE_OQ)}; }
EMBER_RT_LAZY
inline vm gt(vf a, vf b) { return vm{_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ)}; }
EMBER_RT_LAZY
inline vm ge(vf a, vf b) { return vm{_mm256_cmp_ps(a.v, b.v, _CMP_GE_OQ)}; }
EMBER_RT_LAZY
inline vm eq(vf a, vf b) { return vm{_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)}; }
EMBER_RT_LAZY
inline vm ne(vf a, vf b) { return vm{_mm256_cmp_ps(a.v, b.v, _CMP_NEQ_UQ)}; }
EMBER_RT_LAZY
inline vf select(vm m, vf a, vf b) { return vf(_mm256_blendv_ps(b.v, a.v, m.m)); }
EMBER_RT_LAZY
inline vm logical_and(vm a, vm b) { return vm{_mm256_and_ps(a.m, b.m)}; }
EMBER_RT_LAZY
inline vm logical_or(vm a, vm b) { return vm{_mm256_or_ps(a.m, b.m)}; }
EMBER_RT_LAZY
inline vm logical_xor(vm a, vm b) { return vm{_mm256_xor_ps(a.m, b.m)}; }
EMBER_RT_LAZY
inline vm logical_not(vm a) {
  return vm{_mm256_xor_ps(a.m, _mm256_castsi256_ps(_mm256_set1_epi32(-1)))};
}

namespace detail {
EMBER_RT_LAZY
inline vm isnan(vf a) { return vm{_mm256_cmp_ps(a.v, a.v, _CMP_UNORD_Q)}; }
EMBER_RT_LAZY
inline bool any(vm m) { return _mm256_movemask_ps(m.m) != 0; }
EMBER_RT_LAZY
inline vf max_raw(vf a, vf b) { return vf(_mm256_max_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf min_raw(vf a, vf b) { return vf(_mm256_min_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf exp2i(vf n) {
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n.v), _mm256_set1_epi32(127));
  return vf(_mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
}
EMBER_RT_LAZY
inline vf split_exponent(vf x, vf& e) {
  const __m256i u = _mm256_castps_si256(x.v);
  e = vf(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(u, 23), _mm256_set1_epi32(127))));
  const __m256i m = _mm256_or_si256(_mm256_and_si256(u, _mm256_set1_epi32(0x007fffff)),
                                    _mm256_set1_epi32(0x3f800000));
  return vf(_mm256_castsi256_ps(m));
}
EMBER_RT_LAZY
inline float hsum(vf a) {
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
EMBER_RT_LAZY
inline float hmax_raw(vf a) {
  __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s4 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_max_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
EMBER_RT_LAZY
inline float hmin_raw(vf a) {
  __m128 s4 = _mm_min_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s4 = _mm_min_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_min_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
}  // namespace detail

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
