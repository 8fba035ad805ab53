// A LaunchContext for tests of runtime_include/ember_rt routines without ember's thread
// pool: parallel_run starts one std::thread per chunk (slow, but real threads).
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "ember_rt/kernel.h"

namespace ember_rt::test {

inline void thread_run(int64_t n, ChunkFn fn, void* closure, int threads) {
  std::vector<std::thread> ts;
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(n, threads));
  for (int64_t c = 1; c < chunks; ++c)
    ts.emplace_back([=] { fn(closure, n * c / chunks, n * (c + 1) / chunks); });
  fn(closure, 0, n / chunks);
  for (auto& t : ts) t.join();
}

template <int T>
void run_threads(void* /*pool*/, int64_t n, ChunkFn fn, void* closure) {
  thread_run(n, fn, closure, T);
}

// A context running on 1, 2 or 3 threads (other counts run on 1).
inline LaunchContext make_ctx(int threads) {
  LaunchContext c{};
  c.pool = nullptr;
  c.num_threads = threads;
  c.parallel_run = threads == 2   ? &run_threads<2>
                   : threads == 3 ? &run_threads<3>
                                  : &run_threads<1>;
  return c;
}

}  // namespace ember_rt::test
