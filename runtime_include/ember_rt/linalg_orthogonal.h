// The orthogonal decompositions among the dense linear algebra routines (linalg.h, whose
// conventions they share): Householder QR (geqrf, and applying its reflectors as ormqr /
// orgqr do), symmetric eigendecomposition and the SVD. QR follows geqrf / ormqr (see
// householder()). Eigenvalues and singular values come from Jacobi rotations (two-sided on the
// symmetric matrix; one-sided on the columns for the SVD), which are accurate to double
// precision; a matrix with a NaN or an infinity gives NaN everywhere.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel.h"
#include "lazy.h"
#include "linalg.h"

namespace ember_rt::lib {

// ---- Householder QR ----------------------------------------------------------------------------
// LAPACK's dlarfg: for the vector (alpha, x) (x: len elements `stride` apart), H = I - tau v v^T
// with v = (1, x') maps it to (beta, 0): beta = -sign(alpha) |(alpha, x)|, tau = (beta -
// alpha) / beta, x' = x / (alpha - beta). x = 0 gives tau = 0 (H = I). Overwrites alpha with
// beta and x with x'; returns tau.
EMBER_RT_LAZY
inline double householder(double* alpha, double* x, int64_t len, int64_t stride) {
  double scale = 0.0;  // |x| with the largest element factored out (no overflow)
  for (int64_t i = 0; i < len; ++i) scale = std::max(scale, std::fabs(x[i * stride]));
  bool nan = false;
  for (int64_t i = 0; i < len; ++i) nan = nan || std::isnan(x[i * stride]);
  if (scale == 0.0 && !nan) return 0.0;
  double ss = 0.0;
  for (int64_t i = 0; i < len; ++i) {
    const double v = x[i * stride] / scale;
    ss += v * v;
  }
  const double xnorm = scale * std::sqrt(ss);
  const double beta = -std::copysign(std::hypot(*alpha, xnorm), *alpha);
  const double tau = (beta - *alpha) / beta;
  const double f = 1.0 / (*alpha - beta);
  for (int64_t i = 0; i < len; ++i) x[i * stride] *= f;
  *alpha = beta;
  return tau;
}

// Applies H = I - tau v v^T, v = (1, a[stride], a[2 stride], ...) of `len` elements, from the
// left to the rows r0 .. r0 + len of the row-major c (cols columns, columns c0 .. cols).
EMBER_RT_LAZY
inline void apply_householder(const double* v, int64_t stride, double tau, int64_t len, double* c,
                              int64_t cols, int64_t r0, int64_t c0) {
  if (tau == 0.0) return;
  for (int64_t col = c0; col < cols; ++col) {
    double s = c[r0 * cols + col];
    for (int64_t i = 1; i < len; ++i) s += v[i * stride] * c[(r0 + i) * cols + col];
    s *= tau;
    c[r0 * cols + col] -= s;
    for (int64_t i = 1; i < len; ++i) c[(r0 + i) * cols + col] -= s * v[i * stride];
  }
}

// geqrf on [batch, m, n]: out holds R on and above the diagonal and the reflectors' vectors
// below it (v_j = (1, out[j + 1 .., j])), tau [batch, min(m, n)]; A = H_0 H_1 ... H_{k-1} R.
template <class T>
inline void qr_factor(const LaunchContext* ctx, const T* a, T* out, T* tau, int64_t batch,
                      int64_t m, int64_t n) {
  const int64_t k = m < n ? m : n;
  for_matrices(ctx, batch, static_cast<double>(2 * m * n * k + 1), [&](int64_t b) {
    std::vector<double> w(static_cast<size_t>(m * n));
    load_matrix(a + b * m * n, w.data(), m * n);
    for (int64_t j = 0; j < k; ++j) {
      double* col = w.data() + j * n + j;
      const double t = householder(col, col + n, m - j - 1, n);
      tau[b * k + j] = static_cast<T>(t);
      const double beta = *col;
      *col = 1.0;
      apply_householder(col, n, t, m - j, w.data(), n, j, j + 1);
      *col = beta;
    }
    store_matrix(w.data(), out + b * m * n, m * n);
  });
}

// ormqr from the left: out = Q C (trans: Q^T C) for Q = H_0 ... H_{k-1} of geqrf's reflectors
// a [batch, m, na] (the first k columns read, below their diagonal) and tau [batch, k],
// C and out [batch, m, nc]. orgqr / householder_product is Q times the first columns of I.
template <class T>
inline void householder_apply(const LaunchContext* ctx, const T* a, const T* tau, const T* c,
                              T* out, int64_t batch, int64_t m, int64_t na, int64_t k, int64_t nc,
                              int64_t trans) {
  for_matrices(ctx, batch, static_cast<double>(4 * m * nc * k + 1), [&](int64_t b) {
    std::vector<double> v(static_cast<size_t>(m * na)), w(static_cast<size_t>(m * nc));
    load_matrix(a + b * m * na, v.data(), m * na);
    load_matrix(c + b * m * nc, w.data(), m * nc);
    for (int64_t s = 0; s < k; ++s) {
      const int64_t j = trans != 0 ? s : k - 1 - s;  // Q C applies H_{k-1} first
      if (j >= m || j >= na) continue;
      double* col = v.data() + j * na + j;
      *col = 1.0;
      apply_householder(col, na, static_cast<double>(tau[b * k + j]), m - j, w.data(), nc, j, 0);
    }
    store_matrix(w.data(), out + b * m * nc, m * nc);
  });
}

// ---- symmetric eigendecomposition and SVD -------------------------------------------------------
EMBER_RT_LAZY
inline bool all_finite(const double* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

// The order of keys: ascending (or descending), ties by index.
EMBER_RT_LAZY
inline std::vector<int64_t> sorted_order(const std::vector<double>& keys, bool descending) {
  std::vector<int64_t> idx(keys.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t x, int64_t y) {
    const double kx = keys[static_cast<size_t>(x)], ky = keys[static_cast<size_t>(y)];
    return descending ? kx > ky : kx < ky;
  });
  return idx;
}

// Cyclic Jacobi on the symmetric n x n row-major a (both triangles set): afterwards its
// diagonal holds the eigenvalues and, when v is given (n x n, row-major), v's columns the
// eigenvectors (v = the product of the rotations). Sweeps until every off-diagonal element is
// negligible next to its two diagonal elements (then set to zero) or exactly zero.
EMBER_RT_LAZY
inline void jacobi_eigen(double* a, double* v, int64_t n) {
  if (v != nullptr)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) v[i * n + j] = i == j ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0.0) continue;
        const double app = a[p * n + p], aqq = a[q * n + q];
        const double g = 100.0 * std::fabs(apq);
        if (std::fabs(app) + g == std::fabs(app) && std::fabs(aqq) + g == std::fabs(aqq)) {
          a[p * n + q] = a[q * n + p] = 0.0;
          continue;
        }
        rotated = true;
        const double theta = (aqq - app) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::hypot(1.0, theta));
        const double c = 1.0 / std::sqrt(1.0 + t * t), s = t * c;
        for (int64_t r = 0; r < n; ++r) {  // columns p and q
          const double x = a[r * n + p], y = a[r * n + q];
          a[r * n + p] = c * x - s * y;
          a[r * n + q] = s * x + c * y;
        }
        for (int64_t r = 0; r < n; ++r) {  // rows p and q
          const double x = a[p * n + r], y = a[q * n + r];
          a[p * n + r] = c * x - s * y;
          a[q * n + r] = s * x + c * y;
        }
        a[p * n + q] = a[q * n + p] = 0.0;
        if (v != nullptr)
          for (int64_t r = 0; r < n; ++r) {
            const double x = v[r * n + p], y = v[r * n + q];
            v[r * n + p] = c * x - s * y;
            v[r * n + q] = s * x + c * y;
          }
      }
    }
    if (!rotated) break;
  }
}

