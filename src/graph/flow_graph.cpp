// FlowGraph construction, queries, printing and running.
#include "ember/graph/flow_graph.h"

#include <set>
#include <sstream>

#include "ember/support/error.h"

namespace ember {

int FlowGraph::add_value(const TensorType& type, const std::string& name_hint) {
  if (indexed_ > names.size()) {  // `names` was replaced by a shorter list: index it again
    taken_.clear();
    next_suffix_.clear();
    indexed_ = 0;
  }
  for (; indexed_ < names.size(); ++indexed_) taken_.insert(names[indexed_]);
  const std::string base = name_hint.empty() ? "v" : name_hint;
  std::string name = base;
  if (taken_.count(name)) {
    int64_t& k = next_suffix_.try_emplace(base, 1).first->second;
    for (name = base + "_" + std::to_string(k); taken_.count(name);)
      name = base + "_" + std::to_string(++k);
    ++k;
  }
  values.push_back(type);
  names.push_back(name);
  taken_.insert(name);
  ++indexed_;
  return static_cast<int>(values.size()) - 1;
}

int FlowGraph::add_node(const OpDef* op, OpAttrs attrs, std::vector<int> inputs_,
                        const std::vector<TensorType>& output_types) {
  Node n;
  n.op = op;
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs_);
  for (const auto& t : output_types) n.outputs.push_back(add_value(t, "y"));
  nodes.push_back(std::move(n));
  return static_cast<int>(nodes.size()) - 1;
}

std::vector<std::string> FlowGraph::symbols() const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const Shape& s) {
    for (const auto& d : s)
      for (const auto& v : ir::free_vars(d))
        if (seen.insert(v).second) out.push_back(v);
  };
  for (int i : inputs) add(values[i].shape);
  // Symbols that appear only inside (not derivable from inputs) still need a slot: in
  // shapes, in attributes (a slice starting at a symbolic offset), in fused subgraphs.
  for (const auto& t : values) add(t.shape);
  for (const Node& n : nodes) {
    add(attr_size_exprs(n.attrs));
    if (const auto* f = std::get_if<FusedAttrs>(&n.attrs)) {
      for (const std::string& v : f->graph->symbols())
        if (seen.insert(v).second) out.push_back(v);
    }
  }
  return out;
}

std::vector<int> FlowGraph::producers() const {
  std::vector<int> p(values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int o : nodes[i].outputs) p[o] = static_cast<int>(i);
  return p;
}

std::vector<std::vector<int>> FlowGraph::consumers() const {
  std::vector<std::vector<int>> c(values.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int v : nodes[i].inputs) c[v].push_back(static_cast<int>(i));
  return c;
}

void FlowGraph::verify() const {
  std::vector<bool> defined(values.size(), false);
  for (int i : inputs) defined.at(i) = true;
  for (const auto& [id, t] : constants) {
    EMBER_ASSERT(!t.is_symbolic(), "constant " << names.at(id) << " has no memory");
    defined.at(id) = true;
  }
  for (const Node& n : nodes) {
    EMBER_ASSERT(n.op != nullptr, "node without an operator");
    std::vector<TensorType> in;
    for (int v : n.inputs) {
      EMBER_ASSERT(defined.at(v), n.op->title << " reads " << names.at(v) << " before it is set");
      in.push_back(values[v]);
    }
    if (n.op->infer) {
      // infer_types rejects an input layout the operator does not take (an ember::Error).
      auto out = n.op->infer_types(in, n.attrs);
      EMBER_ASSERT(out.size() == n.outputs.size(), n.op->title << ": output count");
      for (size_t i = 0; i < out.size(); ++i)
        EMBER_ASSERT(out[i].dtype == values[n.outputs[i]].dtype &&
                         shape_equal(out[i].shape, values[n.outputs[i]].shape) &&
                         out[i].layout == values[n.outputs[i]].layout,
                     n.op->title << ": output type " << values[n.outputs[i]].str()
                                 << " but the operator infers " << out[i].str());
    }
    for (int v : n.outputs) {
      EMBER_ASSERT(!defined.at(v), "value " << names.at(v) << " is set twice");
      defined.at(v) = true;
    }
  }
  for (int v : outputs) EMBER_ASSERT(defined.at(v), "output " << names.at(v) << " is never set");
}

namespace {

std::string node_title(const Node& n) { return n.op ? n.op->title : "?"; }

std::string node_line(const FlowGraph& g, const Node& n) {
  std::ostringstream os;
  for (size_t i = 0; i < n.outputs.size(); ++i)
    os << (i ? ", " : "") << g.names[n.outputs[i]] << ": " << g.values[n.outputs[i]].str();
  os << " = " << n.op->title << "(";
  bool first = true;
  for (int v : n.inputs) {
    os << (first ? "" : ", ") << g.names[v];
    first = false;
  }
  for (const auto& [k, val] : attr_fields(n.attrs)) {
    os << (first ? "" : ", ") << k << "=" << val;
    first = false;
  }
  os << ")";
  return os.str();
}

}  // namespace

std::string FlowGraph::str() const {
  std::ostringstream os;
  os << "Graph(";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << (i ? ", " : "") << names[inputs[i]] << ": " << values[inputs[i]].str();
  os << ") {\n";
  for (const auto& [id, t] : constants)
    os << "  " << names[id] << " = Constant(" << values[id].str() << ")\n";
  for (const Node& n : nodes) os << "  " << node_line(*this, n) << "\n";
  os << "  return ";
  for (size_t i = 0; i < outputs.size(); ++i) os << (i ? ", " : "") << names[outputs[i]];
  os << "\n}";
  return os.str();
}

std::string FlowGraph::fingerprint() const {
  std::ostringstream os;
  os << "in";
  for (int i : inputs) os << " " << i << ":" << values[i].str();
  for (const auto& [id, t] : constants) os << "|c" << id << ":" << values[id].str();
  for (const Node& n : nodes) {
    os << "|" << n.op->name << "(";
    for (int v : n.inputs) os << v << ",";
    os << ")->";
    for (int v : n.outputs) os << v << ":" << values[v].str() << ",";
    for (const auto& [k, val] : attr_fields(n.attrs)) os << k << "=" << val << ";";
    if (auto* f = std::get_if<FusedAttrs>(&n.attrs)) os << "{" << f->graph->fingerprint() << "}";
  }
  os << "|out";
  for (int v : outputs) os << " " << v;
  return os.str();
}

AttrFields FusedAttrs::fields() const {
  std::string fused = "[";
  if (graph) {
    for (size_t i = 0; i < graph->nodes.size(); ++i) {
      if (i > 0) fused += ", ";
      fused += node_title(graph->nodes[i]);
    }
  }
  AttrFields f = {{"fused", fused + "]"}};
  if (graph && anchor >= 0 && anchor < static_cast<int>(graph->nodes.size())) {
    const Node& a = graph->nodes[anchor];
    f.emplace_back("anchor", node_title(a));
    // The algorithm the anchor runs (a convolution's), so the fused print shows it too.
    for (const auto& [name, value] : attr_fields(a.attrs))
      if (name == "algo") f.emplace_back(name, value);
  }
  return f;
}

}  // namespace ember
