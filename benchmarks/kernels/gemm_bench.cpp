// Benchmark of ember_rt::gemm (runtime_include/ember_rt/gemm.h) next to the machine's measured
// FMA peak, with 1 and 2 threads.
//
//   g++ -O3 -std=c++20 -march=native -I runtime_include benchmarks/kernels/gemm_bench.cpp
//       -o /tmp/gemm_bench -pthread && /tmp/gemm_bench
//
// Generated modules are compiled at -O2 (base_flags in src/jit/compiler.cpp): build it with
// `-O2 -fwrapv -fno-math-errno -ffp-contract=fast` as well to time what they get. A loop that
// GCC keeps in registers at -O3 need not be at -O2: the dot-product tile once ran 2.9x slower.
//
// The machines are shared: figures use CPU time (time spent descheduled by other load does
// not count): one thread its CPU time; two threads the slowest chunk's CPU time per parallel
// region ("busy"), printed next to plain wall-clock time. Every figure is the best of several
// rounds; the FMA peak is measured the same way in the same run.
//
// Optional arguments: a list of MxNxK[t][a][e][p] shapes (t: B transposed, as in a Linear layer's
// weight; a: A transposed, as in a weight gradient dY^T X; e: with a fused bias + GELU epilogue; p:
// B prepared once before timing, as a compiled graph does with a constant weight), e.g. `gemm_bench
// 1024x1024x1024 128x768x768te 8x768x768tp`. Environment: EMBER_BENCH_MC / _NC / _KC / _KERNEL
// override the tuning (to explore blockings by hand); EMBER_BENCH_COLD_B=N gives a prepared B
// in N copies used in turn (N x its size beyond the last-level cache: weights read from memory
// on every call, as in a model); EMBER_BENCH_SPLIT_K=1,2,0 times every shape
// with each GemmTuning::split_k listed (0: automatic), one row each, interleaved round by round.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "ember_rt/gemm.h"
#include "ember_rt/math.h"

struct Shape {
  int64_t M, N, K;
  bool b_trans;
  bool a_trans = false;   // A stored [K, M] (a weight gradient's dY^T)
  bool epilogue = false;  // fused bias + GELU (erf) on every row segment
  bool prepared = false;  // B prepared once (ember_rt::prepare_b), not packed per call
  int split_k = 0;        // GemmTuning::split_k
};

int64_t env_int(const char* name, int64_t dflt) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : dflt;
}

