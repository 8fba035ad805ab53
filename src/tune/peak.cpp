// The machine's peak FMA throughput and memory bandwidth (ember/tune/peak.h).
#include "ember/tune/peak.h"

#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <tuple>
#include <utility>

#include "ember/jit/cache.h"
#include "ember/runtime/thread_pool.h"
#include "ember/support/cpu.h"
#include "ember/support/error.h"
#include "ember/support/hash.h"
#include "jit/cache_layout.h"
#include "records.h"

namespace ember {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMagic = "ember-peak 2";
constexpr int kRepeats = 3;                  // bandwidth: each pass streams the whole buffer
constexpr int kFmaRepeats = 15;              // short and many: the best finds the cores free
constexpr int64_t kFmaIterations = 1 << 20;  // per thread and repetition: about a ms

using Clock = std::chrono::steady_clock;

// FMA chains: kChains independent accumulators (more than latency x units), each updated
// `iters` times; returns a value that depends on all of them so nothing is optimized away.
constexpr int kChains = 12;

__attribute__((target("avx512f"))) float fma_avx512(int64_t iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(0.5f + 0.01f * static_cast<float>(c));
  const __m512 mul = _mm512_set1_ps(0.9999f), add = _mm512_set1_ps(0.0001f);
  for (int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], mul, add);
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float r = 0.0f;
  for (float x : lanes) r += x;
  return r;
}

__attribute__((target("avx2,fma"))) float fma_avx2(int64_t iters) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(0.5f + 0.01f * static_cast<float>(c));
  const __m256 mul = _mm256_set1_ps(0.9999f), add = _mm256_set1_ps(0.0001f);
  for (int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], mul, add);
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  float r = 0.0f;
  for (float x : lanes) r += x;
  return r;
}

float fma_scalar(int64_t iters) {
  float acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = 0.5f + 0.01f * static_cast<float>(c);
  for (int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * 0.9999f + 0.0001f;
  float r = 0.0f;
  for (float x : acc) r += x;
  return r;
}

int lanes_of(Isa isa) { return isa == Isa::Avx512 ? 16 : isa == Isa::Avx2 ? 8 : 1; }

// Runs fn(chunk, begin, end) over [0, n) on `threads` threads of the pool; wall seconds.
template <class F>
double timed_parallel(ThreadPool& pool, int64_t n, int threads, F& fn) {
  auto call = [](void* closure, int64_t begin, int64_t end) {
    (*static_cast<F*>(closure))(begin, end);
  };
  auto t0 = Clock::now();
  pool.parallel_run(n, call, &fn, threads);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double measure_gflops(ThreadPool& pool, int threads, Isa isa) {
  volatile float sink = 0.0f;
  auto work = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float r = isa == Isa::Avx512 ? fma_avx512(kFmaIterations)
                : isa == Isa::Avx2 ? fma_avx2(kFmaIterations)
                                   : fma_scalar(kFmaIterations);
      sink = sink + r;
    }
  };
  const double flops =
      2.0 * static_cast<double>(kFmaIterations) * kChains * lanes_of(isa) * threads;
  double best = 0.0;
  for (int r = 0; r < kFmaRepeats; ++r) {
    double s = timed_parallel(pool, threads, threads, work);
    if (s > 0) best = std::max(best, flops / s * 1e-9);
  }
  return best;
}

// The data caches sysfs lists for CPU 0: {level 2 bytes, last level bytes}; what sysconf says
// where sysfs has nothing; 1 MiB and 32 MiB where neither does.
std::pair<int64_t, int64_t> cache_bytes() {
  int64_t l2 = 0, last = 0;
  int last_level = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_in(dir + "level"), size_in(dir + "size"), type_in(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(level_in >> level) || !(size_in >> size) || size.empty()) continue;
    if ((type_in >> type) && type == "Instruction") continue;
    int64_t bytes = std::atoll(size.c_str());
    if (size.back() == 'K') bytes *= 1024;
    if (size.back() == 'M') bytes *= 1024 * 1024;
    if (level == 2) l2 = bytes;
    if (level > last_level) last_level = level, last = bytes;
  }
  if (l2 <= 0) l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (last <= 0) last = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return {l2 > 0 ? l2 : int64_t{1} << 20, last > 0 ? last : int64_t{32} << 20};
}

