// Guarded and strided vector loads for generated kernels (windows of
// convolutions and pooling, padding, triangles).
//
// A LaneRange is the set of lanes [lo, hi) of a vector for which an index
// condition holds. The code generator turns a condition that is a conjunction
// of comparisons, each affine in the vector's lane (a * lane + b >= 0, `a`
// known when generating), into a chain
//   ember_rt::LaneRange(limit).ge<a1>(b1).ge<a2>(b2)...
// evaluated with scalar arithmetic once per vector, and loads under the
// condition read only those lanes (the others are 0 and their memory is never
// touched). In the interior of a padded window the range is full and the loads
// are plain vector loads.
//
//   load_range(p, r)              lanes i in r: p[i], else 0
//   load_strided(p, s)            p[i * s] for every lane (s >= 1)
//   load_strided_range(p, s, r)   lanes i in r: p[i * s], else 0
//   guard(r, x, y)                x in the lanes of r, y elsewhere
//   load_strided[_range](b, s[, r]) the same for bool lanes (b a const bool*): a lane mask
//   store_interleaved(p, a, b)    p[2 i] = a[i], p[2 i + 1] = b[i] for every lane
//   store_interleaved_partial(p, n, a, b)  the same for lanes i < n
//   store_interleaved[_partial](b, [n, ]m0, m1)  the same for bool lane masks (b a bool*)
#pragma once

#include <cstdint>

#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {

struct LaneRange {
  int64_t lo = 0, hi = 0;

  // All lanes below `limit` (vf::width, or the count of a partial vector).
  explicit LaneRange(int64_t limit) : hi(limit) {}
  LaneRange(int64_t l, int64_t h) : lo(l), hi(h) {}

  // Keeps the lanes i with A * i + b >= 0.
  template <int64_t A>
  LaneRange ge(int64_t b) const {
    LaneRange r = *this;
    if constexpr (A == 0) {
      if (b < 0) r.hi = r.lo;
    } else if constexpr (A > 0) {
      // i >= ceil(-b / A)
      const int64_t n = -b;
      const int64_t first = n >= 0 ? (n + A - 1) / A : -((-n) / A);
      if (first > r.lo) r.lo = first;
    } else {
      // i <= floor(b / -A)
      constexpr int64_t d = -A;
      const int64_t last = b >= 0 ? b / d : -((-b + d - 1) / d);
      if (last + 1 < r.hi) r.hi = last + 1;
    }
    return r;
  }
  bool full() const { return lo <= 0 && hi >= vf::width; }
  bool empty() const { return lo >= hi; }
  bool any() const { return lo < hi; }
};

namespace detail {
// Lanes in [lo, hi) ∩ [0, width).
EMBER_RT_LAZY
inline int lane_lo(const LaneRange& r) { return r.lo < 0 ? 0 : static_cast<int>(r.lo); }
EMBER_RT_LAZY
inline int lane_hi(const LaneRange& r) {
  return r.hi > vf::width ? vf::width : static_cast<int>(r.hi);
}
}  // namespace detail

#if defined(EMBER_RT_AVX2)

namespace detail {
EMBER_RT_LAZY
inline __m256i range_mask8(const LaneRange& r) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int lo = lane_lo(r), hi = lane_hi(r);
  return _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(hi), iota),
                          _mm256_cmpgt_epi32(iota, _mm256_set1_epi32(lo - 1)));
}
// Every other float of p[0..15] under an element mask for the two halves.
EMBER_RT_LAZY
inline vf evens(__m256 a, __m256 b) {
  const __m256 s = _mm256_shuffle_ps(a, b, 0x88);  // a0 a2 b0 b2 | a4 a6 b4 b6
  return vf(_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xd8)));
}
}  // namespace detail

EMBER_RT_LAZY
inline vf load_range(const float* p, const LaneRange& r) {
  if (r.full()) return vf::load(p);
  if (r.empty()) return vf(0.0f);
  return vf(_mm256_maskload_ps(p, detail::range_mask8(r)));
}

EMBER_RT_LAZY
inline vf load_strided(const float* p, int64_t s) {
  if (s == 1) return vf::load(p);
  if (s == 2) {
    // Elements 0..14 are read; element 15 is masked off (it may lie past the
    // buffer).
    const __m256i first7 = detail::tail_mask8(7);
    return detail::evens(_mm256_loadu_ps(p), _mm256_maskload_ps(p + 8, first7));
  }
  const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm256_set1_epi32(static_cast<int>(s)));
  return vf(_mm256_i32gather_ps(p, idx, 4));
}

