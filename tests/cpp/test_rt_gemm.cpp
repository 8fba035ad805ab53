// Tests for runtime_include/ember_rt/gemm.h against a naive triple loop: odd shapes, every
// operand layout the strides allow (transposed, strided, batch-broadcast), K = 0, fused
// epilogues, several thread counts, every micro-kernel and arbitrary tuning values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ember_rt/gemm.h"
#include "rt_threads.h"

namespace ember_rt {
namespace {

using test::make_ctx;

enum Layout { kRowMajor, kTransposed, kStrided };

struct Case {
  int64_t batch, M, N, K;
  Layout a = kRowMajor, b = kRowMajor;
  bool a_bcast = false, b_bcast = false;  // batch stride 0
  int64_t c_pad = 0;                      // extra floats per C row
};

std::string describe(const Case& c) {
  const char* names[] = {"row", "trans", "strided"};
  return "batch=" + std::to_string(c.batch) + " M=" + std::to_string(c.M) +
         " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) + " A=" + names[c.a] +
         " B=" + names[c.b] + (c.a_bcast ? " A-bcast" : "") + (c.b_bcast ? " B-bcast" : "") +
         " c_pad=" + std::to_string(c.c_pad);
}

struct Problem {
  Case c;
  std::vector<float> A, B, C, bias;
  GemmShape s{};

  explicit Problem(const Case& cs, uint32_t seed = 1) : c(cs) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const int64_t ab = c.a_bcast ? 1 : c.batch, bb = c.b_bcast ? 1 : c.batch;
    // A: M x K per batch in the chosen layout.
    int64_t a_m, a_k, a_size;
    if (c.a == kRowMajor)
      a_m = c.K, a_k = 1, a_size = c.M * c.K;
    else if (c.a == kTransposed)
      a_m = 1, a_k = c.M, a_size = c.M * c.K;
    else
      a_m = 2 * c.K + 3, a_k = 2, a_size = c.M * a_m;  // every other element, padded rows
    int64_t b_k, b_n, b_size;
    if (c.b == kRowMajor)
      b_k = c.N, b_n = 1, b_size = c.K * c.N;
    else if (c.b == kTransposed)
      b_k = 1, b_n = c.K, b_size = c.K * c.N;
    else
      b_k = 3 * c.N + 1, b_n = 3, b_size = c.K * b_k;
    a_size = std::max<int64_t>(a_size, 1);
    b_size = std::max<int64_t>(b_size, 1);
    A.resize(ab * a_size);
    B.resize(bb * b_size);
    for (float& x : A) x = u(rng);
    for (float& x : B) x = u(rng);
    const int64_t c_m = c.N + c.c_pad;
    C.assign(c.batch * c.M * c_m, -777.0f);  // the padding must stay untouched
    bias.resize(c.N);
    for (float& x : bias) x = u(rng);
    s = GemmShape{c.batch,  c.M,
                  c.N,      c.K,
                  A.data(), c.a_bcast ? 0 : a_size,
                  a_m,      a_k,
                  B.data(), c.b_bcast ? 0 : b_size,
                  b_k,      b_n,
                  C.data(), c.M * c_m,
                  c_m};
  }

  double a_at(int64_t b, int64_t m, int64_t k) const {
    return A[b * s.a_batch + m * s.a_m + k * s.a_k];
  }
  double b_at(int64_t b, int64_t k, int64_t n) const {
    return B[b * s.b_batch + k * s.b_k + n * s.b_n];
  }

