#include "ember/runtime/thread_pool.h"

#include <dlfcn.h>
#include <immintrin.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <type_traits>

#include "ember/support/error.h"

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;

// How long a worker keeps spinning for the next job inside a region before it sleeps (at
// least; the pool's idle spin time when that is longer).
constexpr auto kRegionSpin = std::chrono::microseconds(100);
// How long the caller spins for workers to finish before it starts yielding its core.
constexpr auto kCallerSpin = std::chrono::microseconds(200);
// Pauses between two reads of the clock while spinning (a clock read costs ~20 ns).
constexpr int kPausesPerClockRead = 16;

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the futex word must be a plain 32-bit integer");

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

// Bumped in the child after fork(): a pool created before it has no workers there.
std::atomic<uint64_t> g_fork_generation{0};

uint64_t fork_generation() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1); });
    return true;
  }();
  (void)registered;
  return g_fork_generation.load(std::memory_order_relaxed);
}

// CPUs this process may run on (taskset, cpusets), which can be fewer than the machine has.
int available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void check_thread_count(int threads, const char* what) {
  EMBER_CHECK(threads >= 1 && threads <= ThreadPool::kMaxThreads,
              what << ": the number of threads must be between 1 and " << ThreadPool::kMaxThreads
                   << ", got " << threads << ".");
}

// floor(n * i / t) without overflowing for large n.
inline int64_t split_point(int64_t n, int64_t i, int64_t t) {
  return (n / t) * i + (n % t) * i / t;
}

// Set while this thread runs a chunk of use_openmp's: a parallel_run from inside runs inline.
thread_local bool t_in_openmp_chunk = false;

// One parallel_run on the OpenMP runtime: the team's threads claim chunks from `next`.
struct OpenMPJob {
  ThreadPool::ChunkFn fn = nullptr;
  void* closure = nullptr;
  int64_t n = 0;
  int threads = 0;
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
};

void openmp_team_body(void* data) {
  auto* job = static_cast<OpenMPJob*>(data);
  const bool outer = t_in_openmp_chunk;
  t_in_openmp_chunk = true;
  for (int c; (c = job->next.fetch_add(1, std::memory_order_relaxed)) < job->threads;) {
    const int64_t begin = split_point(job->n, c, job->threads);
    const int64_t end = split_point(job->n, c + 1, job->threads);
    try {
      if (begin < end) job->fn(job->closure, begin, end);
    } catch (...) {  // never through libgomp's frames: kept for the caller
      if (!job->failed.exchange(true, std::memory_order_acq_rel))
        job->error = std::current_exception();
    }
  }
  t_in_openmp_chunk = outer;
}

}  // namespace

