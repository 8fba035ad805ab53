// Operator fusion: partition the graph into groups that run as one kernel each.
//
// Rules, applied in topological order; the pass asks each operator's traits (OpTraits),
// never its name:
//   - an anchor (reduction, matmul, composite) starts a group and is its one anchor;
//   - a producer whose group has no anchor and ends at it is inlined into a consumer's group
//     if the consumer takes a prologue (for a reduction: its prologue; matmul and composite
//     operators read materialized buffers), and no anchor that reads memory would then read
//     a value made inside its own group (a composite layer_norm reading x whose consumer
//     max(layer_norm(x), x) inlined x's producer: its buffer would be read before written);
//   - a consumer that may be an epilogue (elementwise), reading the value of a group with
//     an anchor (same shape), joins that group as its epilogue if the anchor's EpilogueRule
//     allows it.
//
// A group may have several outputs: its last node's value first, then every value made
// inside it that is a graph output or read by a node outside it (an activation a training
// forward graph returns for the backward, a residual also read by a matmul). The fused
// kernel writes them all in one loop, at one index: every output of a group has the shape
// of its last node's value. A value read outside the group it joins (its producer's value
// used twice, or a graph output) joins only when it is stored anyway: it is a graph output,
// or another of its consumers takes no prologue (an anchor: it reads memory). Then storing
// it from the consumer's kernel is cheaper than a kernel of its own (one launch and one
// pass over it fewer) and cheaper than recomputing it in each consumer. A pure elementwise
// value whose consumers could all inline it is materialized by a kernel of its own, as it
// was before groups had several outputs: computed once, and its consumers stay free to fuse
// with each other (storing it from the first would keep a diamond a -> {c, d} -> e from
// fusing c, d and e).
//
// Before the groups are formed, a cheap elementwise value read by several nodes that could
// all inline it is copied into each of them instead of stored (recompute_cheap_values,
// recompute_values.cpp).
//
// Merging two groups must not create a cycle, a path from the merged group through a node
// outside it back into it (group -> outside -> group): before every merge the pass follows
// the consumers of the merged nodes among the nodes placed so far and refuses when they
// lead back. Groups are emitted in a topological order of the groups (by their last node
// where the order is free).
//
// With EMBER_LOG=fusion every decision on a producer -> consumer edge is one line on
// stderr: "fused Exp(y) into Sum(y_1): inlined", or "refused Exp(y) into Sum(y_1): y has 2
// uses"; each group with several outputs is one more line: "Fused(y, h): Matmul, Add, Gelu".
#include <algorithm>
#include <map>
#include <optional>
#include <queue>
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

  // Whether v, read by `consumer`, is also a graph output or read by another node (after
  // the merge, an output of the fused group besides its last value).
  bool read_elsewhere(int v, int consumer) const {
    if (is_output_[v]) return true;
    for (int c : consumers_[v])
      if (c != consumer) return true;
    return false;
  }

  // Whether the group `gi` has an output other than v: a value of its nodes that is a graph
  // output or read outside it (by a node of another group, or not yet placed).
  bool has_other_outputs(int gi, int v) const {
    for (int n : groups_[gi].nodes)
      for (int o : g_.nodes[n].outputs) {
        if (o == v) continue;
        if (is_output_[o]) return true;
        for (int c : consumers_[o])
          if (group_of_[c] != gi) return true;
      }
    return false;
  }

  // The group producing v, when v is the value of its last node and the group may join the
  // group of `consumer`; else -1 and why not in `why`.
  int joinable_group(int v, int consumer, std::string& why) const {
    int p = producer_[v];
    if (p < 0) return -1;
    int gp = group_of_[p];
    if (groups_[gp].nodes.back() != p) {
      why = "the group of " + node_str(p) + " ends at another node";
      return -1;
    }
    const bool kept = read_elsewhere(v, consumer);
    const std::string uses =
        is_output_[v] ? g_.names[v] + " is a graph output"
                      : g_.names[v] + " has " + std::to_string(consumers_[v].size()) + " uses";
    if (kept && !stored_anyway(v, consumer)) {
      why = uses;
      return -1;
    }
    if (kept || has_other_outputs(gp, v)) {
      // Every output of a group is stored at one index: they share the last value's shape
      // and layout (a value that leaves a blocked chain is converted by a node of its own).
      const Node& c = g_.nodes[consumer];
      const char* differs = nullptr;
      if (c.outputs.size() != 1 || !shape_equal(g_.values[c.outputs[0]].shape, g_.values[v].shape))
        differs = "shape";
      else if (!(g_.values[c.outputs[0]].layout == g_.values[v].layout))
        differs = "layout";
      if (differs != nullptr) {
        why = (kept ? uses : "the group of " + node_str(p) + " has other outputs") + " and " +
              c.op->title + " writes another " + differs;
        return -1;
      }
      // A routine writing a blocked output (the blocked convolution) applies its epilogue
      // per pixel and stores nothing else.
      const int an = groups_[gp].anchor;
      if (an >= 0 && g_.nodes[an].op->kind == OpKind::Composite &&
          g_.values[g_.nodes[an].outputs[0]].layout.kind == LayoutKind::Blocked) {
        why = (kept ? uses : "the group of " + node_str(p) + " has other outputs") + " and " +
              g_.nodes[an].op->title + " writes a blocked output with no further stores";
        return -1;
      }
    }
    return gp;
  }

  // Whether node p converts a plain tensor with pixels (more than one element per channel
  // plane) into a layout that puts channels along the lanes: its own kernel then transposes
  // in registers (ember_rt/layout_convert.h).
  bool converts_into_lanes(int p) const {
    const Node& n = g_.nodes[p];
    if (n.op->traits().layouts != LayoutRule::Own || n.inputs.size() != 1 || n.outputs.size() != 1)
      return false;
    const TensorType& in = g_.values[n.inputs[0]];
    const TensorType& out = g_.values[n.outputs[0]];
    if (!in.layout.is_plain() || out.layout.is_plain() || !shape_equal(in.shape, out.shape) ||
        in.shape.size() < 3)
      return false;
    for (size_t d = 2; d < in.shape.size(); ++d)
      if (in.shape[d].as_int() != std::optional<int64_t>(1)) return true;
    return false;
  }

  // Whether v, read by `consumer` and elsewhere, is stored anyway: a graph output, or read
  // by another consumer that takes no prologue (it reads memory).
  bool stored_anyway(int v, int consumer) const {
    if (is_output_[v]) return true;
    for (int c : consumers_[v]) {
      if (c == consumer) continue;
      const OpTraits t = g_.nodes[c].op->traits();
      if (t.anchor || !t.takes_prologue) return true;
    }
    return false;
  }

  // Whether the anchor of group a or b, one that reads its inputs from memory (a matmul, a
  // composite: it takes no prologue), would read a value made inside the merged group: the
  // group's one loop writes that value after the anchor's stages have read its buffer.
  bool anchor_reads_inside(int a, int b) const {
    for (int gi : {a, b}) {
      int an = groups_[gi].anchor;
      if (an < 0 || g_.nodes[an].op->traits().takes_prologue) continue;
      for (int v : g_.nodes[an].inputs) {
        int p = producer_[v];
        if (p >= 0 && (group_of_[p] == a || group_of_[p] == b)) return true;
      }
    }
    return false;
  }

  // Whether merging groups a and b would create a cycle: a node outside both, reached from
  // them, that leads back into them. Only nodes placed so far can (later ones have no group
  // yet and come after every node of a and b); a group is entered whole.
  bool creates_cycle(int a, int b) const {
    std::vector<char> seen(g_.nodes.size(), 0), entered(groups_.size(), 0);
    std::vector<int> stack;
    auto inside = [&](int n) { return group_of_[n] == a || group_of_[n] == b; };
    auto push_consumers = [&](int n) {
      for (int o : g_.nodes[n].outputs)
        for (int c : consumers_[o])
          if (!seen[c] && group_of_[c] >= 0) {
            seen[c] = 1;
            stack.push_back(c);
          }
    };
    for (int gi : {a, b})
      for (int n : groups_[gi].nodes) push_consumers(n);
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      if (inside(n) || entered[group_of_[n]]) continue;  // inside, or done
      entered[group_of_[n]] = 1;
      for (int m : groups_[group_of_[n]].nodes) {
        seen[m] = 1;
        push_consumers(m);
      }
      // A node of the merged group reached through an outside node: a cycle.
      for (int m : groups_[group_of_[n]].nodes)
        for (int o : g_.nodes[m].outputs)
          for (int c : consumers_[o])
            if (group_of_[c] >= 0 && inside(c)) return true;
    }
    return false;
  }

  // Whether a node of group `grp` other than `node` reads an output of group `anchor_grp`.
  // An epilogue reads the anchor's output at the anchor's own index, which epilogue_refusal
  // checks for `node` only: a view inlined into its group (x.permute() beside x) would read it
  // at another one.
  bool reads_elsewhere(int grp, int node, int anchor_grp) const {
    for (int m : groups_[grp].nodes) {
      if (m == node) continue;
      for (int u : g_.nodes[m].inputs)
        if (producer_[u] >= 0 && group_of_[producer_[u]] == anchor_grp) return true;
    }
    return false;
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
      if (group_of_[producer_[v]] == group_of_[i]) continue;  // already in this node's group
      std::string why;
      int gp = joinable_group(v, i, why);
      if (gp < 0) {
        refused(producer_[v], i, why);
      } else if (groups_[gp].anchor < 0) {
        // Inline the producer (prologue of a reduction, or plain inlining).
        if (!traits.takes_prologue) {
          refused(producer_[v], i, n.op->title + " takes no prologue");
        } else if (converts_into_lanes(producer_[v])) {
          refused(producer_[v], i,
                  "a conversion of a plain tensor into a non-plain layout runs as its own "
                  "kernel (tiles transposed in registers; inlined, each lane of a vector "
                  "would read another plane)");
        } else if (anchor_reads_inside(gp, group_of_[i])) {
          refused(producer_[v], i, "its group's anchor reads it from memory");
        } else if (creates_cycle(gp, group_of_[i])) {
          refused(producer_[v], i, "a path through another node leads back into the group");
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
      } else if (reads_elsewhere(group_of_[i], i, gp)) {
        refused(producer_[v], i,
                "another node of its group reads " + g_.names[v] + "'s group (through a view)");
      } else if (anchor_reads_inside(gp, group_of_[i])) {
        refused(producer_[v], i, "an anchor would read a value of its own group from memory");
      } else if (creates_cycle(gp, group_of_[i])) {
        refused(producer_[v], i, "a path through another node leads back into the group");
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

  // The values the group writes: its last node's value first, then in node order every
  // other value of its nodes that is a graph output or read outside it.
  std::vector<int> group_outputs(int gi) const {
    const Group& grp = groups_[gi];
    const int last = g_.nodes[grp.nodes.back()].outputs[0];
    std::vector<int> outs = {last};
    for (int n : grp.nodes)
      for (int o : g_.nodes[n].outputs) {
        if (o == last) continue;
        bool outside = is_output_[o];
        for (int c : consumers_[o]) outside |= group_of_[c] != gi;
        if (outside) outs.push_back(o);
      }
    return outs;
  }

  FlowGraph subgraph(const Group& grp, const std::vector<int>& outs, std::vector<int>& ext_inputs,
                     int& anchor) const {
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
    for (int v : outs) sub.outputs.push_back(map.at(v));
    return sub;
  }

  // The live groups in a topological order: a group after every group it reads from, by
  // its last node where the order is free (as the nodes stood).
  std::vector<int> group_order() const {
    const int ng = static_cast<int>(groups_.size());
    std::vector<std::set<int>> next(ng);
    std::vector<int> pending(ng, 0);
    for (int gi = 0; gi < ng; ++gi) {
      if (!groups_[gi].alive) continue;
      std::set<int> from;
      for (int n : groups_[gi].nodes)
        for (int v : g_.nodes[n].inputs)
          if (producer_[v] >= 0 && group_of_[producer_[v]] != gi)
            from.insert(group_of_[producer_[v]]);
      for (int f : from) next[f].insert(gi);
      pending[gi] = static_cast<int>(from.size());
    }
    using Item = std::pair<int, int>;  // (last node, group)
    std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
    for (int gi = 0; gi < ng; ++gi)
      if (groups_[gi].alive && pending[gi] == 0) ready.push({groups_[gi].nodes.back(), gi});
    std::vector<int> order;
    while (!ready.empty()) {
      int gi = ready.top().second;
      ready.pop();
      order.push_back(gi);
      for (int m : next[gi])
        if (--pending[m] == 0) ready.push({groups_[m].nodes.back(), m});
    }
    EMBER_ASSERT(order.size() ==
                     static_cast<size_t>(std::count_if(groups_.begin(), groups_.end(),
                                                       [](const Group& grp) { return grp.alive; })),
                 "fusion made a cycle between groups");
    return order;
  }

  FlowGraph rebuild() const {
    FlowGraph out = g_;
    out.nodes.clear();
    for (int gi : group_order()) {
      const Group& grp = groups_[gi];
      if (grp.nodes.size() == 1) {
        out.nodes.push_back(g_.nodes[grp.nodes[0]]);
        continue;
      }
      Node f;
      f.op = &fused_op();
      int anchor = -1;
      f.outputs = group_outputs(gi);
      auto sub = std::make_shared<FlowGraph>(subgraph(grp, f.outputs, f.inputs, anchor));
      f.attrs = FusedAttrs{sub, anchor};
      if (log_ && f.outputs.size() > 1) {
        std::string line = "Fused(";
        for (size_t k = 0; k < f.outputs.size(); ++k)
          line += (k ? ", " : "") + g_.names[f.outputs[k]];
        line += "):";
        for (size_t k = 0; k < sub->nodes.size(); ++k)
          line += (k ? ", " : " ") + sub->nodes[k].op->title;
        log_message("fusion", line);
      }
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

FlowGraph fuse_operators(const FlowGraph& g) {
  const FlowGraph recomputed = recompute_cheap_values(g);
  return Fuser(recomputed).run();
}

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
