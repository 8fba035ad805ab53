// AVX-512 implementation of vf / vm (16 float lanes, __mmask16 masks). Included by vec.h only.
#pragma once

#include "half.h"
#include "isa.h"
#include "lazy.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

// Lane mask produced by comparisons on vf. In memory a lane is a bool: one byte, 0 or 1 (any
// nonzero byte loads as true).
struct vm {
  __mmask16 m;

  static vm broadcast(bool b) { return vm{static_cast<__mmask16>(b ? 0xffff : 0)}; }
  static vm load(const bool* p) {
    return from_bytes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static vm load_partial(const bool* p, int n) {
    alignas(16) unsigned char bytes[16] = {};
    std::memcpy(bytes, p, static_cast<size_t>(n <= 0 ? 0 : n < 16 ? n : 16));
    return from_bytes(_mm_load_si128(reinterpret_cast<const __m128i*>(bytes)));
  }
  void store(bool* p) const {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm512_cvtepi32_epi8(_mm512_maskz_set1_epi32(m, 1)));
  }
  void store_partial(bool* p, int n) const {
    const __mmask16 first =
        n >= 16 ? static_cast<__mmask16>(0xffff)
                : static_cast<__mmask16>((1u << static_cast<unsigned>(n <= 0 ? 0 : n)) - 1u);
    _mm512_mask_cvtepi32_storeu_epi8(p, first, _mm512_maskz_set1_epi32(m, 1));
  }
  // 16 bytes -> lanes: true where the byte is not 0.
  static vm from_bytes(__m128i b) {
    const __m512i w = _mm512_cvtepu8_epi32(b);
    return vm{_mm512_test_epi32_mask(w, w)};
  }
};

namespace detail {
// Mask of the first n lanes, 0 <= n (n >= 16 means all).
EMBER_RT_LAZY
inline __mmask16 tail_mask16(int n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}
// 16 bf16 (as 16-bit integers) -> floats: widen to 32 bits and move into the top half.
EMBER_RT_LAZY
inline __m512 bf16x16_to_ps(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// floats -> 16 bf16, round to nearest even, NaN made quiet (same rule as float_to_bf16_bits).
EMBER_RT_LAZY
inline __m256i ps_to_bf16x16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  const __m512i quiet_nan = _mm512_or_si512(u, _mm512_set1_epi32(0x00400000));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __m512i r = _mm512_mask_mov_epi32(rounded, nan, quiet_nan);
  return EMBER_RT_CVTEPI32_EPI16(_mm512_srli_epi32(r, 16));
}
EMBER_RT_LAZY
inline __m256i load_u16_partial(const uint16_t* p, int n) {
#if defined(EMBER_RT_AVX512_BW_VL)
  return _mm256_maskz_loadu_epi16(tail_mask16(n), p);
#else
  uint16_t tmp[16] = {};
  std::memcpy(tmp, p, sizeof(uint16_t) * static_cast<unsigned>(n < 16 ? n : 16));
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tmp));
#endif
}
EMBER_RT_LAZY
inline void store_u16_partial(uint16_t* p, __m256i h, int n) {
#if defined(EMBER_RT_AVX512_BW_VL)
  _mm256_mask_storeu_epi16(p, tail_mask16(n), h);
#else
  uint16_t tmp[16];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(tmp), h);
  std::memcpy(p, tmp, sizeof(uint16_t) * static_cast<unsigned>(n < 16 ? n : 16));
#endif
}
}  // namespace detail

struct vf {
  static constexpr int width = 16;
  __m512 v;

  vf() : v(_mm512_setzero_ps()) {}
  vf(float x) : v(_mm512_set1_ps(x)) {}
  explicit vf(__m512 x) : v(x) {}

  static vf broadcast(float x) { return vf(x); }
  static vf load(const float* p) { return vf(_mm512_loadu_ps(p)); }
  static vf load_partial(const float* p, int n) {
    return vf(_mm512_maskz_loadu_ps(detail::tail_mask16(n), p));
  }
  void store(float* p) const { _mm512_storeu_ps(p, v); }
  void store_partial(float* p, int n) const { _mm512_mask_storeu_ps(p, detail::tail_mask16(n), v); }

  static vf load_bf16(const bf16* p) {
    return vf(detail::bf16x16_to_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
  }
  static vf load_partial_bf16(const bf16* p, int n) {
    return vf(detail::bf16x16_to_ps(detail::load_u16_partial(&p->bits, n)));
  }
  void store_bf16(bf16* p) const {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), detail::ps_to_bf16x16(v));
  }
  void store_partial_bf16(bf16* p, int n) const {
    detail::store_u16_partial(&p->bits, detail::ps_to_bf16x16(v), n);
  }

  static vf load_f16(const f16* p) {
    return vf(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
  }
  static vf load_partial_f16(const f16* p, int n) {
    return vf(_mm512_cvtph_ps(detail::load_u16_partial(&p->bits, n)));
  }
  void store_f16(f16* p) const {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), EMBER_RT_CVTPS_PH(v));
  }
  void store_partial_f16(f16* p, int n) const {
    detail::store_u16_partial(&p->bits, EMBER_RT_CVTPS_PH(v), n);
  }

  vf& operator+=(vf o) {
    v = _mm512_add_ps(v, o.v);
    return *this;
  }
  vf& operator-=(vf o) {
    v = _mm512_sub_ps(v, o.v);
    return *this;
  }
  vf& operator*=(vf o) {
    v = _mm512_mul_ps(v, o.v);
    return *this;
  }
  vf& operator/=(vf o) {
    v = _mm512_div_ps(v, o.v);
    return *this;
  }
};

