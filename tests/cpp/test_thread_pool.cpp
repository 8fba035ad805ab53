// Tests of ember's thread pool: coverage of the static split, regions, concurrent and
// nested callers, resizing, and the user-facing errors.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/runtime/thread_pool.h"
#include "ember/support/error.h"

namespace ember {
namespace {

// Runs `f(begin, end)` through the pool's C interface, as generated kernels do.
template <class F>
void run(ThreadPool& pool, int64_t n, F&& f, int max_threads = 0) {
  using Fn = std::remove_reference_t<F>;
  auto trampoline = [](void* closure, int64_t b, int64_t e) { (*static_cast<Fn*>(closure))(b, e); };
  pool.parallel_run(n, +trampoline, &f, max_threads);
}

// Counts how often each index of [0, n) is visited and records the chunks.
struct Coverage {
  explicit Coverage(int64_t n) : counts(static_cast<size_t>(n)) {}
  void operator()(int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) counts[static_cast<size_t>(i)].fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    chunks.emplace_back(b, e);
  }
  std::vector<std::atomic<int>> counts;
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
};

void expect_each_index_once(Coverage& c) {
  for (size_t i = 0; i < c.counts.size(); ++i) ASSERT_EQ(c.counts[i].load(), 1) << "index " << i;
}

TEST(ThreadPool, SumMatchesSerial) {
  ThreadPool pool(4);
  const int64_t n = 1000003;
  std::atomic<int64_t> sum{0};
  run(pool, n, [&](int64_t b, int64_t e) {
    int64_t local = 0;
    for (int64_t i = b; i < e; ++i) local += i;
    sum.fetch_add(local);
  });
  EXPECT_EQ(sum.load(), n * (n - 1) / 2);
}

TEST(ThreadPool, EveryIndexExactlyOnceWithStaticSplit) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 3, 5, 6, 7, 8, 100, 1001}) {
      Coverage c(n);
      run(pool, n, [&](int64_t b, int64_t e) { c(b, e); });
      expect_each_index_once(c);
      // Chunk i of T covers [n*i/T, n*(i+1)/T) with T = min(n, threads).
      int64_t t = std::min<int64_t>(n, threads);
      std::vector<std::pair<int64_t, int64_t>> expected;
      for (int64_t i = 0; i < t; ++i) expected.emplace_back(n * i / t, n * (i + 1) / t);
      std::sort(c.chunks.begin(), c.chunks.end());
      EXPECT_EQ(c.chunks, expected) << "threads=" << threads << " n=" << n;
    }
  }
}

TEST(ThreadPool, FewerItemsThanThreads) {
  ThreadPool pool(8);
  Coverage c(3);
  run(pool, 3, [&](int64_t b, int64_t e) { c(b, e); });
  expect_each_index_once(c);
  EXPECT_EQ(c.chunks.size(), 3u);
}

TEST(ThreadPool, EmptyRangeCallsNothing) {
  ThreadPool pool(4);
  int calls = 0;
  run(pool, 0, [&](int64_t, int64_t) { ++calls; });
  run(pool, -5, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, MaxThreadsLimitsChunks) {
  ThreadPool pool(4);
  Coverage c(100);
  auto body = [&](int64_t b, int64_t e) { c(b, e); };
  run(pool, 100, body, /*max_threads=*/2);
  expect_each_index_once(c);
  EXPECT_EQ(c.chunks.size(), 2u);
}

TEST(ThreadPool, ChunksRunOnSeveralThreads) {
  ThreadPool pool(3);
  std::mutex mu;
  std::vector<std::thread::id> ids;
  std::atomic<int> started{0};
  run(pool, 3, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.push_back(std::this_thread::get_id());
    }
    // Chunks go to whichever thread claims them first: hold each until all three have
    // started, so the workers must take two of them (10 s at most, should they never come).
    started.fetch_add(1);
    for (int i = 0; i < 10000 && started.load() < 3; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()) - ids.begin(), 3);
  EXPECT_NE(std::find(ids.begin(), ids.end(), std::this_thread::get_id()), ids.end())
      << "the caller runs chunk 0";
}

