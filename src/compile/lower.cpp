// Lowering a node (or a fused group of nodes) to a Task.
//
// A group has at most one anchor (a reduction, a matmul or a composite operator). The
// injective nodes before the anchor are inlined into its loads (prologue); the elementwise
// nodes after it become the stage's epilogue, applied to the accumulated value before it is
// stored. A group without an anchor is one Compute stage with every producer inlined.
//
// A fused group may have several outputs (the fusion pass's header says when): its last
// value first, then intermediates also read outside it. They share one shape, and the stage
// that computes the first also stores the others at the same index (ir::Stage::stores),
// each computed from the same loads and accumulator, so one loop writes them all.
#include <map>

#include "ember/compile/build.h"
#include "ember/graph/passes.h"
#include "ember/ir/simplify.h"
#include "ember/ops/matmul.h"
#include "ember/support/error.h"

namespace ember {

using ir::Expr;

namespace {

class GroupLowering {
 public:
  // `scalars`: inputs of g that are one-element constants of the outer graph; their value is
  // written into the kernel as a literal instead of being loaded.
  GroupLowering(const FlowGraph& g, const std::string& name, std::map<int, double> scalars = {})
      : g_(g), scalars_(std::move(scalars)) {
    task_.name = name;
    producer_ = g.producers();
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      int v = g.inputs[i];
      buffer_of_[v] = task_.add_buffer(g.names[v], g.values[v].dtype, g.values[v].shape,
                                       ir::BufferRole::Input, g.values[v].layout);
    }
    for (int v : g.outputs)
      buffer_of_[v] = task_.add_buffer(g.names[v], g.values[v].dtype, g.values[v].shape,
                                       ir::BufferRole::Output, g.values[v].layout);
  }

  ir::Task run(int anchor) {
    if (anchor < 0) {
      if (stored_together()) {
        compute_output(g_.outputs[0]);
        ir::Stage& s = task_.stages.back();
        add_stores(s, s.axes);
      } else {
        for (int v : g_.outputs) compute_output(v);
      }
      return task_;
    }
    const Node& a = g_.nodes.at(anchor);
    // A composite alone (a sort: values and indices) may have several outputs.
    EMBER_ASSERT(g_.outputs.size() == 1 ||
                     (a.op->kind == OpKind::Composite && g_.nodes.size() == 1) || stored_together(),
                 "the outputs of a fused group with an anchor share one shape");
    switch (a.op->kind) {
      case OpKind::Reduce: reduce_anchor(a, nullptr); break;
      case OpKind::Matmul: matmul_anchor(a); break;
      case OpKind::Composite: return composite(a);
      default: throw InternalError("anchor of kind that cannot anchor");
    }
    return task_;
  }

 private:
  std::vector<Expr> fresh_axes(size_t rank, const std::string& prefix) {
    std::vector<Expr> axes;
    for (size_t d = 0; d < rank; ++d) axes.push_back(ir::var(prefix + std::to_string(counter_++)));
    return axes;
  }

  std::vector<TensorType> input_types(const Node& n) const {
    std::vector<TensorType> in;
    for (int v : n.inputs) in.push_back(g_.values[v]);
    return in;
  }

  // The value of graph value v at idx: a load of a buffer, the anchor's accumulated
  // value, or the inlined computation of an injective producer.
  Expr expr_of(int v, const std::vector<Expr>& idx) {
    if (v == anchor_out_) {
      const Shape& shape = g_.values[v].shape;
      for (size_t d = 0; d < idx.size(); ++d) {
        bool unit = shape[d].as_int() == 1 && idx[d].as_int() == 0;
        EMBER_ASSERT(unit || ir::equal(idx[d], anchor_axes_[d]),
                     "an epilogue reads the anchor's output at another index");
      }
      return anchor_value_;
    }
    if (auto it = scalars_.find(v); it != scalars_.end())
      return ir::const_of(it->second, g_.values[v].dtype);
    if (auto it = buffer_of_.find(v); it != buffer_of_.end() && producer_[v] < 0) {
      // The buffer may be declared with another shape (a view a composite chose).
      const Shape& bs = task_.buffers[it->second].shape;
      return ir::load(it->second, g_.values[v].dtype, ir::reindex(idx, g_.values[v].shape, bs));
    }
    int p = producer_.at(v);
    EMBER_ASSERT(p >= 0, "value " << g_.names[v] << " has no producer and no buffer");
    const Node& n = g_.nodes[p];
    EMBER_ASSERT(n.op->compute, n.op->title << " cannot be inlined");
    std::vector<TensorType> in = input_types(n);
    Loader load = [&](int i, const std::vector<Expr>& ix) { return expr_of(n.inputs.at(i), ix); };
    return n.op->compute(ComputeArgs{in, g_.values[v], n.attrs, idx, load});
  }