EMBER_RT_LAZY
inline vf load_strided_range(const float* p, int64_t s, const LaneRange& r) {
  if (r.full()) return load_strided(p, s);
  if (r.empty()) return vf(0.0f);
  if (s == 2) {
    // Lanes [lo, hi) read elements [2 lo, 2 hi - 1): the odd ones between are
    // in bounds.
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int lo = 2 * detail::lane_lo(r), hi = 2 * detail::lane_hi(r) - 1;
    const __m256i lo_v = _mm256_set1_epi32(lo - 1), hi_v = _mm256_set1_epi32(hi);
    const __m256i e0 = iota, e1 = _mm256_add_epi32(iota, _mm256_set1_epi32(8));
    const __m256i m0 = _mm256_and_si256(_mm256_cmpgt_epi32(hi_v, e0), _mm256_cmpgt_epi32(e0, lo_v));
    const __m256i m1 = _mm256_and_si256(_mm256_cmpgt_epi32(hi_v, e1), _mm256_cmpgt_epi32(e1, lo_v));
    return detail::evens(_mm256_maskload_ps(p, m0), _mm256_maskload_ps(p + 8, m1));
  }
  const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm256_set1_epi32(static_cast<int>(s)));
  const __m256 mask = _mm256_castsi256_ps(detail::range_mask8(r));
  return vf(_mm256_mask_i32gather_ps(_mm256_setzero_ps(), p, idx, mask, 4));
}

EMBER_RT_LAZY
inline vf guard(const LaneRange& r, vf x, vf y) {
  if (r.full()) return x;
  return vf(_mm256_blendv_ps(y.v, x.v, _mm256_castsi256_ps(detail::range_mask8(r))));
}

#elif defined(EMBER_RT_AVX512)

namespace detail {
// Lanes [lo, hi) of r as a mask.
EMBER_RT_LAZY
inline __mmask16 range_mask16(const LaneRange& r) {
  const int lo = lane_lo(r), hi = lane_hi(r);
  if (lo >= hi) return 0;
  return static_cast<__mmask16>(tail_mask16(hi) & ~tail_mask16(lo));
}
// Elements [lo, hi) of 32 as the masks of two 16-float halves.
EMBER_RT_LAZY
inline __mmask16 half_mask(int lo, int hi, int first) {
  const int a = lo - first, b = hi - first;
  const int l = a < 0 ? 0 : (a > 16 ? 16 : a), h = b < 0 ? 0 : (b > 16 ? 16 : b);
  if (l >= h) return 0;
  return static_cast<__mmask16>(tail_mask16(h) & ~tail_mask16(l));
}
// The even floats of two 16-float vectors: a0 a2 ... a14 b0 b2 ... b14.
EMBER_RT_LAZY
inline vf evens(__m512 a, __m512 b) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return vf(_mm512_permutex2var_ps(a, idx, b));
}
EMBER_RT_LAZY
inline __m512i lane_offsets(int64_t s) {
  return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(static_cast<int>(s)));
}
}  // namespace detail

EMBER_RT_LAZY
inline vf load_range(const float* p, const LaneRange& r) {
  if (r.full()) return vf::load(p);
  return vf(_mm512_maskz_loadu_ps(detail::range_mask16(r), p));
}

EMBER_RT_LAZY
inline vf load_strided(const float* p, int64_t s) {
  if (s == 1) return vf::load(p);
  if (s == 2) {
    // Elements 0..30 are read; element 31 is masked off (it may lie past the buffer).
    return detail::evens(_mm512_loadu_ps(p), _mm512_maskz_loadu_ps(0x7fff, p + 16));
  }
  return vf(_mm512_i32gather_ps(detail::lane_offsets(s), p, 4));
}

EMBER_RT_LAZY
inline vf load_strided_range(const float* p, int64_t s, const LaneRange& r) {
  if (r.full()) return load_strided(p, s);
  if (r.empty()) return vf(0.0f);
  if (s == 2) {
    // Lanes [lo, hi) read elements [2 lo, 2 hi - 1).
    const int lo = 2 * detail::lane_lo(r), hi = 2 * detail::lane_hi(r) - 1;
    return detail::evens(_mm512_maskz_loadu_ps(detail::half_mask(lo, hi, 0), p),
                         _mm512_maskz_loadu_ps(detail::half_mask(lo, hi, 16), p + 16));
  }
  return vf(_mm512_mask_i32gather_ps(_mm512_setzero_ps(), detail::range_mask16(r),
                                     detail::lane_offsets(s), p, 4));
}

