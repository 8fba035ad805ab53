// Dead code elimination: keep what the outputs need.
#include <map>

#include "ember/graph/passes.h"

namespace ember::passes {

FlowGraph eliminate_dead_code(const FlowGraph& g) {
  std::vector<bool> live(g.values.size(), false);
  for (int v : g.outputs) live[v] = true;
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    for (int v : n.outputs) keep[i] = keep[i] || live[v];
    if (keep[i])
      for (int v : n.inputs) live[v] = true;
  }
  // Rebuild with compact value ids; inputs stay (they are the graph's signature).
  FlowGraph out;
  std::map<int, int> map;
  auto copy_value = [&](int v) {
    if (!map.count(v)) map[v] = out.add_value(g.values[v], g.names[v]);
    return map[v];
  };
  for (int v : g.inputs) out.inputs.push_back(copy_value(v));
  for (const auto& [id, t] : g.constants)
    if (live[id]) out.constants[copy_value(id)] = t;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) continue;
    Node n = g.nodes[i];
    for (int& v : n.inputs) v = copy_value(v);
    for (int& v : n.outputs) v = copy_value(v);
    out.nodes.push_back(std::move(n));
  }
  for (int v : g.outputs) out.outputs.push_back(copy_value(v));
  return out;
}

}  // namespace ember::passes
