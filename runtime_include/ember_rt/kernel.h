// The ABI between ember's runtime and the kernels it generates.
//
// Every generated kernel is an `extern "C"` function of type ember_kernel_fn:
//   args  : one pointer per buffer of the task, in the task's buffer order
//           (inputs, then outputs, then scratch buffers),
//   syms  : the values of the graph's symbolic dimensions, in the graph's symbol order,
//   ctx   : how to run work in parallel (the runtime's thread pool), and where to report
//           bad data (KernelError).
// Kernels split their work statically through ember_rt::parallel_for; work too small to be
// worth waking other threads runs on the calling thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ember_rt {

// Called once per chunk: [begin, end) of the iteration space.
using ChunkFn = void (*)(void* closure, int64_t begin, int64_t end);

// Bad data a kernel met: an index read from a tensor that is out of range, an integer
// division by zero, a channel block (value) not the vector width (bound) it was compiled for. The
// kernel does not stop (its threads cannot unwind through the pool): it records the first error
// here, goes on with a harmless value (index 0, quotient 0), and the runtime throws once the launch
// returns. Only the error path touches the atomic.
struct KernelError {
  enum Kind : int {
    kNone = 0,
    kIndexOutOfRange = 1,
    kDivisionByZero = 2,
    kLinalg = 3,
    kLayout = 4
  };
  // 0: no error; 1: the first report is being written; 2: written. Only ever accessed
  // through __atomic builtins (report_error, reported): <atomic> would cost every translation
  // unit of generated kernels about 0.1 s of template instantiation.
  int state = 0;
  int kind = kNone;
  const char* site = nullptr;  // static text in the kernel: what was checked
  int64_t value = 0;           // the bad index (or the dividend, or a linalg info)
  int64_t bound = 0;           // the size the index must stay below (linalg: the matrix)

  // Whether a kernel reported an error (read once the launch has returned: the report is then
  // written).
  bool reported() const { return __atomic_load_n(&state, __ATOMIC_ACQUIRE) != 0; }
};

struct LaunchContext {
  // Opaque pointer to the runtime's thread pool.
  void* pool;
  // Number of threads the pool may use for this launch (>= 1).
  int num_threads;
  // Splits [0, n) into at most num_threads contiguous chunks and calls fn on each, the
  // calling thread taking one; returns when every chunk is done.
  void (*parallel_run)(void* pool, int64_t n, ChunkFn fn, void* closure);
  // Where kernels report bad data; null when nobody listens (the reports are dropped).
  KernelError* error;
  // Per-thread scratch memory owned by the runtime, not by the kernel's module: a buffer of
  // at least `floats` floats, 64-byte aligned, for slot 0..kScratchSlots-1 of the calling
  // thread, valid until that thread asks for the same slot again. Kept out of the module so
  // that no thread_local with a destructor pins it in memory (glibc never unloads a module
  // one of whose thread_locals has a destructor registered). Null: the kernel uses its own.
  float* (*scratch)(int slot, size_t floats);
};
constexpr int kScratchSlots = 4;

// The error path: records the first report, drops later ones. Out of line and cold so that
// the checks in inner loops stay a compare and a predicted branch.
[[gnu::cold, gnu::noinline]] inline void report_error(const LaunchContext* ctx, int kind,
                                                      const char* site, int64_t value,
                                                      int64_t bound) {
  if (ctx == nullptr || ctx->error == nullptr) return;
  KernelError& e = *ctx->error;
  int expected = 0;
  if (!__atomic_compare_exchange_n(&e.state, &expected, 1, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  e.kind = kind;
  e.site = site;
  e.value = value;
  e.bound = bound;
  __atomic_store_n(&e.state, 2, __ATOMIC_RELEASE);
}

// An index read from data, checked against the size n of the dimension it selects along:
// i itself when 0 <= i < n, else 0 after reporting the error (torch rejects negative
// indices of embedding / gather / index_select too).
inline int64_t checked_index(int64_t i, int64_t n, const LaunchContext* ctx, const char* site) {
  if (__builtin_expect(static_cast<uint64_t>(i) >= static_cast<uint64_t>(n), 0)) {
    report_error(ctx, KernelError::kIndexOutOfRange, site, i, n);
    return 0;
  }
  return i;
}

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
#define EMBER_RT_ABI_VERSION 3

extern "C" {
typedef void (*ember_kernel_fn)(void* const* args, const int64_t* syms,
                                const ember_rt::LaunchContext* ctx);
}
