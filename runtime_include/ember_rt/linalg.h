// Dense linear algebra routines that Call stages invoke (ir::StageKind::Call), next to
// library.h: LU with partial pivoting, Cholesky, triangular solves, solves from an LU
// factorization, determinants and the matrix exponential. The orthogonal decompositions
// (Householder QR, symmetric eigendecomposition and the SVD) are in linalg_orthogonal.h, on
// this header's batch helpers (for_matrices, load_matrix, store_matrix).
//
// Every routine works on a batch of matrices (row-major, contiguous, the batch the leading
// dimensions flattened) and splits the batch across threads with parallel_for; each matrix
// is computed the same way at every thread count. float32 and float64 matrices are computed
// in double and rounded once when stored. Pivots and infos are int32, as torch returns them.
//
// LU follows LAPACK's getrf: in column j the pivot is the first row with the largest |value|
// on or below the diagonal; pivots are 1-based; a zero pivot is kept (no row is swapped,
// nothing is divided) and info is the 1-based column of the first one. Cholesky follows
// potrf (lower): info is the order of the first leading minor that is not positive
// definite. A routine given check != 0 reports such an info as bad data (KernelError
// kLinalg), which the runtime raises as ember::DataError.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel.h"
#include "lazy.h"

namespace ember_rt::lib {

// f(b) for each matrix b of the batch, across threads.
template <class F>
inline void for_matrices(const LaunchContext* ctx, int64_t batch, double cost_each, F&& f) {
  if (batch <= 0) return;
  parallel_for(ctx, batch, static_cast<double>(batch) * cost_each, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) f(b);
  });
}

