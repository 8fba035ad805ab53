#include "ember/ops/attrs.h"

#include <string>

#include "ember/graph/flow_graph.h"

namespace ember {
namespace {

std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// Booleans print as Python does, since graphs are read next to Python code.
std::string py_bool(bool b) { return b ? "True" : "False"; }

std::string node_title(const Node& n) { return n.op ? n.op->title : "?"; }

}  // namespace

AttrFields ReduceAttrs::fields() const {
  return {{"dims", int_list(dims)}, {"keepdim", py_bool(keepdim)}};
}

AttrFields AxisAttrs::fields() const { return {{"axis", std::to_string(axis)}}; }

AttrFields ShapeAttrs::fields() const { return {{"shape", shape_str(shape)}}; }

bool ShapeAttrs::operator==(const ShapeAttrs& o) const { return shape_equal(shape, o.shape); }

AttrFields DimsAttrs::fields() const { return {{"dims", int_list(dims)}}; }

AttrFields SliceAttrs::fields() const {
  return {{"axes", int_list(axes)},
          {"starts", int_list(starts)},
          {"stops", int_list(stops)},
          {"steps", int_list(steps)}};
}

AttrFields CastAttrs::fields() const { return {{"dtype", dtype_name(dtype)}}; }

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
    f.emplace_back("anchor", node_title(graph->nodes[anchor]));
  }
  return f;
}

AttrFields attr_fields(const OpAttrs& a) {
  return std::visit([](const auto& x) { return x.fields(); }, a);
}

}  // namespace ember
