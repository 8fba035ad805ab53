// What the kernel benchmarks (gemm_bench.cpp, conv_blocked_bench.cpp) share: CPU and wall
// clocks, a small spinning thread pool that records each chunk's CPU time, and the measured
// FMA peak.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <thread>
#include <vector>

#include "ember_rt/kernel.h"
#include "ember_rt/vec.h"

inline double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- a small spinning pool (the runtime's own pool is elsewhere; this mimics it) -----------

struct SpinPool {
  std::vector<std::thread> workers;
  std::atomic<int64_t> generation{0};
  std::atomic<int> pending{0};
  std::atomic<bool> stop{false};
  int threads = 1;
  int64_t n = 0;
  ember_rt::ChunkFn fn = nullptr;
  void* closure = nullptr;
  // CPU time of each thread's chunk in the current region, and the caller's CPU time that
  // went to waiting (its region time minus the slowest chunk), summed over regions: with it
  // the two-thread timing can discount the time a thread was descheduled by other load.
  std::vector<double> chunk_cpu;
  double overcount = 0;

  explicit SpinPool(int t) : threads(t), chunk_cpu(t, 0.0) {
    for (int i = 1; i < t; ++i)
      workers.emplace_back([this, i] {
        int64_t seen = 0;
        while (true) {
          int64_t g;
          while ((g = generation.load(std::memory_order_acquire)) == seen) {
            if (stop.load(std::memory_order_relaxed)) return;
          }
          seen = g;
          run_chunk(i);
          pending.fetch_sub(1, std::memory_order_acq_rel);
        }
      });
  }
  ~SpinPool() {
    stop = true;
    for (auto& w : workers) w.join();
  }
  void run_chunk(int i) {
    const int64_t chunks = n < threads ? n : threads;
    const double t0 = thread_cpu_seconds();
    if (i < chunks) fn(closure, n * i / chunks, n * (i + 1) / chunks);
    chunk_cpu[i] = thread_cpu_seconds() - t0;
  }
  static void parallel_run(void* pool, int64_t n, ember_rt::ChunkFn fn, void* closure) {
    auto* p = static_cast<SpinPool*>(pool);
    const double t0 = thread_cpu_seconds();
    p->n = n;
    p->fn = fn;
    p->closure = closure;
    p->pending.store(p->threads - 1, std::memory_order_relaxed);
    p->generation.fetch_add(1, std::memory_order_acq_rel);
    p->run_chunk(0);
    while (p->pending.load(std::memory_order_acquire) != 0) {
    }
    double slowest = 0;
    for (double c : p->chunk_cpu) slowest = c > slowest ? c : slowest;
    p->overcount += (thread_cpu_seconds() - t0) - slowest;
  }
};

// ---- peak: independent FMA chains in registers on every thread ------------------------------

inline double peak_gflops(int threads) {
  constexpr int kChains = 12;  // > FMA latency x FMA ports, so the ports never wait
  const int64_t iters = 2'000'000;
  std::vector<double> flops(threads);
  auto body = [&](int t) {
    ember_rt::vf acc[kChains];
    const ember_rt::vf a(1.0000001f), b(0.9999999f);
    for (int c = 0; c < kChains; ++c) acc[c] = ember_rt::vf(static_cast<float>(c + t));
    double best = 1e30;
    for (int round = 0; round < 9; ++round) {
      const double t0 = threads == 1 ? thread_cpu_seconds() : wall_seconds();
      for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
        for (int c = 0; c < kChains; ++c) acc[c] = ember_rt::fma(acc[c], a, b);
      }
      const double sec = (threads == 1 ? thread_cpu_seconds() : wall_seconds()) - t0;
      if (sec < best) best = sec;
    }
    float sink = 0;
    for (auto& v : acc) sink += ember_rt::reduce_add(v);
    if (sink == 12345.0f) std::printf(" ");
    flops[t] = 2.0 * kChains * ember_rt::vf::width * iters / best;
  };
  std::vector<std::thread> ts;
  // Every chain runs on a thread of its own (this loop inlined into the main thread's code ran
  // at a third of the speed on Zen 3, apparently from its code placement).
  for (int t = 0; t < threads; ++t) ts.emplace_back(body, t);
  for (auto& t : ts) t.join();
  double total = 0;
  for (double f : flops) total += f;
  return total / 1e9;
}