  void compute_output(int v) {
    ir::Stage s;
    s.kind = ir::StageKind::Compute;
    s.out = buffer_of_.at(v);
    s.axes = fresh_axes(g_.values[v].shape.size(), "__i");
    // A graph output that is also an input of the group: a copy.
    if (producer_[v] < 0) {
      int in_buf = -1;
      for (size_t i = 0; i < g_.inputs.size(); ++i)
        if (g_.inputs[i] == v) in_buf = static_cast<int>(i);
      s.value = ir::load(in_buf, g_.values[v].dtype, s.axes);
    } else {
      s.value = expr_of(v, s.axes);
    }
    task_.stages.push_back(std::move(s));
  }

  // Whether the group's outputs are written by one stage: a fused group (several nodes)
  // whose outputs are all computed in it and share the first one's shape.
  bool stored_together() const {
    if (g_.nodes.size() < 2 || g_.outputs.size() < 2) return false;
    for (int v : g_.outputs)
      if (producer_[v] < 0 || !shape_equal(g_.values[v].shape, g_.values[g_.outputs[0]].shape))
        return false;
    return true;
  }

  // Makes stage s also write the group's outputs after the first (its further stores), each
  // computed at `idx` (the output's index, s.axes unless a composite views its output with
  // another shape) and stored at s.axes into a buffer declared as s's output is.
  void add_stores(ir::Stage& s, const std::vector<Expr>& idx) {
    for (size_t k = 1; k < g_.outputs.size(); ++k) {
      int b = buffer_of_.at(g_.outputs[k]);
      task_.buffers[b].shape = task_.buffers[s.out].shape;
      s.stores.push_back({b, expr_of(g_.outputs[k], idx)});
    }
  }

  // Binds the anchor's output to Acc-derived `value`, builds the epilogue (the group's first
  // output) and adds the stage's further stores.
  Expr epilogue_for(ir::Stage& s, int anchor_out, const std::vector<Expr>& axes,
                    const Expr& value) {
    anchor_out_ = anchor_out;
    anchor_axes_ = axes;
    anchor_value_ = value;
    Expr e = expr_of(g_.outputs[0], axes);
    add_stores(s, axes);
    anchor_out_ = -1;
    return e;
  }

  void reduce_anchor(const Node& a, const ReduceDef* given) {
    std::vector<TensorType> in = input_types(a);
    const TensorType& out = g_.values[a.outputs[0]];
    ReduceDef rd = given ? *given : a.op->reduce(in, out, a.attrs);
    ir::Stage s;
    s.kind = ir::StageKind::Reduce;
    s.out = buffer_of_.at(g_.outputs[0]);
    s.axes = fresh_axes(out.shape.size(), "__i");
    s.raxes = fresh_axes(rd.rextents.size(), "__r");
    s.rextents = rd.rextents;
    s.reduce_op = rd.op;
    s.acc_dtype = rd.acc_dtype;
    Loader load = [&](int i, const std::vector<Expr>& ix) { return expr_of(a.inputs.at(i), ix); };
    s.value = rd.value(s.axes, s.raxes, load);
    bool arg = rd.op == ir::ReduceOp::ArgMax || rd.op == ir::ReduceOp::ArgMin;
    Expr acc = ir::acc(arg ? DType::int64 : rd.acc_dtype);
    Expr fin = rd.finalize_at ? rd.finalize_at(acc, s.axes) : rd.finalize ? rd.finalize(acc) : acc;
    s.epilogue = epilogue_for(s, a.outputs[0], s.axes, fin);
    task_.stages.push_back(std::move(s));
  }

