// Winograd F(4x4, 3x3) convolution transforms (Lavin & Gray 2015), the runtime half of the
// "winograd" convolution algorithm (src/ops/conv.cpp): a 3x3, stride-1 convolution computes
// each 4x4 block of its output from a 6x6 tile of its input as
//
//   Y = A^T [ (G g G^T) (.) (B^T d B) ] A          ((.): elementwise, over the 6x6 positions)
//
// so that, with the filter transformed once (U = G g G^T, [36, O, C]) and the input per
// tile (V = B^T d B, [36, C, tiles]), the sum over channels is 36 independent GEMMs
// M[k] = U[k] x V[k] ([O, C] x [C, tiles]) and the output transform reads M. The points are
// 0, +-1, +-2 and infinity; 36 products per 16 outputs instead of 144.
//
// Tiles: th = ceil(OH / 4) by tw = ceil(OW / 4) per image, numbered p = (n * th + ty) * tw +
// tx. Tile (ty, tx) reads input rows 4 ty - ph + [0, 6) and columns 4 tx - pw + [0, 6)
// (zero outside the input) and writes output rows 4 ty + [0, 4) and columns 4 tx + [0, 4)
// (those inside the output).
//
// The input and output transforms run in vectors along tx (ember_rt::vf lanes are
// neighbouring tiles of one row of tiles): a row of input is first split into its four
// phases (columns 4 q + r, r = 0..3) so that every tile's column k is the load of phase
// k % 4 at q + k / 4. The filter transform (winograd_filter.h) runs once per weight (at build
// time when the weight is a constant, and at load for a saved model) in double.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernel.h"
#include "lazy.h"
#include "vec.h"
#include "winograd_filter.h"

