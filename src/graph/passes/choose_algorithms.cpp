// Algorithm choice: each node of an operator with several algorithms (a convolution) is
// rewritten to one of those its operator says can run it (OpDef::choose_algorithm): the rules'
// choice, or at search_space > 0 the fastest as measured (measure_algorithms: each
// candidate's kernel timed on the node's shapes, the choice kept in the tuning records), so
// that the choice shows in the optimized graph and lowering only follows it. A choice may run
// the node as another operator on a prepared input (Winograd: conv2d_winograd on
// winograd_filter(w)); the preparation is a node of its own, which constant folding then
// evaluates once when the input is a constant. An input the choice converts to another
// layout is converted by a to_layout node, unless the choice reads it plain as well and it is
// an input of the graph (AlgorithmChoice::reads_plain).
#include <set>
#include <sstream>

#include "ember/graph/passes.h"
#include "ember/ops/op_def.h"
#include "ember/support/error.h"

namespace ember::passes {

namespace {

// The layout `choice` converts input i to (plain: none); `graph_input`: the input is one of
// the graph's (AlgorithmChoice::reads_plain).
Layout layout_of(const AlgorithmChoice& choice, size_t i, bool graph_input) {
  if (graph_input && i < choice.reads_plain.size() && choice.reads_plain[i]) return Layout::plain();
  return i < choice.layouts.size() ? choice.layouts[i] : Layout::plain();
}

// The types of the node's inputs once `choice` prepared and converted them.
std::vector<TensorType> prepared_types(const std::vector<TensorType>& in,
                                       const std::vector<bool>& graph_input,
                                       const AlgorithmChoice& choice) {
  std::vector<TensorType> out = in;
  for (size_t i = 0; i < choice.prepare.size() && i < in.size(); ++i)
    if (choice.prepare[i]) out[i] = choice.prepare[i]->infer_types({in[i]}, NoAttrs{}).at(0);
  for (size_t i = 0; i < in.size(); ++i) {
    const Layout layout = layout_of(choice, i, graph_input[i]);
    if (!layout.is_plain()) out[i].layout = layout;
  }
  return out;
}

// What the node computes, for the tuning records and the log: "conv2d x float32[1, 64, 56, 56]
// (input), float32[64, 64, 3, 3] (constant), stride=[1, 1] padding=[1, 1] ...".
std::string describe(const Node& n, const std::vector<TensorType>& in,
                     const std::vector<bool>& constant) {
  std::ostringstream os;
  os << n.op->name;
  for (size_t i = 0; i < in.size(); ++i)
    os << (i ? ", " : " ") << in[i].str() << (constant[i] ? " (constant)" : " (input)");
  const AttrFields fields = std::visit([](const auto& a) { return a.fields(); }, n.attrs);
  for (const auto& [name, value] : fields) os << " " << name << "=" << value;
  return os.str();
}

// The candidates' kernels, to measure: each lowered as the node would run with it.
AlgorithmProblem problem_of(const Node& n, const std::vector<TensorType>& in,
                            const std::vector<bool>& constant, const std::vector<bool>& graph_input,
                            const std::vector<AlgorithmChoice>& choices) {
  AlgorithmProblem p;
  p.what = describe(n, in, constant);
  for (const AlgorithmChoice& c : choices) {
    EMBER_ASSERT(c.op->lower, c.op->name << " has no lowering to measure");
    const std::vector<TensorType> ins = prepared_types(in, graph_input, c);
    ir::Task t = c.op->lower(ins, c.op->infer_types(ins, c.attrs), c.attrs);
    t.name = n.op->name + "_" + c.name;
    p.names.push_back(c.name);
    p.tasks.push_back(std::move(t));
  }
  return p;
}

}  // namespace

FlowGraph choose_algorithms(const FlowGraph& g, const AlgorithmTuning& tuning) {
  // The candidates of every node that has a choice, the rules' first.
  std::vector<std::vector<AlgorithmChoice>> choices(g.nodes.size());
  std::vector<size_t> chosen(g.nodes.size(), 0);
  std::vector<AlgorithmProblem> problems;
  std::vector<size_t> node_of_problem;
  const std::set<int> graph_inputs(g.inputs.begin(), g.inputs.end());
  auto graph_input_flags = [&](const Node& n) {
    std::vector<bool> flags;
    for (int v : n.inputs) flags.push_back(graph_inputs.count(v) > 0);
    return flags;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.op->choose_algorithm) continue;
    std::vector<TensorType> in;
    std::vector<bool> constant;
    for (int v : n.inputs) {
      in.push_back(g.values[v]);
      constant.push_back(g.constants.count(v) > 0);
    }
    choices[i] = n.op->choose_algorithm(in, n.attrs, constant);
    if (tuning.search_space > 0 && choices[i].size() > 1) {
      problems.push_back(problem_of(n, in, constant, graph_input_flags(n), choices[i]));
      node_of_problem.push_back(i);
    }
  }
  if (tuning.search_space != 0) {  // also when nothing is to measure: it checks the level
    const std::vector<AlgorithmResult> results = measure_algorithms(problems, g.symbols(), tuning);
    for (size_t p = 0; p < problems.size(); ++p) chosen[node_of_problem[p]] = results[p].chosen;
  }

