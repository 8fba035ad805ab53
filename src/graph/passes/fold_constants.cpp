// Constant folding: run nodes whose inputs are all constants now.
#include "ember/graph/passes.h"
#include "ember/ops/ops.h"

namespace ember::passes {

FlowGraph fold_constants(const FlowGraph& g) {
  FlowGraph out = g;
  out.nodes.clear();
  for (const Node& n : g.nodes) {
    bool all_const = !n.inputs.empty();
    for (int v : n.inputs) all_const = all_const && out.constants.count(v);
    if (!all_const) {
      out.nodes.push_back(n);
      continue;
    }
    std::vector<Tensor> in;
    for (int v : n.inputs) in.push_back(out.constants.at(v));
    std::vector<Tensor> res = ops::apply(n.op->name, in, n.attrs);
    for (size_t i = 0; i < n.outputs.size(); ++i) out.constants[n.outputs[i]] = res[i];
  }
  return eliminate_dead_code(out);
}

}  // namespace ember::passes