  // Compares C with the naive product (optionally + bias, relu).
  void verify(bool bias_relu, const std::string& what) const {
    int bad = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t m = 0; m < c.M; ++m) {
        for (int64_t n = 0; n < c.N; ++n) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < c.K; ++k) {
            const double p = a_at(b, m, k) * b_at(b, k, n);
            ref += p;
            mag += std::fabs(p);
          }
          if (bias_relu) ref = std::max(ref + bias[n], 0.0);
          const float got = C[b * s.c_batch + m * s.c_m + n];
          if (!(std::fabs(got - ref) <= 1e-6 + 2e-6 * mag) && bad++ < 5)
            ADD_FAILURE() << what << ": C[" << b << "," << m << "," << n << "] = " << got
                          << ", expected " << ref;
        }
        for (int64_t n = c.N; n < s.c_m; ++n)
          if (C[b * s.c_batch + m * s.c_m + n] != -777.0f && bad++ < 5)
            ADD_FAILURE() << what << ": wrote into C's row padding at n = " << n;
      }
  }
};

std::vector<Case> all_cases() {
  std::vector<Case> v;
  // {45, 70, 1700}: several default K blocks (768 deep with AVX-512), each with 3 or more
  // row panels per B panel (the prefetched slices of the next panel).
  const int64_t shapes[][3] = {{1, 1, 1},    {17, 33, 5},     {64, 64, 64},  {100, 1, 300},
                               {1, 513, 77}, {7, 3, 2},       {2, 40, 17},   {33, 65, 129},
                               {5, 100, 31}, {300, 200, 260}, {13, 1000, 7}, {129, 47, 600},
                               {1, 1, 1000}, {3, 1, 9},       {1, 70, 1},    {45, 70, 1700}};
  for (auto& sh : shapes)
    for (Layout a : {kRowMajor, kTransposed, kStrided})
      for (Layout b : {kRowMajor, kTransposed, kStrided})
        v.push_back(Case{1, sh[0], sh[1], sh[2], a, b});
  v.push_back(Case{3, 20, 30, 40});
  v.push_back(Case{4, 9, 50, 33, kRowMajor, kRowMajor, true, false});     // shared A
  v.push_back(Case{4, 9, 50, 33, kTransposed, kRowMajor, false, true});   // shared B
  v.push_back(Case{2, 1, 300, 64, kRowMajor, kTransposed, false, true});  // batched gemv
  v.push_back(Case{2, 70, 1, 64, kRowMajor, kRowMajor, true, false});
  v.push_back(Case{2, 31, 17, 23, kRowMajor, kRowMajor, false, false, 5});
  v.push_back(Case{1, 1, 77, 20, kRowMajor, kRowMajor, false, false, 3});
  v.push_back(Case{1, 60, 1, 20, kRowMajor, kRowMajor, false, false, 3});
  return v;
}

TEST(RtGemm, MatchesNaiveAllLayoutsAndThreads) {
  for (int threads : {1, 2, 3}) {
    const LaunchContext ctx = make_ctx(threads);
    for (const Case& c : all_cases()) {
      Problem p(c);
      gemm(p.s, &ctx, NoEpilogue{});
      p.verify(false, describe(c) + " threads=" + std::to_string(threads));
    }
  }
}

TEST(RtGemm, NullContextRunsSerially) {
  Problem p(Case{1, 50, 70, 90});
  gemm(p.s, nullptr, NoEpilogue{});
  p.verify(false, "ctx=nullptr");
}

TEST(RtGemm, KZeroGivesZerosThenEpilogue) {
  const LaunchContext ctx = make_ctx(2);
  for (int64_t M : {1, 5, 40}) {
    Problem p(Case{2, M, 37, 0});
    gemm(p.s, &ctx, NoEpilogue{});
    p.verify(false, "K=0");
    const float* bias = p.bias.data();
    gemm(p.s, &ctx, [bias](int64_t, int64_t, int64_t n0, int64_t len, float* row) {
      for (int64_t i = 0; i < len; ++i) row[i] = std::max(row[i] + bias[n0 + i], 0.0f);
    });
    p.verify(true, "K=0 with epilogue");
  }
}

