// Lowering a FlowGraph to kernels: each node (fused or not) becomes a Task, every Task
// becomes C++ source, the sources are compiled together (cached) and linked into an
// ExecPlan for the runtime.
#pragma once

#include <memory>

#include "ember/graph/flow_graph.h"
#include "ember/ir/task.h"
#include "ember/runtime/compiled_graph.h"

namespace ember {

// The compute definition of one node of `graph` (a fused node lowers its subgraph).
ir::Task lower_node(const FlowGraph& graph, const Node& node, const std::string& name);

// Compiles every node and returns the runnable graph.
std::shared_ptr<CompiledGraph> build_graph(const FlowGraph& graph);

}  // namespace ember