// Triad bandwidth over three arrays of `total` bytes together, each thread streaming its
// own part, `passes` times per timed repetition (small working sets need many passes to
// take long enough to time).
double measure_gbps(ThreadPool& pool, int threads, int64_t total, int passes) {
  const int64_t n =
      std::max<int64_t>(total / 3 / static_cast<int64_t>(sizeof(float)) / 64 * 64, 64);
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  auto alloc = [&] {
    return std::unique_ptr<float[], Free>(
        static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>(n) * sizeof(float))));
  };
  auto a = alloc(), b = alloc(), c = alloc();
  EMBER_CHECK(a && b && c, "machine_peak: cannot allocate " << total << " bytes for the "
                                                            << "bandwidth measurement");
  float *pa = a.get(), *pb = b.get(), *pc = c.get();
  // Each thread touches first the part it streams (its memory node and its own cache).
  auto split = [&](int64_t t) { return n * t / threads; };
  auto init = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      for (int64_t i = split(t); i < split(t + 1); ++i) pa[i] = 0.0f, pb[i] = 1.0f, pc[i] = 2.0f;
  };
  timed_parallel(pool, threads, threads, init);
  volatile float s = 3.0f;
  auto triad = [&](int64_t begin, int64_t end) {
    const float k = s;
    for (int64_t t = begin; t < end; ++t)
      for (int p = 0; p < passes; ++p) {
        for (int64_t i = split(t); i < split(t + 1); ++i) pa[i] = pb[i] + k * pc[i];
        asm volatile("" ::: "memory");  // every pass reads and writes memory
      }
  };
  double best = 0.0;
  for (int r = 0; r < kRepeats; ++r) {
    double sec = timed_parallel(pool, threads, threads, triad);
    if (sec > 0) best = std::max(best, 12.0 * static_cast<double>(n) * passes / sec * 1e-9);
  }
  return best;
}

std::string record_key(const std::string& isa, int threads) {
  std::ostringstream os;
  os << kMagic << "\ncpu " << tune::cpu_model() << "\nisa " << isa << "\nthreads " << threads
     << "\nversion " << EMBER_VERSION << "\n";
  return sha256_hex(os.str());
}

bool read_record(const fs::path& path, MachinePeak* p) {
  std::ifstream in(path);
  if (!in) return false;
  std::string magic, w1, w2, w3, w4, w5;
  int threads = 0;
  bool ok = std::getline(in, magic) && magic == kMagic && (in >> w1 >> p->gflops) &&
            w1 == "gflops" && (in >> w2 >> p->gbps) && w2 == "gbps" && (in >> w4 >> p->gbps_l2) &&
            w4 == "gbps_l2" && (in >> w5 >> p->gbps_llc) && w5 == "gbps_llc" &&
            (in >> w3 >> threads) && w3 == "threads";
  // Impossible values (a damaged file) are not trusted: zero, negative, not finite, absurd.
  auto sane = [](double v) { return std::isfinite(v) && v > 0.0 && v < 1e9; };
  if (!ok || !sane(p->gflops) || !sane(p->gbps) || !sane(p->gbps_l2) || !sane(p->gbps_llc) ||
      threads != p->threads) {
    detail::debug_log("ignoring the malformed machine peak record " + path.string());
    return false;
  }
  return true;
}

void write_record(const fs::path& path, const MachinePeak& p) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += "." + detail::unique_suffix() + ".tmp";
  {
    std::ofstream out(tmp);
    out.precision(17);
    out << kMagic << "\ngflops " << p.gflops << "\ngbps " << p.gbps << "\ngbps_l2 " << p.gbps_l2
        << "\ngbps_llc " << p.gbps_llc << "\nthreads " << p.threads << "\ncpu " << p.cpu << "\nisa "
        << p.isa << "\n";
    if (!out) {  // a record is an optimisation: failing to keep one is not an error
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

}  // namespace

MachinePeak machine_peak(int threads, bool remeasure) {
  ThreadPool& pool = default_pool();
  if (threads <= 0) threads = get_num_threads();
  MachinePeak p;
  p.threads = std::max(1, std::min(threads, pool.num_threads()));
  const Isa isa = isa_from_env();
  p.isa = isa_name(isa);
  p.cpu = tune::cpu_model();
  p.cpu.erase(0, p.cpu.find_first_not_of(" \t"));
  std::tie(p.l2_bytes, p.llc_bytes) = cache_bytes();
  const fs::path path = detail::tuning_record(cache_dir(), record_key(p.isa, p.threads));
  p.record = path.string();
  MachinePeak recorded = p;
  const bool have = read_record(path, &recorded);
  if (have && !remeasure) {
    recorded.from_record = true;
    return recorded;
  }
  {
    ThreadPool::Region region(pool);  // the workers are awake for every repetition
    p.gflops = measure_gflops(pool, p.threads, isa);
    // Working sets: half of each thread's level-2 cache; half of the last-level cache (shared);
    // four times the last-level cache (64 MiB to 512 MiB): memory.
    p.gbps_l2 = measure_gbps(pool, p.threads, p.l2_bytes / 2 * p.threads, 64);
    p.gbps_llc = measure_gbps(pool, p.threads, p.llc_bytes / 2, 4);
    p.gbps = measure_gbps(
        pool, p.threads,
        std::clamp<int64_t>(4 * p.llc_bytes, int64_t{64} << 20, int64_t{512} << 20), 1);
  }
  if (have) {  // a peak is what the machine can do: the larger of two measurements
    p.gflops = std::max(p.gflops, recorded.gflops);
    p.gbps = std::max(p.gbps, recorded.gbps);
    p.gbps_l2 = std::max(p.gbps_l2, recorded.gbps_l2);
    p.gbps_llc = std::max(p.gbps_llc, recorded.gbps_llc);
  }
  write_record(path, p);
  return p;
}

}  // namespace ember