// Runs p's product with a bias + ReLU epilogue that counts its visits, then checks the result
// and that the epilogue saw each element of C exactly once (and none of the row padding).
void check_epilogue_once(Problem& p, const LaunchContext* ctx, const GemmTuning& tune,
                         const std::string& what) {
  std::vector<int> visits(p.C.size(), 0);
  const float* bias = p.bias.data();
  const float* C0 = p.C.data();
  int* vis = visits.data();
  bool args_ok = true;
  const GemmShape s = p.s;
  auto epi = [&, bias, C0, vis](int64_t b, int64_t m, int64_t n0, int64_t len, float* row) {
    if (row != C0 + b * s.c_batch + m * s.c_m + n0 || len <= 0 || n0 + len > s.N) args_ok = false;
    for (int64_t i = 0; i < len; ++i) {
      row[i] = std::max(row[i] + bias[n0 + i], 0.0f);
      vis[(row - C0) + i] += 1;  // distinct elements per thread: no race
    }
  };
  gemm(p.s, ctx, epi, tune);
  EXPECT_TRUE(args_ok) << what;
  p.verify(true, what + " epilogue");
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t n = 0; n < s.c_m; ++n)
        ASSERT_EQ(visits[b * s.c_batch + m * s.c_m + n], n < s.N ? 1 : 0)
            << what << ": epilogue visits of C[" << b << "," << m << "," << n << "]";
}

TEST(RtGemm, EpilogueBiasReluCoversEachElementOnce) {
  for (int threads : {1, 2, 3}) {
    const LaunchContext ctx = make_ctx(threads);
    for (const Case& c : all_cases()) {
      Problem p(c, 7);
      check_epilogue_once(p, &ctx, GemmTuning{},
                          describe(c) + " threads=" + std::to_string(threads));
    }
  }
}

// Shapes for split-K: every path (packed, dot products, matrix-vector), batches, transposed
// and strided operands, K not divisible by the part count, K below it.
std::vector<Case> split_k_cases() {
  return {Case{1, 20, 30, 100},                                       // packed
          Case{1, 16, 64, 333, kRowMajor, kTransposed},               // dot products
          Case{1, 1, 40, 250, kRowMajor, kRowMajor},                  // gemv, rows of B contiguous
          Case{1, 1, 37, 250, kRowMajor, kTransposed},                // gemv, dot products
          Case{1, 45, 1, 250, kTransposed, kRowMajor},                // gemv, N == 1
          Case{3, 9, 21, 101, kTransposed, kTransposed},              // batch, both transposed
          Case{2, 7, 13, 64, kStrided, kStrided, false, true},        // strided, B broadcast
          Case{2, 17, 19, 5, kRowMajor, kRowMajor, false, false, 3},  // K < 7 parts, padded C
          Case{1, 6, 33, 2, kRowMajor, kTransposed},                  // K = 2
          Case{1, 1, 1, 1}};
}

TEST(RtGemm, SplitKMatchesNaiveWithAndWithoutEpilogue) {
  for (int threads : {1, 2, 3}) {
    const LaunchContext ctx = make_ctx(threads);
    for (int split : {1, 2, 3, 7, 0}) {
      GemmTuning t;
      t.split_k = split;
      for (const Case& c : split_k_cases()) {
        const std::string what = describe(c) + " split_k=" + std::to_string(split) +
                                 " threads=" + std::to_string(threads);
        Problem p(c, 3);
        gemm(p.s, &ctx, NoEpilogue{}, t);
        p.verify(false, what);
        Problem q(c, 5);
        check_epilogue_once(q, &ctx, t, what);
      }
    }
  }
}