// getrf on an m x n row-major matrix a (in place): pivots piv[0, min(m, n)) 1-based; returns
// info (0, or the 1-based column of the first zero pivot).
EMBER_RT_LAZY
inline int32_t lu_in_place(double* a, int32_t* piv, int64_t m, int64_t n) {
  const int64_t k = m < n ? m : n;
  int32_t info = 0;
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    double best = std::fabs(a[j * n + j]);
    for (int64_t i = j + 1; i < m; ++i) {
      const double v = std::fabs(a[i * n + j]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    piv[j] = static_cast<int32_t>(p + 1);
    const double pv = a[p * n + j];
    if (pv != 0.0) {
      if (p != j)
        for (int64_t c = 0; c < n; ++c) std::swap(a[j * n + c], a[p * n + c]);
      for (int64_t i = j + 1; i < m; ++i) a[i * n + j] /= pv;
    } else if (info == 0) {
      info = static_cast<int32_t>(j + 1);
    }
    for (int64_t i = j + 1; i < m; ++i) {
      const double l = a[i * n + j];
      if (l == 0.0) continue;
      for (int64_t c = j + 1; c < n; ++c) a[i * n + c] -= l * a[j * n + c];
    }
  }
  return info;
}

template <class T>
inline void load_matrix(const T* src, double* dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<double>(src[i]);
}

template <class T>
inline void store_matrix(const double* src, T* dst, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<T>(src[i]);
}

EMBER_RT_LAZY
[[gnu::cold]] inline void report_linalg(const LaunchContext* ctx, const char* site, int64_t info,
                                        int64_t batch_index) {
  report_error(ctx, KernelError::kLinalg, site, info, batch_index);
}

// LU factorization of [batch, m, n]: lu (same shape), pivots [batch, min(m, n)], info [batch].
template <class T>
inline void lu_factor(const LaunchContext* ctx, const T* a, T* lu, int32_t* piv, int32_t* info,
                      int64_t batch, int64_t m, int64_t n, int64_t check) {
  const int64_t k = m < n ? m : n;
  for_matrices(ctx, batch, static_cast<double>(m * n * k + 1), [&](int64_t b) {
    std::vector<double> w(static_cast<size_t>(m * n));
    load_matrix(a + b * m * n, w.data(), m * n);
    const int32_t i = lu_in_place(w.data(), piv + b * k, m, n);
    info[b] = i;
    if (i != 0 && check != 0) report_linalg(ctx, "a singular matrix (zero pivot)", i, b);
    store_matrix(w.data(), lu + b * m * n, m * n);
  });
}

// Solves op(A) X = B in place for x [n, k] (B on entry) with A n x n triangular (only its
// upper or lower triangle read; unit: its diagonal taken as ones), op(A) = A or A^T.
EMBER_RT_LAZY
inline void tri_solve_in_place(const double* a, double* x, int64_t n, int64_t k, bool upper,
                               bool unit, bool trans) {
  // Element (r, c) of op(A).
  auto at = [&](int64_t r, int64_t c) { return trans ? a[c * n + r] : a[r * n + c]; };
  const bool op_upper = upper != trans;
  for (int64_t col = 0; col < k; ++col) {
    if (op_upper) {
      for (int64_t r = n - 1; r >= 0; --r) {
        double s = x[r * k + col];
        for (int64_t c = r + 1; c < n; ++c) s -= at(r, c) * x[c * k + col];
        x[r * k + col] = unit ? s : s / at(r, r);
      }
    } else {
      for (int64_t r = 0; r < n; ++r) {
        double s = x[r * k + col];
        for (int64_t c = 0; c < r; ++c) s -= at(r, c) * x[c * k + col];
        x[r * k + col] = unit ? s : s / at(r, r);
      }
    }
  }
}

// op(A) X = B for A [batch, n, n] triangular, B and X [batch, n, k].
template <class T>
inline void triangular_solve(const LaunchContext* ctx, const T* a, const T* b, T* x, int64_t batch,
                             int64_t n, int64_t k, int64_t upper, int64_t unit, int64_t trans) {
  for_matrices(ctx, batch, static_cast<double>(n * n * k + 1), [&](int64_t i) {
    std::vector<double> wa(static_cast<size_t>(n * n)), wx(static_cast<size_t>(n * k));
    load_matrix(a + i * n * n, wa.data(), n * n);
    load_matrix(b + i * n * k, wx.data(), n * k);
    tri_solve_in_place(wa.data(), wx.data(), n, k, upper != 0, unit != 0, trans != 0);
    store_matrix(wx.data(), x + i * n * k, n * k);
  });
}

// Solves A X = B (trans: A^T X = B) in place from A = P L U (lu, 1-based pivots piv).
EMBER_RT_LAZY
inline void lu_solve_in_place(const double* lu, const int64_t* perm_swaps, double* x, int64_t n,
                              int64_t k, bool trans) {
  auto swap_rows = [&](int64_t r, int64_t s) {
    if (r != s)
      for (int64_t c = 0; c < k; ++c) std::swap(x[r * k + c], x[s * k + c]);
  };
  if (!trans) {
    for (int64_t i = 0; i < n; ++i) swap_rows(i, perm_swaps[i]);
    tri_solve_in_place(lu, x, n, k, false, true, false);
    tri_solve_in_place(lu, x, n, k, true, false, false);
  } else {
    tri_solve_in_place(lu, x, n, k, true, false, true);
    tri_solve_in_place(lu, x, n, k, false, true, true);
    for (int64_t i = n - 1; i >= 0; --i) swap_rows(i, perm_swaps[i]);
  }
}

// X = A^-1 B (trans: A^-T B) for lu [batch, n, n] and pivots [batch, n] from lu_factor,
// B and X [batch, n, k]. A pivot outside [1, n] is bad data.
template <class T, class P>
inline void lu_solve(const LaunchContext* ctx, const T* lu, const P* piv, const T* b, T* x,
                     int64_t batch, int64_t n, int64_t k, int64_t trans) {
  for_matrices(ctx, batch, static_cast<double>(2 * n * n * k + 1), [&](int64_t i) {
    std::vector<double> wa(static_cast<size_t>(n * n)), wx(static_cast<size_t>(n * k));
    std::vector<int64_t> swaps(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r)
      swaps[static_cast<size_t>(r)] =
          checked_index(static_cast<int64_t>(piv[i * n + r]) - 1, n, ctx, "the pivots");
    load_matrix(lu + i * n * n, wa.data(), n * n);
    load_matrix(b + i * n * k, wx.data(), n * k);
    lu_solve_in_place(wa.data(), swaps.data(), wx.data(), n, k, trans != 0);
    store_matrix(wx.data(), x + i * n * k, n * k);
  });
}

// X = A^-1 B for A [batch, n, n], B and X [batch, n, k] (an LU factorization in double);
// info [batch] as lu_factor's. A singular A gives inf / NaN (torch's solve_ex too).
template <class T>
inline void solve(const LaunchContext* ctx, const T* a, const T* b, T* x, int32_t* info,
                  int64_t batch, int64_t n, int64_t k, int64_t check) {
  for_matrices(ctx, batch, static_cast<double>(n * n * (n + 2 * k) + 1), [&](int64_t i) {
    std::vector<double> wa(static_cast<size_t>(n * n)), wx(static_cast<size_t>(n * k));
    std::vector<int32_t> piv(static_cast<size_t>(n));
    std::vector<int64_t> swaps(static_cast<size_t>(n));
    load_matrix(a + i * n * n, wa.data(), n * n);
    load_matrix(b + i * n * k, wx.data(), n * k);
    const int32_t inf = lu_in_place(wa.data(), piv.data(), n, n);
    info[i] = inf;
    if (inf != 0 && check != 0) report_linalg(ctx, "a singular matrix (zero pivot)", inf, i);
    for (int64_t r = 0; r < n; ++r) swaps[static_cast<size_t>(r)] = piv[static_cast<size_t>(r)] - 1;
    lu_solve_in_place(wa.data(), swaps.data(), wx.data(), n, k, false);
    store_matrix(wx.data(), x + i * n * k, n * k);
  });
}

// Determinants of [batch, n, n] from an LU factorization in double: det [batch], or
// sign and log|det| (slogdet: sign 0 and -inf for a singular matrix).
template <class T>
inline double det_of(const T* a, int64_t n, double* sign, double* logabs) {
  std::vector<double> w(static_cast<size_t>(n * n));
  std::vector<int32_t> piv(static_cast<size_t>(n));
  load_matrix(a, w.data(), n * n);
  lu_in_place(w.data(), piv.data(), n, n);
  double det = 1.0, s = 1.0, l = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = w[static_cast<size_t>(j * n + j)];
    det *= d;
    if (piv[static_cast<size_t>(j)] != j + 1) {
      det = -det;
      s = -s;
    }
    s *= d > 0 ? 1.0 : (d < 0 ? -1.0 : (std::isnan(d) ? d : 0.0));
    l += std::log(std::fabs(d));
  }
  *sign = s;
  *logabs = l;
  return det;
}

