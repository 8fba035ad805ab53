// Operator fusion: partition the graph into groups that run as one kernel each.
//
// Rules, applied in topological order:
//   - a reduction, a matmul or a composite operator starts a group and is its anchor;
//   - an injective producer whose output has exactly one consumer is inlined into that
//     consumer's group (for a reduction: its prologue; matmul and composite operators read
//     materialized buffers and take no prologue);
//   - an elementwise operator reading a reduction's, matmul's or composite's output (same
//     shape, sole consumer) joins that group as its epilogue.
// Every group has one output (the value of its last node), so grouping never creates cycles.
#include <algorithm>
#include <map>
#include <set>

#include "ember/graph/passes.h"
#include "ember/support/error.h"

namespace ember::passes {

namespace {

struct Group {
  std::vector<int> nodes;
  int anchor = -1;  // node index
  bool alive = true;
};

class Fuser {
 public:
  explicit Fuser(const FlowGraph& g) : g_(g) {
    producer_ = g.producers();
    consumers_ = g.consumers();
    is_output_.assign(g.values.size(), false);
    for (int v : g.outputs) is_output_[v] = true;
    group_of_.assign(g.nodes.size(), -1);
  }

  FlowGraph run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) place(static_cast<int>(i));
    return rebuild();
  }

 private:
  bool single_use(int v) const { return consumers_[v].size() == 1 && !is_output_[v]; }

  int new_group(int node) {
    groups_.push_back({{node}, -1, true});
    group_of_[node] = static_cast<int>(groups_.size()) - 1;
    return group_of_[node];
  }

  // Moves every node of group `from` into group `to`.
  void merge(int from, int to) {
    for (int n : groups_[from].nodes) {
      groups_[to].nodes.push_back(n);
      group_of_[n] = to;
    }
    if (groups_[from].anchor >= 0) groups_[to].anchor = groups_[from].anchor;
    groups_[from].alive = false;
    groups_[from].nodes.clear();
    std::sort(groups_[to].nodes.begin(), groups_[to].nodes.end());
  }

  // The group producing v, when its whole result is v and v is used once.
  int inlinable_group(int v) const {
    int p = producer_[v];
    if (p < 0 || !single_use(v)) return -1;
    int gp = group_of_[p];
    if (groups_[gp].nodes.back() != p) return -1;
    return gp;
  }

  bool accepts_epilogue(const Group& grp, const Node& consumer, int v) const {
    const Node& a = g_.nodes[grp.anchor];
    const TensorType& out = g_.values[consumer.outputs[0]];
    if (consumer.op->kind != OpKind::Elementwise || consumer.outputs.size() != 1) return false;
    if (!shape_equal(out.shape, g_.values[v].shape)) return false;
    if (a.op->kind == OpKind::Reduce) return true;
    // A composite's last stage takes the epilogue (softmax, layer_norm, conv's GEMM).
    if (a.op->kind == OpKind::Composite)
      return a.op->name != "fused" && a.outputs.size() == 1 && out.dtype == DType::float32 &&
             g_.values[v].dtype == DType::float32;
    if (a.op->kind != OpKind::Matmul) return false;
    // The GEMM epilogue writes float32 rows of a matrix product of two matrices.
    return out.dtype == DType::float32 && g_.values[a.inputs[0]].rank() >= 2 &&
           g_.values[a.inputs[1]].rank() >= 2 &&
           g_.values[a.inputs[0]].dtype == DType::float32;
  }

  void place(int i) {
    const Node& n = g_.nodes[i];
    int grp = new_group(i);
    OpKind k = n.op->kind;
    if (k == OpKind::Matmul || k == OpKind::Composite) {
      groups_[grp].anchor = i;
      return;
    }
    if (k == OpKind::Reduce) groups_[grp].anchor = i;
    std::set<int> seen;
    for (int v : n.inputs) {
      if (!seen.insert(v).second) continue;
      int gp = inlinable_group(v);
      if (gp < 0 || gp == group_of_[i]) continue;
      if (groups_[gp].anchor < 0) {
        // Inline an injective producer (prologue of a reduction, or plain inlining).
        merge(gp, group_of_[i]);
      } else if (k != OpKind::Reduce && groups_[group_of_[i]].anchor < 0 &&
                 accepts_epilogue(groups_[gp], n, v)) {
        // Become the epilogue of the reduction or matmul.
        merge(group_of_[i], gp);
      }
    }
  }

  FlowGraph subgraph(const Group& grp, std::vector<int>& ext_inputs, int& anchor) const {
    FlowGraph sub;
    std::map<int, int> map;
    std::set<int> inside(grp.nodes.begin(), grp.nodes.end());
    for (int ni : grp.nodes) {
      for (int v : g_.nodes[ni].inputs) {
        if (map.count(v)) continue;
        int p = producer_[v];
        if (p >= 0 && inside.count(p)) continue;
        map[v] = sub.add_value(g_.values[v], g_.names[v]);
        sub.inputs.push_back(map[v]);
        ext_inputs.push_back(v);
      }
      Node copy = g_.nodes[ni];
      for (int& v : copy.inputs) v = map.at(v);
      for (int& v : copy.outputs) {
        map[v] = sub.add_value(g_.values[v], g_.names[v]);
        v = map[v];
      }
      if (ni == grp.anchor) anchor = static_cast<int>(sub.nodes.size());
      sub.nodes.push_back(std::move(copy));
    }
    sub.outputs = {map.at(g_.nodes[grp.nodes.back()].outputs[0])};
    return sub;
  }

  FlowGraph rebuild() const {
    FlowGraph out;
    out.values = g_.values;
    out.names = g_.names;
    out.inputs = g_.inputs;
    out.constants = g_.constants;
    out.outputs = g_.outputs;
    // A group is emitted where its last node stood.
    std::vector<int> order;
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      if (groups_[gi].alive) order.push_back(static_cast<int>(gi));
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return groups_[a].nodes.back() < groups_[b].nodes.back(); });
    for (int gi : order) {
      const Group& grp = groups_[gi];
      if (grp.nodes.size() == 1) {
        out.nodes.push_back(g_.nodes[grp.nodes[0]]);
        continue;
      }
      Node f;
      f.op = &fused_op();
      int anchor = -1;
      auto sub = std::make_shared<FlowGraph>(subgraph(grp, f.inputs, anchor));
      f.outputs = {g_.nodes[grp.nodes.back()].outputs[0]};
      f.attrs = FusedAttrs{sub, anchor};
      out.nodes.push_back(std::move(f));
    }
    return eliminate_dead_code(out);
  }

  const FlowGraph& g_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> is_output_;
  std::vector<int> group_of_;
  std::vector<Group> groups_;
};

}  // namespace

FlowGraph fuse_operators(const FlowGraph& g) { return Fuser(g).run(); }

const OpDef& fused_op() { return op_def("fused"); }

}  // namespace ember::passes

namespace ember {

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "fused";
  d.title = "Fused";
  d.kind = OpKind::Composite;
  d.num_inputs = -1;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    const auto& f = attrs_as<FusedAttrs>(attrs);
    EMBER_ASSERT(in.size() == f.graph->inputs.size(), "fused operator arity");
    std::vector<TensorType> out;
    for (int v : f.graph->outputs) out.push_back(f.graph->values[v]);
    return out;
  };
  return d;
}

}  // namespace ember
