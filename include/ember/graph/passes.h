// Graph passes. Each is a pure function FlowGraph -> FlowGraph in its own file under
// src/graph/passes/; src/graph/pipeline.cpp runs them in order and says why that order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/graph/flow_graph.h"

namespace ember::passes {

// Removes nodes and constants no output depends on. Run anywhere; cheap.
FlowGraph eliminate_dead_code(const FlowGraph& g);

// Evaluates nodes whose inputs are all constants (at compile time, with ember's own
// kernels) and replaces them by constants. Before fusion, so fused groups see constants.
FlowGraph fold_constants(const FlowGraph& g);

// How choose_algorithms chooses: at search_space 0 by the rules; at 1 and 2 by measuring
// (measure_algorithms) at the sizes in symbol_values (the example inputs' sizes of symbolic
// dimensions), as BuildOptions' GEMM tuning does.
struct AlgorithmTuning {
  int search_space = 0;
  std::map<std::string, int64_t> symbol_values;
};

// Rewrites each node of an operator with several algorithms (a convolution) to the one its
// rules choose (OpDef::choose_algorithm), or, at tuning.search_space > 0, to the fastest of
// those that apply as measured (measure_algorithms, recorded and reused); the choice shows
// in its attributes. A choice that runs on a prepared input (a Winograd filter transform)
// adds the preparing node. After constant folding, so that it sees which inputs are constants.
FlowGraph choose_algorithms(const FlowGraph& g, const AlgorithmTuning& tuning = {});

// Keeps chains of operators on the non-plain layout their algorithms chose (a blocked
// convolution's nChw<b>c): operators that keep their inputs' layout (elementwise) read the
// non-plain form of a value, and a conversion to a layout its input already has cancels, so
// that conversions remain only where a chain meets an operator that needs plain tensors.
// After choose_algorithms, which adds the conversions around each such operator.
FlowGraph choose_layouts(const FlowGraph& g);

// A choice among the algorithms of one node, to measure.
struct AlgorithmProblem {
  // The node and its problem (operator, input types, attributes, which inputs are constant),
  // for the tuning records and the log.
  std::string what;
  std::vector<std::string> names;  // the candidates, the rules' choice first
  std::vector<ir::Task> tasks;     // the kernel each candidate runs the node with
};

struct AlgorithmResult {
  size_t chosen = 0;             // index into names: 0 (the rules' choice) unless one beat it
  std::vector<double> seconds;   // each candidate's median time (empty: nothing measured now)
  double default_seconds = 0.0;  // the rules' choice's median (also from a record)
  double best_seconds = 0.0;     // the choice's
  bool from_record = false;      // read from the tuning records, nothing measured
  std::string skipped;           // why the rules' choice stands without measuring
};

// Times the candidates of each problem on zero-filled buffers of the real shapes with the real
// thread pool, interleaved, or reads the choice from the tuning records (kind "algorithm"); the
// measured choice is recorded. With EMBER_LOG=tune each choice is logged with its times.
// `symbols` is the graph's symbol order (the kernels' `syms`). Throws ember::Error for a
// search_space out of range. Defined with the rest of tuning, in src/tune/tune_algorithms.cpp
// (the compiler library): the pass calls up the folder order through this declaration.
std::vector<AlgorithmResult> measure_algorithms(const std::vector<AlgorithmProblem>& problems,
                                                const std::vector<std::string>& symbols,
                                                const AlgorithmTuning& tuning);

// Replaces operators computed the long way by one operator, rule by rule
// (src/graph/passes/rules.h): attention written out as matmul, scale, mask, softmax, matmul
// becomes `attention`; permute(permute(x)) one permute or none, and a matrix product of a
// transposed operand the product that reads it in place (matmul_nt, matmul_tn, matmul_tt).
// With EMBER_LOG=fusion it prints each rewrite.
FlowGraph rewrite_patterns(const FlowGraph& g);

// The graph with each cheap elementwise value that several nodes read, and all of them could
// inline, copied once per reader instead of stored: cheap arithmetic only, at most one input
// of its own shape (the others broadcast), not a graph output. fuse_operators runs it first.
FlowGraph recompute_cheap_values(const FlowGraph& g);

// Groups nodes into fused operators: injective producers are inlined into their consumer,
// and elementwise consumers of a reduction or a matmul become its epilogue; a fused node's
// outputs are its last value and the intermediates also returned or read outside it.
// Last: after it, the graph's nodes are kernels. It asks the operators' traits (OpTraits);
// with EMBER_LOG=fusion it prints each decision, and the reason for each refusal.
FlowGraph fuse_operators(const FlowGraph& g);

// The operator that fused nodes are wrapped in ("fused", printed as "Fused").
const OpDef& fused_op();

}  // namespace ember::passes
