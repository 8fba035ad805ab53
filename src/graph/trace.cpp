// trace_from: symbolic tensors' traces -> FlowGraph.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "ember/graph/flow_graph.h"
#include "ember/support/error.h"

namespace ember {

namespace {

class Tracer {
 public:
  Tracer(FlowGraph& g, const std::vector<Tensor>& inputs, bool discover)
      : g_(g), discover_(discover) {
    for (const Tensor& t : inputs) {
      EMBER_CHECK(t.defined(), "trace_from: an input tensor is undefined");
      EMBER_CHECK(t.is_symbolic() && !t.trace(),
                  "trace_from: inputs must be symbolic tensors made by ember.symbol or "
                  "ember.symbol_like (got "
                      << (t.is_symbolic() ? "the output of an operator" : "a concrete tensor")
                      << ")");
      EMBER_CHECK(!leaf_.count(t.impl()), "trace_from: the same input is listed twice");
      int id = g_.add_value(t.type(), t.name().empty() ? "x" : t.name());
      leaf_[t.impl()] = id;
      g_.inputs.push_back(id);
    }
  }

  int value_of(const Tensor& t) {
    if (!t.trace()) return leaf(t);
    const TraceNode* tn = t.trace().get();
    if (auto it = node_out_.find({tn, t.trace_index()}); it != node_out_.end()) return it->second;
    visit(t.trace());
    return node_out_.at({tn, t.trace_index()});
  }

 private:
  int leaf(const Tensor& t) {
    if (auto it = leaf_.find(t.impl()); it != leaf_.end()) return it->second;
    if (!t.is_symbolic()) {
      int id = g_.add_value(t.type(), "c");
      g_.constants[id] = t;
      leaf_[t.impl()] = id;
      return id;
    }
    EMBER_CHECK(discover_, "trace_from: the outputs depend on symbolic tensor "
                               << (t.name().empty() ? "" : "'" + t.name() + "' ") << "of type "
                               << t.type().str()
                               << " that is not among the inputs; pass it in `inputs`");
    int id = g_.add_value(t.type(), t.name().empty() ? "x" : t.name());
    leaf_[t.impl()] = id;
    g_.inputs.push_back(id);
    return id;
  }

  // Adds the node (after its inputs), iteratively so deep graphs do not overflow the stack.
  void visit(const std::shared_ptr<TraceNode>& root) {
    std::vector<std::pair<const TraceNode*, size_t>> stack = {{root.get(), 0}};
    std::set<const TraceNode*> on_stack = {root.get()};
    while (!stack.empty()) {
      auto& [tn, next] = stack.back();
      if (next < tn->inputs.size()) {
        const Tensor& in = tn->inputs[next++];
        if (!in.trace()) continue;
        const TraceNode* p = in.trace().get();
        if (done_.count(p)) continue;
        EMBER_ASSERT(!on_stack.count(p), "a cycle in the trace");
        on_stack.insert(p);
        stack.push_back({p, 0});
        continue;
      }
      std::vector<int> ins;
      for (const Tensor& in : tn->inputs) ins.push_back(value_of_done(in));
      int n = g_.add_node(tn->op, tn->attrs, ins, tn->outputs);
      for (size_t i = 0; i < tn->outputs.size(); ++i)
        node_out_[{tn, static_cast<int>(i)}] = g_.nodes[n].outputs[i];
      done_.insert(tn);
      on_stack.erase(tn);
      stack.pop_back();
    }
  }

  int value_of_done(const Tensor& t) {
    if (!t.trace()) return leaf(t);
    return node_out_.at({t.trace().get(), t.trace_index()});
  }

  FlowGraph& g_;
  bool discover_;
  std::map<const TensorImpl*, int> leaf_;
  std::map<std::pair<const TraceNode*, int>, int> node_out_;
  std::set<const TraceNode*> done_;
};

// The number of trace nodes `t` depends on (itself included; 0 for a leaf).
size_t ancestors(const Tensor& t) {
  if (!t.trace()) return 0;
  std::set<const TraceNode*> seen = {t.trace().get()};
  std::vector<const TraceNode*> stack = {t.trace().get()};
  while (!stack.empty()) {
    const TraceNode* tn = stack.back();
    stack.pop_back();
    for (const Tensor& in : tn->inputs)
      if (in.trace() && seen.insert(in.trace().get()).second) stack.push_back(in.trace().get());
  }
  return seen.size();
}

}  // namespace

// The nodes are added output by output, each after its inputs (depth first), the outputs
// taken from the one that depends on the fewest nodes: an output that needs only part of
// another's computation (a training backward's weight gradient of a late layer, which needs
// the gradient chain down to that layer only) is computed as soon as that part is, as eager
// PyTorch would, so the values it reads are not kept alive until the end. The graph's
// outputs keep their order.
FlowGraph trace_from(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) {
  EMBER_CHECK(!outputs.empty(), "trace_from: no output tensors given");
  for (const Tensor& t : outputs)
    EMBER_CHECK(t.defined(), "trace_from: an output tensor is undefined");
  FlowGraph g;
  Tracer tracer(g, inputs, inputs.empty());
  std::vector<size_t> order(outputs.size());
  std::vector<size_t> size(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) order[i] = i, size[i] = ancestors(outputs[i]);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return size[a] < size[b]; });
  for (size_t i : order) tracer.value_of(outputs[i]);
  for (const Tensor& t : outputs) g.outputs.push_back(tracer.value_of(t));
  g.verify();
  return g;
}

}  // namespace ember
