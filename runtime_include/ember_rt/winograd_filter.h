// The Winograd F(4x4, 3x3) filter transform U = G g G^T (winograd.h) without SIMD, so that
// the kernels (winograd_f43_filter) and the host (a saved model stores the 3x3 weights and
// transforms them at load, ExecPlan::prepared) compute it alike, bit for bit, whatever ISA
// and FMA contraction each was compiled with (not with -ffast-math, which reorders sums).
//
// G = diag(s) H, s = (1/4, 1/6, 1/6, 1/24, 1/24, 1), where H's entries are 0, +-1, +-2 and 4:
//
//   H = [ 1  0  0;  -1 -1 -1;  -1  1 -1;  1  2  4;  1 -2  4;  0  0  1 ]
//
// so U[i][j] = s_i s_j (H g H^T)[i][j]. H g H^T takes additions and products by powers of
// two only; those products are exact, so contracting a product and an addition into an fma
// (-ffp-contract=fast with FMA instructions) rounds exactly as the addition alone does. Each
// element is then scaled once (a product, nothing to contract with) and rounded to float.
// In double throughout; within one float rounding of G g G^T unless the additions cancel.
#pragma once

#include <cstdint>

#include "lazy.h"

namespace ember_rt {

namespace winograd_filter_detail {

inline constexpr int64_t kBlock = 64;  // pairs per block
inline constexpr double kS[6] = {1.0 / 4, 1.0 / 6, 1.0 / 6, 1.0 / 24, 1.0 / 24, 1.0};

// out[i][p] = (H x)[i] for the kBlock columns p of x[0..2] (one value per pair each).
EMBER_RT_LAZY
inline void h_times(const double* x0, const double* x1, const double* x2, double (*out)[kBlock]) {
  for (int64_t p = 0; p < kBlock; ++p) {
    const double a = x0[p] + x2[p], b = x0[p] + 4.0 * x2[p];
    out[0][p] = x0[p];
    out[1][p] = -(a + x1[p]);
    out[2][p] = x1[p] - a;
    out[3][p] = b + 2.0 * x1[p];
    out[4][p] = b - 2.0 * x1[p];
    out[5][p] = x2[p];
  }
}

}  // namespace winograd_filter_detail

// u[k, o, c] = (G g G^T)[i, j], k = 6 i + j, g = w[o, c] (3x3, row-major), for the pairs
// oc = o * C + c in [begin, end) of the O * C; u is [36, O, C]. In blocks of kBlock pairs,
// each step along the block (vectors of pairs), and u written along its rows (its 36 rows
// are O * C floats apart).
EMBER_RT_LAZY
inline void winograd_f43_filter_pairs(const float* w, float* u, int64_t O, int64_t C, int64_t begin,
                                      int64_t end) {
  using winograd_filter_detail::h_times;
  using winograd_filter_detail::kBlock;
  using winograd_filter_detail::kS;
  const int64_t OC = O * C;
  double g[9][kBlock];     // g[a * 3 + b][p]: element (a, b) of pair p's 3x3 block
  double t[3][6][kBlock];  // t[l][i][p] = (H g)[i][l]
  double v[6][kBlock];     // row i of (H g) H^T, one i at a time
  for (int64_t b0 = begin; b0 < end; b0 += kBlock) {
    const int64_t n = end - b0 < kBlock ? end - b0 : kBlock;
    for (int64_t p = 0; p < kBlock; ++p)
      for (int e = 0; e < 9; ++e) g[e][p] = p < n ? w[(b0 + p) * 9 + e] : 0.0;
    for (int l = 0; l < 3; ++l) h_times(g[l], g[3 + l], g[6 + l], t[l]);
    for (int i = 0; i < 6; ++i) {
      h_times(t[0][i], t[1][i], t[2][i], v);
      for (int j = 0; j < 6; ++j) {
        const double scale = kS[i] * kS[j];
        float* row = u + (i * 6 + j) * OC + b0;
        for (int64_t p = 0; p < n; ++p) row[p] = static_cast<float>(v[j][p] * scale);
      }
    }
  }
}

}  // namespace ember_rt
