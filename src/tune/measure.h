// Running one compiled kernel on its own, for tuning: buffers of the task's real shapes and a
// median time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/ir/task.h"
#include "ember_rt/kernel.h"

namespace ember::tune {

// Why `task` cannot be run on zero-filled buffers sized with `symbol_values` (an integer input
// could be a divisor; a symbolic size without a value), or "" when it can.
std::string why_not_measurable(const ir::Task& task,
                               const std::map<std::string, int64_t>& symbol_values);

// Zero-filled, 64-byte aligned buffers for every buffer of `task` (inputs, outputs, scratch), sized
// with `symbol_values`, and the kernel's `syms` array in `symbols` order.
class TaskBuffers {
 public:
  TaskBuffers(const ir::Task& task, const std::vector<std::string>& symbols,
              const std::map<std::string, int64_t>& symbol_values);
  void* const* args() const { return args_.data(); }
  const int64_t* syms() const { return syms_.data(); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::vector<std::unique_ptr<void, Free>> storage_;
  std::vector<void*> args_;
  std::vector<int64_t> syms_;
};

// A candidate replaces the default (the analytic blocking, the rules' algorithm) only when it is at
// least this much faster.
constexpr double kMinGain = 0.03;

// Times `fn` with the default thread pool (its workers spinning, as inside a graph run): the median
// of `reps` runs, in seconds.
double median_seconds(ember_kernel_fn fn, const TaskBuffers& buffers, int reps);

// Runs `count` variants of `fn` interleaved (one run of each per round, `select(i)` called before
// variant i runs), so a slow phase of a shared machine slows all of them alike; returns each
// variant's median.
std::vector<double> interleaved_medians(ember_kernel_fn fn, const TaskBuffers& buffers,
                                        size_t count, const std::function<void(size_t)>& select,
                                        int rounds);

// One kernel and the buffers it runs on.
struct KernelRun {
  ember_kernel_fn fn;
  const TaskBuffers* buffers;
};

// Runs several kernels interleaved (one run of each per round); returns each one's median.
std::vector<double> interleaved_medians(const std::vector<KernelRun>& runs, int rounds);

}  // namespace ember::tune
