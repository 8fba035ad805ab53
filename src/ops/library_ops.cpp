// Operators computed by a routine of the runtime library (ir::StageKind::Call,
// ember_rt/library.h): scans (cumsum, cumprod, logcumsumexp, cummax, cummin), stable sorts
// (values and int64 positions) and scatters (out = self with src written or reduced into
// it at data-dependent positions), and the gather along an axis they pair with.
//
// Each is a Composite whose task is one Call stage. The routine reads whole materialized
// buffers, so these operators take neither a prologue nor an epilogue; they are anchors
// (each starts its own kernel).
#include <optional>
#include <string>

#include "common.h"
#include "ember/ops/ops.h"
#include "ember/support/error.h"

namespace ember {
namespace opdefs {
namespace {

OpTraits library_traits() {
  OpTraits t;
  t.anchor = true;
  t.epilogue = EpilogueRule::None;
  return t;
}

// The [outer, n, inner] view of shape around axis.
std::vector<Expr> row_params(const Shape& shape, int64_t axis) {
  const Shape before(shape.begin(), shape.begin() + axis);
  const Shape after(shape.begin() + axis + 1, shape.end());
  return {shape_numel_expr(before), shape[static_cast<size_t>(axis)], shape_numel_expr(after)};
}

void check_scan_dtype(const std::string& op, const TensorType& x, bool float_only) {
  const DType t = x.dtype;
  const bool ok = t == DType::float32 || t == DType::float64 ||
                  (!float_only && (t == DType::int64 || t == DType::int32));
  EMBER_CHECK(ok, op << ": takes "
                     << (float_only ? "float32 or float64" : "float32, float64, int32 or int64")
                     << " tensors, got " << dtype_name(t) << "; cast the input first");
}

// Operation counts (ir::Stage::flops): an operation on floating-point values counts one, a
// comparison too; integer work counts none.
Expr float_ops(DType t, const Expr& n) { return is_float(t) ? n : Expr(0); }

// ceil(log2(n + 1)): the comparisons of a binary search among n sorted values, and the
// merge levels of a sort of n + 1; undefined for a symbolic n.
Expr search_depth(const Expr& n) {
  const std::optional<int64_t> v = n.as_int();
  if (!v) return Expr();
  int64_t depth = 0;
  while ((int64_t{1} << depth) < *v + 1) ++depth;
  return Expr(depth);
}

// The operations of a scan or sort of x along `axis`.
using AxisFlops = Expr (*)(const TensorType& x, int64_t axis);
Expr scan_flops(const TensorType& x, int64_t) {
  return float_ops(x.dtype, shape_numel_expr(x.shape));
}
Expr log_add_exp_flops(const TensorType& x, int64_t) {  // max, min, -, exp, log1p, +
  return float_ops(x.dtype, Expr(6) * shape_numel_expr(x.shape));
}
Expr sort_flops(const TensorType& x, int64_t axis) {  // a merge sort's comparisons, at most
  const Expr n = x.shape[static_cast<size_t>(axis)], depth = search_depth(n - Expr(1));
  return depth.defined() ? float_ops(x.dtype, shape_numel_expr(x.shape) * depth) : Expr();
}

// A scan or sort along AxisAttrs::axis: one input, `outputs` outputs (the second int64).
OpDef axis_op(const std::string& name, const std::string& title, const std::string& routine,
              int outputs, bool float_only, AxisFlops flops) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = OpKind::Composite;
  d.declared_traits = library_traits();
  d.num_inputs = 1;
  d.infer = [name, outputs, float_only](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity(name, in, 1);
    const TensorType& x = in[0];
    check_scan_dtype(name, x, float_only);
    EMBER_CHECK(x.rank() >= 1, name << ": expected a tensor with at least one dimension, got a "
                                       "0-d tensor; unsqueeze it first");
    normalize_dim(name, attrs_as<AxisAttrs>(a).axis, x.rank());
    std::vector<TensorType> out{x};
    if (outputs == 2) out.push_back(TensorType{DType::int64, x.shape, x.device});
    return out;
  };
  d.lower = [name, routine, flops](const std::vector<TensorType>& in,
                                   const std::vector<TensorType>& out, const OpAttrs& a) {
    const TensorType& x = in.at(0);
    const int64_t axis = normalize_dim(name, attrs_as<AxisAttrs>(a).axis, x.rank());
    ir::Task t;
    t.name = name;
    const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input);
    ir::Stage s;
    s.kind = ir::StageKind::Call;
    s.routine = routine;
    s.call_inputs = {xb};
    for (size_t i = 0; i < out.size(); ++i)
      s.call_outputs.push_back(t.add_buffer(i == 0 ? "values" : "indices", out[i].dtype,
                                            out[i].shape, ir::BufferRole::Output));
    s.out = s.call_outputs[0];
    s.params = row_params(x.shape, axis);
    s.flops = flops(x, axis);
    t.stages = {s};
    return t;
  };
  return d;
}

// searchsorted_left / _right: inputs sorted (rows along its last dimension) and values of
// one dtype; sorted is 1-d (one row for every value) or has values' leading dimensions.
// Output: int64 positions of values' shape.
OpDef search_op(bool right) {
  const std::string name = right ? "searchsorted_right" : "searchsorted_left";
  OpDef d;
  d.name = name;
  d.title = right ? "SearchSortedRight" : "SearchSortedLeft";
  d.kind = OpKind::Composite;
  d.declared_traits = library_traits();
  d.num_inputs = 2;
  d.infer = [name](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity(name, in, 2);
    const TensorType &sorted = in[0], &values = in[1];
    const Device device = common_device(name, in);
    check_same_dtype(name, sorted, values);
    check_scan_dtype(name, sorted, false);
    EMBER_CHECK(sorted.rank() >= 1, name << ": the sorted sequence needs a dimension");
    if (sorted.rank() > 1) {
      bool ok = values.rank() == sorted.rank();
      for (size_t k = 0; ok && k + 1 < sorted.shape.size(); ++k)
        ok = same_dim(sorted.shape[k], values.shape[k]);
      EMBER_CHECK(ok, name << ": sorted " << shape_str(sorted.shape) << " and values "
                           << shape_str(values.shape)
                           << " must agree on every dimension but the last");
    }
    return std::vector<TensorType>{TensorType{DType::int64, values.shape, device}};
  };
  d.lower = [name, right](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                          const OpAttrs&) {
    const TensorType &sorted = in.at(0), &values = in.at(1);
    ir::Task t;
    t.name = name;
    t.add_buffer("sorted", sorted.dtype, sorted.shape, ir::BufferRole::Input);
    t.add_buffer("values", values.dtype, values.shape, ir::BufferRole::Input);
    const int ob = t.add_buffer("out", DType::int64, out.at(0).shape, ir::BufferRole::Output);
    ir::Stage s;
    s.kind = ir::StageKind::Call;
    s.routine = right ? "search_sorted_right" : "search_sorted_left";
    s.call_inputs = {0, 1};
    s.call_outputs = {ob};
    s.out = ob;
    const Expr n = sorted.shape.back();
    if (sorted.rank() == 1) {
      s.params = {Expr(1), n, Expr(1), shape_numel_expr(values.shape)};
    } else {
      const Shape lead(sorted.shape.begin(), sorted.shape.end() - 1);
      const Expr rows = shape_numel_expr(lead);
      s.params = {rows, n, rows, values.shape.back()};
    }
    const Expr depth = search_depth(n);
    if (depth.defined()) s.flops = float_ops(values.dtype, shape_numel_expr(values.shape) * depth);
    t.stages = {s};
    return t;
  };
  return d;
}

// scatter_<reduce>: inputs self, index (int32/int64), src; index and src share one shape,
// which agrees with self's on every dimension but the axis. out = self; then along the axis,
// out[..., index[..., k, ...], ...] (op)= src[..., k, ...] in order of k, the index in
// [0, self.shape[axis]) (else ember.DataError).
OpDef scatter_op(const std::string& reduce) {
  const std::string name = "scatter_" + reduce;
  OpDef d;
  d.name = name;
  d.title = "Scatter" + reduce;
  d.kind = OpKind::Composite;
  d.declared_traits = library_traits();
  d.declared_traits->in_place_input = 0;  // out starts as a copy of self (scatter_impl)
  d.num_inputs = 3;
  d.infer = [name](const std::vector<TensorType>& in, const OpAttrs& a) {
    check_arity(name, in, 3);
    const TensorType &self = in[0], &index = in[1], &src = in[2];
    common_device(name, in);
    check_same_dtype(name, self, src);
    const DType t = self.dtype;
    EMBER_CHECK(t != DType::float16 && t != DType::bfloat16,
                name << ": takes float32, float64, integer or bool tensors, got " << dtype_name(t)
                     << "; cast the input first");
    EMBER_CHECK(index.dtype == DType::int64 || index.dtype == DType::int32,
                name << ": the index must be int64 or int32, got " << dtype_name(index.dtype));
    EMBER_CHECK(shape_equal(index.shape, src.shape), name << ": index " << shape_str(index.shape)
                                                          << " and src " << shape_str(src.shape)
                                                          << " must have one shape");
    EMBER_CHECK(self.rank() >= 1 && self.rank() == index.rank(),
                name << ": self " << shape_str(self.shape) << " and index "
                     << shape_str(index.shape) << " must have one rank, at least 1");
    const int64_t axis = normalize_dim(name, attrs_as<AxisAttrs>(a).axis, self.rank());
    for (size_t d = 0; d < self.shape.size(); ++d)
      EMBER_CHECK(static_cast<int64_t>(d) == axis || same_dim(self.shape[d], index.shape[d]),
                  name << ": self " << shape_str(self.shape) << " and index "
                       << shape_str(index.shape) << " must agree on every dimension but axis "
                       << axis << "; scatter into a slice of self");
    return std::vector<TensorType>{self};
  };
  d.lower = [name](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                   const OpAttrs& a) {
    const TensorType& self = in.at(0);
    const int64_t axis = normalize_dim(name, attrs_as<AxisAttrs>(a).axis, self.rank());
    ir::Task t;
    t.name = name;
    const char* names[] = {"self", "index", "src"};
    for (size_t i = 0; i < 3; ++i)
      t.add_buffer(names[i], in[i].dtype, in[i].shape, ir::BufferRole::Input);
    const int ob = t.add_buffer("out", out.at(0).dtype, out.at(0).shape, ir::BufferRole::Output);
    ir::Stage s;
    s.kind = ir::StageKind::Call;
    s.routine = name;
    s.call_inputs = {0, 1, 2};
    s.call_outputs = {ob};
    s.out = ob;
    const std::vector<Expr> rows = row_params(self.shape, axis);
    s.params = {rows[0], rows[1], in[1].shape[static_cast<size_t>(axis)], rows[2]};
    // One operation per src element reduced into out (none to assign), and a mean's division
    // per element of out.
    const bool mean = name.find("mean") != std::string::npos;
    const Expr reduced = name == "scatter_assign" ? Expr(0) : shape_numel_expr(in[2].shape);
    s.flops = float_ops(self.dtype, reduced + (mean ? shape_numel_expr(self.shape) : Expr(0)));
    t.stages = {s};
    return t;
  };
  return d;
}

}  // namespace

