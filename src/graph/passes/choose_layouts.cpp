// The layout pass: chains of operators that run on a non-plain layout stay in it.
//
// choose_algorithms converts around each operator that runs on another layout (conv2d_blocked:
// to_layout(x, blocked) before it, to_layout(y, plain) after it). This pass removes the
// conversions inside chains of such operators:
//   - an operator that keeps its inputs' layout (OpTraits::layouts == LayoutRule::Keep: the
//     elementwise ones, a bias, a folded or unfolded batch norm, relu, a residual add) reading
//     a value that exists in a non-plain layout reads that form instead, and its output takes
//     the layout (its plain form stays, as a conversion, for readers that need it), unless
//     another operand of the output's size exists only plain (then it stays plain);
//   - squeeze and unsqueeze of size-1 dimensions after the channel (their infer decides,
//     LayoutRule::Own) are kept so too: their memory is the same in either rank;
//   - a conversion to a layout in which its input already exists reads that form (a
//     to_layout(plain) followed by to_layout(blocked) cancels, and a value converted for two
//     readers is converted once); a conversion to the layout its input has is dropped.
// Conversions remain only where a chain meets an operator that needs plain tensors (flatten,
// linear, a mean over the channels, the graph's outputs; pools and a mean over H and W keep
// the layout): dead code elimination drops the plain forms nobody reads.
#include <map>
#include <optional>

#include "ember/graph/passes.h"
#include "ember/ops/op_def.h"
#include "ember/support/error.h"

namespace ember::passes {

namespace {

Node conversion(int in, int out, const Layout& layout) {
  Node c;
  c.op = &op_def("to_layout");
  c.attrs = LayoutAttrs{layout};
  c.inputs = {in};
  c.outputs = {out};
  return c;
}

}  // namespace

FlowGraph choose_layouts(const FlowGraph& g) {
  const OpDef* to_layout = &op_def("to_layout");
  FlowGraph out = g;
  out.nodes.clear();
  std::map<int, int> alias;  // a value -> the value that replaces it (a cancelled conversion)
  std::map<int, int> laid;   // a plain value -> the same tensor in a non-plain layout
  auto resolve = [&](int v) {
    auto it = alias.find(v);
    return it == alias.end() ? v : it->second;
  };
  for (const Node& given : g.nodes) {
    Node n = given;
    for (int& v : n.inputs) v = resolve(v);
    if (n.op == to_layout) {
      const Layout target = std::get<LayoutAttrs>(n.attrs).layout;
      const int in = n.inputs.at(0);
      const Layout from = out.values[static_cast<size_t>(in)].layout;
      if (target == from) {  // nothing to convert
        alias[n.outputs[0]] = in;
        continue;
      }
      if (auto it = laid.find(in);
          it != laid.end() && out.values[static_cast<size_t>(it->second)].layout == target) {
        alias[n.outputs[0]] = it->second;  // converted back and forth: cancels
        continue;
      }
      if (target.is_plain()) {
        laid[n.outputs[0]] = in;
      } else if (from.is_plain() && !laid.count(in)) {
        laid[in] = n.outputs[0];  // a second conversion of `in` to this layout reads this one
      }
      out.nodes.push_back(std::move(n));
      continue;
    }
    // A view that decides its output's layout itself (squeeze, unsqueeze: size-1 dimensions
    // after the channel) is kept like a Keep operator, across the change of rank.
    const OpTraits traits = n.op->traits();
    const bool view = traits.is_view && traits.layouts == LayoutRule::Own && n.inputs.size() == 1;
    if ((traits.layouts == LayoutRule::Keep || view) && n.outputs.size() == 1) {
      const TensorType& result = out.values[static_cast<size_t>(n.outputs[0])];
      std::vector<int> inputs = n.inputs;
      Layout layout;
      bool any = false, agree = true;
      for (int& v : inputs) {
        const TensorType& t = out.values[static_cast<size_t>(v)];
        auto it = laid.find(v);
        // A full-size plain operand with no other form (a GEMM's result): reading it in
        // another layout would cost as much as the conversion saved, and the operator may
        // still be its producer's epilogue. Broadcast operands (a per-channel bias) stay plain.
        if (it == laid.end() && shape_equal(t.shape, result.shape) && t.layout.is_plain())
          agree = false;
        if (it == laid.end() || (t.shape.size() != result.shape.size() && !view)) continue;
        const Layout l = out.values[static_cast<size_t>(it->second)].layout;
        agree = agree && (!any || l == layout);
        layout = l;
        any = true;
        v = it->second;
      }
      if (any && agree) {
        // A plain operand with pixels of its own (not a per-channel [N, C, 1, 1] one, which
        // reads as a vector along the lanes anyway; a concatenation's other input) is
        // converted first: read plain, each lane of a vector would come from another plane.
        for (int& v : inputs) {
          const TensorType t = out.values[static_cast<size_t>(v)];
          if (!t.layout.is_plain() || t.shape.size() != result.shape.size() || t.shape.size() < 3 ||
              t.shape[1].as_int() == std::optional<int64_t>(1))
            continue;
          bool pixels = false;
          for (size_t d = 2; d < t.shape.size(); ++d)
            pixels = pixels || t.shape[d].as_int() != std::optional<int64_t>(1);
          if (!pixels) continue;
          auto it = laid.find(v);
          if (it == laid.end()) {
            TensorType converted = t;
            converted.layout = layout;
            const int c = out.add_value(
                converted, out.names[static_cast<size_t>(v)] + "_" + layout.name(t.shape.size()));
            out.nodes.push_back(conversion(v, c, layout));
            it = laid.emplace(v, c).first;
          }
          v = it->second;
        }
        std::vector<TensorType> types;
        for (int v : inputs) types.push_back(out.values[static_cast<size_t>(v)]);
        std::vector<TensorType> made;
        try {
          made = n.op->infer_types(types, n.attrs);
        } catch (const Error&) {
          made.clear();  // the layout does not fit this operator's inputs: it stays plain
        }
        if (made.size() == 1 && made[0].layout == layout) {
          Node kept = n;
          kept.inputs = inputs;
          const std::string name = g.names[static_cast<size_t>(n.outputs[0])];
          kept.outputs = {out.add_value(made[0], name + "_" + layout.name(result.shape.size()))};
          const int blocked = kept.outputs[0];
          out.nodes.push_back(std::move(kept));
          out.nodes.push_back(conversion(blocked, n.outputs[0], Layout::plain()));
          laid[n.outputs[0]] = blocked;
          continue;
        }
      }
    }
    out.nodes.push_back(std::move(n));
  }
  for (int& v : out.outputs) v = resolve(v);
  return eliminate_dead_code(out);
}

}  // namespace ember::passes