ThreadPool::ThreadPool(int threads, int64_t spin_us) : fork_generation_(fork_generation()) {
  check_thread_count(threads, "ThreadPool");
  set_spin_us(spin_us);
  try {
    set_num_threads(threads);
  } catch (...) {
    shutdown();  // the destructor does not run for a constructor that throws
    throw;
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

void ThreadPool::shutdown() {
  if (fork_generation() != fork_generation_) {
    // In a forked child the worker threads do not exist: joining them is undefined, and
    // destroying joinable std::threads terminates. Leak the handles instead.
    new std::vector<std::thread>(std::move(workers_));
    return;
  }
  stop_.store(true, std::memory_order_seq_cst);
  gen_.fetch_add(2, std::memory_order_seq_cst);
  futex_wake_all(&gen_);
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::set_spin_us(int64_t spin_us) {
  EMBER_CHECK(spin_us >= 0 && spin_us <= kMaxSpinUs,
              "ThreadPool: the idle spin time must be between 0 and "
                  << kMaxSpinUs << " microseconds, got " << spin_us << ".");
  spin_us_.store(spin_us, std::memory_order_relaxed);
}

// Takes busy_ for work that must not overlap a parallel_run (resizing).
void ThreadPool::lock_exclusive() {
  while (busy_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
}

void ThreadPool::set_num_threads(int threads) {
  check_thread_count(threads, "set_num_threads");
  lock_exclusive();
  try {
    while (static_cast<int>(workers_.size()) < threads - 1) {
      int index = static_cast<int>(workers_.size()) + 1;
      // No job is in flight (we hold busy_), so gen_ is even and stable.
      uint32_t seen = gen_.load(std::memory_order_acquire);
      workers_.emplace_back([this, index, seen] { worker_main(index, seen); });
      pthread_setname_np(workers_.back().native_handle(), "ember-worker");
    }
  } catch (...) {
    busy_.store(false, std::memory_order_release);
    throw;
  }
  active_threads_.store(threads, std::memory_order_relaxed);
  // With more threads than CPUs, a spinning thread holds a CPU that the thread everyone
  // waits for needs (measured: 0.6 ms per run instead of 20 us): sleep and yield instead.
  oversubscribed_.store(threads > available_cpus(), std::memory_order_relaxed);
  busy_.store(false, std::memory_order_release);
}

// Returns the first even generation different from `seen` (or any, once stopping). A worker
// in use spins first: for the idle spin time after its last job, and at least kRegionSpin
// while a region is open; then it sleeps on the futex.
uint32_t ThreadPool::wait_for_job(uint32_t seen, int index) {
  auto ready = [&](uint32_t g) { return (g != seen && (g & 1) == 0); };
  if (index < num_threads() && !oversubscribed_.load(std::memory_order_relaxed)) {
    const auto start = Clock::now();
    for (;;) {
      for (int i = 0; i < kPausesPerClockRead; ++i) {
        uint32_t g = gen_.load(std::memory_order_acquire);
        if (ready(g) || stop_.load(std::memory_order_relaxed)) return g;
        _mm_pause();
      }
      auto budget = std::chrono::microseconds(spin_us_.load(std::memory_order_relaxed));
      if (regions_.load(std::memory_order_relaxed) > 0) budget = std::max(budget, kRegionSpin);
      const auto now = Clock::now();
      if (now - start > budget &&
          now.time_since_epoch().count() >= linger_until_ns_.load(std::memory_order_relaxed)) {
        break;
      }
    }
  }
  // Dekker-style handshake with publish(): we announce ourselves in sleepers_ before
  // reading gen_, the publisher bumps gen_ before reading sleepers_ (all seq_cst), so
  // either we see the new job or the publisher sees us and wakes us.
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  uint32_t g;
  while (!ready(g = gen_.load(std::memory_order_seq_cst)) &&
         !stop_.load(std::memory_order_seq_cst)) {
    futex_wait(&gen_, g);  // returns at once if gen_ is no longer g
  }
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
  return g;
}

void ThreadPool::worker_main(int index, uint32_t seen) {
  for (;;) {
    uint32_t g = wait_for_job(seen, index);
    if (stop_.load(std::memory_order_acquire)) return;
    ChunkFn fn = job_fn_.load(std::memory_order_relaxed);
    void* closure = job_closure_.load(std::memory_order_relaxed);
    int64_t n = job_n_.load(std::memory_order_relaxed);
    int threads = job_threads_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    // The fields read above belong to job g only if gen_ did not move meanwhile (else the
    // next job is being written: retry). A claimed chunk holds up job g's caller until it is
    // done, so the fields stay valid while this worker runs it.
    if (gen_.load(std::memory_order_relaxed) != g) continue;
    seen = g;
    for (int chunk; (chunk = claim_chunk(g, threads)) >= 0;) {
      run_chunk(fn, closure, n, threads, chunk);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }
}

// Takes the next unstarted chunk of job g, or returns -1 when none is left (or the job is no
// longer g). Chunks go to whichever thread asks first, so a worker that is slow to wake or
// descheduled by other load does not hold up the run: the caller takes its chunk instead.
int ThreadPool::claim_chunk(uint32_t g, int threads) {
  uint64_t word = claim_.load(std::memory_order_acquire);
  for (;;) {
    const auto next = static_cast<uint32_t>(word);
    if (static_cast<uint32_t>(word >> 32) != g || next >= static_cast<uint32_t>(threads)) return -1;
    if (claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) {
      return static_cast<int>(next);
    }
  }
}

void ThreadPool::run_chunk(ChunkFn fn, void* closure, int64_t n, int threads, int index) {
  int64_t begin = split_point(n, index, threads);
  int64_t end = split_point(n, index + 1, threads);
  if (begin < end) fn(closure, begin, end);
}

uint32_t ThreadPool::publish(ChunkFn fn, void* closure, int64_t n, int threads) {
  pending_.store(threads > 1 ? threads - 1 : 0, std::memory_order_relaxed);
  uint32_t g = gen_.fetch_add(1, std::memory_order_relaxed) + 2;  // odd: being written
  std::atomic_thread_fence(std::memory_order_release);
  job_fn_.store(fn, std::memory_order_relaxed);
  job_closure_.store(closure, std::memory_order_relaxed);
  job_n_.store(n, std::memory_order_relaxed);
  job_threads_.store(threads, std::memory_order_relaxed);
  claim_.store(static_cast<uint64_t>(g) << 32 | 1u, std::memory_order_relaxed);  // 0: caller's
  gen_.fetch_add(1, std::memory_order_seq_cst);                                  // even: complete
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(&gen_);
  return g;
}

void ThreadPool::wait_for_workers() {
  auto deadline = Clock::now() + kCallerSpin;
  bool yielding = oversubscribed_.load(std::memory_order_relaxed);
  while (pending_.load(std::memory_order_acquire) != 0) {
    if (yielding) {
      std::this_thread::yield();
      continue;
    }
    for (int i = 0; i < kPausesPerClockRead; ++i) _mm_pause();
    yielding = Clock::now() > deadline;
  }
}

bool ThreadPool::use_openmp(bool on) {
  OmpParallelFn parallel = nullptr;
  if (on) {
    // RTLD_NOLOAD: only a runtime the process has loaded already (kept loaded: the handle is
    // never closed). glibc matches the name against loaded libraries' sonames.
    if (void* lib = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
      parallel = reinterpret_cast<OmpParallelFn>(dlsym(lib, "GOMP_parallel"));
    }
  }
  omp_parallel_.store(parallel, std::memory_order_relaxed);
  return parallel != nullptr;
}

void ThreadPool::run_openmp(OmpParallelFn parallel, int64_t n, ChunkFn fn, void* closure,
                            int threads) {
  OpenMPJob job;
  job.fn = fn, job.closure = closure, job.n = n, job.threads = threads;
  parallel(&openmp_team_body, &job, static_cast<unsigned>(threads), 0);
  if (job.failed.load(std::memory_order_acquire)) std::rethrow_exception(job.error);
}

void ThreadPool::parallel_run(int64_t n, ChunkFn fn, void* closure, int max_threads) {
  if (n <= 0) return;
  auto thread_count = [&] {
    int64_t t = num_threads();
    if (max_threads > 0 && max_threads < t) t = max_threads;
    return static_cast<int>(std::min<int64_t>(t, n));
  };
  if (OmpParallelFn parallel = omp_parallel_.load(std::memory_order_relaxed)) {
    if (thread_count() <= 1 || fork_generation() != fork_generation_ || t_in_openmp_chunk) {
      fn(closure, 0, n);
    } else {
      run_openmp(parallel, n, fn, closure, thread_count());
    }
    return;
  }
  if (thread_count() <= 1 || fork_generation() != fork_generation_ ||
      busy_.exchange(true, std::memory_order_acquire)) {
    fn(closure, 0, n);  // too small, forked child, or the pool is busy: run inline
    return;
  }
  int threads = std::min(thread_count(), static_cast<int>(workers_.size()) + 1);
  // Waits for the workers and frees the pool even if chunk 0 throws: the workers use
  // `closure`, which lives in the caller's frame.
  struct Finish {
    ThreadPool* pool;
    bool started = false;
    ~Finish() {
      if (started) pool->wait_for_workers();
      pool->busy_.store(false, std::memory_order_release);
    }
  } finish{this};
  if (threads <= 1) {
    fn(closure, 0, n);
    return;
  }
  uint32_t g = publish(fn, closure, n, threads);
  finish.started = true;
  run_chunk(fn, closure, n, threads, 0);
  // Then the chunks no worker has started yet.
  for (int chunk; (chunk = claim_chunk(g, threads)) >= 0;) {
    struct Done {  // counted even if the chunk throws: wait_for_workers must not hang
      std::atomic<int>& pending;
      ~Done() { pending.fetch_sub(1, std::memory_order_release); }
    } done{pending_};
    run_chunk(fn, closure, n, threads, chunk);
  }
}

void ThreadPool::begin_region() {
  if (regions_.fetch_add(1, std::memory_order_relaxed) != 0 || uses_openmp()) return;
  wake_sleepers();  // spinning (they see the open region) by the time the first kernel runs
}

void ThreadPool::prewake(std::chrono::microseconds linger) {
  static_assert(std::is_same_v<Clock::duration, std::chrono::nanoseconds>);
  if (uses_openmp()) return;  // the pool's workers are not used
  const int64_t until = (Clock::now() + linger).time_since_epoch().count();
  if (linger_until_ns_.load(std::memory_order_relaxed) < until)
    linger_until_ns_.store(until, std::memory_order_relaxed);
  wake_sleepers();
}

// Wakes sleeping workers with an empty job. Skipped if a parallel_run is in progress
// (workers are awake then).
void ThreadPool::wake_sleepers() {
  if (sleepers_.load(std::memory_order_seq_cst) == 0 || fork_generation() != fork_generation_ ||
      busy_.exchange(true, std::memory_order_acquire)) {
    return;
  }
  publish(nullptr, nullptr, 0, 0);
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::end_region() {
  int before = regions_.fetch_sub(1, std::memory_order_relaxed);
  EMBER_ASSERT(before > 0, "ThreadPool::end_region without begin_region");
}

void ThreadPool::run_limited(void* limit, int64_t n, ChunkFn fn, void* closure) {
  auto* l = static_cast<Limit*>(limit);
  l->pool->parallel_run(n, fn, closure, l->threads);
}

namespace {

// LaunchContext::scratch: per-thread buffers that live in this library, which is never
// unloaded, so kernel modules hold no thread_local of their own and can be unloaded.
float* launch_scratch(int slot, size_t floats) {
  struct Buffers {
    float* p[ember_rt::kScratchSlots] = {};
    size_t n[ember_rt::kScratchSlots] = {};
    ~Buffers() {
      for (float* q : p)
        if (q) ::operator delete[](q, std::align_val_t{64});
    }
  };
  thread_local Buffers buf;
  if (slot < 0 || slot >= ember_rt::kScratchSlots) return nullptr;
  if (buf.n[slot] < floats) {
    if (buf.p[slot]) ::operator delete[](buf.p[slot], std::align_val_t{64});
    buf.p[slot] = nullptr, buf.n[slot] = 0;
    const size_t want = floats + floats / 4 + 64;  // some headroom against regrowing
    buf.p[slot] = static_cast<float*>(::operator new[](want * sizeof(float), std::align_val_t{64}));
    buf.n[slot] = want;
  }
  return buf.p[slot];
}

}  // namespace

ember_rt::LaunchContext ThreadPool::context(int max_threads) {
  int threads = num_threads();
  if (max_threads > 0 && max_threads < threads) threads = max_threads;
  std::lock_guard<std::mutex> lock(limits_mu_);
  std::unique_ptr<Limit>& limit = limits_[threads];
  if (!limit) limit = std::make_unique<Limit>(Limit{this, threads});
  return ember_rt::LaunchContext{limit.get(), threads, &ThreadPool::run_limited, nullptr,
                                 &launch_scratch};
}

// -----------------------------------------------------------------------------------------
// The default pool.

namespace {

std::atomic<int> g_requested_threads{0};  // set by set_num_threads before the pool exists

int initial_default_threads() {
  if (int requested = g_requested_threads.load(); requested > 0) return requested;
  const char* env = std::getenv("EMBER_NUM_THREADS");
  if (env != nullptr && *env != '\0') {
    char* end = nullptr;
    long value = std::strtol(env, &end, 10);
    EMBER_CHECK(*end == '\0' && value >= 1 && value <= ThreadPool::kMaxThreads,
                "EMBER_NUM_THREADS is set to '"
                    << env << "', which is not a number of threads between 1 and "
                    << ThreadPool::kMaxThreads
                    << ". Set it to the number of threads ember may use, or unset it to use one "
                    << "per hardware thread.");
    return static_cast<int>(value);
  }
  return std::min(available_cpus(), ThreadPool::kMaxThreads);
}

}  // namespace

int64_t spin_us_from_env(const char* value) {
  if (value == nullptr || *value == '\0') return ThreadPool::kDefaultSpinUs;
  char* end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(value, &end, 10);
  EMBER_CHECK(errno == 0 && end != value && *end == '\0' && parsed >= 0 &&
                  parsed <= ThreadPool::kMaxSpinUs,
              "EMBER_SPIN_US is set to '"
                  << value << "', which is not a number of microseconds between 0 and "
                  << ThreadPool::kMaxSpinUs
                  << ". Set it to how long idle pool threads keep spinning for more work "
                  << "before they sleep (0: sleep at once), or unset it for the default of "
                  << ThreadPool::kDefaultSpinUs << ".");
  return parsed;
}

ThreadPool& default_pool() {
  static ThreadPool pool(initial_default_threads(), spin_us_from_env(std::getenv("EMBER_SPIN_US")));
  return pool;
}

void set_num_threads(int threads) {
  check_thread_count(threads, "set_num_threads");
  g_requested_threads.store(threads);
  default_pool().set_num_threads(threads);
}

int get_num_threads() { return default_pool().num_threads(); }

}  // namespace ember
