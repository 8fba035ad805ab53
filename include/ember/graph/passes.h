// Graph passes. Each is a pure function FlowGraph -> FlowGraph in its own file under
// src/graph/passes/; src/graph/pipeline.cpp runs them in order and says why that order.
#pragma once

#include "ember/graph/flow_graph.h"
#include "ember/tune/tune.h"

namespace ember::passes {

// Removes nodes and constants no output depends on. Run anywhere; cheap.
FlowGraph eliminate_dead_code(const FlowGraph& g);

// Evaluates nodes whose inputs are all constants (at compile time, with ember's own
// kernels) and replaces them by constants. Before fusion, so fused groups see constants.
FlowGraph fold_constants(const FlowGraph& g);

// Rewrites each node of an operator with several algorithms (a convolution) to the one its
// rules choose (OpDef::choose_algorithm), or, at tuning.search_space > 0, to the fastest of
// those that apply as measured (tune::tune_algorithms, recorded and reused); the choice shows
// in its attributes. A choice that runs on a prepared input (a Winograd filter transform)
// adds the preparing node. After constant folding, so that it sees which inputs are constants.
FlowGraph choose_algorithms(const FlowGraph& g, const tune::TuneOptions& tuning = {});

// Replaces operators computed the long way by one operator, rule by rule
// (src/graph/passes/rules.h): attention written out as matmul, scale, mask, softmax, matmul
// becomes `attention`. With EMBER_LOG=fusion it prints each rewrite.
FlowGraph rewrite_patterns(const FlowGraph& g);

// Groups nodes into fused operators: injective producers are inlined into their single
// consumer, and elementwise consumers of a reduction or a matmul become its epilogue.
// Last: after it, the graph's nodes are kernels. It asks the operators' traits (OpTraits);
// with EMBER_LOG=fusion it prints each decision, and the reason for each refusal.
FlowGraph fuse_operators(const FlowGraph& g);

// The operator that fused nodes are wrapped in ("fused", printed as "Fused").
const OpDef& fused_op();

}  // namespace ember::passes
