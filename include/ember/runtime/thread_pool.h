// ember's thread pool: static splits, spinning workers during a graph run.
//
// ember brings no OpenMP runtime of its own: PyTorch ships one and mixing two is a known
// hazard. Generated kernels reach the pool through ember_rt::LaunchContext (kernel.h).
//
// In a process that has an OpenMP runtime loaded already (PyTorch's libgomp), use_openmp(true)
// runs the chunks on that runtime's threads instead of this pool's workers. Where ember's
// kernels run between PyTorch operators (a training step: the loss, autograd, the optimizer,
// operators ember does not convert), PyTorch's OpenMP workers spin after each operator (for
// milliseconds, by default) on the cores this pool's workers need, and the two sets of
// threads take turns on them: the MLP's training step ran 1.5x slower than on PyTorch's
// threads. On one set of threads a spinning worker picks up the next job, whoever's it is. The
// torch backend turns this on for training (docs/architecture.md, Runtime).
//
// Chunks are claimed by whichever thread comes first (the static split itself is fixed), so a
// worker that is slow to wake up, or descheduled by other load, costs the run nothing: the
// caller runs its chunk after its own.
//
// Workers spin (with pause) for a while after each job before they fall asleep (futex), so
// that the next job does not pay a wake-up (~50 us on the 2-core development VM, more than a
// small graph's whole run): for the idle spin time (EMBER_SPIN_US, default 200 us; like
// OpenMP's blocktime), which covers back-to-back runs of a model called in a loop, and at
// least 100 us while a region is open, which covers the gaps between the kernels of one
// graph run. An idle process stops using CPU after that. A pool with more threads than the
// CPUs it may use never spins: a spinning thread would hold a CPU that the thread everyone
// waits for needs.
//
// Concurrency: the pool runs one parallel_run at a time. A parallel_run that finds the pool
// busy (another thread's, or a nested call from inside a chunk) runs all of its work inline
// on the calling thread instead of waiting: it never deadlocks, and two graphs running on
// two threads both make progress. In a child process created by fork() the pool has no
// workers and runs everything inline.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ember_rt/kernel.h"

namespace ember {

class ThreadPool {
 public:
  using ChunkFn = ember_rt::ChunkFn;
  static constexpr int kMaxThreads = 1024;
  static constexpr int64_t kDefaultSpinUs = 200;
  static constexpr int64_t kMaxSpinUs = 1000000;

  // `threads` counts the calling thread: threads - 1 workers are started. Throws
  // ember::Error unless 1 <= threads <= kMaxThreads (and spin_us as set_spin_us).
  explicit ThreadPool(int threads, int64_t spin_us = kDefaultSpinUs);
  // Stops and joins the workers. No parallel_run may be in progress.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return active_threads_.load(std::memory_order_relaxed); }
  // Grows (starting workers) or shrinks (parking them) the pool; validated like the
  // constructor. Waits for a parallel_run in progress to finish, so it must not be called
  // from inside a chunk.
  void set_num_threads(int threads);

  // How long (microseconds) a worker keeps spinning for the next job after its last one
  // before it sleeps; 0 sleeps at once outside regions. Throws ember::Error unless
  // 0 <= spin_us <= kMaxSpinUs. Takes effect from the workers' next wait.
  void set_spin_us(int64_t spin_us);
  int64_t spin_us() const { return spin_us_.load(std::memory_order_relaxed); }
  // Workers asleep on the futex right now (for tests and diagnostics).
  int sleeping_workers() const { return sleepers_.load(std::memory_order_relaxed); }

  // Calls fn(closure, begin, end) on the chunks [n*i/T, n*(i+1)/T), i < T, where
  // T = min(n, num_threads(), max_threads if > 0); the caller runs chunk 0, then any chunk
  // no worker has started yet, and returns when all are done. fn must not throw on a worker
  // thread (that terminates the process).
  void parallel_run(int64_t n, ChunkFn fn, void* closure, int max_threads = 0);

  // Runs parallel_run's chunks on the process's OpenMP runtime (libgomp's GOMP_parallel, the
  // entry `#pragma omp parallel` compiles to) when `on` and that runtime is loaded already;
  // never loads one. Returns whether it is in effect. The chunks are claimed as with the pool
  // (any thread of the team takes the next unstarted one); the calling thread is one of the
  // team, which OpenMP keeps per calling thread, so two graphs running on two threads do not
  // share one. A call from inside a chunk, or in a child process after fork(), runs inline.
  // An exception thrown by a chunk on any thread is rethrown by parallel_run (the first, the
  // other chunks still run). Regions and prewake do nothing then: OpenMP's wait policy
  // (OMP_WAIT_POLICY, GOMP_SPINCOUNT) decides how long its idle threads spin.
  bool use_openmp(bool on);
  bool uses_openmp() const { return omp_parallel_.load(std::memory_order_relaxed) != nullptr; }

