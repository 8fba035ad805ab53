// The Winograd F(4x4, 3x3) filter transform U = G g G^T (winograd.h) without SIMD, so that
// the kernels (winograd_f43_filter) and the host (a saved model stores the 3x3 weights and
// transforms them at load, ExecPlan::prepared) compute it alike, bit for bit, whatever the
// flags each was compiled with.
//
// G = diag(s) H, s = (1/4, 1/6, 1/6, 1/24, 1/24, 1), where H's entries are 0, +-1, +-2 and 4:
//
//   H = [ 1  0  0;  -1 -1 -1;  -1  1 -1;  1  2  4;  1 -2  4;  0  0  1 ]
//
// so U[i][j] = s_i s_j (H g H^T)[i][j]. H g H^T takes only additions and products by powers
// of two, which are exact: contracting a product and an addition into an fma
// (-ffp-contract=fast with FMA instructions) gives the same result as not contracting. Each
// element is then scaled once (a product, nothing to contract with) and rounded to float.
// In double throughout.
#pragma once

#include <cstdint>

namespace ember_rt {

namespace winograd_filter_detail {

// out[i] = (H x)[i], x[0..2] three values a stride apart (a column or a row of a 3x3 block).
inline void h_times(double x0, double x1, double x2, double* out, int64_t stride) {
  const double a = x0 + x2, b = x0 + 4.0 * x2;
  out[0 * stride] = x0;
  out[1 * stride] = -(a + x1);
  out[2 * stride] = x1 - a;
  out[3 * stride] = b + 2.0 * x1;
  out[4 * stride] = b - 2.0 * x1;
  out[5 * stride] = x2;
}

inline constexpr double kS[6] = {1.0 / 4, 1.0 / 6, 1.0 / 6, 1.0 / 24, 1.0 / 24, 1.0};

}  // namespace winograd_filter_detail

// u[k, o, c] = (G g G^T)[i, j], k = 6 i + j, g = w[o, c] (3x3, row-major), for the pairs
// oc = o * C + c in [begin, end) of the O * C; u is [36, O, C].
inline void winograd_f43_filter_pairs(const float* w, float* u, int64_t O, int64_t C, int64_t begin,
                                      int64_t end) {
  using winograd_filter_detail::h_times;
  using winograd_filter_detail::kS;
  const int64_t OC = O * C;
  for (int64_t oc = begin; oc < end; ++oc) {
    const float* g = w + oc * 9;
    double t[6][3];  // H g: column l of g gives column l of t
    for (int l = 0; l < 3; ++l) h_times(g[l], g[3 + l], g[6 + l], &t[0][l], 3);
    for (int i = 0; i < 6; ++i) {
      double v[6];  // row i of (H g) H^T
      h_times(t[i][0], t[i][1], t[i][2], v, 1);
      for (int j = 0; j < 6; ++j)
        u[(i * 6 + j) * OC + oc] = static_cast<float>(v[j] * (kS[i] * kS[j]));
    }
  }
}

}  // namespace ember_rt
