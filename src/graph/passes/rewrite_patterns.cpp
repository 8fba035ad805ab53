// Pattern rewrites: replaces an operator computed the long way by the operator (rules.h).
#include <string>

#include "ember/graph/passes.h"
#include "ember/support/log.h"
#include "rules.h"

namespace ember::passes {

namespace {

// The rules in rounds: a round tries its rules in order at each node of the graph, and is
// repeated while it rewrites something (at most kMaxRepeats times: permute(permute(x)) read
// by a product takes two). Attention goes first, while its products still read the
// permutes it matches; the transposes after it.
using Round = std::vector<Rule>;

constexpr int kMaxRepeats = 4;

const std::vector<Round>& rounds() {
  static const std::vector<Round> r = {
      {{"attention", match_attention}},
      {{"permute_pair", match_permute_pair},
       {"unit_permute", match_unit_permute},
       {"transposed_operand", match_transposed_operand}},
  };
  return r;
}

// One pass of `rules` over `g`; nullopt when nothing matched.
std::optional<FlowGraph> apply_rules(const FlowGraph& g, const std::vector<Rule>& rules) {
  const std::vector<std::vector<int>> consumers = g.consumers();
  std::vector<std::optional<RuleMatch>> at_root(g.nodes.size());
  std::vector<bool> replaced(g.nodes.size(), false);
  bool any = false;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const Rule& rule : rules) {
      std::optional<RuleMatch> m = rule.match(g, consumers, static_cast<int>(i));
      if (!m) continue;
      bool free = true;
      for (int n : m->replaced) free = free && !replaced[static_cast<size_t>(n)];
      if (!free) continue;
      for (int n : m->replaced) replaced[static_cast<size_t>(n)] = true;
      if (log_enabled("fusion"))
        log_message("fusion", "rewrote " + std::to_string(m->replaced.size()) +
                                  " nodes ending in " + g.nodes[i].op->title + "(" +
                                  g.names[g.nodes[i].outputs.at(0)] + ") as " + rule.name);
      at_root[static_cast<size_t>(m->root)] = std::move(m);
      any = true;
      break;
    }
  }
  if (!any) return std::nullopt;
  // Rebuild: values keep their names; a replaced node's outputs are gone except the root's,
  // which maps to the replacement's value.
  FlowGraph out;
  std::vector<int> map(g.values.size(), -1);
  auto value = [&](int v) {
    if (map[static_cast<size_t>(v)] < 0)
      map[static_cast<size_t>(v)] = out.add_value(g.values[v], g.names[v]);
    return map[static_cast<size_t>(v)];
  };
  for (int v : g.inputs) out.inputs.push_back(value(v));
  for (const auto& [id, t] : g.constants) out.constants[value(id)] = t;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (at_root[i]) {
      const int root_out = g.nodes[i].outputs.at(0);
      map[static_cast<size_t>(root_out)] = at_root[i]->emit(out, value);
      continue;
    }
    if (replaced[i]) continue;
    Node n = g.nodes[i];
    for (int& v : n.inputs) v = value(v);
    for (int& v : n.outputs) v = value(v);
    out.nodes.push_back(std::move(n));
  }
  for (int v : g.outputs) out.outputs.push_back(value(v));
  return eliminate_dead_code(out);
}

}  // namespace

FlowGraph rewrite_patterns(const FlowGraph& g) {
  FlowGraph current = g;
  for (const Round& round : rounds()) {
    for (int i = 0; i < kMaxRepeats; ++i) {
      std::optional<FlowGraph> next = apply_rules(current, round);
      if (!next) break;
      current = std::move(*next);
    }
  }
  return current;
}

}  // namespace ember::passes