// Eigenvalues (ascending) w [batch, n] and, with vectors, eigenvectors (columns) v [batch,
// n, n] of the symmetric matrices whose lower triangles are a's [batch, n, n]. Each
// eigenvector is scaled to have a positive element of largest magnitude (the first such).
template <class T>
inline void symmetric_eigen(const LaunchContext* ctx, const T* a, T* w, T* vec, int64_t batch,
                            int64_t n) {
  for_matrices(ctx, batch, static_cast<double>(12 * n * n * n + 1), [&](int64_t b) {
    std::vector<double> s(static_cast<size_t>(n * n));
    const T* src = a + b * n * n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j <= i; ++j)
        s[static_cast<size_t>(i * n + j)] = s[static_cast<size_t>(j * n + i)] =
            static_cast<double>(src[i * n + j]);
    std::vector<double> v(vec != nullptr ? static_cast<size_t>(n * n) : 0);
    const bool finite = all_finite(s.data(), n * n);
    if (finite) jacobi_eigen(s.data(), vec != nullptr ? v.data() : nullptr, n);
    std::vector<double> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = finite ? s[i * n + i] : NAN;
    const std::vector<int64_t> order = sorted_order(values, false);
    for (int64_t i = 0; i < n; ++i)
      w[b * n + i] = static_cast<T>(values[static_cast<size_t>(order[static_cast<size_t>(i)])]);
    if (vec == nullptr) return;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t col = order[static_cast<size_t>(i)];
      double big = 0.0;
      for (int64_t r = 0; r < n; ++r)
        if (std::fabs(v[static_cast<size_t>(r * n + col)]) > std::fabs(big))
          big = v[static_cast<size_t>(r * n + col)];
      const double sign = big < 0 ? -1.0 : 1.0;
      for (int64_t r = 0; r < n; ++r)
        vec[b * n * n + r * n + i] =
            static_cast<T>(finite ? sign * v[static_cast<size_t>(r * n + col)] : NAN);
    }
  });
}