  void matmul_anchor(const Node& a) {
    const bool a_transposed = a.op->traits().a_transposed;
    const bool b_transposed = a.op->traits().b_transposed;
    const TensorType at =
        a_transposed ? stored_transposed(g_.values[a.inputs[0]]) : g_.values[a.inputs[0]];
    const TensorType bt =
        b_transposed ? stored_transposed(g_.values[a.inputs[1]]) : g_.values[a.inputs[1]];
    const TensorType& out = g_.values[a.outputs[0]];
    MatmulDims md = matmul_dims(at, bt);
    auto broadcastable = [&](const TensorType& t) {
      Shape batch(t.shape.begin(), t.shape.end() - std::min<size_t>(2, t.shape.size()));
      Expr n = shape_numel_expr(batch);
      return (n.as_int() && *n.as_int() == 1) || ir::equal(n, shape_numel_expr(md.batch));
    };
    bool has_epilogue = g_.outputs[0] != a.outputs[0];
    bool gemm = at.dtype == DType::float32 && bt.dtype == DType::float32 && broadcastable(at) &&
                broadcastable(bt) &&
                (!has_epilogue || (!md.a_vector && !md.b_vector &&
                                   g_.values[g_.outputs[0]].dtype == DType::float32));
    if (!gemm) {
      ReduceDef rd = a.op->reduce(input_types(a), out, a.attrs);
      reduce_anchor(a, &rd);
      return;
    }
    int ab = buffer_of_.at(a.inputs[0]), bb = buffer_of_.at(a.inputs[1]);
    int ob = buffer_of_.at(g_.outputs[0]);
    // Vector operands are matrices with one row (a) or one column (b); the buffers are
    // contiguous, so only their declared shapes change.
    if (md.a_vector) task_.buffers[ab].shape = {ir::Expr(1), md.k};
    if (md.b_vector) task_.buffers[bb].shape = {md.k, ir::Expr(1)};
    if (md.a_vector || md.b_vector) {
      Shape s = md.batch;
      s.push_back(md.m);
      s.push_back(md.n);
      task_.buffers[ob].shape = s;
    }
    ir::Stage s;
    s.kind = ir::StageKind::Matmul;
    s.a = ab;
    s.b = bb;
    s.a_transposed = a_transposed;
    s.b_transposed = b_transposed;
    s.out = ob;
    s.axes = fresh_axes(task_.buffers[ob].shape.size(), "__i");
    if (has_epilogue) {
      s.epilogue = epilogue_for(s, a.outputs[0], s.axes, ir::acc(DType::float32));
    }
    task_.stages.push_back(std::move(s));
  }

