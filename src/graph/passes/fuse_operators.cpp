// Operator fusion: partition the graph into groups that run as one kernel each.
//
// Rules, applied in topological order; the pass asks each operator's traits (OpTraits),
// never its name:
//   - an anchor (reduction, matmul, composite) starts a group and is its one anchor;
//   - a producer whose group has no anchor and whose output has exactly one consumer is
//     inlined into that consumer's group if the consumer takes a prologue (for a
//     reduction: its prologue; matmul and composite operators read materialized buffers);
//   - a consumer that may be an epilogue (elementwise), reading the output of a group with
//     an anchor (same shape, sole consumer), joins that group as its epilogue if the
//     anchor's EpilogueRule allows it.
// Every group has one output (the value of its last node), so grouping never creates cycles.
//
// With EMBER_LOG=fusion every decision on a producer -> consumer edge is one line on
// stderr: "fused Exp(y) into Sum(y_1): inlined", or "refused Exp(y) into Sum(y_1): y has 2
// uses".
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "ember/graph/passes.h"
#include "ember/support/error.h"
#include "ember/support/log.h"

namespace ember::passes {

namespace {

struct Group {
  std::vector<int> nodes;
  int anchor = -1;  // node index
  bool alive = true;
};

class Fuser {
 public:
  explicit Fuser(const FlowGraph& g) : g_(g), log_(log_enabled("fusion")) {
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

  // The group producing v, when its whole result is v and v is used once; else -1 and
  // why not in `why`.
  int inlinable_group(int v, std::string& why) const {
    int p = producer_[v];
    if (p < 0) return -1;
    if (is_output_[v]) {
      why = g_.names[v] + " is a graph output";
      return -1;
    }
    if (consumers_[v].size() != 1) {
      why = g_.names[v] + " has " + std::to_string(consumers_[v].size()) + " uses";
      return -1;
    }
    int gp = group_of_[p];
    if (groups_[gp].nodes.back() != p) {
      why = "the group of " + node_str(p) + " ends at another node";
      return -1;
    }
    return gp;
  }

  // Why the group `grp` (with an anchor) cannot take `consumer`, reading the group's
  // output v, as its epilogue; empty when it can.
  std::string epilogue_refusal(const Group& grp, const Node& consumer, int v) const {
    const Node& a = g_.nodes[grp.anchor];
    const std::string& title = consumer.op->title;
    if (!consumer.op->traits().fusable_epilogue) return title + " cannot be an epilogue";
    if (consumer.outputs.size() != 1)
      return title + " has " + std::to_string(consumer.outputs.size()) + " outputs";
    const TensorType& out = g_.values[consumer.outputs[0]];
    const TensorType& in = g_.values[v];
    if (!shape_equal(out.shape, in.shape))
      return title + " writes " + out.str() + " but " + g_.names[v] + " is " + in.str();
    // An anchor's stage writes its output plain (a reduction, a GEMM, a routine): an epilogue
    // that takes another layout from an operand runs as its own kernel.
    if (!(out.layout == in.layout))
      return title + " writes the layout " + out.layout.name(out.shape.size()) + " but " +
             g_.names[v] + " has " + in.layout.name(in.shape.size());
    switch (a.op->traits().epilogue) {
      case EpilogueRule::None: return a.op->title + " takes no epilogue";
      case EpilogueRule::Any: return "";
      case EpilogueRule::Float32:
        // Its last stage applies the epilogue (softmax, layer_norm, conv's GEMM).
        if (a.outputs.size() != 1)
          return a.op->title + " has " + std::to_string(a.outputs.size()) + " outputs";
        if (out.dtype != DType::float32 || in.dtype != DType::float32)
          return a.op->title + " takes a float32 epilogue only";
        return "";
      case EpilogueRule::Gemm:
        // The GEMM epilogue writes float32 rows of a matrix product of two matrices.
        if (out.dtype == DType::float32 && g_.values[a.inputs[0]].rank() >= 2 &&
            g_.values[a.inputs[1]].rank() >= 2 && g_.values[a.inputs[0]].dtype == DType::float32)
          return "";
        return "the GEMM epilogue takes a float32 product of two float32 matrices";
    }
    return "unknown epilogue rule";
  }

  void place(int i) {
    const Node& n = g_.nodes[i];
    const OpTraits traits = n.op->traits();
    int grp = new_group(i);
    if (traits.anchor) groups_[grp].anchor = i;
    std::set<int> seen;
    for (int v : n.inputs) {
      if (!seen.insert(v).second || producer_[v] < 0) continue;
      std::string why;
      int gp = inlinable_group(v, why);
      if (gp == group_of_[i]) continue;  // already in this node's group
      if (gp < 0) {
        refused(producer_[v], i, why);
      } else if (groups_[gp].anchor < 0) {
        // Inline the producer (prologue of a reduction, or plain inlining).
        if (!traits.takes_prologue) {
          refused(producer_[v], i, n.op->title + " takes no prologue");
        } else {
          merge(gp, group_of_[i]);
          fused(producer_[v], i, "inlined");
        }
      } else if (traits.anchor) {
        refused(producer_[v], i, n.op->title + " is an anchor");
      } else if (groups_[group_of_[i]].anchor >= 0) {
        refused(producer_[v], i, n.op->title + " is already in another anchor's group");
      } else if (std::string refusal = epilogue_refusal(groups_[gp], n, v); !refusal.empty()) {
        refused(producer_[v], i, refusal);
      } else {
        // Become the epilogue of the reduction, matmul or composite.
        merge(group_of_[i], gp);
        fused(producer_[v], i, "epilogue");
      }
    }
  }

  // "Sum(y_1)": a node as fusion log lines name it, by its title and outputs.
  std::string node_str(int node) const {
    const Node& n = g_.nodes[node];
    std::string s = n.op->title + "(";
    for (size_t k = 0; k < n.outputs.size(); ++k) s += (k ? ", " : "") + g_.names[n.outputs[k]];
    return s + ")";
  }

  // Logs (EMBER_LOG=fusion) that `producer` was fused into `consumer`, and how.
  void fused(int producer, int consumer, const char* how) const {
    if (log_) log_message("fusion", "fused " + edge_str(producer, consumer) + ": " + how);
  }

  // Logs (EMBER_LOG=fusion) that `producer` was not fused into `consumer`, and why.
  void refused(int producer, int consumer, const std::string& why) const {
    if (log_) log_message("fusion", "refused " + edge_str(producer, consumer) + ": " + why);
  }

  std::string edge_str(int producer, int consumer) const {
    return node_str(producer) + " into " + node_str(consumer);
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
  const bool log_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> is_output_;
  std::vector<int> group_of_;
  std::vector<Group> groups_;
};

}  // namespace

FlowGraph fuse_operators(const FlowGraph& g) { return Fuser(g).run(); }

const OpDef& fused_op() {
  static const OpDef& def = op_def("fused");  // looked up once; compared by address
  return def;
}

}  // namespace ember::passes

namespace ember {

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "fused";
  d.title = "Fused";
  d.kind = OpKind::Composite;
  d.num_inputs = -1;
  // Its group is already fused: it takes no epilogue.
  OpTraits traits = default_traits(OpKind::Composite);
  traits.epilogue = EpilogueRule::None;
  traits.layouts = LayoutRule::Own;  // its subgraph's values carry theirs
  d.declared_traits = traits;
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