TEST(ThreadPool, ManyRunsInsideAndOutsideRegions) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    ThreadPool::Region region(pool);
    for (int k = 0; k < 500; ++k) {
      std::atomic<int64_t> sum{0};
      run(pool, 64, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
      ASSERT_EQ(sum.load(), 64);
    }
  }
  for (int k = 0; k < 200; ++k) {  // outside any region: workers are woken every time
    std::atomic<int64_t> sum{0};
    run(pool, 64, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
    ASSERT_EQ(sum.load(), 64);
  }
}

TEST(ThreadPool, RegionLeftOpenLetsWorkersSleepAndStillWorks) {
  ThreadPool pool(2);
  pool.begin_region();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin budget
  Coverage c(10);
  run(pool, 10, [&](int64_t b, int64_t e) { c(b, e); });
  expect_each_index_once(c);
  pool.end_region();
}

// Sums [0, n) through the pool: every index exactly once, on whichever threads are awake.
void expect_run_covers(ThreadPool& pool, int64_t n, const char* when) {
  Coverage c(n);
  run(pool, n, [&](int64_t b, int64_t e) { c(b, e); });
  for (size_t i = 0; i < c.counts.size(); ++i)
    ASSERT_EQ(c.counts[i].load(), 1) << when << ": index " << i;
}

// Waits (up to 10 s) until every worker of `pool` sleeps; false if they never do.
bool all_workers_fall_asleep(const ThreadPool& pool, int workers) {
  for (int i = 0; i < 10000 && pool.sleeping_workers() != workers; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return pool.sleeping_workers() == workers;
}

// Workers spin for the idle spin time after a run, then sleep: runs right after each other
// (spinning workers), and after the workers fell asleep, both complete correctly.
TEST(ThreadPool, IdleSpinThenSleepBothRunCorrectly) {
  for (int64_t spin_us : {int64_t{0}, int64_t{50}, ThreadPool::kDefaultSpinUs}) {
    ThreadPool pool(3, spin_us);
    EXPECT_EQ(pool.spin_us(), spin_us);
    for (int round = 0; round < 3; ++round) {
      for (int k = 0; k < 300; ++k) expect_run_covers(pool, 1 + k % 50, "back to back");
      ASSERT_TRUE(all_workers_fall_asleep(pool, 2))
          << "spin " << spin_us << " us: workers never sleep";
      expect_run_covers(pool, 77, "after the workers fell asleep");
      ThreadPool::Region region(pool);  // a region opened while they sleep wakes them
      expect_run_covers(pool, 33, "in a region after sleeping");
    }
  }
}

// With a long spin time the workers are still spinning right after a run (no wake-up for
// the next one); shortening it lets them sleep.
TEST(ThreadPool, LongSpinKeepsWorkersAwakeUntilShortened) {
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) < 2)
    GTEST_SKIP() << "one CPU: the pool never spins";
  ThreadPool pool(2, ThreadPool::kMaxSpinUs);
  std::atomic<int> started{0};
  run(pool, 2, [&](int64_t, int64_t) {  // both chunks at once: the worker takes part
    started.fetch_add(1);
    for (int i = 0; i < 10000 && started.load() < 2; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_EQ(started.load(), 2);
  EXPECT_EQ(pool.sleeping_workers(), 0) << "the worker sleeps right after its job";
  expect_run_covers(pool, 10, "second run");
  pool.set_spin_us(0);
  expect_run_covers(pool, 10, "after set_spin_us(0)");  // its next wait uses the new time
  EXPECT_TRUE(all_workers_fall_asleep(pool, 1));
  expect_run_covers(pool, 10, "after sleeping");
}

// prewake wakes sleeping workers and keeps them spinning for the time it is given (spin time
// 0, no region open), after which they sleep again; runs stay correct throughout.
TEST(ThreadPool, PrewakeKeepsWorkersSpinningForItsTime) {
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) < 2)
    GTEST_SKIP() << "one CPU: the pool never spins";
  ThreadPool pool(2, 0);  // no more threads than CPUs (else it never spins)
  expect_run_covers(pool, 40, "first run");
  ASSERT_TRUE(all_workers_fall_asleep(pool, 1));
  pool.prewake(std::chrono::seconds(2));
  bool woke = false;
  for (int i = 0; i < 1000 && !woke; ++i) {
    woke = pool.sleeping_workers() == 0;
    if (!woke) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(woke) << "prewake left workers asleep";
  for (int i = 0; i < 50; ++i) {  // still spinning 100 ms later, with spin time 0
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(pool.sleeping_workers(), 0) << "a worker slept " << 2 * i << " ms after prewake";
  }
  expect_run_covers(pool, 40, "after prewake");
  EXPECT_TRUE(all_workers_fall_asleep(pool, 1)) << "workers spin past prewake's time";
  pool.prewake();  // the default time, while they sleep: a run right after it is right
  expect_run_covers(pool, 40, "right after prewake");
}

TEST(ThreadPool, SpinTimeIsValidated) {
  ThreadPool pool(2);
  EXPECT_EQ(pool.spin_us(), ThreadPool::kDefaultSpinUs);
  EXPECT_THROW(pool.set_spin_us(-1), Error);
  EXPECT_THROW(pool.set_spin_us(ThreadPool::kMaxSpinUs + 1), Error);
  EXPECT_THROW(ThreadPool(2, -5), Error);
  EXPECT_EQ(pool.spin_us(), ThreadPool::kDefaultSpinUs);
  EXPECT_EQ(spin_us_from_env(nullptr), ThreadPool::kDefaultSpinUs);
  EXPECT_EQ(spin_us_from_env(""), ThreadPool::kDefaultSpinUs);
  EXPECT_EQ(spin_us_from_env("0"), 0);
  EXPECT_EQ(spin_us_from_env("150"), 150);
  EXPECT_EQ(spin_us_from_env("1000000"), 1000000);
  for (const char* bad : {"fast", "-1", "1000001", "12us", "1e3", " ", "99999999999999999999"}) {
    try {
      spin_us_from_env(bad);
      ADD_FAILURE() << "expected ember::Error for EMBER_SPIN_US='" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("EMBER_SPIN_US is set to '") + bad +
                    "', which is not a number of microseconds between 0 and 1000000. Set it "
                    "to how long idle pool threads keep spinning for more work before they "
                    "sleep (0: sleep at once), or unset it for the default of 200.");
    }
  }
}

