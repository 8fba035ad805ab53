// The rewrite rule for attention written out (the `attention` operator, src/ops/attention.cpp):
//
//   s = matmul(q, permute(k, last two swapped))      or matmul_nt(q, k); k may itself be a
//                                                     permute of the permute's input
//   s = s * c, s / c                                  constant scalars c > 0, any number, anywhere
//   s = s + mask                                      float32, after every scale
//     or s = where(keep, s, fill), where(drop, fill, s)   fill a constant scalar
//   p = softmax(s, last axis)
//   out = matmul(p, v)
//
// becomes out = attention(q, k, v, [mask], scale = the product of the c's (1/c for a
// division), fill = fill times the scales applied after the where, empty_nan: a row of -inf
// scores gives NaN, as softmax does). At most one mask. A constant keep mask that is the
// lower triangle (j <= i) of [Lq, Lk] with a -inf fill becomes causal = true and no mask
// (masked_fill with a torch.tril buffer, GPT-2's form), so the kernel skips those keys.
//
// Every intermediate value (the scores after each step, the probabilities) must be read by
// the next step only and not be a graph output; all of them are float32 of the scores' shape
// (a scale or a mask never broadcasts the scores up); the softmax is over the last axis; and
// the attention operator must accept q, k, v and the mask (one batch shape, the mask
// broadcastable to the scores) and give the final product's type. Anything else is left
// alone.
#include <cmath>
#include <limits>
#include <set>

#include "ember/ir/shape.h"
#include "ember/ops/op_def.h"
#include "ember/support/error.h"
#include "rules.h"

namespace ember::passes {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The value of a constant with one floating-point element.
std::optional<double> constant_scalar(const FlowGraph& g, int v) {
  const auto it = g.constants.find(v);
  if (it == g.constants.end() || !is_float(it->second.dtype())) return std::nullopt;
  if (!shape_is_concrete(it->second.shape()) || it->second.numel() != 1) return std::nullopt;
  return element_as_double(it->second, 0);
}

// Whether the bool constant t of shape [1.., lq, lk] keeps exactly j <= i.
bool is_causal_tril(const Tensor& t) {
  const Shape& s = t.shape();
  if (t.dtype() != DType::boolean || s.size() < 2 || !shape_is_concrete(s)) return false;
  for (size_t d = 0; d + 2 < s.size(); ++d)
    if (*s[d].as_int() != 1) return false;
  const int64_t lq = *s[s.size() - 2].as_int(), lk = *s[s.size() - 1].as_int();
  const bool* data = t.data_as<bool>();
  for (int64_t i = 0; i < lq; ++i)
    for (int64_t j = 0; j < lk; ++j)
      if (data[i * lk + j] != (j <= i)) return false;
  return true;
}

Tensor logical_not_constant(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), DType::boolean);
  const bool* src = t.data_as<bool>();
  bool* dst = out.data_as<bool>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = !src[i];
  return out;
}

bool is_float32(const FlowGraph& g, int v) { return g.values[v].dtype == DType::float32; }

}  // namespace