  // Brackets a graph run: workers keep spinning between the kernels inside. Regions nest
  // and may be opened by several threads; begin_region also wakes sleeping workers so that
  // the wake-up overlaps with the caller's own work.
  void begin_region();
  void end_region();

  // Wakes sleeping workers now and keeps every worker spinning for at least `linger` (as in
  // a region), so that a parallel_run or region that starts within that time finds them
  // awake: for a caller with work of its own before a run (the torch backend converts a
  // call's arguments first), the wake-up overlaps with that work instead of delaying the
  // first kernel. Costs a clock read when the workers are awake already (a futex wake when
  // some sleep). A pool with more threads than CPUs never spins, here neither.
  void prewake(std::chrono::microseconds linger = std::chrono::microseconds(100));

  class Region {
   public:
    explicit Region(ThreadPool& pool) : pool_(pool) { pool_.begin_region(); }
    ~Region() { pool_.end_region(); }
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;

   private:
    ThreadPool& pool_;
  };

  // A launch context for generated kernels that uses at most `max_threads` threads (all of
  // them when max_threads <= 0). It stays valid as long as the pool.
  ember_rt::LaunchContext context(int max_threads = 0);

 private:
  struct Limit {
    ThreadPool* pool;
    int threads;
  };

  // libgomp's GOMP_parallel(fn, data, num_threads, flags).
  using OmpParallelFn = void (*)(void (*)(void*), void*, unsigned, unsigned);

  static void run_limited(void* limit, int64_t n, ChunkFn fn, void* closure);
  static void run_openmp(OmpParallelFn parallel, int64_t n, ChunkFn fn, void* closure, int threads);
  void shutdown();
  void worker_main(int index, uint32_t seen);
  uint32_t wait_for_job(uint32_t seen, int index);
  uint32_t publish(ChunkFn fn, void* closure, int64_t n, int threads);
  int claim_chunk(uint32_t g, int threads);
  void wait_for_workers();
  void lock_exclusive();
  void wake_sleepers();
  void run_chunk(ChunkFn fn, void* closure, int64_t n, int threads, int index);

  // Job descriptor, published seqlock-style: gen_ is odd while it is being written and
  // even once it is complete; workers wake on a change of gen_ (a futex word).
  alignas(64) std::atomic<uint32_t> gen_{0};
  std::atomic<ChunkFn> job_fn_{nullptr};
  std::atomic<void*> job_closure_{nullptr};
  std::atomic<int64_t> job_n_{0};
  std::atomic<int> job_threads_{0};
  // The job's generation (high 32 bits) and its next unclaimed chunk (low 32 bits).
  std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<int> pending_{0};   // chunks not finished by workers
  alignas(64) std::atomic<int> sleepers_{0};  // workers blocked in futex wait
  std::atomic<int> regions_{0};
  std::atomic<int64_t> linger_until_ns_{0};  // prewake: workers spin until then (steady clock)
  std::atomic<int> active_threads_{1};
  std::atomic<int64_t> spin_us_{kDefaultSpinUs};
  std::atomic<bool> busy_{false};  // held by the parallel_run in progress
  std::atomic<bool> stop_{false};
  std::atomic<bool> oversubscribed_{false};           // more threads than CPUs: never spin
  std::atomic<OmpParallelFn> omp_parallel_{nullptr};  // use_openmp: the runtime's entry
  uint64_t fork_generation_;

  std::vector<std::thread> workers_;  // guarded by busy_
  std::mutex limits_mu_;
  std::map<int, std::unique_ptr<Limit>> limits_;
};

// The process-wide pool, created on first use with EMBER_NUM_THREADS threads (an invalid
// value is an ember::Error), else one per CPU this process may run on (sched_getaffinity),
// and the idle spin time of EMBER_SPIN_US.
ThreadPool& default_pool();

// The idle spin time an EMBER_SPIN_US value asks for: kDefaultSpinUs when null or empty;
// ember::Error unless it is an integer in [0, ThreadPool::kMaxSpinUs].
int64_t spin_us_from_env(const char* value);

// Resizes default_pool(); throws ember::Error unless 1 <= threads <= ThreadPool::kMaxThreads.
void set_num_threads(int threads);
int get_num_threads();

}  // namespace ember
