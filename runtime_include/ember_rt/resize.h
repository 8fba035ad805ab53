// Bilinear resizing of float32 planes (torch's upsample_bilinear2d): out [NC, OH, OW] from
// x [NC, H, W], and of channel-blocked tensors (resize_bilinear_blocked_layout: planes of
// pixels of B lanes).
//
// Along each dimension, output index o reads source indices i0 <= i1 with weights l0 + l1 = 1,
// computed as torch computes them, in float: src = scale * (o + 0.5) - 0.5 clamped at 0
// (align_corners: scale * o), scale = in / out ((in - 1) / (out - 1)); i0 = min(floor(src),
// in - 1), i1 = min(i0 + 1, in - 1), l1 = clamp(src - i0, 0, 1), l0 = 1 - l1. The tables
// are made once per call. An output row oh is then
//   out[oh, :] = r(h0) * lh0 + r(h1) * lh1,  r(h)[ow] = x[h, w0] * lw0 + x[h, w1] * lw1,
// torch's order of operations. The horizontally interpolated rows r(h) (a gather per
// element) are kept in per-thread scratch while consecutive output rows read them (an
// upscale reads each input row for several output rows), and the vertical step runs in
// vectors.
//
// With an epilogue (elementwise operators fused after the resize), out is written by it:
// epi(nc, oh, 0, OW, values) with values[0 : OW] the row's resized values, the signature of
// the GEMM's and the depthwise convolution's epilogues. Work is split by (plane, block of
// output rows); results do not depend on the thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "as_torch.h"
#include "gemm_base.h"  // NoEpilogue; gemm_detail::scratch, the per-thread scratch memory
#include "kernel.h"
#include "lazy.h"
#include "vec.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace resize_detail {
EMBER_RT_AS_TORCH_BEGIN

// Output positions per block of rows: enough rows per task to reuse the cached input rows.
constexpr int64_t kBlockOutputs = 8192;

// The source indices and weights of every output index along one dimension.
struct Axis {
  std::vector<int64_t> i0, i1;
  std::vector<float> l0, l1;
};

EMBER_RT_LAZY
inline Axis linear_axis(int64_t in, int64_t out, bool align_corners) {
  const int64_t num = align_corners ? in - 1 : in, den = align_corners ? out - 1 : out;
  const float scale = den > 0 ? static_cast<float>(num) / static_cast<float>(den) : 0.0f;
  Axis a;
  a.i0.resize(static_cast<size_t>(out));
  a.i1.resize(static_cast<size_t>(out));
  a.l0.resize(static_cast<size_t>(out));
  a.l1.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const float of = static_cast<float>(o);
    float src;
    if (align_corners) {
      src = scale * of;
    } else {
      src = scale * (of + 0.5f) - 0.5f;
      src = src > 0.0f ? src : 0.0f;
    }
    int64_t i0 = static_cast<int64_t>(std::floor(src));
    i0 = i0 < in - 1 ? i0 : in - 1;
    const int64_t i1 = i0 + 1 < in - 1 ? i0 + 1 : in - 1;
    float l1 = src - static_cast<float>(i0);
    l1 = l1 > 0.0f ? l1 : 0.0f;
    l1 = l1 < 1.0f ? l1 : 1.0f;
    const auto k = static_cast<size_t>(o);
    a.i0[k] = i0;
    a.i1[k] = i1;
    a.l1[k] = l1;
    a.l0[k] = 1.0f - l1;
  }
  return a;
}

// r[ow] = row[w0[ow]] * lw0[ow] + row[w1[ow]] * lw1[ow].
EMBER_RT_LAZY
inline void interpolate_row(const float* row, const Axis& w, int64_t n, float* r) {
  const int64_t* i0 = w.i0.data();
  const int64_t* i1 = w.i1.data();
  const float* l0 = w.l0.data();
  const float* l1 = w.l1.data();
  for (int64_t o = 0; o < n; ++o) r[o] = row[i0[o]] * l0[o] + row[i1[o]] * l1[o];
}

// dst[0 : n) = a * la + b * lb, in vectors.
EMBER_RT_LAZY
inline void blend_rows(const float* a, float la, const float* b, float lb, int64_t n, float* dst) {
  constexpr int64_t V = vf::width;
  const vf va(la), vb(lb);
  int64_t o = 0;
  for (; o + V <= n; o += V) (vf::load(a + o) * va + vf::load(b + o) * vb).store(dst + o);
  if (o < n) {
    const int k = static_cast<int>(n - o);
    (vf::load_partial(a + o, k) * va + vf::load_partial(b + o, k) * vb).store_partial(dst + o, k);
  }
}

// The same on planes [H, W, B] of a channel-blocked x (nChw<B>c, B = vf::width): a "row" is W
// pixels of B lanes, each pixel's lanes interpolated as one vector, with the weights and
// the order of operations above (the compiler may contract other products into fmas than
// in the plain routine: the results differ from its by a rounding in some elements, as both
// do from torch's). The epilogue is applied in place to each output pixel:
// epi(plane, oh * OW + ow, 0, B, p).
EMBER_RT_LAZY
inline void interpolate_row_blocked(const float* row, const Axis& w, int64_t n, float* r) {
  constexpr int64_t B = vf::width;
  for (int64_t o = 0; o < n; ++o) {
    const auto k = static_cast<size_t>(o);
    (vf::load(row + w.i0[k] * B) * vf(w.l0[k]) + vf::load(row + w.i1[k] * B) * vf(w.l1[k]))
        .store(r + o * B);
  }
}

