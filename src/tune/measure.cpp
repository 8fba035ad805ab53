#include "measure.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "ember/ir/dtype.h"
#include "ember/ir/expr.h"
#include "ember/runtime/thread_pool.h"
#include "ember/support/error.h"

namespace ember::tune {

std::string why_not_measurable(const ir::Task& task,
                               const std::map<std::string, int64_t>& symbol_values) {
  for (const ir::Buffer& b : task.buffers) {
    // Zero-filled integer inputs could be divisors; measure only float data.
    if (b.role == ir::BufferRole::Input && !is_float(b.dtype))
      return "an input of type " + std::string(dtype_name(b.dtype));
    for (const ir::Expr& d : b.shape)
      for (const std::string& v : ir::free_vars(d))
        if (!symbol_values.count(v)) return "the symbolic size " + v + " has no value to tune at";
  }
  return "";
}

void TaskBuffers::Free::operator()(void* p) const { std::free(p); }

TaskBuffers::TaskBuffers(const ir::Task& task, const std::vector<std::string>& symbols,
                         const std::map<std::string, int64_t>& symbol_values) {
  for (const ir::Buffer& b : task.buffers) {
    int64_t numel = 1;  // the memory its layout takes (a blocked buffer's padding lanes too)
    for (const ir::Expr& d : b.layout.physical_shape(b.shape))
      numel *= ir::eval_int(d, symbol_values);
    EMBER_ASSERT(numel >= 0, "negative buffer size while tuning " << task.name);
    size_t bytes = static_cast<size_t>(numel) * dtype_size(b.dtype);
    bytes = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    void* p = std::aligned_alloc(64, bytes);
    EMBER_CHECK(p != nullptr, "out of memory while tuning " << task.name << ": a buffer of "
                                                            << bytes << " bytes");
    std::memset(p, 0, bytes);
    storage_.emplace_back(p);
    args_.push_back(p);
  }
  for (const std::string& s : symbols) {
    auto it = symbol_values.find(s);
    syms_.push_back(it == symbol_values.end() ? 1 : it->second);
  }
  if (syms_.empty()) syms_.push_back(0);
}

namespace {

double seconds_of(ember_kernel_fn fn, const TaskBuffers& b, const ember_rt::LaunchContext& ctx) {
  auto start = std::chrono::steady_clock::now();
  fn(b.args(), b.syms(), &ctx);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

double median_seconds(ember_kernel_fn fn, const TaskBuffers& buffers, int reps) {
  ThreadPool& pool = default_pool();
  const ember_rt::LaunchContext ctx = pool.context();
  ThreadPool::Region region(pool);
  std::vector<double> times;
  for (int r = 0; r < std::max(reps, 1); ++r) times.push_back(seconds_of(fn, buffers, ctx));
  return median(times);
}

namespace {

// `count` variants run interleaved: run(i, ctx) times variant i once.
template <typename Run>
std::vector<double> interleaved(size_t count, int rounds, const Run& run) {
  ThreadPool& pool = default_pool();
  const ember_rt::LaunchContext ctx = pool.context();
  ThreadPool::Region region(pool);
  std::vector<std::vector<double>> times(count);
  for (int r = 0; r < std::max(rounds, 1); ++r)
    for (size_t i = 0; i < count; ++i) times[i].push_back(run(i, ctx));
  std::vector<double> out;
  for (auto& t : times) out.push_back(median(t));
  return out;
}

}  // namespace

std::vector<double> interleaved_medians(ember_kernel_fn fn, const TaskBuffers& buffers,
                                        size_t count, const std::function<void(size_t)>& select,
                                        int rounds) {
  return interleaved(count, rounds, [&](size_t i, const ember_rt::LaunchContext& ctx) {
    select(i);
    return seconds_of(fn, buffers, ctx);
  });
}

std::vector<double> interleaved_medians(const std::vector<KernelRun>& runs, int rounds) {
  return interleaved(runs.size(), rounds, [&](size_t i, const ember_rt::LaunchContext& ctx) {
    return seconds_of(runs[i].fn, *runs[i].buffers, ctx);
  });
}

}  // namespace ember::tune
