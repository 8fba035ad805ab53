// The weight gradient of a 2-d convolution (conv2d_weight_grad, float32), without the whole
// im2col: per group, dw [O/G, CG*KH*KW] = dy [O/G, N*OH*OW] x windows [N*OH*OW, CG*KH*KW],
// where row p = (n, oh, ow) of the windows holds the input values that output pixel read
// (x[n, g*CG + c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw], 0 in the padding). The sum over the
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
      // The windows of the chunk's positions, one row of CK values each; a position whose
      // window lies inside x along the width copies without bounds checks.
      parallel_for(ctx, K, static_cast<double>(K) * static_cast<double>(CK) * 2.0,
                   [&](int64_t p0, int64_t p1) {
                     for (int64_t p = p0; p < p1; ++p) {
                       const int64_t r = r0 + p / OW, ow = p % OW;
                       const int64_t n = r / OH, oh = r % OH;
                       const int64_t ih0 = oh * sh - ph, iw0 = ow * sw - pw;
                       const bool inside = iw0 >= 0 && iw0 + (KW - 1) * dw_ < W;
                       const float* xn = x + (n * C + g * CG) * H * W;
                       float* out = win + p * CK;
                       for (int64_t c = 0; c < CG; ++c) {
                         const float* xc = xn + c * H * W;
                         for (int64_t kh = 0; kh < KH; ++kh) {
                           const int64_t ih = ih0 + kh * dh;
                           float* o = out + (c * KH + kh) * KW;
                           if (ih < 0 || ih >= H) {
                             for (int64_t kw = 0; kw < KW; ++kw) o[kw] = 0.0f;
                           } else if (inside) {
                             const float* xr = xc + ih * W + iw0;
                             for (int64_t kw = 0; kw < KW; ++kw) o[kw] = xr[kw * dw_];
                           } else {
                             const float* xr = xc + ih * W;
                             for (int64_t kw = 0; kw < KW; ++kw) {
                               const int64_t iw = iw0 + kw * dw_;
                               o[kw] = iw >= 0 && iw < W ? xr[iw] : 0.0f;
                             }
                           }
                         }
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
      s.B = win;
      s.b_k = CK;
      s.b_n = 1;
      s.C = dw + g * OG * CK;
      s.c_m = CK;
      s.accumulate = r0 > 0;
      gemm(s, ctx, NoEpilogue{});
    }
  }
}

}  // namespace ember_rt::lib