TEST(RtGemm, SplitKAnyValueIsSafe) {
  const LaunchContext ctx = make_ctx(2);
  const int values[] = {-1, -1000, 4, 64, 1000, 1 << 30};
  for (int split : values) {
    GemmTuning t;
    t.split_k = split;
    for (const Case& c : {Case{1, 5, 9, 3}, Case{2, 4, 6, 300, kTransposed, kRowMajor},
                          Case{1, 1, 1, 1000}, Case{2, 3, 4, 0}}) {
      Problem p(c, 9);
      check_epilogue_once(p, &ctx, t, describe(c) + " split_k=" + std::to_string(split));
    }
  }
  // A forced kernel (packed path) with a forced split, and a null context (serial parts).
  GemmTuning t;
  t.split_k = 3;
  t.kernel = 0;
  Problem p(Case{1, 13, 29, 77, kRowMajor, kTransposed});
  gemm(p.s, &ctx, NoEpilogue{}, t);
  p.verify(false, "kernel=0 split_k=3");
  Problem q(Case{2, 13, 29, 77});
  check_epilogue_once(q, nullptr, t, "ctx=nullptr split_k=3");
}

// The automatic choice splits K where the output offers too few tasks for two threads and K
// is long, and leaves large or shallow products alone. It depends on the shape only.
TEST(RtGemm, SplitKAutomaticChoice) {
  auto parts = [](int64_t batch, int64_t M, int64_t N, int64_t K, bool b_trans) {
    const GemmShape s{batch,   M,     N,       K,     nullptr,         M * K,
                      K,       1,     nullptr, K * N, b_trans ? 1 : N, b_trans ? K : 1,
                      nullptr, M * N, N};
    const GemmTuning t;
    const GemmForm f = form_of(s);
    return gemm_detail::split_parts(f, t, gemm_detail::choose_path(f, t));
  };
  EXPECT_GT(parts(1, 16, 64, 8192, false), 1);  // packed: each thread would pack all of A
  EXPECT_GT(parts(1, 64, 64, 4096, false), 1);
  EXPECT_GT(parts(1, 196, 64, 4096, false), 1);  // a batch-1 1x1 convolution's shape
  EXPECT_GT(parts(1, 1, 16, 8192, false), 1);    // matrix-vector: one block of outputs
  EXPECT_GT(parts(1, 1, 1, 100000, false), 1);   // a dot product of two vectors
  EXPECT_GT(parts(1, 4, 4, 4096, false), 1);     // one micro-tile
  EXPECT_GT(parts(1, 16, 64, 8192, true), 1);    // dot products: blocks of 48 + 16 columns
  EXPECT_EQ(parts(1, 16, 96, 8192, true), 1);    // dot products: two even blocks
  EXPECT_EQ(parts(1, 128, 768, 768, false), 1);  // wide enough: no gain to expect
  EXPECT_EQ(parts(1, 1024, 1024, 1024, false), 1);
  EXPECT_EQ(parts(1, 4, 4, 300, false), 1);   // K too short to split
  EXPECT_EQ(parts(8, 4, 4, 8192, false), 1);  // the batch gives enough tasks
}

// Where the automatic choice splits, results are right, the epilogue sees each element once,
// and the result is bit-identical for every thread count (the split does not depend on it).
TEST(RtGemm, SplitKAutomaticSameResultForAnyThreadCount) {
  for (const Case& c :
       {Case{1, 16, 64, 2000}, Case{1, 4, 4, 9000}, Case{1, 1, 1, 70000}, Case{1, 1, 20, 4000},
        Case{3, 5, 7, 1500, kTransposed, kRowMajor}, Case{1, 40, 1, 3000, kTransposed, kRowMajor},
        Case{1, 16, 64, 1000, kRowMajor, kTransposed}}) {
    const GemmTuning t;
    Problem first(c, 4);
    const GemmForm f = form_of(first.s);
    EXPECT_GT(gemm_detail::split_parts(f, t, gemm_detail::choose_path(f, t)), 1) << describe(c);
    gemm(first.s, nullptr, NoEpilogue{}, t);
    first.verify(false, describe(c) + " auto split, serial");
    for (int threads : {1, 2, 3}) {
      const LaunchContext ctx = make_ctx(threads);
      Problem p(c, 4);
      gemm(p.s, &ctx, NoEpilogue{}, t);
      EXPECT_EQ(p.C, first.C) << describe(c) << ": threads=" << threads << " differs from serial";
      Problem q(c, 4);
      check_epilogue_once(q, &ctx, t,
                          describe(c) + " auto split threads=" + std::to_string(threads));
    }
  }
  // Forced parts with more threads than (batch, part) pairs: the output is cut into blocks.
  GemmTuning t;
  t.split_k = 2;
  Problem serial(Case{1, 37, 29, 600}), cut(Case{1, 37, 29, 600});
  gemm(serial.s, nullptr, NoEpilogue{}, t);
  const LaunchContext ctx = make_ctx(3);
  gemm(cut.s, &ctx, NoEpilogue{}, t);
  EXPECT_EQ(cut.C, serial.C) << "split_k=2 on 3 threads differs from serial";
  cut.verify(false, "split_k=2 on 3 threads");
}