TEST(ThreadPool, ConcurrentCallersAllComplete) {
  ThreadPool pool(3);
  std::atomic<bool> ok{true};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int k = 0; k < 500; ++k) {
        int64_t n = 1 + k % 97;
        Coverage c(n);
        run(pool, n, [&](int64_t b, int64_t e) { c(b, e); });
        for (auto& count : c.counts) {
          if (count.load() != 1) ok = false;
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_TRUE(ok.load());
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  run(pool, 2, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      run(pool, 10, [&](int64_t ib, int64_t ie) { total.fetch_add(ie - ib); });
    }
  });
  EXPECT_EQ(total.load(), 20);
}

TEST(ThreadPool, ExceptionInCallerChunkLeavesPoolUsable) {
  ThreadPool pool(2);
  std::thread::id caller = std::this_thread::get_id();
  EXPECT_THROW(run(pool, 2,
                   [&](int64_t, int64_t) {
                     if (std::this_thread::get_id() == caller) throw std::runtime_error("boom");
                   }),
               std::runtime_error);
  Coverage c(50);
  run(pool, 50, [&](int64_t b, int64_t e) { c(b, e); });
  expect_each_index_once(c);
}

// ---- use_openmp ---------------------------------------------------------------------------

// Loads the system's OpenMP runtime into this test program, as importing PyTorch does (the test
// is skipped where the compiler's libgomp is not installed).
bool load_openmp() { return dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL) != nullptr; }

std::string thread_name() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