// B floats per pixel: 1 for plain planes, vf::width for channel-blocked ones. A plain row
// goes to the epilogue from scratch (`values`), a blocked one in place, pixel by pixel.
template <int64_t B, class Epi>
inline void run(const LaunchContext* ctx, const float* x, float* out, int64_t planes, int64_t H,
                int64_t W, int64_t OH, int64_t OW, bool align_corners, const Epi& epi) {
  if (planes <= 0 || OH <= 0 || OW <= 0) return;
  const Axis ah = linear_axis(H, OH, align_corners), aw = linear_axis(W, OW, align_corners);
  const int64_t n = OW * B;  // floats per output row
  const int64_t rows = kBlockOutputs / n > 1 ? kBlockOutputs / n : 1;
  const int64_t blocks = (OH + rows - 1) / rows;
  const double work = static_cast<double>(planes) * static_cast<double>(OH * n) * 6.0;
  constexpr bool kEpilogue = !std::is_same_v<Epi, NoEpilogue>;
  constexpr bool kValues = kEpilogue && B == 1;
  parallel_for(ctx, planes * blocks, work, [&](int64_t begin, int64_t end) {
    // Two interpolated input rows (and the row handed to the epilogue).
    float* scratch =
        gemm_detail::scratch(ctx, gemm_detail::kSlotA, static_cast<size_t>(3 * (n + vf::width)));
    float* cached[2] = {scratch, scratch + n + vf::width};
    float* values = scratch + 2 * (n + vf::width);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t plane = item / blocks, r0 = (item % blocks) * rows;
      const int64_t r1 = r0 + rows < OH ? r0 + rows : OH;
      const float* xp = x + plane * H * W * B;
      int64_t held[2] = {-1, -1};  // the input row each cached row interpolates
      auto find = [&](int64_t h) { return held[0] == h ? 0 : held[1] == h ? 1 : -1; };
      auto fill = [&](int slot, int64_t h) {
        if constexpr (B == 1) {
          interpolate_row(xp + h * W, aw, OW, cached[slot]);
        } else {
          interpolate_row_blocked(xp + h * W * B, aw, OW, cached[slot]);
        }
        held[slot] = h;
      };
      for (int64_t oh = r0; oh < r1; ++oh) {
        const auto k = static_cast<size_t>(oh);
        const int64_t h0 = ah.i0[k], h1 = ah.i1[k];
        int a = find(h0);
        if (a < 0) fill(a = find(h1) == 0 ? 1 : 0, h0);
        int b = find(h1);
        if (b < 0) fill(b = 1 - a, h1);
        float* dst = kValues ? values : out + (plane * OH + oh) * n;
        blend_rows(cached[a], ah.l0[k], cached[b], ah.l1[k], n, dst);
        if constexpr (kValues) {
          epi(plane, oh, 0, OW, values);
        } else if constexpr (kEpilogue) {
          const Epi e = epi;  // a copy per row: its pointers stay in registers
          for (int64_t ow = 0; ow < OW; ++ow) e(plane, oh * OW + ow, 0, B, dst + ow * B);
        }
      }
    }
  });
}

EMBER_RT_AS_TORCH_END
}  // namespace resize_detail
}  // namespace EMBER_RT_ISA_NS

namespace lib {

// out [planes, OH, OW] = x [planes, H, W] resized bilinearly (align_corners: 0 or 1); with an
// epilogue, out is written by it: epi(plane, oh, 0, OW, values) for each output row.
template <class Epi = NoEpilogue>
inline void resize_bilinear(const LaunchContext* ctx, const float* x, float* out, int64_t planes,
                            int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t align_corners,
                            const Epi& epi = Epi{}) {
  resize_detail::run<1>(ctx, x, out, planes, H, W, OH, OW, align_corners != 0, epi);
}

// resize_bilinear on x [N, C, H, W] and out [N, C, OH, OW] laid out nChw<b>c (the
// upsample_bilinear2d operator on channel-blocked values): `block` is their channel block;
// another block (a kernel compiled for another ISA) is reported as an error and nothing is
// computed. The lanes past C interpolate the input's zeros. A graph's fused epilogue is called on
// each pixel of out viewed [N, CB, OH * OW, B], as conv2d_blocked_layout's: epi(n * CB + cb, oh *
// OW + ow, 0, B, p).
template <class Epi = NoEpilogue>
inline void resize_bilinear_blocked_layout(const LaunchContext* ctx, const float* x, float* out,
                                           int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH,
                                           int64_t OW, int64_t align_corners, int64_t block,
                                           const Epi& epi = Epi{}) {
  if (block != vf::width) {
    report_error(ctx, KernelError::kLayout, "resize_bilinear_blocked", block, vf::width);
    return;
  }
  const int64_t planes = N * ((C + vf::width - 1) / vf::width);
  resize_detail::run<vf::width>(ctx, x, out, planes, H, W, OH, OW, align_corners != 0, epi);
}

}  // namespace lib
}  // namespace ember_rt
