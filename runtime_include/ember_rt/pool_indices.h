// max_pool2d's indices (float32), as torch's max_pool2d_with_indices gives them: for every
// output, the flat position ih * W + iw in its input plane of its window's largest element
// (the first of equal ones; a NaN wins over every number, and the last NaN over the
// others, as torch's kernel takes an element when it is larger or NaN). A padded position
// (-inf) only wins a window whose every element is -inf, where torch answers the window's
// first position inside the input. In vectors of consecutive outputs along a row wherever
// their windows lie inside the row (the window positions held as exact float lanes),
// element by element elsewhere.
#pragma once

#include <cstdint>
#include <limits>

#include "kernel.h"
#include "lanes.h"
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace pool_detail {

struct PoolIndicesGeom {
  int64_t H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
};

// The flat index of window position `pos` (kh * KW + kw) of output (oh, ow), or of the
// window's first position inside x when `pos` lies in the padding.
EMBER_RT_LAZY
inline int64_t flat_index(const PoolIndicesGeom& g, int64_t oh, int64_t ow, int64_t pos) {
  const int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  const int64_t ih = h0 + pos / g.KW * g.dh, iw = w0 + pos % g.KW * g.dw;
  if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) return ih * g.W + iw;
  const auto first = [](int64_t s0, int64_t d) {  // the first tap at or past 0
    const int64_t a = d - 1 - s0;
    const int64_t k = a >= 0 ? a / d : -((-a + d - 1) / d);  // floor(a / d)
    return s0 + (k > 0 ? k : 0) * d;
  };
  return first(h0, g.dh) * g.W + first(w0, g.dw);
}

// One output, element by element.
EMBER_RT_LAZY
inline int64_t one(const PoolIndicesGeom& g, const float* plane, int64_t oh, int64_t ow) {
  float best = -std::numeric_limits<float>::infinity();
  int64_t pos = 0;
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
    for (int64_t kw = 0; kw < g.KW; ++kw) {
      const int64_t iw = ow * g.sw - g.pw + kw * g.dw;
      const bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
      const float v = inside ? plane[ih * g.W + iw] : -std::numeric_limits<float>::infinity();
      if (v > best || v != v) {  // after a NaN, only another NaN is taken
        best = v;
        pos = kh * g.KW + kw;
      }
    }
  }
  return flat_index(g, oh, ow, pos);
}

}  // namespace pool_detail
}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt

namespace ember_rt::lib {

// x [planes, H, W] -> out [planes, OH, OW] (int64).
EMBER_RT_LAZY
inline void max_pool2d_indices(const LaunchContext* ctx, const float* x, int64_t* out,
                               int64_t planes, int64_t H, int64_t W, int64_t OH, int64_t OW,
                               int64_t KH, int64_t KW, int64_t sh, int64_t sw, int64_t ph,
                               int64_t pw, int64_t dh, int64_t dw) {
  using pool_detail::PoolIndicesGeom;
  const PoolIndicesGeom g{H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw};
  constexpr int64_t L = vf::width;
  // Outputs [lo, hi) of a row read only columns inside x; window positions are exact in
  // float lanes (KH * KW < 2^24).
  const int64_t lo = (pw + sw - 1) / sw;
  const int64_t last = W - 1 + pw - (KW - 1) * dw;  // ow * sw <= last
  const int64_t hi = last < 0 ? 0 : (last / sw + 1 < OW ? last / sw + 1 : OW);
  const bool vectors = L > 1 && KH * KW < (int64_t{1} << 24);  // and hi - lo >= L per row
  const double work = static_cast<double>(planes * OH * OW) * static_cast<double>(KH * KW) * 4.0;
  parallel_for(ctx, planes * OH, work, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t p = r / OH, oh = r % OH;
      const float* plane = x + p * H * W;
      int64_t* o = out + r * OW;
      int64_t ow = 0;
      // L outputs from ow0 on (all inside [lo, hi)).
      const auto vector_at = [&](int64_t ow0) {
        vf best(-std::numeric_limits<float>::infinity()), pos(0.0f);
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * sh - ph + kh * dh;
          if (ih < 0 || ih >= H) continue;  // -inf: never taken
          const float* row = plane + ih * W + ow0 * sw - pw;
          for (int64_t kw = 0; kw < KW; ++kw) {
            const vf v = load_strided(row + kw * dw, sw);
            const vm take = logical_or(gt(v, best), ne(v, v));
            best = select(take, v, best);
            pos = select(take, vf(static_cast<float>(kh * KW + kw)), pos);
          }
        }
        // pos = kh * KW + kw, split in floats (exact: (pos + 0.5) / KW is at least 0.5 / KW
        // away from an integer); the columns are inside x, a row may be padding only when
        // every element of the window is -inf.
        const vf kh = floor((pos + vf(0.5f)) * vf(1.0f / static_cast<float>(KW)));
        const vf kw = pos - kh * vf(static_cast<float>(KW));
        float khs[L], kws[L];
        kh.store(khs);
        kw.store(kws);
        const int64_t h0 = oh * sh - ph;
        for (int64_t i = 0; i < L; ++i) {
          const int64_t ih = h0 + static_cast<int64_t>(khs[i]) * dh;
          const int64_t iw = (ow0 + i) * sw - pw + static_cast<int64_t>(kws[i]) * dw;
          o[ow0 + i] = ih >= 0 && ih < H
                           ? ih * W + iw
                           : pool_detail::flat_index(g, oh, ow0 + i,
                                                     static_cast<int64_t>(khs[i] * KW + kws[i]));
        }
      };
      if (vectors && hi - lo >= L) {
        for (; ow < lo; ++ow) o[ow] = pool_detail::one(g, plane, oh, ow);
        for (; ow + L <= hi; ow += L) vector_at(ow);
        if (ow < hi) {  // the last vector ends at hi, recomputing some of the previous one's
          vector_at(hi - L);
          ow = hi;
        }
      }
      for (; ow < OW; ++ow) o[ow] = pool_detail::one(g, plane, oh, ow);
    }
  });
}

}  // namespace ember_rt::lib
