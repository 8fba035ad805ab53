// Rules for transposes that need no kernel of their own (rules.h):
//   permute(permute(x, p), q)      -> permute(x, p[q]), or x itself when that is the identity;
//   permute(x, p)                  -> reshape(x) when p only moves dimensions of size 1 (the
//                                     others keep their order, so no element moves);
//   matmul(permute(a), permute(b)) -> the matrix product that reads a or b transposed in place,
//                                     when the permute only swaps the last two dimensions.
// AOTAutograd's graphs are full of both: a Linear layer's forward is addmm(bias, x, t(w)),
// its backward mm(dy, t(t(w))) and t(mm(t(dy), x)), and without these rules each t was a
// copy of the weight on every call. A 1x1 convolution's input gradient, as a transposed
// convolution (one matrix product), permutes its kernel's unit dimensions in between the
// spatial ones: that had been a copy of the gradient with index arithmetic per element
// (MobileNetV2's 17 such layers: 43 ms of its 311 ms backward).
#include "ember/ops/matmul.h"
#include "rules.h"

namespace ember::passes {

namespace {

const OpDef& permute_op() {
  static const OpDef* const p = &op_def("permute");
  return *p;
}

bool is_identity(const std::vector<int64_t>& dims) {
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != static_cast<int64_t>(d)) return false;
  return true;
}

// Whether `dims` swaps the last two of at least two dimensions and keeps the others.
bool swaps_last_two(const std::vector<int64_t>& dims) {
  const size_t r = dims.size();
  if (r < 2) return false;
  std::vector<int64_t> swapped = dims;
  std::swap(swapped[r - 2], swapped[r - 1]);
  return is_identity(swapped);
}

// Whether permuting `shape` by `dims` keeps the order of the dimensions whose size is not
// (known to be) 1.
bool moves_only_units(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t last = -1;
  for (int64_t d : dims) {
    const auto size = shape.at(static_cast<size_t>(d)).as_int();
    if (size && *size == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

}  // namespace

std::optional<RuleMatch> match_unit_permute(const FlowGraph& g,
                                            const std::vector<std::vector<int>>&, int node) {
  const Node& n = g.nodes[static_cast<size_t>(node)];
  if (n.op != &permute_op()) return std::nullopt;
  const int x = n.inputs.at(0);
  if (!moves_only_units(g.values[x].shape, attrs_as<DimsAttrs>(n.attrs).dims)) return std::nullopt;
  const TensorType type = g.values[n.outputs.at(0)];
  RuleMatch m;
  m.root = node;
  m.replaced = {node};
  m.emit = [x, type](FlowGraph& out, const std::function<int(int)>& value) {
    static const OpDef& reshape = op_def("reshape");
    const int r = out.add_node(&reshape, ShapeAttrs{type.shape}, {value(x)}, {type});
    return out.nodes[static_cast<size_t>(r)].outputs.at(0);
  };
  return m;
}

std::optional<RuleMatch> match_permute_pair(const FlowGraph& g,
                                            const std::vector<std::vector<int>>&, int node) {
  const Node& outer = g.nodes[static_cast<size_t>(node)];
  if (outer.op != &permute_op()) return std::nullopt;
  const int inner_index = g.producers()[static_cast<size_t>(outer.inputs.at(0))];
  if (inner_index < 0) return std::nullopt;
  const Node& inner = g.nodes[static_cast<size_t>(inner_index)];
  if (inner.op != &permute_op()) return std::nullopt;
  const std::vector<int64_t>& p = attrs_as<DimsAttrs>(inner.attrs).dims;
  const std::vector<int64_t>& q = attrs_as<DimsAttrs>(outer.attrs).dims;
  if (p.size() != q.size()) return std::nullopt;
  // outer[i] = inner[i as permuted by q] = x[... by p[q]]: dimension d of the result is
  // dimension p[q[d]] of x.
  std::vector<int64_t> dims(q.size());
  for (size_t d = 0; d < q.size(); ++d) dims[d] = p.at(static_cast<size_t>(q[d]));
  const int x = inner.inputs.at(0);
  const TensorType type = g.values[outer.outputs.at(0)];
  RuleMatch m;
  m.root = node;
  m.replaced = {node};  // the inner permute stays when something else reads it
  if (is_identity(dims)) {
    m.emit = [x](FlowGraph&, const std::function<int(int)>& value) { return value(x); };
  } else {
    m.emit = [x, dims, type](FlowGraph& out, const std::function<int(int)>& value) {
      const int n = out.add_node(&permute_op(), DimsAttrs{dims}, {value(x)}, {type});
      return out.nodes[static_cast<size_t>(n)].outputs.at(0);
    };
  }
  return m;
}

std::optional<RuleMatch> match_transposed_operand(const FlowGraph& g,
                                                  const std::vector<std::vector<int>>&, int node) {
  const Node& product = g.nodes[static_cast<size_t>(node)];
  if (product.op->kind != OpKind::Matmul || product.inputs.size() != 2) return std::nullopt;
  const OpTraits traits = product.op->traits();
  bool transposed[2] = {traits.a_transposed, traits.b_transposed};
  std::vector<int> inputs = product.inputs;
  const std::vector<int> producers = g.producers();
  bool any = false;
  for (size_t i = 0; i < 2; ++i) {
    const int p = producers[static_cast<size_t>(inputs[i])];
    if (p < 0) continue;
    const Node& source = g.nodes[static_cast<size_t>(p)];
    if (source.op != &permute_op() || !swaps_last_two(attrs_as<DimsAttrs>(source.attrs).dims))
      continue;
    inputs[i] = source.inputs.at(0);
    transposed[i] = !transposed[i];
    any = true;
  }
  if (!any) return std::nullopt;
  const OpDef* op = &matmul_variant(transposed[0], transposed[1]);
  const TensorType type = g.values[product.outputs.at(0)];
  // The variant must take the permutes' inputs and give the product's type.
  try {
    const std::vector<TensorType> out =
        op->infer_types({g.values[inputs[0]], g.values[inputs[1]]}, product.attrs);
    if (out.size() != 1 || out[0].dtype != type.dtype || !shape_equal(out[0].shape, type.shape))
      return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  RuleMatch m;
  m.root = node;
  m.replaced = {node};  // a permute that something else reads stays
  m.emit = [op, inputs, type, attrs = product.attrs](FlowGraph& out,
                                                     const std::function<int(int)>& value) {
    const int n = out.add_node(op, attrs, {value(inputs[0]), value(inputs[1])}, {type});
    return out.nodes[static_cast<size_t>(n)].outputs.at(0);
  };
  return m;
}

}  // namespace ember::passes