  FlowGraph out = g;
  out.nodes.clear();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (choices[i].empty()) {
      out.nodes.push_back(n);
      continue;
    }
    const AlgorithmChoice& choice = choices[i][chosen[i]];
    Node node = n;
    node.op = choice.op;
    node.attrs = choice.attrs;
    for (size_t k = 0; k < choice.prepare.size() && k < n.inputs.size(); ++k) {
      const OpDef* prep = choice.prepare[k];
      if (!prep) continue;
      const std::vector<TensorType> types = prep->infer_types({g.values[n.inputs[k]]}, NoAttrs{});
      Node p;
      p.op = prep;
      p.inputs = {n.inputs[k]};
      p.outputs = {
          out.add_value(types.at(0), g.names[static_cast<size_t>(n.inputs[k])] + "_" + prep->name)};
      node.inputs[k] = p.outputs[0];
      out.nodes.push_back(std::move(p));
    }
    // Inputs read in another layout: converted first (the layout pass cancels a conversion
    // back and forth between two such operators).
    const std::vector<bool> graph_input = graph_input_flags(n);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Layout layout = layout_of(choice, k, graph_input[k]);
      if (layout.is_plain()) continue;
      TensorType type = out.values[static_cast<size_t>(node.inputs[k])];
      type.layout = layout;
      Node c;
      c.op = &op_def("to_layout");
      c.attrs = LayoutAttrs{layout};
      c.inputs = {node.inputs[k]};
      c.outputs = {out.add_value(
          type, g.names[static_cast<size_t>(n.inputs[k])] + "_" + layout.name(type.shape.size()))};
      node.inputs[k] = c.outputs[0];
      out.nodes.push_back(std::move(c));
    }
    // Outputs given in another layout: the node writes a new value, converted back into the
    // one its readers read.
    std::vector<TensorType> in_types;
    for (int v : node.inputs) in_types.push_back(out.values[static_cast<size_t>(v)]);
    const std::vector<TensorType> made = node.op->infer_types(in_types, node.attrs);
    std::vector<Node> back;
    for (size_t k = 0; k < node.outputs.size() && k < made.size(); ++k) {
      if (made[k].layout.is_plain()) continue;
      Node c;
      c.op = &op_def("to_layout");
      c.attrs = LayoutAttrs{Layout::plain()};
      c.outputs = {node.outputs[k]};
      const std::string name = g.names[static_cast<size_t>(node.outputs[k])];
      node.outputs[k] =
          out.add_value(made[k], name + "_" + made[k].layout.name(made[k].shape.size()));
      c.inputs = {node.outputs[k]};
      back.push_back(std::move(c));
    }
    out.nodes.push_back(std::move(node));
    for (Node& c : back) out.nodes.push_back(std::move(c));
  }
  return out;
}

}  // namespace ember::passes