TEST(ThreadPoolOpenMP, OffUntilAskedAndOnlyWithALoadedRuntime) {
  ThreadPool pool(2);
  EXPECT_FALSE(pool.uses_openmp());
  if (dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD) == nullptr) {
    EXPECT_FALSE(pool.use_openmp(true)) << "no OpenMP runtime is loaded: none may be loaded";
    EXPECT_EQ(dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD), nullptr);
    EXPECT_FALSE(pool.uses_openmp());
  }
  if (!load_openmp()) GTEST_SKIP() << "libgomp.so.1 is not installed";
  EXPECT_TRUE(pool.use_openmp(true));
  EXPECT_TRUE(pool.uses_openmp());
  EXPECT_FALSE(pool.use_openmp(false));
  EXPECT_FALSE(pool.uses_openmp());
}

TEST(ThreadPoolOpenMP, ChunksRunOnTheRuntimesThreadsEachIndexOnce) {
  if (!load_openmp()) GTEST_SKIP() << "libgomp.so.1 is not installed";
  ThreadPool pool(3);
  ASSERT_TRUE(pool.use_openmp(true));
  for (int64_t n : {1, 2, 3, 7, 1000}) {
    Coverage c(n);
    run(pool, n, [&](int64_t b, int64_t e) { c(b, e); });
    expect_each_index_once(c);
    EXPECT_EQ(c.chunks.size(), static_cast<size_t>(std::min<int64_t>(n, 3))) << "n = " << n;
  }
  std::mutex mu;
  std::vector<std::thread::id> ids;
  std::vector<std::string> names;
  std::atomic<int> started{0};
  run(pool, 3, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.push_back(std::this_thread::get_id());
      names.push_back(thread_name());
    }
    started.fetch_add(1);  // hold each chunk until all three started (10 s at most)
    for (int i = 0; i < 10000 && started.load() < 3; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()) - ids.begin(), 3);
  for (const std::string& name : names) EXPECT_NE(name, "ember-worker");
  // max_threads still limits the chunks.
  Coverage c(100);
  run(
      pool, 100, [&](int64_t b, int64_t e) { c(b, e); }, 2);
  expect_each_index_once(c);
  EXPECT_EQ(c.chunks.size(), 2u);
}