template <class T>
inline void det(const LaunchContext* ctx, const T* a, T* out, int64_t batch, int64_t n) {
  for_matrices(ctx, batch, static_cast<double>(n * n * n + 1), [&](int64_t i) {
    double s, l;
    out[i] = static_cast<T>(det_of(a + i * n * n, n, &s, &l));
  });
}

template <class T>
inline void slogdet(const LaunchContext* ctx, const T* a, T* sign, T* logabs, int64_t batch,
                    int64_t n) {
  for_matrices(ctx, batch, static_cast<double>(n * n * n + 1), [&](int64_t i) {
    double s, l;
    det_of(a + i * n * n, n, &s, &l);
    sign[i] = static_cast<T>(s);
    logabs[i] = static_cast<T>(s == 0.0 ? -INFINITY : l);
  });
}

// Cholesky of [batch, n, n] (its lower triangle read): l lower triangular (zeros above),
// info [batch] the order of the first leading minor that is not positive definite (the
// rows from it on are left zero).
template <class T>
inline void cholesky(const LaunchContext* ctx, const T* a, T* l, int32_t* info, int64_t batch,
                     int64_t n, int64_t check) {
  for_matrices(ctx, batch, static_cast<double>(n * n * n / 3 + 1), [&](int64_t i) {
    std::vector<double> w(static_cast<size_t>(n * n), 0.0);
    const T* src = a + i * n * n;
    int32_t bad = 0;
    for (int64_t j = 0; j < n && bad == 0; ++j) {
      double d = static_cast<double>(src[j * n + j]);
      for (int64_t c = 0; c < j; ++c)
        d -= w[static_cast<size_t>(j * n + c)] * w[static_cast<size_t>(j * n + c)];
      if (!(d > 0.0)) {
        bad = static_cast<int32_t>(j + 1);
        break;
      }
      const double djj = std::sqrt(d);
      w[static_cast<size_t>(j * n + j)] = djj;
      for (int64_t r = j + 1; r < n; ++r) {
        double s = static_cast<double>(src[r * n + j]);
        for (int64_t c = 0; c < j; ++c)
          s -= w[static_cast<size_t>(r * n + c)] * w[static_cast<size_t>(j * n + c)];
        w[static_cast<size_t>(r * n + j)] = s / djj;
      }
    }
    if (bad != 0) {
      for (int64_t r = bad - 1; r < n; ++r)
        for (int64_t c = 0; c < n; ++c) w[static_cast<size_t>(r * n + c)] = 0.0;
      if (check != 0) report_linalg(ctx, "a matrix that is not positive-definite", bad, i);
    }
    info[i] = bad;
    store_matrix(w.data(), l + i * n * n, n * n);
  });
}

