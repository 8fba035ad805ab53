// The weight gradient of a 2-d convolution (conv2d_weight_grad, float32), without the whole
// im2col. A pointwise convolution's (1x1, stride 1, no padding) is one GEMM per image on dy
// and x as they are (conv2d_weight_grad_pointwise below). Otherwise, per group,
//   dw [O/G, CG*KH*KW] = dy [O/G, N*OH*OW] x windows [N*OH*OW, CG*KH*KW],
// where row p = (n, oh, ow) of the windows holds the input values that output pixel read
// (x[n, g*CG + c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw], 0 in the padding). The windows
// are stored transposed, [CG*KH*KW, positions], each row copied from runs of x's rows. The
// sum over the N*OH*OW positions is cut into chunks of `rows` output rows (n, oh): each
// chunk's windows and its slice of dy are copied into scratch buffers the caller provides (a
// few MB, sized by the operator: conv_wgrad_rows), and one GEMM adds the chunk's product into
// dw (GemmShape::accumulate; the first chunk stores). The chunks depend on the shape only and
// run in order, and each GEMM sums the same way at any thread count, so the result does not
// depend on the number of threads.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "conv_wgrad_plan.h"
#include "gemm.h"
#include "kernel.h"
#include "lazy.h"

namespace ember_rt::lib {

// dy [N, O, OH, OW], x [N, C, H, W] -> dw [O, C / G, KH, KW]. win holds rows * OW * (C / G)
// * KH * KW floats and dyc (O / G) * rows * OW.
EMBER_RT_LAZY
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

// The weight gradient of a pointwise convolution (1x1, stride 1, no padding), read in place:
// per image n and group g, dw[g] (+)= dy[n, g] [O/G, P] x x[n, g]^T [P, C/G] with P = the
// plane's H*W positions, one GEMM with both operands contiguous along P (nothing is copied),
// images in order (the first stores). Each GEMM sums the same way at any thread count.
EMBER_RT_LAZY
inline void conv2d_weight_grad_pointwise(const LaunchContext* ctx, const float* dy, const float* x,
                                         float* dw, int64_t N, int64_t C, int64_t P, int64_t O,
                                         int64_t G) {
  const int64_t CG = C / G, OG = O / G;
  if (O <= 0 || CG <= 0) return;
  if (N <= 0 || P <= 0) {  // an empty sum
    for (int64_t i = 0; i < O * CG; ++i) dw[i] = 0.0f;
    return;
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      GemmShape s{};
      s.batch = 1;
      s.M = OG;
      s.N = CG;
      s.K = P;
      s.A = dy + (n * O + g * OG) * P;
      s.a_m = P;
      s.a_k = 1;
      s.B = x + (n * C + g * CG) * P;  // [CG, P]: B read transposed
      s.b_k = 1;
      s.b_n = P;
      s.C = dw + g * OG * CG;
      s.c_m = CG;
      s.accumulate = n > 0;
      gemm(s, ctx, NoEpilogue{});
    }
}

namespace wgrad_detail {

// One tile of dw^T: c[MR x NV*W] (+)= sum over k < kc of r[i][k] * b[k * ldb + :]. The taps'
// rows are read in place (broadcast one value per row and k) and dy's transpose in whole
// vectors: nothing is packed.
template <int MR, int NV>
inline void tile(int64_t kc, const float* const* r, const float* __restrict b, int64_t ldb,
                 float* __restrict c, int64_t ldc, bool accumulate) {
  constexpr int W = vf::width;
  vf acc[MR][NV];
  const float* a[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) a[i] = r[i];
  for (int64_t k = 0; k < kc; ++k) {
    vf bv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) bv[j] = vf::load(b + j * W);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const vf ai = vf::broadcast(a[i][k]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[i][j] = fma(ai, bv[j], acc[i][j]);
    }
    b += ldb;
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) {
      vf v = acc[i][j];
      if (accumulate) v += vf::load(c + i * ldc + j * W);
      v.store(c + i * ldc + j * W);
    }
}

constexpr int64_t kDepth = 128;  // k per tile: a 64-channel panel of dy^T is 32 KiB, in L1

// One tile of kWgradTileRows rows by the panel of `width` channels (16, 32, 48 or 64; 16
// without AVX-512, whose 16 vector registers hold a 6 x 16 tile).
EMBER_RT_LAZY
inline void tile_of_width(int64_t width, int64_t kc, const float* const* r, const float* b,
                          int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  constexpr int MR = static_cast<int>(kWgradTileRows), W = vf::width;
  if constexpr (W >= 16) {
    if (width == 64) return tile<MR, 64 / W>(kc, r, b, ldb, c, ldc, accumulate);
    if (width == 48) return tile<MR, 48 / W>(kc, r, b, ldb, c, ldc, accumulate);
    if (width == 32) return tile<MR, 32 / W>(kc, r, b, ldb, c, ldc, accumulate);
  }
  tile<MR, 16 / W>(kc, r, b, ldb, c, ldc, accumulate);
}

// dwt [wgrad_tap_rows(CK), OGp] (+)= xph's rows (rowoff) [CK, K] x dyt [K, OGp]. Each thread
// takes its own tiles of rows, all channels and the whole depth, in blocks of kDepth: a
// block of dy^T (kDepth x 64 channels) is read from L1 by every tile of the thread's rows.
EMBER_RT_LAZY
inline void product(const LaunchContext* ctx, const float* xph, const int64_t* rowoff, int64_t CK,
                    const float* dyt, int64_t OGp, int64_t K, float* dwt, bool accumulate) {
  constexpr int MR = static_cast<int>(kWgradTileRows);
  constexpr int64_t kPanel = vf::width >= 16 ? 64 : 16;
  const int64_t tiles = (CK + MR - 1) / MR;
  const double work = 2.0 * static_cast<double>(tiles * MR) * static_cast<double>(OGp) * K;
  parallel_for(ctx, tiles, work, [&](int64_t u0, int64_t u1) {
    for (int64_t k0 = 0; k0 < K; k0 += kDepth) {
      const int64_t kc = K - k0 < kDepth ? K - k0 : kDepth;
      const bool acc = accumulate || k0 > 0;
      for (int64_t q = 0; q < OGp; q += kPanel) {
        const int64_t width = OGp - q < kPanel ? OGp - q : kPanel;
        for (int64_t u = u0; u < u1; ++u) {
          const float* r[MR];
          for (int i = 0; i < MR; ++i) {
            const int64_t m = u * MR + i;  // rows past CK compute padding (never read)
            r[i] = xph + rowoff[m < CK ? m : 0] + k0;
          }
          tile_of_width(width, kc, r, dyt + k0 * OGp + q, OGp, dwt + u * MR * OGp + q, OGp, acc);
        }
      }
    }
  });
}

}  // namespace wgrad_detail