TEST(ThreadPoolOpenMP, NestedCallRunsInlineOnTheSameThread) {
  if (!load_openmp()) GTEST_SKIP() << "libgomp.so.1 is not installed";
  ThreadPool pool(2);
  ASSERT_TRUE(pool.use_openmp(true));
  std::atomic<int64_t> total{0};
  std::atomic<int> elsewhere{0};
  run(pool, 2, [&](int64_t b, int64_t e) {
    const std::thread::id outer = std::this_thread::get_id();
    for (int64_t i = b; i < e; ++i) {
      run(pool, 10, [&](int64_t ib, int64_t ie) {
        total.fetch_add(ie - ib);
        if (std::this_thread::get_id() != outer) elsewhere.fetch_add(1);
      });
    }
  });
  EXPECT_EQ(total.load(), 20);
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(ThreadPoolOpenMP, ExceptionOnAnyThreadReachesTheCallerAndThePoolStaysUsable) {
  if (!load_openmp()) GTEST_SKIP() << "libgomp.so.1 is not installed";
  ThreadPool pool(2);
  ASSERT_TRUE(pool.use_openmp(true));
  for (int64_t thrower : {0, 1}) {
    try {
      run(pool, 2, [&](int64_t b, int64_t) {
        if (b == thrower) throw std::runtime_error("chunk " + std::to_string(b));
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "chunk " + std::to_string(thrower));
    }
    Coverage c(50);
    run(pool, 50, [&](int64_t b, int64_t e) { c(b, e); });
    expect_each_index_once(c);
  }
  // Back on the pool's own workers.
  pool.use_openmp(false);
  Coverage c(50);
  run(pool, 50, [&](int64_t b, int64_t e) { c(b, e); });
  expect_each_index_once(c);
}

TEST(ThreadPool, LaunchContextHonoursItsThreadLimit) {
  ThreadPool pool(4);
  ember_rt::LaunchContext ctx = pool.context(3);
  EXPECT_EQ(ctx.num_threads, 3);
  Coverage c(1000);
  auto chunk = [](void* closure, int64_t b, int64_t e) {
    (*static_cast<Coverage*>(closure))(b, e);
  };
  ctx.parallel_run(ctx.pool, 1000, +chunk, &c);
  expect_each_index_once(c);
  EXPECT_EQ(c.chunks.size(), 3u);
  EXPECT_EQ(pool.context(0).num_threads, 4);
  EXPECT_EQ(pool.context(99).num_threads, 4);
}

TEST(ThreadPool, ParallelForThroughLaunchContext) {
  ThreadPool pool(3);
  ember_rt::LaunchContext ctx = pool.context();
  Coverage c(999);
  auto body = [&](int64_t b, int64_t e) { c(b, e); };
  ember_rt::parallel_for(&ctx, 999, /*work=*/1e9, body);
  expect_each_index_once(c);
  EXPECT_EQ(c.chunks.size(), 3u);
  Coverage small(999);  // too little work to be worth other threads: one chunk
  ember_rt::parallel_for(&ctx, 999, /*work=*/10, [&](int64_t b, int64_t e) { small(b, e); });
  expect_each_index_once(small);
  EXPECT_EQ(small.chunks.size(), 1u);
}

TEST(ThreadPool, ResizeGrowsAndShrinks) {
  ThreadPool pool(2);
  for (int threads : {5, 1, 3, 2}) {
    pool.set_num_threads(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    Coverage c(40);
    run(pool, 40, [&](int64_t b, int64_t e) { c(b, e); });
    expect_each_index_once(c);
    EXPECT_EQ(c.chunks.size(), static_cast<size_t>(threads));
  }
}

TEST(ThreadPool, InvalidThreadCountsAreUserErrors) {
  try {
    ThreadPool pool(0);
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "ThreadPool: the number of threads must be between 1 and 1024, got 0.");
  }
  ThreadPool pool(2);
  EXPECT_THROW(pool.set_num_threads(-1), Error);
  EXPECT_THROW(pool.set_num_threads(ThreadPool::kMaxThreads + 1), Error);
  EXPECT_EQ(pool.num_threads(), 2);
}

TEST(DefaultPool, SetAndGetNumThreads) {
  int before = get_num_threads();
  EXPECT_GE(before, 1);
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  EXPECT_EQ(default_pool().num_threads(), 3);
  try {
    set_num_threads(0);
    FAIL() << "expected ember::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "set_num_threads: the number of threads must be between 1 and 1024, got 0.");
  }
  EXPECT_EQ(get_num_threads(), 3);
  set_num_threads(before);
}

// The default pool reads EMBER_NUM_THREADS once, when it is created: check it in a fresh
// process (the "threadsafe" death-test style re-runs this test alone in a new process).
TEST(DefaultPoolDeathTest, InvalidEnvironmentValueIsAUserError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("EMBER_NUM_THREADS", "lots", 1);
        try {
          default_pool();
        } catch (const Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(3);
        }
        std::exit(0);
      },
      testing::ExitedWithCode(3),
      "EMBER_NUM_THREADS is set to 'lots', which is not a number of threads between 1 and "
      "1024. Set it to the number of threads ember may use, or unset it to use one per "
      "hardware thread.");
  EXPECT_EXIT(
      {
        setenv("EMBER_NUM_THREADS", "3", 1);
        std::exit(get_num_threads());
      },
      testing::ExitedWithCode(3), "");
}

// The default pool reads EMBER_SPIN_US when it is created (in a fresh process, as above).
TEST(DefaultPoolDeathTest, SpinEnvironmentValue) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("EMBER_SPIN_US", "-3", 1);
        try {
          default_pool();
        } catch (const Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(3);
        }
        std::exit(0);
      },
      testing::ExitedWithCode(3), "EMBER_SPIN_US is set to '-3', which is not a number");
  EXPECT_EXIT(
      {
        setenv("EMBER_SPIN_US", "42", 1);
        std::exit(static_cast<int>(default_pool().spin_us()));
      },
      testing::ExitedWithCode(42), "");
}

}  // namespace
}  // namespace ember