// exp(A) for [batch, n, n]: scaling and squaring with the degree-13 Pade approximant
// (Higham 2005), in double.
EMBER_RT_LAZY
inline void matrix_exp_in_place(double* a, int64_t n) {
  const size_t nn = static_cast<size_t>(n * n);
  auto mul = [n, nn](const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<double> z(nn, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < n; ++k) {
        const double v = x[static_cast<size_t>(i * n + k)];
        for (int64_t j = 0; j < n; ++j)
          z[static_cast<size_t>(i * n + j)] += v * y[static_cast<size_t>(k * n + j)];
      }
    return z;
  };
  double norm1 = 0.0;  // max column sum of |a|
  for (int64_t j = 0; j < n; ++j) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += std::fabs(a[i * n + j]);
    if (s > norm1 || std::isnan(s)) norm1 = s;
  }
  if (!std::isfinite(norm1)) {
    for (size_t i = 0; i < nn; ++i) a[i] = NAN;
    return;
  }
  constexpr double theta13 = 5.371920351148152;
  int squarings = 0;
  if (norm1 > theta13) squarings = static_cast<int>(std::ceil(std::log2(norm1 / theta13)));
  const double scale = std::ldexp(1.0, -squarings);
  std::vector<double> A(nn);
  for (size_t i = 0; i < nn; ++i) A[i] = a[i] * scale;
  static const double c[14] = {64764752532480000.0,
                               32382376266240000.0,
                               7771770303897600.0,
                               1187353796428800.0,
                               129060195264000.0,
                               10559470521600.0,
                               670442572800.0,
                               33522128640.0,
                               1323241920.0,
                               40840800.0,
                               960960.0,
                               16380.0,
                               182.0,
                               1.0};
  const std::vector<double> A2 = mul(A, A), A4 = mul(A2, A2), A6 = mul(A4, A2);
  std::vector<double> u1(nn), v(nn), w1(nn);
  for (size_t i = 0; i < nn; ++i) {
    u1[i] = c[13] * A6[i] + c[11] * A4[i] + c[9] * A2[i];
    w1[i] = c[12] * A6[i] + c[10] * A4[i] + c[8] * A2[i];
  }
  std::vector<double> u = mul(A6, u1), w = mul(A6, w1);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const size_t e = static_cast<size_t>(i * n + j);
      const double id = i == j ? 1.0 : 0.0;
      u[e] += c[7] * A6[e] + c[5] * A4[e] + c[3] * A2[e] + c[1] * id;
      w[e] += c[6] * A6[e] + c[4] * A4[e] + c[2] * A2[e] + c[0] * id;
    }
  }
  const std::vector<double> U = mul(A, u);
  // (V - U) X = (V + U)
  std::vector<double> lhs(nn), rhs(nn);
  for (size_t e = 0; e < nn; ++e) {
    lhs[e] = w[e] - U[e];
    rhs[e] = w[e] + U[e];
  }
  std::vector<int32_t> piv(static_cast<size_t>(n));
  std::vector<int64_t> swaps(static_cast<size_t>(n));
  lu_in_place(lhs.data(), piv.data(), n, n);
  for (int64_t r = 0; r < n; ++r) swaps[static_cast<size_t>(r)] = piv[static_cast<size_t>(r)] - 1;
  lu_solve_in_place(lhs.data(), swaps.data(), rhs.data(), n, n, false);
  for (int s = 0; s < squarings; ++s) rhs = mul(rhs, rhs);
  for (size_t e = 0; e < nn; ++e) a[e] = rhs[e];
}

template <class T>
inline void matrix_exp(const LaunchContext* ctx, const T* a, T* out, int64_t batch, int64_t n) {
  for_matrices(ctx, batch, static_cast<double>(12 * n * n * n + 1), [&](int64_t i) {
    std::vector<double> w(static_cast<size_t>(n * n));
    load_matrix(a + i * n * n, w.data(), n * n);
    matrix_exp_in_place(w.data(), n);
    store_matrix(w.data(), out + i * n * n, n * n);
  });
}

}  // namespace ember_rt::lib
