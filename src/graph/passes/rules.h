// Rewrite rules (the pass rewrite_patterns, rewrite_patterns.cpp): each recognizes one
// operator computed the long way in a FlowGraph and replaces it by the operator. Adding an
// algorithm that a pattern should reach is adding one rule here and its file.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "ember/graph/flow_graph.h"

namespace ember::passes {

// What a rule found at a node: the nodes it replaces and how to emit the replacement.
struct RuleMatch {
  // Every replaced node, `root` among them. Their outputs are read only by replaced nodes,
  // except root's, which the replacement computes (same type); none is a graph output but
  // root's.
  std::vector<int> replaced;
  int root = -1;
  // Adds the replacement to `out` (nodes, constants) where root stood; `value` maps a value
  // of the matched graph to `out`'s. Returns the value that takes root's output's place.
  std::function<int(FlowGraph& out, const std::function<int(int)>& value)> emit;
};

// A rule: given the graph, its consumers (FlowGraph::consumers) and a node, a match rooted
// there or nothing. It must check every condition under which the replacement computes the
// same values, and leave anything else alone.
struct Rule {
  const char* name;
  std::optional<RuleMatch> (*match)(const FlowGraph& g,
                                    const std::vector<std::vector<int>>& consumers, int node);
};

// softmax(scale * q k^T + mask) v written out -> attention (attention_rule.cpp).
std::optional<RuleMatch> match_attention(const FlowGraph& g,
                                         const std::vector<std::vector<int>>& consumers, int node);

// permute(permute(x)) -> one permute, or x (transpose_rules.cpp).
std::optional<RuleMatch> match_permute_pair(const FlowGraph& g,
                                            const std::vector<std::vector<int>>& consumers,
                                            int node);

// permute(x) that only moves dimensions of size 1 -> reshape(x) (transpose_rules.cpp).
std::optional<RuleMatch> match_unit_permute(const FlowGraph& g,
                                            const std::vector<std::vector<int>>& consumers,
                                            int node);

// A matrix product of an operand whose last two dimensions a permute swapped -> the product
// that reads the permute's input transposed in place (transpose_rules.cpp).
std::optional<RuleMatch> match_transposed_operand(const FlowGraph& g,
                                                  const std::vector<std::vector<int>>& consumers,
                                                  int node);

}  // namespace ember::passes