template <class T>
inline void eigh(const LaunchContext* ctx, const T* a, T* w, T* v, int64_t batch, int64_t n) {
  symmetric_eigen<T>(ctx, a, w, v, batch, n);
}

template <class T>
inline void eigvalsh(const LaunchContext* ctx, const T* a, T* w, int64_t batch, int64_t n) {
  symmetric_eigen<T>(ctx, a, w, nullptr, batch, n);
}

// One-sided Jacobi (Hestenes) on the c columns (each r long, stored contiguously: col j at
// x + j r) of X: rotates pairs of columns until every pair is orthogonal to working
// precision; v (c x c, columns contiguous too, when given) accumulates the rotations.
EMBER_RT_LAZY
inline void jacobi_columns(double* x, double* v, int64_t r, int64_t c) {
  if (v != nullptr)
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < c; ++j) v[i * c + j] = i == j ? 1.0 : 0.0;
  constexpr double eps = 2.220446049250313e-16;
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < c; ++p) {
      for (int64_t q = p + 1; q < c; ++q) {
        double* xp = x + p * r;
        double* xq = x + q * r;
        double alpha = 0.0, beta = 0.0, gamma = 0.0;
        for (int64_t i = 0; i < r; ++i) {
          alpha += xp[i] * xp[i];
          beta += xq[i] * xq[i];
          gamma += xp[i] * xq[i];
        }
        if (gamma == 0.0 || std::fabs(gamma) <= eps * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2.0 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::hypot(1.0, zeta));
        const double cs = 1.0 / std::sqrt(1.0 + t * t), sn = cs * t;
        for (int64_t i = 0; i < r; ++i) {
          const double a = xp[i], b = xq[i];
          xp[i] = cs * a - sn * b;
          xq[i] = sn * a + cs * b;
        }
        if (v != nullptr) {
          double* vp = v + p * c;
          double* vq = v + q * c;
          for (int64_t i = 0; i < c; ++i) {
            const double a = vp[i], b = vq[i];
            vp[i] = cs * a - sn * b;
            vq[i] = sn * a + cs * b;
          }
        }
      }
    }
    if (!rotated) break;
  }
}