  ir::Task composite(const Node& a) {
    std::vector<TensorType> out;
    for (int v : a.outputs) out.push_back(g_.values[v]);
    ir::Task t = a.op->lower(input_types(a), out, a.attrs);
    if (g_.nodes.size() == 1) {
      t.name = task_.name;
      return t;
    }
    // The composite's buffers are [inputs..., output, scratch...]: map them onto the group's
    // and make its last stage compute the epilogue too.
    EMBER_ASSERT(a.outputs.size() == 1 && g_.outputs[0] != a.outputs[0], "composite epilogue");
    std::vector<int> map(t.buffers.size());
    size_t k = a.inputs.size();
    for (size_t i = 0; i < t.buffers.size(); ++i) {
      if (i < k) {
        map[i] = buffer_of_.at(a.inputs[i]);
      } else if (i == k) {
        map[i] = buffer_of_.at(g_.outputs[0]);
      } else {
        map[i] = task_.add_buffer(t.buffers[i].name, t.buffers[i].dtype, t.buffers[i].shape,
                                  ir::BufferRole::Scratch);
        continue;
      }
      // The group's buffer must be laid out as the composite's task declares it (plain,
      // or the layout a routine that takes layouts addresses: the blocked convolution).
      const ir::Buffer& buf = task_.buffers[map[i]];
      EMBER_CHECK(buf.layout == t.buffers[i].layout,
                  a.op->title << " reads and writes "
                              << (t.buffers[i].layout.is_plain()
                                      ? std::string("plain buffers only")
                                      : t.buffers[i].name + " in the layout " +
                                            t.buffers[i].layout.name(t.buffers[i].shape.size()))
                              << ", but " << buf.name << " has the layout "
                              << buf.layout.name(buf.shape.size()));
      task_.buffers[map[i]].shape = t.buffers[i].shape;
    }
    auto remap = [&](const Expr& e) {
      if (!e.defined()) return e;
      return ir::rewrite(e, [&](const Expr& x) -> Expr {
        if (x.kind() != ir::ExprKind::Load) return {};
        return ir::load(map.at(x->buffer), x.dtype(), x->args);
      });
    };
    for (ir::Stage s : t.stages) {
      s.out = map.at(s.out);
      if (s.a >= 0) s.a = map.at(s.a);
      if (s.b >= 0) s.b = map.at(s.b);
      for (int& b : s.call_inputs) b = map.at(b);
      for (int& b : s.call_outputs) b = map.at(b);
      s.value = remap(s.value);
      s.epilogue = remap(s.epilogue);
      task_.stages.push_back(std::move(s));
    }
    ir::Stage& last = task_.stages.back();
    EMBER_ASSERT(last.out == buffer_of_.at(g_.outputs[0]),
                 "a composite's last stage writes its output");
    DType acc_t = last.kind == ir::StageKind::Matmul ? DType::float32 : last.acc_dtype;
    Expr base = last.kind == ir::StageKind::Compute ? last.value
                : last.epilogue.defined()           ? last.epilogue
                                                    : ir::acc(acc_t);
    std::vector<Expr> idx =
        ir::reindex(last.axes, task_.buffers[last.out].shape, g_.values[a.outputs[0]].shape);
    Expr epi = epilogue_for(last, a.outputs[0], idx, base);
    if (last.kind == ir::StageKind::Compute) {
      last.value = epi;
    } else {
      last.epilogue = epi;
    }
    return task_;
  }

  const FlowGraph& g_;
  std::map<int, double> scalars_;
  ir::Task task_;
  std::vector<int> producer_;
  std::map<int, int> buffer_of_;
  int counter_ = 0;
  int anchor_out_ = -1;
  std::vector<Expr> anchor_axes_;
  Expr anchor_value_;
};

// Inputs of `sub` (standing for node's inputs) that are one-element constants of `graph`.
std::map<int, double> scalar_constants(const FlowGraph& graph, const Node& node,
                                       const FlowGraph& sub) {
  std::map<int, double> out;
  for (size_t i = 0; i < node.inputs.size() && i < sub.inputs.size(); ++i) {
    auto it = graph.constants.find(node.inputs[i]);
    if (it == graph.constants.end()) continue;
    const TensorType& t = graph.values[node.inputs[i]];
    if (!shape_is_concrete(t.shape) || shape_numel(t.shape) != 1) continue;
    out[sub.inputs[i]] = element_as_double(it->second, 0);
  }
  return out;
}

int find_anchor(const FlowGraph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op->traits().anchor) return static_cast<int>(i);
  return -1;
}

}  // namespace

ir::Task lower_node(const FlowGraph& graph, const Node& node, const std::string& name) {
  if (node.op == &passes::fused_op()) {
    const auto& f = attrs_as<FusedAttrs>(node.attrs);
    GroupLowering gl(*f.graph, name, scalar_constants(graph, node, *f.graph));
    return gl.run(f.anchor);
  }
  // Duplicate inputs (x * x) become one buffer each so the kernel's arguments match the
  // node's inputs one to one.
  FlowGraph sub;
  Node copy = node;
  for (int& v : copy.inputs) {
    int id = sub.add_value(graph.values[v], graph.names[v]);
    sub.inputs.push_back(id);
    v = id;
  }
  for (int& v : copy.outputs) {
    int id = sub.add_value(graph.values[v], graph.names[v]);
    sub.outputs.push_back(id);
    v = id;
  }
  sub.nodes.push_back(copy);
  GroupLowering gl(sub, name, scalar_constants(graph, node, sub));
  return gl.run(find_anchor(sub));
}

}  // namespace ember