std::optional<RuleMatch> match_attention(const FlowGraph& g,
                                         const std::vector<std::vector<int>>& consumers, int node) {
  static const OpDef *matmul = &op_def("matmul"), *matmul_nt = &op_def("matmul_nt"),
                     *softmax = &op_def("softmax"), *mul = &op_def("mul"), *div = &op_def("div"),
                     *add = &op_def("add"), *where = &op_def("where"),
                     *permute = &op_def("permute"), *logical_not = &op_def("logical_not"),
                     *attention = &op_def("attention");
  const Node& root = g.nodes[static_cast<size_t>(node)];
  if (root.op != matmul) return std::nullopt;
  const std::set<int> outputs(g.outputs.begin(), g.outputs.end());
  const std::vector<int> producers = g.producers();
  // The node producing v when v is read once and is not a graph output; else -1.
  auto sole = [&](int v) {
    if (outputs.count(v) || consumers[static_cast<size_t>(v)].size() != 1) return -1;
    return producers[static_cast<size_t>(v)];
  };
  RuleMatch m;
  m.root = node;
  m.replaced = {node};
  const int probs = root.inputs[0], v = root.inputs[1];
  const int sm = sole(probs);
  if (sm < 0 || g.nodes[static_cast<size_t>(sm)].op != softmax || !is_float32(g, probs))
    return std::nullopt;
  const Node& smn = g.nodes[static_cast<size_t>(sm)];
  const Shape& scores = g.values[probs].shape;
  if (attrs_as<AxisAttrs>(smn.attrs).axis != static_cast<int64_t>(scores.size()) - 1)
    return std::nullopt;
  m.replaced.push_back(sm);

  // Walk back from the softmax's input to the first product.
  double scale = 1.0, scale_after_mask = 1.0;
  bool mask_seen = false, invert = false, scaled_after_mask = false;
  int mask = -1;  // an additive mask, or the where's condition
  bool additive = false;
  double fill = kNegInf;
  int x = smn.inputs[0];
  int product = -1;
  for (int steps = 0; steps < 8 && product < 0; ++steps) {
    const int n = sole(x);
    if (n < 0 || !is_float32(g, x) || !shape_equal(g.values[x].shape, scores)) return std::nullopt;
    const Node& nd = g.nodes[static_cast<size_t>(n)];
    m.replaced.push_back(n);
    if (nd.op == matmul || nd.op == matmul_nt) {
      product = n;
    } else if (nd.op == mul || nd.op == div) {
      int chain = nd.inputs[0];
      std::optional<double> c = constant_scalar(g, nd.inputs[1]);
      if (!c && nd.op == mul) {
        chain = nd.inputs[1];
        c = constant_scalar(g, nd.inputs[0]);
      }
      if (!c || !(*c > 0) || !std::isfinite(*c)) return std::nullopt;
      const double f = nd.op == mul ? *c : 1.0 / *c;
      scale *= f;
      if (!mask_seen) scale_after_mask *= f, scaled_after_mask = true;
      x = chain;
    } else if (nd.op == add) {
      if (mask_seen) return std::nullopt;
      if (scaled_after_mask) return std::nullopt;  // (s + mask) * c: the mask is scaled
      // The scores continue on the operand of the output's shape that a node computes.
      int chain = nd.inputs[0], other = nd.inputs[1];
      const bool first_ok = shape_equal(g.values[chain].shape, scores) && sole(chain) >= 0;
      if (!first_ok) std::swap(chain, other);
      if (!is_float32(g, other)) return std::nullopt;
      mask = other;
      additive = true;
      mask_seen = true;
      x = chain;
    } else if (nd.op == where) {
      if (mask_seen) return std::nullopt;
      const int cond = nd.inputs[0];
      if (g.values[cond].dtype != DType::boolean) return std::nullopt;
      std::optional<double> f = constant_scalar(g, nd.inputs[2]);
      int chain = nd.inputs[1];
      invert = false;
      if (!f) {
        f = constant_scalar(g, nd.inputs[1]);
        chain = nd.inputs[2];
        invert = true;
      }
      if (!f || std::isnan(*f)) return std::nullopt;
      mask = cond;
      fill = *f;
      mask_seen = true;
      x = chain;
    } else {
      return std::nullopt;
    }
  }
  if (product < 0) return std::nullopt;
  const Node& pn = g.nodes[static_cast<size_t>(product)];
  const int q = pn.inputs[0];
  int k = pn.inputs[1];
  // k^T = permute(src, dims): k is permute(src, k_dims), dims with its last two swapped
  // (the identity when src is k: the permute only swapped them; else, as ONNX exports write
  // it, one permute from [B, S, H, E] straight to [B, H, E, S], and k becomes a permute of
  // its own).
  std::vector<int64_t> k_dims;
  if (pn.op == matmul) {
    const int kt = producers[static_cast<size_t>(k)];
    if (kt < 0 || g.nodes[static_cast<size_t>(kt)].op != permute) return std::nullopt;
    k_dims = attrs_as<DimsAttrs>(g.nodes[static_cast<size_t>(kt)].attrs).dims;
    const size_t r = k_dims.size();
    if (r < 2) return std::nullopt;
    std::swap(k_dims[r - 2], k_dims[r - 1]);
    bool identity = true;
    for (size_t d = 0; d < r; ++d) identity = identity && k_dims[d] == static_cast<int64_t>(d);
    if (identity) k_dims.clear();
    k = g.nodes[static_cast<size_t>(kt)].inputs[0];  // the permute stays if others read it
  }
  TensorType k_type = g.values[k];
  if (!k_dims.empty()) {
    try {
      k_type = permute->infer_types({k_type}, DimsAttrs{k_dims}).at(0);
    } catch (const Error&) {
      return std::nullopt;
    }
  }

  AttentionAttrs a;
  a.scale = scale;
  a.empty_nan = true;
  a.has_mask = mask >= 0;
  std::optional<Tensor> mask_constant;
  if (mask >= 0 && !additive) {
    a.fill = fill * scale_after_mask;
    const auto it = g.constants.find(mask);
    if (it != g.constants.end()) {
      mask_constant = invert ? logical_not_constant(it->second) : it->second;
      invert = false;
      if (a.fill == kNegInf && is_causal_tril(*mask_constant)) {
        a.causal = true;
        a.has_mask = false;
        mask_constant.reset();
      }
    }
  }
  // The operator must take these inputs and give the product's type.
  std::vector<TensorType> in = {g.values[q], k_type, g.values[v]};
  if (a.has_mask) in.push_back(g.values[mask]);
  try {
    const std::vector<TensorType> out = attention->infer_types(in, a);
    const TensorType& want = g.values[root.outputs.at(0)];
    if (out.size() != 1 || out[0].dtype != want.dtype || !shape_equal(out[0].shape, want.shape))
      return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  const bool has_mask = a.has_mask;
  const TensorType mask_type = has_mask ? g.values[mask] : TensorType{};
  const TensorType out_type = g.values[root.outputs.at(0)];
  m.emit = [=](FlowGraph& out, const std::function<int(int)>& value) {
    int k_value = value(k);
    if (!k_dims.empty()) {
      const int n = out.add_node(permute, DimsAttrs{k_dims}, {k_value}, {k_type});
      k_value = out.nodes[static_cast<size_t>(n)].outputs.at(0);
    }
    std::vector<int> ins = {value(q), k_value, value(v)};
    if (has_mask && mask_constant) {
      const int c = out.add_value(mask_type, "keep");
      out.constants[c] = *mask_constant;
      ins.push_back(c);
    } else if (has_mask && invert) {
      const int n = out.add_node(logical_not, NoAttrs{}, {value(mask)}, {mask_type});
      ins.push_back(out.nodes[static_cast<size_t>(n)].outputs.at(0));
    } else if (has_mask) {
      ins.push_back(value(mask));
    }
    const int n = out.add_node(attention, a, ins, {out_type});
    return out.nodes[static_cast<size_t>(n)].outputs.at(0);
  };
  return m;
}

}  // namespace ember::passes