// Thin SVD of [batch, m, n]: s [batch, k] descending (k = min(m, n)) and, with vectors, u
// [batch, m, k] and vh [batch, k, n] with A = U diag(s) Vh. Columns of U for zero singular
// values complete an orthonormal set (Gram-Schmidt on unit vectors). Each singular pair is
// scaled so that the element of largest magnitude of its (shorter side's) vector is positive.
template <class T>
inline void singular_values(const LaunchContext* ctx, const T* a, T* s, T* u, T* vh, int64_t batch,
                            int64_t m, int64_t n) {
  const int64_t k = m < n ? m : n, big = m < n ? n : m;
  const bool wide = m < n;  // work on A^T: its columns are A's rows
  for_matrices(ctx, batch, static_cast<double>(10 * big * k * k + 1), [&](int64_t b) {
    const T* src = a + b * m * n;
    // x: the k columns (each `big` long) of A (tall) or A^T (wide).
    std::vector<double> x(static_cast<size_t>(big * k)), v(static_cast<size_t>(k * k));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        x[static_cast<size_t>(wide ? i * n + j : j * m + i)] = static_cast<double>(src[i * n + j]);
    const bool finite = all_finite(x.data(), big * k);
    const bool vectors = u != nullptr;
    if (finite) jacobi_columns(x.data(), vectors ? v.data() : nullptr, big, k);
    std::vector<double> norms(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      double sq = 0.0;
      for (int64_t i = 0; i < big; ++i)
        sq += x[static_cast<size_t>(j * big + i)] * x[static_cast<size_t>(j * big + i)];
      norms[static_cast<size_t>(j)] = finite ? std::sqrt(sq) : NAN;
    }
    const std::vector<int64_t> order = sorted_order(norms, true);
    for (int64_t j = 0; j < k; ++j)
      s[b * k + j] = static_cast<T>(norms[static_cast<size_t>(order[static_cast<size_t>(j)])]);
    if (!vectors) return;
    // Left vectors of the worked matrix (big x k, columns), sorted; right ones (k x k).
    std::vector<double> left(static_cast<size_t>(big * k)), right(static_cast<size_t>(k * k));
    const double smax = k > 0 ? norms[static_cast<size_t>(order[0])] : 0.0;
    std::vector<int64_t> missing;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t col = order[static_cast<size_t>(j)];
      const double nrm = norms[static_cast<size_t>(col)];
      for (int64_t i = 0; i < k; ++i) right[j * k + i] = v[static_cast<size_t>(col * k + i)];
      if (!(nrm > smax * 1e-300) || nrm == 0.0) {
        missing.push_back(j);
        continue;
      }
      for (int64_t i = 0; i < big; ++i) left[j * big + i] = x[col * big + i] / nrm;
    }
    // Complete the left vectors of zero singular values: unit vectors made orthogonal to the
    // others (twice), the first that keeps a sizeable norm.
    int64_t unit = 0;
    for (const int64_t j : missing) {
      double* col = left.data() + j * big;
      for (; unit < big; ++unit) {
        for (int64_t i = 0; i < big; ++i) col[i] = i == unit ? 1.0 : 0.0;
        for (int pass = 0; pass < 2; ++pass)
          for (int64_t o = 0; o < k; ++o) {  // (missing ones not completed yet are zero)
            if (o == j) continue;
            const double* other = left.data() + o * big;
            double d = 0.0;
            for (int64_t i = 0; i < big; ++i) d += other[i] * col[i];
            for (int64_t i = 0; i < big; ++i) col[i] -= d * other[i];
          }
        double sq = 0.0;
        for (int64_t i = 0; i < big; ++i) sq += col[i] * col[i];
        if (sq > 0.25) {
          const double f = 1.0 / std::sqrt(sq);
          for (int64_t i = 0; i < big; ++i) col[i] *= f;
          ++unit;
          break;
        }
      }
    }
    // Signs: the largest element of each right vector (the shorter side's) positive.
    for (int64_t j = 0; j < k; ++j) {
      double lead = 0.0;
      for (int64_t i = 0; i < k; ++i)
        if (std::fabs(right[j * k + i]) > std::fabs(lead)) lead = right[j * k + i];
      if (lead < 0) {
        for (int64_t i = 0; i < k; ++i) right[j * k + i] = -right[j * k + i];
        for (int64_t i = 0; i < big; ++i) left[j * big + i] = -left[j * big + i];
      }
    }
    // A = L S R^T (tall) or A^T = L S R^T, A = R S L^T (wide).
    T* uo = u + b * m * k;
    T* vo = vh + b * k * n;
    const std::vector<double>& uc = wide ? right : left;  // U's columns, m long
    const std::vector<double>& vc = wide ? left : right;  // V's columns, n long
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j)
        uo[i * k + j] = static_cast<T>(finite ? uc[static_cast<size_t>(j * m + i)] : NAN);
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < n; ++i)
        vo[j * n + i] = static_cast<T>(finite ? vc[static_cast<size_t>(j * n + i)] : NAN);
  });
}

template <class T>
inline void svd(const LaunchContext* ctx, const T* a, T* s, T* u, T* vh, int64_t batch, int64_t m,
                int64_t n) {
  singular_values<T>(ctx, a, s, u, vh, batch, m, n);
}

template <class T>
inline void svdvals(const LaunchContext* ctx, const T* a, T* s, int64_t batch, int64_t m,
                    int64_t n) {
  singular_values<T>(ctx, a, s, nullptr, nullptr, batch, m, n);
}

}  // namespace ember_rt::lib
