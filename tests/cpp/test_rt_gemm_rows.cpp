// Tests for GemmShape::b_rows (runtime_include/ember_rt/gemm.h): B's rows read through a
// table of offsets, as an implicit-GEMM convolution reads its padded input (rows that
// overlap, out of order), against a naive loop: odd M / N / K, column strides 1 and 2,
// batches, split K, every micro-kernel, several thread counts, a fused epilogue.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ember_rt/gemm.h"
#include "rt_threads.h"

namespace ember_rt {
namespace {

using test::make_ctx;

struct RowsProblem {
  int64_t batch, M, N, K, b_n;
  std::vector<float> A, B, C, bias;
  std::vector<int64_t> rows;
  GemmShape s{};

  RowsProblem(int64_t batch_, int64_t M_, int64_t N_, int64_t K_, int64_t b_n_, uint32_t seed)
      : batch(batch_), M(M_), N(N_), K(K_), b_n(b_n_) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    // Row k starts anywhere in a region just large enough: rows overlap and come in any
    // order, and the last element of the region is read (no slack past it).
    const int64_t span = (N - 1) * b_n + 1, region = span + 3 * K + 5;
    std::uniform_int_distribution<int64_t> start(0, region - span);
    for (int64_t k = 0; k < K; ++k) rows.push_back(start(rng));
    if (K > 0) rows[K / 2] = region - span;
    A.resize(std::max<int64_t>(batch * M * K, 1));
    B.resize(batch * region);
    for (float& x : A) x = u(rng);
    for (float& x : B) x = u(rng);
    C.assign(batch * M * N, -777.0f);
    bias.resize(N);
    for (float& x : bias) x = u(rng);
    s.batch = batch, s.M = M, s.N = N, s.K = K;
    s.A = A.data(), s.a_batch = M * K, s.a_m = K, s.a_k = 1;
    s.B = B.data(), s.b_batch = region, s.b_k = 0, s.b_n = b_n;  // b_k must not be read
    s.C = C.data(), s.c_batch = M * N, s.c_m = N;
    s.b_rows = rows.data();
  }

  void verify(const std::string& what) const {
    int bad = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double p =
                double{A[b * M * K + m * K + k]} * B[b * s.b_batch + rows[k] + n * b_n];
            ref += p;
            mag += std::fabs(p);
          }
          ref = std::max(ref + bias[n], 0.0);
          const float got = C[b * M * N + m * N + n];
          if (!(std::fabs(got - ref) <= 1e-6 + 2e-6 * mag) && bad++ < 5)
            ADD_FAILURE() << what << ": C[" << b << "," << m << "," << n << "] = " << got
                          << ", expected " << ref;
        }
  }
};

std::string describe(const RowsProblem& p) {
  return "batch=" + std::to_string(p.batch) + " M=" + std::to_string(p.M) +
         " N=" + std::to_string(p.N) + " K=" + std::to_string(p.K) +
         " b_n=" + std::to_string(p.b_n);
}

// Runs the product with a bias + ReLU epilogue that counts its visits: right values, and each
// element of C finished exactly once.
void run_and_check(RowsProblem& p, const LaunchContext* ctx, const GemmTuning& t,
                   const std::string& what) {
  std::vector<int> visits(p.C.size(), 0);
  const float* bias = p.bias.data();
  const float* C0 = p.C.data();
  gemm(
      p.s, ctx,
      [&](int64_t, int64_t, int64_t n0, int64_t len, float* row) {
        for (int64_t i = 0; i < len; ++i) {
          row[i] = std::max(row[i] + bias[n0 + i], 0.0f);
          visits[(row - C0) + i] += 1;  // distinct elements per thread: no race
        }
      },
      t);
  p.verify(what);
  for (size_t i = 0; i < visits.size(); ++i)
    ASSERT_EQ(visits[i], 1) << what << ": epilogue visits of C element " << i;
}

// Shapes around the micro-tile and block edges: M, N, K of 1, tiles' heights and widths
// +- 1, K over several depth blocks, and the paths B's rows would otherwise take
// (matrix-vector at M == 1 or N == 1, dot products and B read in place at small M).
const int64_t kShapes[][3] = {{1, 1, 1},     {1, 300, 37}, {40, 1, 29},   {2, 33, 17},
                              {7, 65, 300},  {13, 47, 9},  {15, 129, 64}, {32, 200, 600},
                              {29, 17, 513}, {6, 16, 256}, {100, 31, 5}};

TEST(RtGemmRows, MatchesNaiveLoop) {
  for (int threads : {1, 2, 3}) {
    const LaunchContext ctx = make_ctx(threads);
    for (const auto& sh : kShapes)
      for (int64_t b_n : {1, 2})
        for (int64_t batch : {1, 3}) {
          RowsProblem p(batch, sh[0], sh[1], sh[2], b_n, 5);
          run_and_check(p, &ctx, GemmTuning{}, describe(p) + " threads=" + std::to_string(threads));
        }
  }
}

TEST(RtGemmRows, SplitKEveryKernelAndOddBlocks) {
  const LaunchContext ctx = make_ctx(2);
  for (int kernel = -1; kernel < gemm_kernel_count(); ++kernel)
    for (int split : {1, 2, 3, 0})
      for (int64_t kc : {0, 17})
        for (const auto& sh : kShapes) {
          GemmTuning t;
          t.kernel = kernel;
          t.split_k = split;
          t.kc = kc;
          t.mc = kc;  // 0 or a height that is no multiple of the micro-tile's
          t.nc = kc;
          RowsProblem p(2, sh[0], sh[1], sh[2], 1, 9);
          run_and_check(p, &ctx, t,
                        describe(p) + " kernel=" + std::to_string(kernel) +
                            " split_k=" + std::to_string(split) + " kc=" + std::to_string(kc));
        }
}

TEST(RtGemmRows, KZeroGivesTheEpilogueOfZero) {
  const LaunchContext ctx = make_ctx(2);
  RowsProblem p(2, 5, 37, 0, 1, 3);
  run_and_check(p, &ctx, GemmTuning{}, "K=0");
}

TEST(RtGemmRows, NullContextSplitK) {
  GemmTuning t;
  t.split_k = 3;
  RowsProblem p(1, 9, 70, 300, 1, 4);
  run_and_check(p, nullptr, t, "ctx=nullptr split_k=3");
}

}  // namespace
}  // namespace ember_rt
