// Constant folding: run nodes whose inputs are all constants now. A node that prepares a
// constant for its readers (OpDef::constant_preparation: the Winograd filter transform) is
// left to the build, which prepares it as a saved model can again at load. A node some of
// whose inputs are constants takes the form its operator gives for them
// (OpDef::fold_parameters: batch norm as one scale and one shift per channel).
#include <optional>
#include <string>
#include <vector>

#include "ember/graph/passes.h"
#include "ember/ops/ops.h"

namespace ember::passes {

namespace {

// `n` in the form its operator gives when some of its inputs are constants
// (OpDef::fold_parameters), its new constants added to `out`; else `n` as it is.
Node fold_parameters(FlowGraph& out, const Node& n) {
  if (!n.op->fold_parameters) return n;
  std::vector<TensorType> types;
  std::vector<Tensor> constants;
  bool any = false;
  for (int v : n.inputs) {
    types.push_back(out.values[v]);
    const auto it = out.constants.find(v);
    constants.push_back(it == out.constants.end() ? Tensor{} : it->second);
    any = any || it != out.constants.end();
  }
  if (!any) return n;
  const std::optional<ParameterFold> f = n.op->fold_parameters(types, constants, n.attrs);
  if (!f) return n;
  Node m{f->op, f->attrs, {}, n.outputs};
  for (size_t i = 0; i < f->from.size(); ++i) {
    if (f->from[i] >= 0) {
      m.inputs.push_back(n.inputs[static_cast<size_t>(f->from[i])]);
      continue;
    }
    const Tensor& c = f->constants.at(i);
    const std::string what = i < f->names.size() ? f->names[i] : "p" + std::to_string(i);
    const int v = out.add_value(c.type(), out.names[n.outputs[0]] + "_" + what);
    out.constants[v] = c;
    m.inputs.push_back(v);
  }
  return m;
}

}  // namespace

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
      out.nodes.push_back(fold_parameters(out, n));
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