TEST(RtGemm, EveryKernelAndArbitraryTuning) {
  const LaunchContext ctx = make_ctx(2);
  std::mt19937 rng(11);
  // (An explicit kernel forces the packed path, so M == 1 and N == 1 go through it too.)
  const Case cases[] = {Case{1, 37, 53, 71},
                        Case{2, 100, 45, 300, kTransposed, kTransposed},
                        Case{1, 6, 200, 33, kRowMajor, kStrided},
                        Case{1, 2, 2, 2},
                        Case{1, 1, 77, 50, kRowMajor, kTransposed},
                        Case{1, 40, 1, 30}};
  for (int kernel = -1; kernel < gemm_kernel_count(); ++kernel) {
    if (kernel >= 0) {
      EXPECT_GT(gemm_kernel_mr(kernel), 0);
      EXPECT_EQ(gemm_kernel_nr(kernel) % vf::width, 0);
    }
    for (const Case& c : cases) {
      for (int trial = 0; trial < 6; ++trial) {
        GemmTuning t;
        t.kernel = kernel;
        const int64_t pick[] = {0, 1, 3, 8, 17, 64, 1000, -5, int64_t{1} << 40};
        t.mc = pick[rng() % 9];
        t.nc = pick[rng() % 9];
        t.kc = pick[rng() % 9];
        Problem p(c, trial);
        gemm(p.s, &ctx, NoEpilogue{}, t);
        p.verify(false, describe(c) + " kernel=" + std::to_string(kernel) +
                            " mc=" + std::to_string(t.mc) + " nc=" + std::to_string(t.nc) +
                            " kc=" + std::to_string(t.kc));
      }
    }
  }
  Problem p(Case{1, 20, 20, 20});
  GemmTuning bad;
  bad.kernel = 99;  // out of range: falls back to the automatic choice
  gemm(p.s, &ctx, NoEpilogue{}, bad);
  p.verify(false, "kernel=99");
}

// A constant B prepared once (prepare_b) and read from its panels on every path: odd sizes,
// B as stored or transposed (a Linear layer's weight), shared by the batch or one per batch,
// with an epilogue, split K, every micro-kernel and odd depth blocks.
struct Prepared {
  std::vector<float> panels;
  PreparedB layout;
};
Prepared prepare(const Problem& p, const GemmTuning& t) {
  const int64_t batches = p.c.b_bcast ? 1 : p.c.batch;
  Prepared r;
  r.layout = prepared_b_layout(nullptr, p.c.K, p.c.N, 0, t);
  const int64_t per = prepared_b_floats(p.c.K, p.c.N, r.layout.nr);
  r.panels.assign(std::max<int64_t>(batches * per, 1), 12345.0f);
  prepare_b(p.B.data(), batches, p.s.b_batch, p.s.b_k, p.s.b_n, r.layout, r.panels.data());
  r.layout.data = r.panels.data();
  r.layout.batch_stride = p.c.b_bcast ? 0 : per;
  return r;
}