// The same gradient with the input read in place of windows (conv_wgrad_plan.h): per group,
// dw^T [CG*KH*KW, O/G] = sum over chunks of `imgs` images of xph [CG*KH*KW rows, positions]
// x dyt [positions, O/G], where row (c, kh, kw) of xph is a run of the chunk's phased copy of
// channel c and dyt holds dy transposed, zero at the junk positions; the product's tiles read
// both in place (wgrad_detail::product), and dw^T is transposed into dw at the end. The
// copies are about the input's and dy's size, where the windows are KH*KW times the input.
// xph holds CG * phases * imgs * plane floats, dyt imgs * plane * wgrad_channel_stride(O / G),
// dwt wgrad_tap_rows(CG*KH*KW) * wgrad_channel_stride(O / G). Junk positions read input
// values, multiplied by a zero gradient: an infinite input there gives NaN (0 * inf), as
// would a position that reads it.
EMBER_RT_LAZY
inline void conv2d_weight_grad_inplace(const LaunchContext* ctx, const float* dy, const float* x,
                                       float* dw, float* xph, float* dyt, float* dwt, int64_t N,
                                       int64_t C, int64_t H, int64_t W, int64_t O, int64_t OH,
                                       int64_t OW, int64_t KH, int64_t KW, int64_t sh, int64_t sw,
                                       int64_t ph, int64_t pw, int64_t dh, int64_t dw_, int64_t G,
                                       int64_t imgs) {
  const int64_t CG = C / G, OG = O / G, KK = KH * KW, CK = CG * KK;
  if (O <= 0 || CK <= 0) return;
  if (N <= 0 || OH <= 0 || OW <= 0) {  // an empty sum
    for (int64_t i = 0; i < O * CK; ++i) dw[i] = 0.0f;
    return;
  }
  const WgradPlan p = wgrad_plan(W, OH, OW, KH, KW, sh, sw, pw, dh, dw_);
  const int64_t phases = p.phases(), plane = p.plane(), cols = p.cols, block = imgs * plane;
  std::vector<int64_t> rowoff(static_cast<size_t>(CK));
  for (int64_t c = 0; c < CG; ++c)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const int64_t phase = p.h.phase_of(kh) * p.w.count() + p.w.phase_of(kw);
        rowoff[static_cast<size_t>((c * KH + kh) * KW + kw)] =
            (c * phases + phase) * block + p.h.shift(kh) * cols + p.w.shift(kw);
      }
  const int64_t ohw = OH * OW, OGp = wgrad_channel_stride(OG);
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t n0 = 0; n0 < N; n0 += imgs) {
      const int64_t ni = N - n0 < imgs ? N - n0 : imgs;
      // The phased copy: plane row r of (c, phase, image i) is input row r * sh + a_h - ph
      // at columns q * sw + a_w - pw, zero outside the input.
      const int64_t planes = CG * phases * ni;
      parallel_for(ctx, planes, static_cast<double>(planes) * static_cast<double>(plane),
                   [&](int64_t t0, int64_t t1) {
                     for (int64_t t = t0; t < t1; ++t) {
                       const int64_t i = t % ni, phase = t / ni % phases, c = t / ni / phases;
                       const int64_t ah = p.h.offset(phase / p.w.count());
                       const int64_t aw = p.w.offset(phase % p.w.count());
                       const int64_t iw0 = aw - pw;  // iw = q * sw + iw0
                       // q in [first, hi) reads inside x's width
                       const int64_t lo = iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw;
                       int64_t hi = W - 1 - iw0 < 0 ? 0 : (W - 1 - iw0) / sw + 1;
                       hi = hi < cols ? hi : cols;
                       const int64_t first = lo < hi ? lo : hi, last = hi > first ? hi : first;
                       const float* xc = x + ((n0 + i) * C + g * CG + c) * H * W + iw0;
                       float* o = xph + (c * phases + phase) * block + i * plane;
                       for (int64_t r = 0; r < p.rows; ++r, o += cols) {
                         const int64_t ih = r * sh + ah - ph;
                         if (ih < 0 || ih >= H) {
                           std::memset(o, 0, sizeof(float) * static_cast<size_t>(cols));
                           continue;
                         }
                         const float* xr = xc + ih * W;
                         std::memset(o, 0, sizeof(float) * static_cast<size_t>(first));
                         if (sw == 1) {
                           std::memcpy(o + first, xr + first,
                                       sizeof(float) * static_cast<size_t>(hi - first));
                         } else {
                           for (int64_t q = first; q < hi; ++q) o[q] = xr[q * sw];
                         }
                         std::memset(o + last, 0, sizeof(float) * static_cast<size_t>(cols - last));
                       }
                     }
                   });
      // dy transposed: row p = (i, oh, ow) of dyt holds dy[n0 + i, g*OG : (g+1)*OG, oh, ow],
      // zero at junk positions.
      const int64_t K = p.positions(ni);
      const int64_t drows = ni * p.rows;
      parallel_for(ctx, drows, static_cast<double>(drows) * static_cast<double>(cols * OGp),
                   [&](int64_t r0, int64_t r1) {
                     for (int64_t t = r0; t < r1; ++t) {
                       const int64_t i = t / p.rows, r = t % p.rows;
                       float* o = dyt + (i * plane + r * cols) * OGp;
                       const int64_t len =
                           i * plane + r * cols + cols <= K ? cols : K - (i * plane + r * cols);
                       if (len <= 0) continue;
                       if (r >= OH) {
                         std::memset(o, 0, sizeof(float) * static_cast<size_t>(len * OGp));
                         continue;
                       }
                       const float* src = dy + ((n0 + i) * O + g * OG) * ohw + r * OW;
                       constexpr int64_t L = vf::width;  // L channels per (gathered) vector
                       for (int64_t q = 0; q < OW; ++q) {
                         int64_t k = 0;
                         for (; k + L <= OG; k += L)
                           load_strided(src + k * ohw + q, ohw).store(o + q * OGp + k);
                         for (; k < OGp; ++k) o[q * OGp + k] = k < OG ? src[k * ohw + q] : 0.0f;
                       }
                       std::memset(o + OW * OGp, 0,
                                   sizeof(float) * static_cast<size_t>((len - OW) * OGp));
                     }
                   });
      wgrad_detail::product(ctx, xph, rowoff.data(), CK, dyt, OGp, K, dwt, n0 > 0);
    }
    // dw's rows of the group: dw^T transposed.
    float* dwg = dw + g * OG * CK;
    parallel_for(ctx, OG, static_cast<double>(OG) * static_cast<double>(CK),
                 [&](int64_t o0, int64_t o1) {
                   for (int64_t o = o0; o < o1; ++o)
                     for (int64_t j = 0; j < CK; ++j) dwg[o * CK + j] = dwt[j * OGp + o];
                 });
  }
}

}  // namespace ember_rt::lib
