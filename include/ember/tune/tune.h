// Tuning: choosing a kernel's schedule, and a node's algorithm, among candidates by running them.
//
// The algorithm of a node that has several (a convolution: Winograd, the implicit GEMM, the wide
// and im2col forms, ...; OpDef::choose_algorithm) is measured by the choose_algorithms pass
// (passes::measure_algorithms, src/tune/tune_algorithms.cpp): every algorithm that applies is built
// and timed on the real shapes, and the fastest replaces the rules' choice when it is clearly
// faster. Its GEMM blocking is then tuned with every other matmul kernel's, at build time.
//
// The tuned schedule is the blocking of the GEMM template (codegen::GemmConfig: the mc/nc/kc
// cache blocks, the micro-kernel, and how many parts K is split into across threads) of every
// kernel with a matmul stage: matmul, linear, bmm, convolution (im2col + GEMM), attention. A tuning
// build compiles each such kernel once, reading its blocking from a module-level array, and times
// the candidates on zero-filled buffers of the real shapes with the real thread pool; the fastest
// wins, and the default stays unless a candidate beats it clearly. The choice is recorded on disk
// (tuning records, see records.h), so a second build of the same kernel on the same machine
// measures nothing.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/codegen/codegen.h"
#include "ember/ir/task.h"

namespace ember::tune {

// How the K dimension of GEMMs may be split across threads (torch backend:
// parallel_k).
struct ParallelK {
  enum class Mode { Default, Disabled, Search, Fixed };
  Mode mode = Mode::Default;
  int parts = 0;  // Fixed: the number of parts (>= 2)
  // The split_k every kernel gets when it is not searched: 0 (the template decides), 1 (Disabled)
  // or parts (Fixed).
  int fixed_split_k() const;
};

struct TuneOptions {
  int search_space = 0;  // 0: no measured search; 1: a small space; 2: a large one
  ParallelK parallel_k;
  // Values for the symbolic dimensions, used to size the buffers candidates run on; a task whose
  // shapes hold a symbol without a value keeps the default blocking.
  std::map<std::string, int64_t> symbol_values;
  std::function<void(int done, int total)> progress;  // once per task measured
};

// Throws ember::Error when search_space or parallel_k is out of range, naming the valid values.
void validate(const TuneOptions& options);

// Whether `options` asks for any measurement.
bool wants_tuning(const TuneOptions& options);

struct TuneResult {
  codegen::GemmConfig config;    // the choice (default when nothing beat it)
  double default_seconds = 0.0;  // median time of the default blocking (0: not measured)
  double best_seconds = 0.0;     // median time of the choice
  int candidates = 0;            // how many were measured
  bool from_record = false;      // read from the tuning records, nothing measured
  std::string skipped;           // why the task kept its default without measuring
};

// Tunes the GEMM blocking of each task (tasks without a matmul stage get the default with `skipped`
// set). `symbols` is the graph's symbol order (the kernels' `syms` argument).
std::vector<TuneResult> tune_gemm_tasks(const std::vector<ir::Task>& tasks,
                                        const std::vector<std::string>& symbols,
                                        const TuneOptions& options);

// The candidate blocking for a GEMM of M x N x K (batch folded into nothing:
// blocking is per matrix) with the micro-kernels {mr, nr} compiled for this ISA. The default
// configuration comes first. Exposed for tests.
struct KernelShape {
  int mr, nr;
};
std::vector<codegen::GemmConfig> gemm_candidates(int64_t M, int64_t N, int64_t K,
                                                 const std::vector<KernelShape>& kernels,
                                                 int search_space, const ParallelK& parallel_k);

}  // namespace ember::tune
