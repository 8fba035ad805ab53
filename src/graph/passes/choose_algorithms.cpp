// Algorithm choice: each node of an operator with several algorithms (a convolution) is
// rewritten to the one its operator's rules pick (OpDef::choose_algorithm), so that the
// choice shows in the optimized graph and lowering only follows it. A choice may run the
// node as another operator on a prepared input (Winograd: conv2d_winograd on
// winograd_filter(w)); the preparation is a node of its own, which constant folding then
// evaluates once when the input is a constant.
#include "ember/graph/passes.h"

namespace ember::passes {

FlowGraph choose_algorithms(const FlowGraph& g) {
  FlowGraph out = g;
  out.nodes.clear();
  for (const Node& n : g.nodes) {
    if (!n.op->choose_algorithm) {
      out.nodes.push_back(n);
      continue;
    }
    std::vector<TensorType> in;
    std::vector<bool> constant;
    for (int v : n.inputs) {
      in.push_back(g.values[v]);
      constant.push_back(g.constants.count(v) > 0);
    }
    std::optional<AlgorithmChoice> choice = n.op->choose_algorithm(in, n.attrs, constant);
    if (!choice) {
      out.nodes.push_back(n);
      continue;
    }
    Node chosen = n;
    chosen.op = choice->op;
    chosen.attrs = choice->attrs;
    for (size_t i = 0; i < choice->prepare.size() && i < n.inputs.size(); ++i) {
      const OpDef* prep = choice->prepare[i];
      if (!prep) continue;
      const std::vector<TensorType> types = prep->infer({in[i]}, NoAttrs{});
      Node p;
      p.op = prep;
      p.inputs = {n.inputs[i]};
      p.outputs = {
          out.add_value(types.at(0), g.names[static_cast<size_t>(n.inputs[i])] + "_" + prep->name)};
      chosen.inputs[i] = p.outputs[0];
      out.nodes.push_back(std::move(p));
    }
    out.nodes.push_back(std::move(chosen));
  }
  return out;
}

}  // namespace ember::passes
