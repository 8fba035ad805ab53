// Recomputation of cheap shared values, a rewrite that fuse_operators runs before it forms
// its groups.
//
// A cheap elementwise value read by several nodes that could all inline it (elementwise
// operators, reductions' prologues) is recomputed in each of them instead of stored: its node
// is copied once per reader. Cheap means reading at most one input of its own shape, every
// other input broadcast, and computing with cheap arithmetic only (x - mean[c] in a batch
// norm's forward and backward; exp(x) stays stored): each copy then reads about what the
// stored value would have cost to read, and the value's store and the pass that wrote it are
// gone. Graph outputs are stored as before.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ember/graph/passes.h"
#include "ember/ir/scalar_ops.h"

namespace ember::passes {

namespace {

// Whether `in` reaches `out`'s shape by broadcasting only: no more dimensions, and each of
// them 1 or equal to out's aligned one, at least one of them 1 where out's is not (or fewer
// dimensions).
bool is_broadcast_operand(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  bool smaller = in.size() < out.size();
  const size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    const ir::Expr& o = out[lead + d];
    const auto one = [](const ir::Expr& e) { return e.as_int() == std::optional<int64_t>(1); };
    if (one(in[d])) {
      smaller = smaller || !one(o);
    } else if (!ir::equal(in[d], o)) {
      return false;
    }
  }
  return smaller;
}

// Whether node n computes with cheap arithmetic only (add, compare, select, cast: no exp,
// no erf), as its compute expression says.
bool cheap_arithmetic(const FlowGraph& g, const Node& n) {
  if (!n.op->compute) return false;
  std::vector<TensorType> in;
  for (int v : n.inputs) in.push_back(g.values[v]);
  const TensorType& out = g.values[n.outputs[0]];
  std::vector<ir::Expr> idx;
  for (size_t d = 0; d < out.shape.size(); ++d) idx.push_back(ir::var("i" + std::to_string(d)));
  const Loader load = [&](int i, const std::vector<ir::Expr>& at) {
    return ir::load(i, in.at(static_cast<size_t>(i)).dtype, at);
  };
  const ir::Expr e = n.op->compute(ComputeArgs{in, out, n.attrs, idx, load});
  bool cheap = true;
  ir::visit(e, [&](const ir::Expr& x) {
    if (x.kind() == ir::ExprKind::Unary)
      cheap = cheap && ir::info(static_cast<ir::UnaryOp>(x->op)).cost == ir::OpCost::Cheap;
    else if (x.kind() == ir::ExprKind::Binary)
      cheap = cheap && ir::info(static_cast<ir::BinaryOp>(x->op)).cost == ir::OpCost::Cheap;
    else if (x.kind() == ir::ExprKind::Random)
      cheap = false;
  });
  return cheap;
}

// Whether node n's value is cheap to compute again in each of its consumers (the file's
// comment): elementwise with cheap arithmetic, one output that is not a graph output, read
// by several nodes that all take a prologue, at most one input of the value's shape and the
// others broadcast.
bool recomputable(const FlowGraph& g, const Node& n, const std::vector<std::vector<int>>& consumers,
                  const std::vector<bool>& is_output) {
  if (n.op->kind != OpKind::Elementwise || n.outputs.size() != 1) return false;
  const int v = n.outputs[0];
  if (is_output[v] || consumers[v].size() < 2) return false;
  for (int c : consumers[v])
    if (!g.nodes[c].op->traits().takes_prologue) return false;
  const Shape& shape = g.values[v].shape;
  int full = 0;
  for (int in : n.inputs) {
    const Shape& s = g.values[in].shape;
    if (shape_equal(s, shape)) {
      ++full;
    } else if (!is_broadcast_operand(s, shape)) {
      return false;
    }
  }
  return full <= 1 && cheap_arithmetic(g, n);
}

}  // namespace

// The graph with every recomputable node copied once per consumer (each copy read by that
// consumer alone). The copies stand where the original stood, so the order stays
// topological. One pass: a recomputable node whose only reader was a copied node now has
// several readers (the copies) and is stored, as before it was inlined into the one stored
// value; copying it too would be a fixed point whose size can grow with each level of a
// chain.
FlowGraph recompute_cheap_values(const FlowGraph& g) {
  const std::vector<std::vector<int>> consumers = g.consumers();
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[v] = true;
  std::vector<char> copy(g.nodes.size(), 0);
  bool any = false;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (recomputable(g, g.nodes[i], consumers, is_output)) copy[i] = 1, any = true;
  if (!any) return g;
  FlowGraph out = g;
  out.nodes.clear();
  // (value, consumer) -> the copy's value that consumer reads
  std::map<std::pair<int, int>, int> copies;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!copy[i]) continue;
    const int v = n.outputs[0];
    for (int c : consumers[v]) {
      if (copies.count({v, c})) continue;  // a consumer reading it twice reads one copy
      copies[{v, c}] = out.add_value(g.values[v], g.names[v] + "_r");
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node n = g.nodes[i];
    for (int& in : n.inputs)
      if (auto it = copies.find({in, static_cast<int>(i)}); it != copies.end()) in = it->second;
    if (!copy[i]) {
      out.nodes.push_back(std::move(n));
      continue;
    }
    const int v = g.nodes[i].outputs[0];
    std::set<int> done;
    for (int c : consumers[v]) {
      if (!done.insert(c).second) continue;
      Node dup = n;
      dup.outputs = {copies.at({v, c})};
      out.nodes.push_back(std::move(dup));
    }
  }
  return out;
}

}  // namespace ember::passes