TEST(RtGemm, PreparedBMatchesNaive) {
  std::vector<Case> cases;
  for (int64_t M : {1, 2, 4, 5, 7, 17, 63, 65, 129, 300})
    for (Layout b : {kRowMajor, kTransposed}) {
      cases.push_back(Case{1, M, 65, 129, kRowMajor, b});
      cases.push_back(Case{1, M, 7, 300, kRowMajor, b});
    }
  cases.push_back(Case{1, 17, 1, 17});
  cases.push_back(Case{1, 1, 1, 1});
  cases.push_back(Case{3, 17, 63, 65, kRowMajor, kTransposed, false, true});  // shared B
  cases.push_back(Case{3, 7, 33, 129, kTransposed, kRowMajor});               // B per batch
  cases.push_back(Case{2, 5, 300, 17, kRowMajor, kStrided, false, false, 3});
  for (int threads : {1, 2, 3}) {
    const LaunchContext ctx = make_ctx(threads);
    for (int kernel = -1; kernel < gemm_kernel_count(); ++kernel)
      for (int64_t kc : {0, 17})
        for (int split : {1, 0, 3})
          for (const Case& c : cases) {
            GemmTuning t;
            t.kernel = kernel;
            t.kc = kc;
            t.split_k = split;
            const std::string what = describe(c) + " prepared kernel=" + std::to_string(kernel) +
                                     " kc=" + std::to_string(kc) +
                                     " split_k=" + std::to_string(split) +
                                     " threads=" + std::to_string(threads);
            Problem p(c, 21);
            const Prepared pb = prepare(p, t);
            p.s.B = nullptr;  // only the panels may be read
            p.s.prepared = pb.layout;
            check_epilogue_once(p, &ctx, t, what);
          }
  }
}

// The panels hold B exactly, and unpack back to it.
TEST(RtGemm, PreparedBUnpacksToTheOriginal) {
  for (const Case& c : {Case{1, 3, 65, 300, kRowMajor, kTransposed}, Case{2, 3, 7, 33}}) {
    Problem p(c, 2);
    GemmTuning t;
    t.kc = 50;
    const Prepared pb = prepare(p, t);
    EXPECT_EQ(pb.layout.kc, std::min<int64_t>(50, c.K)) << describe(c);
    std::vector<float> back(p.B.size(), 0.0f);
    unpack_prepared_b(pb.layout, c.batch, back.data(), p.s.b_batch, p.s.b_k, p.s.b_n);
    EXPECT_EQ(back, p.B) << describe(c);
  }
}

// The facts a call's path is chosen from, as the generated code passes them (GemmSite).
GemmSite site_of(const GemmShape& s, const GemmTuning& t) {
  return GemmSite{s.batch,
                  s.M,
                  s.N,
                  s.K,
                  s.a_m,
                  s.a_k,
                  s.b_k,
                  s.b_n,
                  s.c_m,
                  s.b_rows != nullptr,
                  s.prepared.data != nullptr,
                  t};
}