EMBER_REGISTER_OP { return axis_op("cumsum", "CumSum", "scan_sum", 1, false, scan_flops); }
EMBER_REGISTER_OP { return axis_op("cumprod", "CumProd", "scan_prod", 1, false, scan_flops); }
EMBER_REGISTER_OP {
  return axis_op("logcumsumexp", "LogCumSumExp", "scan_logsumexp", 1, true, log_add_exp_flops);
}
EMBER_REGISTER_OP { return axis_op("cummax", "CumMax", "scan_max", 2, false, scan_flops); }
EMBER_REGISTER_OP { return axis_op("cummin", "CumMin", "scan_min", 2, false, scan_flops); }
EMBER_REGISTER_OP { return axis_op("sort", "Sort", "sort_ascending", 2, false, sort_flops); }
EMBER_REGISTER_OP {
  return axis_op("sort_descending", "SortDescending", "sort_descending", 2, false, sort_flops);
}
EMBER_REGISTER_OP { return search_op(false); }
EMBER_REGISTER_OP { return search_op(true); }
EMBER_REGISTER_OP { return scatter_op("assign"); }
EMBER_REGISTER_OP { return scatter_op("sum"); }
EMBER_REGISTER_OP { return scatter_op("prod"); }
EMBER_REGISTER_OP { return scatter_op("amax"); }
EMBER_REGISTER_OP { return scatter_op("amin"); }
EMBER_REGISTER_OP { return scatter_op("mean"); }
EMBER_REGISTER_OP { return scatter_op("sum_excl"); }
EMBER_REGISTER_OP { return scatter_op("prod_excl"); }
EMBER_REGISTER_OP { return scatter_op("amax_excl"); }
EMBER_REGISTER_OP { return scatter_op("amin_excl"); }
EMBER_REGISTER_OP { return scatter_op("mean_excl"); }

}  // namespace opdefs