EMBER_RT_LAZY
inline vf guard(const LaneRange& r, vf x, vf y) {
  if (r.full()) return x;
  return vf(_mm512_mask_blend_ps(detail::range_mask16(r), y.v, x.v));
}

#else  // portable: through a lane array

EMBER_RT_LAZY
inline vf load_strided_range(const float* p, int64_t s, const LaneRange& r) {
  float tmp[vf::width] = {};
  for (int i = detail::lane_lo(r); i < detail::lane_hi(r); ++i) tmp[i] = p[i * s];
  return vf::load(tmp);
}
EMBER_RT_LAZY
inline vf load_range(const float* p, const LaneRange& r) {
  if (r.full()) return vf::load(p);
  return load_strided_range(p, 1, r);
}
EMBER_RT_LAZY
inline vf load_strided(const float* p, int64_t s) {
  return load_strided_range(p, s, LaneRange(vf::width));
}
EMBER_RT_LAZY
inline vf guard(const LaneRange& r, vf x, vf y) {
  if (r.full()) return x;
  float xs[vf::width], ys[vf::width];
  x.store(xs);
  y.store(ys);
  for (int i = 0; i < vf::width; ++i) {
    if (i < detail::lane_lo(r) || i >= detail::lane_hi(r)) xs[i] = ys[i];
  }
  return vf::load(xs);
}

#endif  // EMBER_RT_AVX2, EMBER_RT_AVX512, portable

// bool lanes i in r read from p[i * s] (any nonzero byte is true), the others false.
EMBER_RT_LAZY
inline vm load_strided_range(const bool* p, int64_t s, const LaneRange& r) {
  alignas(16) unsigned char lanes[vf::width > 16 ? vf::width : 16] = {};
  const auto* bytes = reinterpret_cast<const unsigned char*>(p);
  for (int i = detail::lane_lo(r); i < detail::lane_hi(r); ++i) lanes[i] = bytes[i * s];
  bool as_bool[sizeof lanes];
  std::memcpy(as_bool, lanes, sizeof lanes);
  return vm::load(as_bool);
}
EMBER_RT_LAZY
inline vm load_strided(const bool* p, int64_t s) {
  if (s == 1) return vm::load(p);
  return load_strided_range(p, s, LaneRange(vf::width));
}

namespace detail {
// The lanes of a and b interleaved: a0 b0 a1 b1 ... into first (lanes 0..W/2-1 of each) and
// second (the rest).
EMBER_RT_LAZY
inline void interleave2(vf a, vf b, vf& first, vf& second) {
#if defined(EMBER_RT_AVX2)
  const __m256 lo = _mm256_unpacklo_ps(a.v, b.v);  // a0 b0 a1 b1 | a4 b4 a5 b5
  const __m256 hi = _mm256_unpackhi_ps(a.v, b.v);  // a2 b2 a3 b3 | a6 b6 a7 b7
  first = vf(_mm256_permute2f128_ps(lo, hi, 0x20));
  second = vf(_mm256_permute2f128_ps(lo, hi, 0x31));
#elif defined(EMBER_RT_AVX512)
  const __m512i i0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i i1 =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  first = vf(_mm512_permutex2var_ps(a.v, i0, b.v));
  second = vf(_mm512_permutex2var_ps(a.v, i1, b.v));
#else
  first = a;  // one lane: a0 b0
  second = b;
#endif
}
}  // namespace detail

EMBER_RT_LAZY
inline void store_interleaved(float* p, vf a, vf b) {
  vf first, second;
  detail::interleave2(a, b, first, second);
  first.store(p);
  second.store(p + vf::width);
}
// Lanes i < n of a and b (0 <= n <= vf::width): 2 n floats written, none after them.
EMBER_RT_LAZY
inline void store_interleaved_partial(float* p, int n, vf a, vf b) {
  vf first, second;
  detail::interleave2(a, b, first, second);
  const int m = 2 * n;
  first.store_partial(p, m < vf::width ? m : vf::width);
  if (m > vf::width) second.store_partial(p + vf::width, m - vf::width);
}
// bool lane masks, through byte arrays (a quarter of the floats' bytes).
EMBER_RT_LAZY
inline void store_interleaved_partial(bool* p, int n, vm a, vm b) {
  constexpr int kBytes = vf::width > 16 ? vf::width : 16;
  bool x[kBytes], y[kBytes];
  a.store(x);
  b.store(y);
  for (int i = 0; i < n; ++i) {
    p[2 * i] = x[i];
    p[2 * i + 1] = y[i];
  }
}
EMBER_RT_LAZY
inline void store_interleaved(bool* p, vm a, vm b) {
  store_interleaved_partial(p, vf::width, a, b);
}

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
