// The weight gradient of a 2-d convolution (conv2d_weight_grad, float32), without the whole
// im2col: per group, dw [O/G, CG*KH*KW] = dy [O/G, N*OH*OW] x windows [N*OH*OW, CG*KH*KW],
// where row p = (n, oh, ow) of the windows holds the input values that output pixel read
// (x[n, g*CG + c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw], 0 in the padding). The windows are
// stored transposed, [CG*KH*KW, positions], each row copied from runs of x's rows. The sum over the
// N*OH*OW positions is cut into chunks of `rows` output rows (n, oh): each chunk's windows
// and its slice of dy are copied into scratch buffers the caller provides (a few MB, sized by
// the operator: conv_wgrad_rows), and one GEMM adds the chunk's product into dw
// (GemmShape::accumulate; the first chunk stores). The chunks depend on the shape only and
// run in order, and each GEMM sums the same way at any thread count, so the result does not
// depend on the number of threads.
#pragma once

#include <cstdint>

#include "gemm.h"
#include "kernel.h"

namespace ember_rt::lib {

// dy [N, O, OH, OW], x [N, C, H, W] -> dw [O, C / G, KH, KW]. win holds rows * OW * (C / G)
// * KH * KW floats and dyc (O / G) * rows * OW.
inline void conv2d_weight_grad(const LaunchContext* ctx, const float* dy, const float* x, float* dw,
                               float* win, float* dyc, int64_t N, int64_t C, int64_t H, int64_t W,
                               int64_t O, int64_t OH, int64_t OW, int64_t KH, int64_t KW,
                               int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                               int64_t dw_, int64_t G, int64_t rows) {
  const int64_t CG = C / G, OG = O / G, KK = KH * KW, CK = CG * KK;
  const int64_t total_rows = N * OH, plane = OH * OW;
  if (O <= 0 || CK <= 0) return;
  if (total_rows <= 0) {  // an empty sum
    for (int64_t i = 0; i < O * CK; ++i) dw[i] = 0.0f;
    return;
  }
  for (int64_t r0 = 0; r0 < total_rows; r0 += rows) {
    const int64_t r1 = r0 + rows < total_rows ? r0 + rows : total_rows;
    const int64_t K = (r1 - r0) * OW;  // the chunk's positions
    for (int64_t g = 0; g < G; ++g) {
      // The windows of the chunk's positions, stored transposed: one row of K values per
      // (c, kh, kw), so that a row is filled from runs of x's row ih (contiguous when sw is 1)
      // between the padding's zeros.
      parallel_for(ctx, CK, static_cast<double>(K) * static_cast<double>(CK) * 2.0,
                   [&](int64_t j0, int64_t j1) {
                     for (int64_t j = j0; j < j1; ++j) {
                       const int64_t c = j / KK, kh = (j / KW) % KH, kw = j % KW;
                       const int64_t iw0 = kw * dw_ - pw;  // iw = ow * sw + iw0
                       // ow in [lo, hi) reads inside x's width
                       const int64_t lo = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw;
                       int64_t hi = W - 1 - iw0 < 0 ? 0 : (W - 1 - iw0) / sw + 1;
                       hi = hi < OW ? hi : OW;
                       const int64_t first = lo < hi ? lo : hi;
                       for (int64_t r = r0; r < r1; ++r) {
                         const int64_t n = r / OH, oh = r % OH;
                         const int64_t ih = oh * sh - ph + kh * dh;
                         float* o = win + j * K + (r - r0) * OW;
                         if (ih < 0 || ih >= H) {
                           for (int64_t ow = 0; ow < OW; ++ow) o[ow] = 0.0f;
                           continue;
                         }
                         const float* xr = x + ((n * C + g * CG + c) * H + ih) * W + iw0;
                         for (int64_t ow = 0; ow < first; ++ow) o[ow] = 0.0f;
                         if (sw == 1) {
                           for (int64_t ow = first; ow < hi; ++ow) o[ow] = xr[ow];
                         } else {
                           for (int64_t ow = first; ow < hi; ++ow) o[ow] = xr[ow * sw];
                         }
                         for (int64_t ow = hi > first ? hi : first; ow < OW; ++ow) o[ow] = 0.0f;
                       }
                     }
                   });
      // The group's rows of dy at the chunk's positions: dyc [OG, K].
      parallel_for(
          ctx, OG, static_cast<double>(OG) * static_cast<double>(K), [&](int64_t o0, int64_t o1) {
            for (int64_t o = o0; o < o1; ++o) {
              float* d = dyc + o * K;
              for (int64_t r = r0; r < r1; ++r) {
                const float* src = dy + ((r / OH) * O + g * OG + o) * plane + (r % OH) * OW;
                float* dst = d + (r - r0) * OW;
                for (int64_t i = 0; i < OW; ++i) dst[i] = src[i];
              }
            }
          });
      GemmShape s{};
      s.batch = 1;
      s.M = OG;
      s.N = CK;
      s.K = K;
      s.A = dyc;
      s.a_m = K;
      s.a_k = 1;
      s.B = win;  // [CK, K]: B read transposed
      s.b_k = 1;
      s.b_n = K;
      s.C = dw + g * OG * CK;
      s.c_m = CK;
      s.accumulate = r0 > 0;
      gemm(s, ctx, NoEpilogue{});
    }
  }
}

}  // namespace ember_rt::lib