// Seconds per call, the best of several rounds: wall-clock, and "busy" time = the calling
// thread's CPU time with the wait for slower chunks replaced by the slowest chunk's CPU time
// (for one thread simply its CPU time).
struct Timing {
  double wall, busy;
};
// Times one shape with each split_k in `splits`, interleaved round by round.
std::vector<Timing> time_gemm(const Shape& sh, const std::vector<int>& splits,
                              const ember_rt::LaunchContext* ctx, std::vector<float>& A,
                              std::vector<float>& B, std::vector<float>& C) {
  ember_rt::GemmShape s{1,
                        sh.M,
                        sh.N,
                        sh.K,
                        A.data(),
                        0,
                        sh.a_trans ? 1 : sh.K,
                        sh.a_trans ? sh.M : 1,
                        B.data(),
                        0,
                        sh.b_trans ? 1 : sh.N,
                        sh.b_trans ? sh.K : 1,
                        C.data(),
                        0,
                        sh.N};
  ember_rt::GemmTuning tune;
  tune.mc = env_int("EMBER_BENCH_MC", 0);
  tune.nc = env_int("EMBER_BENCH_NC", 0);
  tune.kc = env_int("EMBER_BENCH_KC", 0);
  tune.kernel = static_cast<int>(env_int("EMBER_BENCH_KERNEL", -1));
  // A prepared B in `copies` copies, one per call in turn: with enough of them to overflow
  // the last-level cache, every call reads its weights from memory, as a model's layers do.
  const int64_t copies = sh.prepared ? std::max<int64_t>(1, env_int("EMBER_BENCH_COLD_B", 1)) : 1;
  std::vector<float> panels;
  int64_t per_copy = 0;
  if (sh.prepared) {
    ember_rt::PreparedB layout = ember_rt::prepared_b_layout(nullptr, sh.K, sh.N, 0, tune);
    per_copy = ember_rt::prepared_b_floats(sh.K, sh.N, layout.nr);
    panels.resize(per_copy * copies);
    for (int64_t c = 0; c < copies; ++c)
      ember_rt::prepare_b(B.data(), 1, 0, s.b_k, s.b_n, layout, panels.data() + c * per_copy);
    layout.data = panels.data();
    s.prepared = layout;
  }
  int64_t call = 0;
  auto* pool = static_cast<SpinPool*>(ctx->pool);
  const double flop = 2.0 * sh.M * sh.N * sh.K;
  const int64_t reps = static_cast<int64_t>(5e7 / flop) + 1;  // ~ 1 ms per round
  std::vector<float> bias(sh.N, 0.25f);
  const float* bp = bias.data();
  auto bias_gelu = [bp](int64_t, int64_t, int64_t n0, int64_t len, float* row) {
    using ember_rt::vf;
    int64_t i = 0;
    for (; i + vf::width <= len; i += vf::width)
      ember_rt::gelu_erf(vf::load(row + i) + vf::load(bp + n0 + i)).store(row + i);
    if (i < len) {
      const int n = static_cast<int>(len - i);
      ember_rt::gelu_erf(vf::load_partial(row + i, n) + vf::load_partial(bp + n0 + i, n))
          .store_partial(row + i, n);
    }
  };
  auto run = [&] {
    if (copies > 1) s.prepared.data = panels.data() + (call++ % copies) * per_copy;
    if (sh.epilogue)
      ember_rt::gemm(s, ctx, bias_gelu, tune);
    else
      ember_rt::gemm(s, ctx, ember_rt::NoEpilogue{}, tune);
  };
  for (int split : splits) {  // warm up (scratch, caches)
    tune.split_k = split;
    run();
  }
  std::vector<Timing> best(splits.size(), Timing{1e30, 1e30});
  for (int round = 0; round < 25; ++round) {
    for (size_t v = 0; v < splits.size(); ++v) {
      tune.split_k = splits[v];
      if (pool) pool->overcount = 0;
      const double w0 = wall_seconds(), c0 = thread_cpu_seconds();
      for (int64_t r = 0; r < reps; ++r) run();
      const double wall = (wall_seconds() - w0) / reps;
      const double busy = (thread_cpu_seconds() - c0 - (pool ? pool->overcount : 0.0)) / reps;
      if (wall < best[v].wall) best[v].wall = wall;
      if (busy < best[v].busy) best[v].busy = busy;
    }
  }
  return best;
}

