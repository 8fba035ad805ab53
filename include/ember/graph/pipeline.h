// The graph optimizer: the ordered list of passes lives in src/graph/pipeline.cpp.
#pragma once

#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/graph/passes.h"

namespace ember {

struct PassOptions {
  // When set, the graph is written as <dump_dir>/<NN>_<pass>.txt after each pass
  // (00_input.txt first).
  std::string dump_dir;
  // At search_space > 0, choose_algorithms measures the algorithms of the nodes that have
  // several (a convolution's) at the sizes in symbol_values, as the build's GEMM tuning does
  // (the same records); at 0 the rules choose.
  passes::AlgorithmTuning tuning;
};

struct PassTiming {
  std::string pass;
  double seconds = 0.0;
  int nodes_before = 0;
  int nodes_after = 0;
};

// Runs every pass in order; the input graph is not modified.
FlowGraph optimize(const FlowGraph& graph, const PassOptions& options = {},
                   std::vector<PassTiming>* timings = nullptr);

// The names of the passes, in the order optimize() runs them.
std::vector<std::string> pass_names();

}  // namespace ember
