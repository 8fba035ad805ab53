// Lowering a FlowGraph to kernels: each node (fused or not) becomes a Task, every Task
// becomes C++ source, the GEMM blocking of matmul kernels is tuned when asked, the sources
// are compiled together (cached) and linked into an ExecPlan for the runtime.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "ember/graph/flow_graph.h"
#include "ember/ir/task.h"
#include "ember/runtime/compiled_graph.h"
#include "ember/tune/tune.h"

namespace ember {

struct BuildOptions {
  // 0: the analytic GEMM blocking; 1: a small measured search per matmul kernel; 2: a large
  // one (see ember/tune/tune.h). Choices are recorded on disk and reused.
  int search_space = 0;
  // How GEMMs may split K across threads: Default (the template decides per call),
  // Disabled, Fixed (always `parts`), or Search (split-K candidates join the measured search).
  tune::ParallelK parallel_k;
  // Values of symbolic dimensions to tune kernels at (the shapes of example inputs). Kernels
  // stay generic in the symbols; only the measured blocking depends on these values.
  std::map<std::string, int64_t> symbol_values;
  // When set: the generated translation units are written to <dump_dir>/kernels/unit_<i>.cpp,
  // each kernel's plan (codegen::KernelPlan::str) to <dump_dir>/kernels/kernel_<k>.plan.txt
  // and the tuning decisions to <dump_dir>/tuning.txt.
  std::string dump_dir;
  // Called as progress(phase, done, total) for the phases "generating kernels", "tuning" and
  // "compiling" (the last only when something is compiled, not on a cache hit).
  std::function<void(const std::string& phase, int done, int total)> progress;
};

// Throws ember::Error when an option is out of range, naming the valid values.
void validate(const BuildOptions& options);

// The compute definition of one node of `graph` (a fused node lowers its subgraph).
ir::Task lower_node(const FlowGraph& graph, const Node& node, const std::string& name);

// Compiles every node and returns the runnable graph.
std::shared_ptr<CompiledGraph> build_graph(const FlowGraph& graph,
                                           const BuildOptions& options = {});

}  // namespace ember
