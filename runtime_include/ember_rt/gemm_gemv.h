// The GEMM template's matrix-vector path (M == 1 or N == 1, memory bound); see gemm.h.
#pragma once

#include "gemm_base.h"
#include "lazy.h"

namespace ember_rt {
inline namespace EMBER_RT_ISA_NS {
namespace gemm_detail {

// ---- matrix-vector (M == 1 or N == 1) ------------------------------------------------------

// y[j] = sum_k x[k] * Wt[k * wk + j * wj] for j in [0, J), x contiguous. Returns false when
// neither wj nor wk is 1 (the caller then uses the packed path).
//   wj == 1: rows of Wt are contiguous: y += x[k] * row k, four rows per pass over y.
//   wk == 1: columns contiguous: four dot products at a time.
// done(j0, len) is called for each finished segment y[j0 : j0 + len).
// Outputs per gemv task: contiguous rows of Wt (wj == 1) stream best in long segments, and
// y[j0 : j0 + JB] stays in L1; dot products (wk == 1) take 16 outputs per task. Segments of y
// updated in place are whole cache lines (16 floats): two threads updating one line at every
// step of k ran 3x slower than one thread alone.
constexpr int64_t gemv_block(int64_t J, int64_t K, bool rows_contiguous, int threads) {
  if (!rows_contiguous) return 16;
  const int64_t JB = round_up(ceil_div(J, ceil_div(J, 4096)), vf::width);
  const int64_t per_thread = round_up(ceil_div(J, threads), 16);
  return 2.0 * static_cast<double>(K) * J >= 32768.0 && per_thread < JB ? per_thread : JB;
}

template <class Done>
inline bool gemv(const float* x, const float* Wt, int64_t wk, int64_t wj, float* y, int64_t ys,
                 int64_t K, int64_t J, const LaunchContext* ctx, Done&& done) {
  constexpr int W = vf::width;
  const double work = 2.0 * static_cast<double>(K) * J;
  if (wj == 1 && ys == 1) {
    const int64_t jb = gemv_block(J, K, true, num_threads(ctx));
    parallel_for(ctx, ceil_div(J, jb), work, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t j0 = c * jb, len = J - j0 < jb ? J - j0 : jb;
        float* yy = y + j0;
        for (int64_t j = 0; j < len; ++j) yy[j] = 0.0f;
        int64_t k = 0;
        for (; k + 4 <= K; k += 4) {
          const float* r = Wt + k * wk + j0;
          const vf x0(x[k]), x1(x[k + 1]), x2(x[k + 2]), x3(x[k + 3]);
          int64_t j = 0;
          for (; j + W <= len; j += W) {
            vf acc = vf::load(yy + j);
            acc = fma(x0, vf::load(r + j), acc);
            acc = fma(x1, vf::load(r + wk + j), acc);
            acc = fma(x2, vf::load(r + 2 * wk + j), acc);
            acc = fma(x3, vf::load(r + 3 * wk + j), acc);
            acc.store(yy + j);
          }
          for (; j < len; ++j) {
            float acc = fma(x[k], r[j], yy[j]);
            acc = fma(x[k + 1], r[wk + j], acc);
            acc = fma(x[k + 2], r[2 * wk + j], acc);
            yy[j] = fma(x[k + 3], r[3 * wk + j], acc);
          }
        }
        for (; k < K; ++k) {
          const float* r = Wt + k * wk + j0;
          const vf xk(x[k]);
          int64_t j = 0;
          for (; j + W <= len; j += W) fma(xk, vf::load(r + j), vf::load(yy + j)).store(yy + j);
          for (; j < len; ++j) yy[j] = fma(x[k], r[j], yy[j]);
        }
        done(j0, len);
      }
    });
    return true;
  }
  if (wk == 1) {
    const int64_t JB = gemv_block(J, K, false, num_threads(ctx));
    parallel_for(ctx, ceil_div(J, JB), work, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t j0 = c * JB, j1 = J < j0 + JB ? J : j0 + JB;
        for (int64_t j = j0; j < j1; j += 4) {
          const int nj = static_cast<int>(j1 - j < 4 ? j1 - j : 4);
          const float* r[4];
          for (int q = 0; q < 4; ++q) r[q] = Wt + (j + (q < nj ? q : 0)) * wj;
          vf acc[4][2];
          int64_t k = 0;
          for (; k + 2 * W <= K; k += 2 * W) {
            const vf xa = vf::load(x + k), xb = vf::load(x + k + W);
#pragma GCC unroll 4
            for (int q = 0; q < 4; ++q) {
              acc[q][0] = fma(xa, vf::load(r[q] + k), acc[q][0]);
              acc[q][1] = fma(xb, vf::load(r[q] + k + W), acc[q][1]);
            }
          }
          for (; k < K; k += W) {
            const int n = static_cast<int>(K - k < W ? K - k : W);
            const vf xa = vf::load_partial(x + k, n);
#pragma GCC unroll 4
            for (int q = 0; q < 4; ++q)
              acc[q][0] = fma(xa, vf::load_partial(r[q] + k, n), acc[q][0]);
          }
          for (int q = 0; q < nj; ++q) y[(j + q) * ys] = reduce_add(acc[q][0] + acc[q][1]);
        }
        done(j0, j1 - j0);
      }
    });
    return true;
  }
  return false;
}

// M == 1 or N == 1: one matrix-vector product per batch. Returns false if the strides do not
// suit the gemv kernels.
// Row: y = C[b, 0, :], x = A[b, 0, :], Wt(k, j) = B(k, j).
// Column: y = C[b, :, 0], x = B[b, :, 0], Wt(k, j) = A(j, k).
constexpr bool gemv_applies(const GemmForm& s) {
  if (s.M != 1 && s.N != 1) return false;
  const bool row = s.M == 1;
  const int64_t wk = row ? s.b_k : s.a_k, wj = row ? s.b_n : s.a_m, ys = row ? 1 : s.c_m;
  return (wj == 1 || wk == 1) && (wj != 1 || ys == 1);
}

EMBER_RT_LAZY
inline bool try_gemv(const GemmShape& s, const LaunchContext* ctx, EpiFn epi, void* epi_ctx) {
  if (!gemv_applies(form_of(s))) return false;
  const bool row = s.M == 1;  // else N == 1
  const int64_t wk = row ? s.b_k : s.a_k, wj = row ? s.b_n : s.a_m;
  const int64_t xs = row ? s.a_k : s.b_k, ys = row ? 1 : s.c_m;
  const int64_t J = row ? s.N : s.M;
  for (int64_t b = 0; b < s.batch; ++b) {
    const float* x = row ? s.A + b * s.a_batch : s.B + b * s.b_batch;
    const float* Wt = row ? s.B + b * s.b_batch : s.A + b * s.a_batch;
    float* y = s.C + b * s.c_batch;
    if (xs != 1) {  // gather x once (shared read-only by the workers)
      float* xc = scratch(ctx, kSlotVec, static_cast<size_t>(s.K));
      for (int64_t k = 0; k < s.K; ++k) xc[k] = x[k * xs];
      x = xc;
    }
    gemv(x, Wt, wk, wj, y, ys, s.K, J, ctx, [&](int64_t j0, int64_t len) {
      if (epi == nullptr) return;
      if (row) {
        epi(epi_ctx, b, 0, j0, len, y + j0);
      } else {  // each output is its own row of C
        for (int64_t j = j0; j < j0 + len; ++j) epi(epi_ctx, b, j, 0, 1, y + j * ys);
      }
    });
  }
  return true;
}

}  // namespace gemm_detail
}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
