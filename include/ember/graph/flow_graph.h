// FlowGraph: a dataflow graph of operators over tensor values.
//
// Values are numbered; a value is a graph input, a constant, or an output of a node. Nodes
// are kept in topological order. Passes never mutate a graph in place: they build a new one.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ember/ops/op_def.h"
#include "ember/ops/trace.h"

namespace ember {

class CompiledGraph;
struct BuildOptions;

struct Node {
  const OpDef* op = nullptr;
  OpAttrs attrs;
  std::vector<int> inputs;
  std::vector<int> outputs;
};

class FlowGraph {
 public:
  std::vector<TensorType> values;
  std::vector<std::string> names;  // one per value, unique; appended by add_value only
  std::vector<int> inputs;
  std::map<int, Tensor> constants;
  std::vector<Node> nodes;
  std::vector<int> outputs;

  // Appends a value named `name_hint`, or `name_hint_K` with the smallest K >= 1 that keeps
  // the names unique. Amortized constant time: the names taken are indexed as they are added.
  int add_value(const TensorType& type, const std::string& name_hint);
  // Appends a node whose outputs are new values of the given types; returns its index.
  int add_node(const OpDef* op, OpAttrs attrs, std::vector<int> inputs,
               const std::vector<TensorType>& output_types);
  // The symbols used by the input shapes, in order of first appearance.
  std::vector<std::string> symbols() const;
  // For each value, the node producing it (-1 for inputs and constants).
  std::vector<int> producers() const;
  // For each value, the nodes consuming it (graph outputs are not counted).
  std::vector<std::vector<int>> consumers() const;
  // Checks the invariants (topological order, arity, types re-inferred); InternalError.
  void verify() const;
  // A stable structural hash (used as the in-memory compilation key).
  std::string fingerprint() const;
  // The text form: inputs, constants, each node with its output type and attributes, and
  // what the graph returns.
  std::string str() const;

  // Compiling and running: defined by the compiler (src/compile/build.cpp, build_graph).
  // Runs the graph on concrete inputs (builds and caches a CompiledGraph on first call).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  // Generates, compiles (or loads from the cache) and links every kernel.
  std::shared_ptr<CompiledGraph> build() const;
  // The same with tuning, dumps and progress (ember/compile/build.h).
  std::shared_ptr<CompiledGraph> build(const BuildOptions& options) const;

 private:
  mutable std::shared_ptr<CompiledGraph> compiled_;
  // add_value's index: the first `indexed_` names, and per base name the K to try next
  // (every smaller K is taken: names are never removed).
  std::unordered_set<std::string> taken_;
  std::unordered_map<std::string, int64_t> next_suffix_;
  size_t indexed_ = 0;
};

// Builds the graph that computes `outputs` from `inputs` by following the tensors'
// traces. Concrete tensors met on the way become constants; a symbolic tensor without a
// trace that is not listed in `inputs` is an ember::Error. With `inputs` empty, every
// untraced symbolic tensor becomes an input, in order of discovery.
FlowGraph trace_from(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs = {});

}  // namespace ember
