#include "ember/ops/attrs.h"

#include <charconv>
#include <limits>
#include <string>

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

// The shortest text that reads back as the same double ("1e-05", "0.5", "-inf"): graphs and
// operator cache keys are built from these fields, so distinct values must print apart.
std::string num(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

std::string opt_num(const std::optional<double>& v) { return v ? num(*v) : "None"; }

}  // namespace

AttrFields ReduceAttrs::fields() const {
  return {{"dims", int_list(dims)}, {"keepdim", py_bool(keepdim)}};
}

AttrFields AxisAttrs::fields() const { return {{"axis", std::to_string(axis)}}; }

AttrFields ShapeAttrs::fields() const { return {{"shape", shape_str(shape)}}; }

bool ShapeAttrs::operator==(const ShapeAttrs& o) const { return shape_equal(shape, o.shape); }

AttrFields DimsAttrs::fields() const { return {{"dims", int_list(dims)}}; }

AttrFields SliceAttrs::fields() const {
  AttrFields f = {{"axes", int_list(axes)},
                  {"starts", shape_str(starts)},
                  {"stops", shape_str(stops)},
                  {"steps", int_list(steps)}};
  if (!clamp) f.emplace_back("clamp", py_bool(clamp));
  return f;
}

bool SliceAttrs::operator==(const SliceAttrs& o) const {
  return axes == o.axes && shape_equal(starts, o.starts) && shape_equal(stops, o.stops) &&
         steps == o.steps && clamp == o.clamp;
}

AttrFields CastAttrs::fields() const { return {{"dtype", dtype_name(dtype)}}; }

AttrFields LayoutAttrs::fields() const {
  // The rank-free spelling; the output's type names the layout for its rank.
  const std::string name = layout.kind == LayoutKind::Plain ? "plain"
                           : layout.kind == LayoutKind::ChannelsLast
                               ? "channels_last"
                               : "blocked" + std::to_string(layout.block);
  return {{"layout", name}};
}

AttrFields ConvAttrs::fields() const {
  AttrFields f = {{"stride", int_list(stride)},
                  {"padding", int_list(padding)},
                  {"dilation", int_list(dilation)},
                  {"groups", std::to_string(groups)}};
  if (!algo.empty()) f.emplace_back("algo", algo);
  if (out_channels > 0) f.emplace_back("out_channels", std::to_string(out_channels));
  if (!kernel.empty()) f.emplace_back("kernel", int_list(kernel));
  return f;
}

AttrFields PoolAttrs::fields() const {
  return {{"kernel", int_list(kernel)},      {"stride", int_list(stride)},
          {"padding", int_list(padding)},    {"dilation", int_list(dilation)},
          {"ceil_mode", py_bool(ceil_mode)}, {"count_include_pad", py_bool(count_include_pad)}};
}

AttrFields AdaptivePoolAttrs::fields() const { return {{"output_size", int_list(output_size)}}; }

AttrFields UpsampleAttrs::fields() const {
  return {{"size", int_list(size)}, {"align_corners", py_bool(align_corners)}};
}

AttrFields ArangeAttrs::fields() const {
  auto bound = [](const ir::Expr& sym, double v) {
    return sym.defined() ? ir::to_string(sym) : num(v);
  };
  return {{"start", bound(sym_start, start)},
          {"stop", bound(sym_stop, stop)},
          {"step", num(step)},
          {"dtype", dtype_name(dtype)}};
}

bool ArangeAttrs::operator==(const ArangeAttrs& o) const {
  auto same = [](const ir::Expr& a, const ir::Expr& b) {
    return a.defined() == b.defined() && (!a.defined() || ir::equal(a, b));
  };
  return start == o.start && stop == o.stop && step == o.step && dtype == o.dtype &&
         same(sym_start, o.sym_start) && same(sym_stop, o.sym_stop);
}

AttrFields FullAttrs::fields() const {
  AttrFields f = {{"shape", shape_str(shape)}, {"value", num(value)}, {"dtype", dtype_name(dtype)}};
  if (in_graph) f.push_back({"in_graph", "true"});
  return f;
}

bool FullAttrs::operator==(const FullAttrs& o) const {
  return shape_equal(shape, o.shape) && value == o.value && dtype == o.dtype &&
         in_graph == o.in_graph;
}

AttrFields TriAttrs::fields() const { return {{"diagonal", std::to_string(diagonal)}}; }

AttrFields ClampAttrs::fields() const { return {{"min", opt_num(min)}, {"max", opt_num(max)}}; }

AttrFields NormAttrs::fields() const {
  AttrFields f;
  if (normalized_ndim > 0) f.emplace_back("normalized_ndim", std::to_string(normalized_ndim));
  f.emplace_back("eps", num(eps));
  f.emplace_back("weight", py_bool(has_weight));
  f.emplace_back("bias", py_bool(has_bias));
  return f;
}

AttrFields AttentionAttrs::fields() const {
  AttrFields f = {
      {"scale", opt_num(scale)}, {"causal", py_bool(causal)}, {"mask", py_bool(has_mask)}};
  if (fill != -std::numeric_limits<double>::infinity()) f.emplace_back("fill", num(fill));
  if (empty_nan) f.emplace_back("empty_rows", "nan");
  return f;
}

std::vector<ir::Expr> attr_size_exprs(const OpAttrs& a) {
  std::vector<ir::Expr> out;
  auto add = [&](const Shape& s) { out.insert(out.end(), s.begin(), s.end()); };
  if (const auto* x = std::get_if<ArangeAttrs>(&a)) {
    if (x->sym_start.defined()) out.push_back(x->sym_start);
    if (x->sym_stop.defined()) out.push_back(x->sym_stop);
  }
  if (const auto* x = std::get_if<SliceAttrs>(&a)) add(x->starts), add(x->stops);
  if (const auto* x = std::get_if<ShapeAttrs>(&a)) add(x->shape);
  if (const auto* x = std::get_if<FullAttrs>(&a)) add(x->shape);
  return out;
}

bool attrs_use_symbols(const OpAttrs& a) {
  for (const ir::Expr& e : attr_size_exprs(a)) {
    if (e.defined() && !e.as_int()) return true;
  }
  return false;
}

bool attrs_in_graph(const OpAttrs& a) {
  const auto* f = std::get_if<FullAttrs>(&a);
  return f != nullptr && f->in_graph;
}

AttrFields attr_fields(const OpAttrs& a) {
  return std::visit([](const auto& x) { return x.fields(); }, a);
}

}  // namespace ember