// A path chosen when the kernel is compiled (gemm_choice) is the one gemm_erased chooses at
// run time, and gemm with it computes the same bits, for every layout, prepared operands,
// forced kernels and split K, and any thread count.
TEST(RtGemm, ChosenPathSameBitsAsRunTimeChoice) {
  std::vector<std::pair<Case, GemmTuning>> cases;
  for (const Case& c : all_cases()) cases.push_back({c, GemmTuning{}});
  GemmTuning split;
  split.split_k = 3;
  cases.push_back({Case{1, 64, 64, 4096}, GemmTuning{}});  // automatic split K
  cases.push_back({Case{2, 33, 65, 129}, split});
  for (int kernel = 0; kernel < gemm_kernel_count(); ++kernel) {
    GemmTuning t;
    t.kernel = kernel;
    cases.push_back({Case{1, 17, 100, 31}, t});
  }
  int prepared_cases = 0;
  for (int64_t M : {1, 3, 4, 5, 8, 9, 40})
    for (int split_k : {1, 2}) {
      GemmTuning t;
      t.split_k = split_k;
      cases.push_back({Case{1, M, 70, 300, kRowMajor, kTransposed}, t});
      ++prepared_cases;
    }
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [c, t] = cases[i];
    const bool prepared = i + prepared_cases >= cases.size();
    for (int threads : {1, 3}) {
      const LaunchContext ctx = make_ctx(threads);
      const std::string what =
          describe(c) + (prepared ? " prepared" : "") + " kernel=" + std::to_string(t.kernel) +
          " split_k=" + std::to_string(t.split_k) + " threads=" + std::to_string(threads);
      Problem runtime(c, 5), chosen(c, 5);
      Prepared pr, pc;
      if (prepared) {
        pr = prepare(runtime, t);
        pc = prepare(chosen, t);
        runtime.s.prepared = pr.layout;
        chosen.s.prepared = pc.layout;
        runtime.s.B = chosen.s.B = nullptr;
      }
      const GemmChoice choice = gemm_detail::choose(site_of(chosen.s, t));
      EXPECT_EQ(choice.path, gemm_detail::choose_path(form_of(runtime.s), t)) << what;
      gemm(runtime.s, &ctx, NoEpilogue{}, t);
      gemm(chosen.s, &ctx, NoEpilogue{}, choice);
      runtime.verify(false, what);
      EXPECT_EQ(chosen.C, runtime.C) << what;
      EXPECT_NE(gemm_detail::gemm_uses(choice), 0u) << what;
    }
  }
}

// What a module compiles for its calls (gemm_uses), decided while compiling.
TEST(RtGemm, CompileTimeChoiceNamesOnlyItsPaths) {
  using namespace gemm_detail;  // NOLINT
  // x * W^T with one row and W prepared: the 1-row tiles over the prepared panels only.
  constexpr GemmChoice linear =
      gemm_choice(GemmSite{1, 1, 10, 128, 128, 1, 1, 128, 10, 0, 1, {0, 0, 0, -1, 0}});
  static_assert(linear.path == 0 && linear.parts == 1);
  static_assert(gemm_uses(linear) == kUsesPreparedM1);
  // The same product with W read in place: the matrix-vector path.
  constexpr GemmChoice gemv =
      gemm_choice(GemmSite{1, 1, 10, 128, 128, 1, 1, 128, 10, 0, 0, {0, 0, 0, -1, 0}});
  static_assert(gemm_uses(gemv) == kUsesGemv);
  // Dot products for 16 rows of x * W^T.
  constexpr GemmChoice dot =
      gemm_choice(GemmSite{1, 16, 100, 64, 64, 1, 1, 64, 100, 0, 0, {0, 0, 0, -1, 0}});
  static_assert(gemm_uses(dot) == kUsesDot);
  // An implicit-GEMM convolution (B through a row table): the default packed micro-kernel;
  // a forced kernel and split K name those instead.
  constexpr GemmChoice conv =
      gemm_choice(GemmSite{1, 64, 1030, 56, 56, 1, 0, 1, 1030, 1, 0, {0, 0, 0, -1, 0}});
  static_assert(gemm_uses(conv) == kUsesKernel0);
  constexpr int last = kNumKernels - 1;
  constexpr GemmChoice forced =
      gemm_choice(GemmSite{1, 64, 1030, 56, 56, 1, 0, 1, 1030, 1, 0, {0, 0, 0, last, 4}});
  static_assert(gemm_uses(forced) == (kUsesSplitK | (kUsesKernel0 << last)));
  EXPECT_EQ(forced.parts, 4);
}

TEST(RtGemm, LargeSquareMultiThreaded) {
  const LaunchContext ctx = make_ctx(2);
  Problem p(Case{1, 256, 384, 512});
  gemm(p.s, &ctx, NoEpilogue{});
  p.verify(false, "256x384x512");
}

}  // namespace
}  // namespace ember_rt