namespace ember_rt::lib {
inline namespace EMBER_RT_ISA_NS {

namespace winograd_detail {

// out = B^T d, one column of a 6x6 tile (d[k]: its row k).
template <class V>
inline void input_1d(const V* d, V* out) {
  const V four(4.0f), five(5.0f), two(2.0f);
  out[0] = ember_rt::fma(four, d[0], ember_rt::fma(-five, d[2], d[4]));
  out[1] = ember_rt::fma(-four, d[1] + d[2], d[3] + d[4]);
  out[2] = ember_rt::fma(four, d[1] - d[2], d[4] - d[3]);
  out[3] = ember_rt::fma(two, d[3] - d[1], d[4] - d[2]);
  out[4] = ember_rt::fma(two, d[1] - d[3], d[4] - d[2]);
  out[5] = ember_rt::fma(four, d[1], ember_rt::fma(-five, d[3], d[5]));
}

// out = A^T m: 4 outputs from 6 transformed values.
template <class V>
inline void output_1d(const V* m, V* out) {
  const V a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], d = m[3] - m[4];
  out[0] = m[0] + a + c;
  out[1] = ember_rt::fma(V(2.0f), d, b);
  out[2] = ember_rt::fma(V(4.0f), c, a);
  out[3] = ember_rt::fma(V(8.0f), d, b) + m[5];
}

EMBER_RT_LAZY
inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace winograd_detail

// u[k, o, c] = (G g G^T)[i, j] with k = 6 i + j, g = w[o, c] (3x3): winograd_filter.h's
// transform (the one the host runs on a saved model's weights), split over the threads.
template <class T>
inline void winograd_f43_filter(const LaunchContext* ctx, const T* w, T* u, int64_t O, int64_t C) {
  static_assert(std::is_same_v<T, float>, "the Winograd transforms take float32");
  const int64_t OC = O * C;
  parallel_for(ctx, OC, static_cast<double>(OC) * 200.0, [&](int64_t begin, int64_t end) {
    ember_rt::winograd_f43_filter_pairs(w, u, O, C, begin, end);
  });
}

// v[k, c, p] = (B^T d B)[i, j], k = 6 i + j, d the 6x6 input tile p of channel c of x
// [N, C, H, W] (padding ph, pw: zeros), for th x tw tiles per image.
template <class T>
inline void winograd_f43_input(const LaunchContext* ctx, const T* x, T* v, int64_t N, int64_t C,
                               int64_t H, int64_t W, int64_t ph, int64_t pw, int64_t th,
                               int64_t tw) {
  static_assert(std::is_same_v<T, float>, "the Winograd transforms take float32");
  using winograd_detail::input_1d;
  constexpr int L = vf::width;
  const int64_t P = N * th * tw;
  // Phases of a row: columns 4 q + r for q in [0, tw] (tile tw-1 reads q = tw for k = 4, 5),
  // padded to whole vectors plus one (the loads at q + 1).
  const int64_t qcap = winograd_detail::round_up(tw + 1, L) + L;
  const int64_t items = N * C * th;
  parallel_for(ctx, items, static_cast<double>(items * tw) * 36.0 * 12.0,
               [&](int64_t begin, int64_t end) {
                 // line: one input row with its padding; d[k][r]: row k of the tile row,
                 // phase r; t[i][r]: B^T along the rows.
                 const int64_t span = 4 * (tw + 1);
                 std::vector<float> buf(static_cast<size_t>(2 * 6 * 4 * qcap + span), 0.0f);
                 float* d = buf.data();
                 float* t = d + 6 * 4 * qcap;
                 float* line = t + 6 * 4 * qcap;
                 auto at = [&](float* base, int k, int r) { return base + (k * 4 + r) * qcap; };
                 // Columns [lo, hi) of a line hold x; the others are padding.
                 const int64_t lo = std::min(pw, span), hi = std::min(pw + W, span);
                 for (int64_t item = begin; item < end; ++item) {
                   const int64_t ty = item % th, c = (item / th) % C, n = item / (th * C);
                   const T* xc = x + (n * C + c) * H * W;
                   for (int k = 0; k < 6; ++k) {
                     const int64_t h = 4 * ty - ph + k;
                     if (h < 0 || h >= H) {
                       for (int r = 0; r < 4; ++r)
                         std::fill(at(d, k, r), at(d, k, r) + tw + 1, 0.0f);
                       continue;
                     }
                     std::fill(line, line + lo, 0.0f);
                     std::copy(xc + h * W, xc + h * W + (hi - lo), line + lo);
                     std::fill(line + hi, line + span, 0.0f);
                     float* d0 = at(d, k, 0);
                     float* d1 = at(d, k, 1);
                     float* d2 = at(d, k, 2);
                     float* d3 = at(d, k, 3);
                     for (int64_t q = 0; q <= tw; ++q) {
                       d0[q] = line[4 * q];
                       d1[q] = line[4 * q + 1];
                       d2[q] = line[4 * q + 2];
                       d3[q] = line[4 * q + 3];
                     }
                   }
                   // Along the rows: t[i][r] = sum_k B^T[i][k] d[k][r].
                   for (int r = 0; r < 4; ++r)
                     for (int64_t q = 0; q <= tw; q += L) {
                       vf dk[6], ti[6];
                       for (int k = 0; k < 6; ++k) dk[k] = vf::load(at(d, k, r) + q);
                       input_1d(dk, ti);
                       for (int i = 0; i < 6; ++i) ti[i].store(at(t, i, r) + q);
                     }
                   // Along the columns, tiles q .. q + L - 1 in the lanes.
                   const int64_t p0 = (n * th + ty) * tw;
                   for (int64_t q = 0; q < tw; q += L) {
                     const int lanes = static_cast<int>(std::min<int64_t>(L, tw - q));
                     for (int i = 0; i < 6; ++i) {
                       vf tk[6], vj[6];
                       for (int k = 0; k < 6; ++k) tk[k] = vf::load(at(t, i, k % 4) + q + k / 4);
                       input_1d(tk, vj);
                       for (int j = 0; j < 6; ++j) {
                         T* dst = v + ((i * 6 + j) * C + c) * P + p0 + q;
                         if (lanes == L) {
                           vj[j].store(dst);
                         } else {
                           vj[j].store_partial(dst, lanes);
                         }
                       }
                     }
                   }
                 }
               });
}

// y[n, o, 4 ty + a, 4 tx + b] = (A^T m A)[a, b], m[i, j] = m_in[6 i + j, o, p] for tile p =
// (n, ty, tx); y is [N, O, OH, OW] and only its elements are written.
template <class T>
inline void winograd_f43_output(const LaunchContext* ctx, const T* m, T* y, int64_t N, int64_t O,
                                int64_t OH, int64_t OW, int64_t th, int64_t tw) {
  static_assert(std::is_same_v<T, float>, "the Winograd transforms take float32");
  using winograd_detail::output_1d;
  constexpr int L = vf::width;
  const int64_t P = N * th * tw;
  const int64_t items = N * O * th;
  parallel_for(ctx, items, static_cast<double>(items * tw) * 36.0 * 8.0,
               [&](int64_t begin, int64_t end) {
                 float out[4][4][L];  // out[a][b][lane]: row a, column b of tile q + lane
                 for (int64_t item = begin; item < end; ++item) {
                   const int64_t ty = item % th, o = (item / th) % O, n = item / (th * O);
                   const int64_t p0 = (n * th + ty) * tw;
                   T* yo = y + (n * O + o) * OH * OW;
                   const int rows = static_cast<int>(std::min<int64_t>(4, OH - 4 * ty));
                   for (int64_t q = 0; q < tw; q += L) {
                     const int lanes = static_cast<int>(std::min<int64_t>(L, tw - q));
                     vf s[4][6];  // A^T along i, for each column j
                     for (int j = 0; j < 6; ++j) {
                       vf mi[6], sa[4];
                       for (int i = 0; i < 6; ++i) {
                         const T* src = m + ((i * 6 + j) * O + o) * P + p0 + q;
                         mi[i] = lanes == L ? vf::load(src) : vf::load_partial(src, lanes);
                       }
                       output_1d(mi, sa);
                       for (int a = 0; a < 4; ++a) s[a][j] = sa[a];
                     }
                     for (int a = 0; a < 4; ++a) {
                       vf yb[4];
                       output_1d(s[a], yb);
                       for (int b = 0; b < 4; ++b) yb[b].store(out[a][b]);
                     }
                     // Interleave the lanes back into rows of y.
                     const int64_t w0 = 4 * q;
                     const int cols = static_cast<int>(std::min<int64_t>(4 * lanes, OW - w0));
                     for (int a = 0; a < rows; ++a) {
                       T* row = yo + (4 * ty + a) * OW + w0;
                       for (int wi = 0; wi < cols; ++wi) row[wi] = out[a][wi % 4][wi / 4];
                     }
                   }
                 }
               });
}

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt::lib
