// Constant folding: run nodes whose inputs are all constants now. A node that prepares a
// constant for its readers (OpDef::constant_preparation: the Winograd filter transform) is
// left to the build, which prepares it as a saved model can again at load.
#include "ember/graph/passes.h"
#include "ember/ops/ops.h"

namespace ember::passes {

FlowGraph fold_constants(const FlowGraph& g) {
  FlowGraph out = g;
  out.nodes.clear();
  for (const Node& n : g.nodes) {
    bool all_const = !n.inputs.empty() && !n.op->constant_preparation;
    for (int v : n.inputs) all_const = all_const && out.constants.count(v);
    // A result whose shape depends on the inputs' symbols is not a constant.
    for (int v : n.outputs) all_const = all_const && shape_is_concrete(g.values[v].shape);
    // A tensor with memory is plain: a value of another layout stays computed by a kernel.
    for (int v : n.outputs) all_const = all_const && g.values[v].layout.is_plain();
    if (!all_const) {
      out.nodes.push_back(n);
      continue;
    }
    std::vector<Tensor> in;
    for (int v : n.inputs) in.push_back(out.constants.at(v));
    std::vector<Tensor> res = ops::apply(*n.op, in, n.attrs);
    for (size_t i = 0; i < n.outputs.size(); ++i) out.constants[n.outputs[i]] = res[i];
  }
  return eliminate_dead_code(out);
}

}  // namespace ember::passes