int main(int argc, char** argv) {
  std::vector<Shape> shapes = {
      {1024, 1024, 1024, false},    {512, 512, 512, false}, {128, 768, 768, false},
      {128, 768, 768, true},        {197, 768, 768, true},  {197, 3072, 768, true},
      {197, 3072, 768, true, true}, {64, 64, 64, false},    {8, 768, 768, true},
      {1, 768, 768, true},          {1, 3072, 768, true},   {1, 768, 3072, true},
      {1, 3072, 768, false}};
  if (argc > 1) {
    shapes.clear();
    for (int i = 1; i < argc; ++i) {
      Shape s{};
      char flags[8] = {};
      if (std::sscanf(argv[i], "%ldx%ldx%ld%7s", &s.M, &s.N, &s.K, flags) >= 3) {
        s.b_trans = std::strchr(flags, 't') != nullptr;
        s.a_trans = std::strchr(flags, 'a') != nullptr;
        s.epilogue = std::strchr(flags, 'e') != nullptr;
        s.prepared = std::strchr(flags, 'p') != nullptr;
        shapes.push_back(s);
      }
    }
  }
  const char* isa = ember_rt::vf::width == 16  ? "AVX-512"
                    : ember_rt::vf::width == 8 ? "AVX2"
                                               : "scalar";
  std::printf("ember_rt::gemm, %s (vf::width %d), %d micro-kernels, default kernel %dx%d\n", isa,
              ember_rt::vf::width, ember_rt::gemm_kernel_count(), ember_rt::gemm_kernel_mr(0),
              ember_rt::gemm_kernel_nr(0));
  const double peak1 = peak_gflops(1), peak2 = peak_gflops(2);
  std::printf("measured FMA peak: %.1f GFLOP/s (1 thread), %.1f GFLOP/s (2 threads)\n\n", peak1,
              peak2);
  std::vector<int> splits;
  if (const char* v = std::getenv("EMBER_BENCH_SPLIT_K"))
    for (const char* q = v; *q != '\0';) {
      char* end = nullptr;
      splits.push_back(static_cast<int>(std::strtol(q, &end, 10)));
      q = *end == ',' ? end + 1 : end;
      if (end == q && *q != '\0') break;  // not a number: stop
    }
  if (splits.empty()) splits.push_back(0);
  std::printf("%-22s | %-27s | %-27s | %s\n", "", "1 thread (CPU time)", "2 threads (busy time)",
              "2 threads (wall clock)");
  std::printf("%-22s | %10s %7s %8s | %10s %7s %8s | %10s\n", "M x N x K", "GFLOP/s", "% peak", "",
              "GFLOP/s", "% peak", "speedup", "GFLOP/s");
  SpinPool pool1(1), pool2(2);
  const ember_rt::LaunchContext ctx1{&pool1, 1, &SpinPool::parallel_run, nullptr, nullptr};
  const ember_rt::LaunchContext ctx2{&pool2, 2, &SpinPool::parallel_run, nullptr, nullptr};
  for (const Shape& sh : shapes) {
    std::vector<float> A(sh.M * sh.K), B(sh.K * sh.N), C(sh.M * sh.N);
    for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
    const double gf = 2.0 * sh.M * sh.N * sh.K / 1e9;
    const std::vector<Timing> t1s = time_gemm(sh, splits, &ctx1, A, B, C);
    const std::vector<Timing> t2s = time_gemm(sh, splits, &ctx2, A, B, C);
    for (size_t v = 0; v < splits.size(); ++v) {
      const Timing t1 = t1s[v], t2 = t2s[v];
      char name[64];
      std::snprintf(name, sizeof name, "%ldx%ldx%ld%s%s%s%s", sh.M, sh.N, sh.K,
                    sh.a_trans ? " At" : "", sh.b_trans ? " Bt" : "", sh.epilogue ? " +gelu" : "",
                    sh.prepared ? " prep" : "");
      std::string label = name;
      if (splits.size() > 1 || splits[0] != 0)
        label += splits[v] == 0 ? " sk=auto" : " sk=" + std::to_string(splits[v]);
      std::printf("%-22s | %10.1f %6.0f%% %8s | %10.1f %6.0f%% %7.2fx | %10.1f", label.c_str(),
                  gf / t1.busy, 100 * gf / t1.busy / peak1, "", gf / t2.busy,
                  100 * gf / t2.busy / peak2, t1.busy / t2.busy, gf / t2.wall);
      if (sh.M == 1)  // matrix-vector: memory bound, judge in GB/s of B streamed
        std::printf("   B at %.1f GB/s (1T), %.1f GB/s (2T)", 4.0 * sh.K * sh.N / t1.busy / 1e9,
                    4.0 * sh.K * sh.N / t2.busy / 1e9);
      std::printf("\n");
    }
  }
  return 0;
}