EMBER_RT_LAZY
inline vf operator+(vf a, vf b) { return vf(_mm512_add_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf operator-(vf a, vf b) { return vf(_mm512_sub_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf operator*(vf a, vf b) { return vf(_mm512_mul_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf operator/(vf a, vf b) { return vf(_mm512_div_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf operator-(vf a) {
  return vf(_mm512_castsi512_ps(_mm512_xor_si512(
      _mm512_castps_si512(a.v), _mm512_set1_epi32(static_cast<int>(0x80000000u)))));
}

EMBER_RT_LAZY
inline vf fma(vf a, vf b, vf c) { return vf(_mm512_fmadd_ps(a.v, b.v, c.v)); }
EMBER_RT_LAZY
inline vf sqrt(vf a) { return vf(_mm512_sqrt_ps(a.v)); }
EMBER_RT_LAZY
inline vf abs(vf a) {
  return vf(_mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(a.v), _mm512_set1_epi32(0x7fffffff))));
}
EMBER_RT_LAZY
inline vf floor(vf a) {
  return vf(_mm512_roundscale_ps(a.v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
}
EMBER_RT_LAZY
inline vf ceil(vf a) {
  return vf(_mm512_roundscale_ps(a.v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC));
}
EMBER_RT_LAZY
inline vf round(vf a) {
  return vf(_mm512_roundscale_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

EMBER_RT_LAZY
inline vm lt(vf a, vf b) { return vm{_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ)}; }
EMBER_RT_LAZY
inline vm le(vf a, vf b) { return vm{_mm512_cmp_ps_mask(a.v, b.v, _CMP_LE_OQ)}; }
EMBER_RT_LAZY
inline vm gt(vf a, vf b) { return vm{_mm512_cmp_ps_mask(a.v, b.v, _CMP_GT_OQ)}; }
EMBER_RT_LAZY
inline vm ge(vf a, vf b) { return vm{_mm512_cmp_ps_mask(a.v, b.v, _CMP_GE_OQ)}; }
EMBER_RT_LAZY
inline vm eq(vf a, vf b) { return vm{_mm512_cmp_ps_mask(a.v, b.v, _CMP_EQ_OQ)}; }
EMBER_RT_LAZY
inline vm ne(vf a, vf b) { return vm{_mm512_cmp_ps_mask(a.v, b.v, _CMP_NEQ_UQ)}; }
EMBER_RT_LAZY
inline vf select(vm m, vf a, vf b) { return vf(_mm512_mask_blend_ps(m.m, b.v, a.v)); }
EMBER_RT_LAZY
inline vm logical_and(vm a, vm b) { return vm{static_cast<__mmask16>(a.m & b.m)}; }
EMBER_RT_LAZY
inline vm logical_or(vm a, vm b) { return vm{static_cast<__mmask16>(a.m | b.m)}; }
EMBER_RT_LAZY
inline vm logical_xor(vm a, vm b) { return vm{static_cast<__mmask16>(a.m ^ b.m)}; }
EMBER_RT_LAZY
inline vm logical_not(vm a) { return vm{static_cast<__mmask16>(~a.m)}; }

namespace detail {
EMBER_RT_LAZY
inline vm isnan(vf a) { return vm{_mm512_cmp_ps_mask(a.v, a.v, _CMP_UNORD_Q)}; }
EMBER_RT_LAZY
inline bool any(vm m) { return m.m != 0; }
// x86 max/min: a > b ? a : b (the second operand when either is NaN).
EMBER_RT_LAZY
inline vf max_raw(vf a, vf b) { return vf(_mm512_max_ps(a.v, b.v)); }
EMBER_RT_LAZY
inline vf min_raw(vf a, vf b) { return vf(_mm512_min_ps(a.v, b.v)); }
// 2^n for integral n in [-126, 127], given as float.
EMBER_RT_LAZY
inline vf exp2i(vf n) {
  const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n.v), _mm512_set1_epi32(127));
  return vf(_mm512_castsi512_ps(_mm512_slli_epi32(e, 23)));
}
// For positive normal finite x: returns m in [1, 2) and sets e so that x = m * 2^e.
EMBER_RT_LAZY
inline vf split_exponent(vf x, vf& e) {
  const __m512i u = _mm512_castps_si512(x.v);
  e = vf(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(u, 23), _mm512_set1_epi32(127))));
  const __m512i m = _mm512_or_si512(_mm512_and_si512(u, _mm512_set1_epi32(0x007fffff)),
                                    _mm512_set1_epi32(0x3f800000));
  return vf(_mm512_castsi512_ps(m));
}
// Horizontal reductions by halving: 16 -> 8 -> 4 -> 2 -> 1 lanes.
EMBER_RT_LAZY
inline __m256 hi256(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
EMBER_RT_LAZY
inline float hsum(vf a) {
  __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(a.v), hi256(a.v));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
EMBER_RT_LAZY
inline float hmax_raw(vf a) {
  __m256 s8 = _mm256_max_ps(_mm512_castps512_ps256(a.v), hi256(a.v));
  __m128 s4 = _mm_max_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_max_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_max_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
EMBER_RT_LAZY
inline float hmin_raw(vf a) {
  __m256 s8 = _mm256_min_ps(_mm512_castps512_ps256(a.v), hi256(a.v));
  __m128 s4 = _mm_min_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  s4 = _mm_min_ps(s4, _mm_movehl_ps(s4, s4));
  s4 = _mm_min_ss(s4, _mm_movehdup_ps(s4));
  return _mm_cvtss_f32(s4);
}
}  // namespace detail

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