namespace ops {
namespace {

int64_t axis_of(const std::string& op, const Tensor& x, int64_t axis) {
  EMBER_CHECK(x.defined(), op << ": input 0 is an undefined tensor");
  return opdefs::normalize_dim(op, axis, x.rank());
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t axis) {
  return apply("cumsum", {x}, AxisAttrs{axis_of("cumsum", x, axis)}).at(0);
}
Tensor cumprod(const Tensor& x, int64_t axis) {
  return apply("cumprod", {x}, AxisAttrs{axis_of("cumprod", x, axis)}).at(0);
}
Tensor logcumsumexp(const Tensor& x, int64_t axis) {
  return apply("logcumsumexp", {x}, AxisAttrs{axis_of("logcumsumexp", x, axis)}).at(0);
}
std::vector<Tensor> cummax(const Tensor& x, int64_t axis) {
  return apply("cummax", {x}, AxisAttrs{axis_of("cummax", x, axis)});
}
std::vector<Tensor> cummin(const Tensor& x, int64_t axis) {
  return apply("cummin", {x}, AxisAttrs{axis_of("cummin", x, axis)});
}
std::vector<Tensor> sort(const Tensor& x, int64_t axis, bool descending) {
  const std::string op = descending ? "sort_descending" : "sort";
  return apply(op, {x}, AxisAttrs{axis_of(op, x, axis)});
}
Tensor searchsorted(const Tensor& sorted, const Tensor& values, bool right) {
  EMBER_CHECK(sorted.defined() && values.defined(), "searchsorted: an undefined tensor");
  return apply(right ? "searchsorted_right" : "searchsorted_left", {sorted, values}).at(0);
}
Tensor scatter(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& src,
               const std::string& reduce, bool include_self) {
  static const char* reduces[] = {"assign", "sum", "prod", "amax", "amin", "mean"};
  bool known = false;
  for (const char* r : reduces) known |= reduce == r;
  EMBER_CHECK(known, "scatter: reduce must be assign, sum, prod, amax, amin or mean, got '"
                         << reduce << "'");
  EMBER_CHECK(include_self || reduce != "assign",
              "scatter: include_self=False needs a reduction (sum, prod, amax, amin, mean)");
  const std::string op = "scatter_" + reduce + (include_self ? "" : "_excl");
  return apply(op, {self, index, src}, AxisAttrs{axis_of(op, self, axis)}).at(0);
}

}  // namespace ops
}  // namespace ember
