// The ABI between ember's runtime and the kernels it generates.
//
// Every generated kernel is an `extern "C"` function of type ember_kernel_fn:
//   args  : one pointer per buffer of the task, in the task's buffer order
//           (inputs, then outputs, then scratch buffers),
//   syms  : the values of the graph's symbolic dimensions, in the graph's symbol order,
//   ctx   : how to run work in parallel (the runtime's thread pool).
// Kernels split their work statically through ember_rt::parallel_for; work too small to be
// worth waking other threads runs on the calling thread.
#pragma once

#include <cstdint>
#include <type_traits>

namespace ember_rt {

// Called once per chunk: [begin, end) of the iteration space.
using ChunkFn = void (*)(void* closure, int64_t begin, int64_t end);

struct LaunchContext {
  // Opaque pointer to the runtime's thread pool.
  void* pool;
  // Number of threads the pool may use for this launch (>= 1).
  int num_threads;
  // Splits [0, n) into at most num_threads contiguous chunks and calls fn on each, the
  // calling thread taking one; returns when every chunk is done.
  void (*parallel_run)(void* pool, int64_t n, ChunkFn fn, void* closure);
};

// Runs f(begin, end) over [0, n), split statically across the pool when `work` (an
// estimate of the cost in simple operations) is large enough to pay for it.
template <class F>
inline void parallel_for(const LaunchContext* ctx, int64_t n, double work, F&& f) {
  constexpr double kMinParallelWork = 32768.0;
  if (n <= 0) return;
  if (ctx == nullptr || ctx->num_threads <= 1 || n == 1 || work < kMinParallelWork) {
    f(int64_t{0}, n);
    return;
  }
  // F may be an lvalue reference (a named lambda) and const: strip both for the closure.
  using Fn = std::remove_cv_t<std::remove_reference_t<F>>;
  auto trampoline = [](void* closure, int64_t b, int64_t e) { (*static_cast<Fn*>(closure))(b, e); };
  ctx->parallel_run(ctx->pool, n, +trampoline, const_cast<Fn*>(&f));
}

}  // namespace ember_rt

// Bumped whenever the layout above or the kernel signature changes; a cached shared object
// built for another ABI version is rebuilt.
#define EMBER_RT_ABI_VERSION 1

extern "C" {
typedef void (*ember_kernel_fn)(void* const* args, const int64_t* syms,
                                const ember_rt::LaunchContext* ctx);
}
