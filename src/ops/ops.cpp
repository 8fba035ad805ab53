// ember's operators as functions on tensors (include/ember/ops/ops.h).
//
// apply() is the one entry: it checks the inputs against the OpDef, infers the output
// types (shape and dtype errors come from the OpDef's rule), then either records a trace
// (any symbolic input) or runs the operator at once (run_compiled, defined by the
// compiler in src/compile/imperative.cpp).
#include "ember/ops/ops.h"

#include <algorithm>
#include <cfloat>
#include <limits>
#include <numeric>

#include "common.h"
#include "ember/support/error.h"

namespace ember::ops {
namespace {

using opdefs::normalize_dim;
using opdefs::normalize_dims;

}  // namespace

std::vector<Tensor> apply(const std::string& op, const std::vector<Tensor>& inputs,
                          const OpAttrs& attrs) {
  return apply(op_def(op), inputs, attrs);
}

std::vector<Tensor> apply(const OpDef& def, const std::vector<Tensor>& inputs,
                          const OpAttrs& attrs) {
  const std::string& op = def.name;
  std::vector<TensorType> types;
  types.reserve(inputs.size());
  bool symbolic = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].defined(), op << ": input " << i << " is an undefined tensor");
    types.push_back(inputs[i].type());
    symbolic = symbolic || inputs[i].is_symbolic();
  }
  opdefs::check_arity(op, types, def.num_inputs);
  const std::vector<TensorType> outs = def.infer_types(types, attrs);
  // An operator whose shape or attributes name symbols (a factory of a symbolic shape, an
  // arange from n) is traced too: it runs inside a graph whose inputs bind them; so is one
  // whose attributes ask for it (a fill computed in the graph, never held as a constant).
  symbolic = symbolic || attrs_use_symbols(attrs) || attrs_in_graph(attrs);
  for (const TensorType& t : outs) symbolic = symbolic || !shape_is_concrete(t.shape);

  std::vector<Tensor> results;
  if (symbolic) {
    auto node = std::make_shared<TraceNode>();
    node->op = &def;
    node->attrs = attrs;
    node->inputs = inputs;
    node->outputs = outs;
    for (size_t i = 0; i < outs.size(); ++i) {
      results.push_back(Tensor::traced(outs[i], node, static_cast<int>(i), def.title));
    }
    return results;
  }
  for (const TensorType& t : outs)
    EMBER_CHECK(t.layout.is_plain(),
                op << ": its output would have the layout " << t.layout.name(t.shape.size())
                   << ", but a tensor with memory is always plain; non-plain layouts exist only "
                      "inside traced graphs (trace the operator on symbolic inputs)");
  // An operator that only reinterprets the shape returns a view of the same memory.
  if (def.traits().is_view) {
    return {Tensor::from_storage(inputs[0].storage(), outs[0].shape, outs[0].dtype)};
  }
  return run_compiled(def, attrs, inputs, outs);
}

Tensor scalar(double value, DType dtype) { return from_values({value}, Shape{}, dtype); }

namespace {
Tensor apply1(const std::string& op, const std::vector<Tensor>& inputs,
              const OpAttrs& attrs = NoAttrs{}) {
  return apply(op, inputs, attrs).at(0);
}
}  // namespace

// ---- elementwise ----

namespace {

// An operator of the scalar tables by its row; specialized below where the function does more
// than apply the operator.
template <ir::UnaryOp op>
Tensor unary_entry(const Tensor& x) {
  return apply1(ir::info(op).fn, {x});
}
template <ir::BinaryOp op>
Tensor binary_entry(const Tensor& a, const Tensor& b) {
  return apply1(ir::info(op).fn, {a, b});
}

// A constant exponent that PyTorch computes by other means: the results (pow(-inf, 0.5) is
// NaN as sqrt, not inf as std::pow) and the speed (a multiply, not a double-precision pow)
// follow it.
template <>
Tensor binary_entry<ir::BinaryOp::Pow>(const Tensor& a, const Tensor& b) {
  if (is_float(a.dtype()) && !b.is_symbolic() && b.numel() == 1 && b.rank() == 0 &&
      b.dtype() == a.dtype()) {
    const double e = element_as_double(b, 0);
    const Tensor one = scalar(1.0, a.dtype());
    if (e == 1.0) return apply1("mul", {a, one});
    if (e == 2.0) return mul(a, a);
    if (e == 3.0) return mul(mul(a, a), a);
    if (e == 0.5) return sqrt(a);
    if (e == -0.5) return rsqrt(a);
    if (e == -1.0) return div(one, a);
    if (e == -2.0) return div(one, mul(a, a));
  }
  return apply1("pow", {a, b});
}

}  // namespace

#define EMBER_OPS_DEFINE_UNARY(Enum, name, fn, ...) \
  Tensor fn(const Tensor& x) { return unary_entry<ir::UnaryOp::Enum>(x); }
#define EMBER_OPS_DEFINE_BINARY(Enum, name, fn, ...) \
  Tensor fn(const Tensor& a, const Tensor& b) { return binary_entry<ir::BinaryOp::Enum>(a, b); }
EMBER_UNARY_OPS(EMBER_OPS_DEFINE_UNARY)
EMBER_BINARY_OPS(EMBER_OPS_DEFINE_BINARY)
#undef EMBER_OPS_DEFINE_UNARY
#undef EMBER_OPS_DEFINE_BINARY

Tensor unary(ir::UnaryOp op, const Tensor& x) {
  switch (op) {
#define EMBER_OPS_CASE(Enum, name, fn, ...) \
  case ir::UnaryOp::Enum: return fn(x);
    EMBER_UNARY_OPS(EMBER_OPS_CASE)
#undef EMBER_OPS_CASE
  }
  throw InternalError("ops::unary: not a UnaryOp");
}

Tensor binary(ir::BinaryOp op, const Tensor& a, const Tensor& b) {
  switch (op) {
#define EMBER_OPS_CASE(Enum, name, fn, ...) \
  case ir::BinaryOp::Enum: return fn(a, b);
    EMBER_BINARY_OPS(EMBER_OPS_CASE)
#undef EMBER_OPS_CASE
  }
  throw InternalError("ops::binary: not a BinaryOp");
}

Tensor gelu(const Tensor& x, bool approximate_tanh) {
  return approximate_tanh ? gelu_tanh(x) : gelu(x);
}

namespace {
// The largest finite value of a floating-point dtype.
double dtype_max(DType t) {
  switch (t) {
    case DType::float16: return 65504.0;
    case DType::bfloat16: return 3.38953138925153547590470800371487866880e+38;
    case DType::float32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

void check_float_input(const char* op, const Tensor& x) {
  EMBER_CHECK(x.defined(), op << ": input 0 is an undefined tensor");
  EMBER_CHECK(is_float(x.dtype()),
              op << ": expected a floating-point tensor, got " << dtype_name(x.dtype()));
}
}  // namespace

Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  EMBER_CHECK(x.defined(), "nan_to_num: input 0 is an undefined tensor");
  if (!is_float(x.dtype())) return x;  // integers have no NaN or inf
  const DType t = x.dtype();
  const double hi = posinf ? *posinf : dtype_max(t);
  const double lo = neginf ? *neginf : -dtype_max(t);
  const Tensor inf = scalar(std::numeric_limits<double>::infinity(), t);
  Tensor out = where(isnan(x), scalar(nan, t), x);
  out = where(equal(x, inf), scalar(hi, t), out);
  return where(equal(x, neg(inf)), scalar(lo, t), out);
}

Tensor elu(const Tensor& x, double alpha) {
  check_float_input("elu", x);
  const DType t = x.dtype();
  return where(greater(x, scalar(0.0, t)), x, mul(expm1(x), scalar(alpha, t)));
}

Tensor celu(const Tensor& x, double alpha) {
  check_float_input("celu", x);
  EMBER_CHECK(alpha != 0.0, "celu: alpha must not be 0");
  const DType t = x.dtype();
  const Tensor zero = scalar(0.0, t), a = scalar(alpha, t);
  return add(maximum(x, zero), minimum(zero, mul(a, expm1(div(x, a)))));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return apply1("where", {cond, a, b});
}
Tensor cast(const Tensor& x, DType dtype) {
  if (x.defined() && x.dtype() == dtype) return x;  // tensors are immutable: no copy needed
  return apply1("cast", {x}, CastAttrs{dtype});
}

// ---- reductions ----

namespace {
Tensor reduce(const std::string& op, const Tensor& x, const std::vector<int64_t>& dims,
              bool keepdim) {
  EMBER_CHECK(x.defined(), op << ": input 0 is an undefined tensor");
  return apply1(op, {x}, ReduceAttrs{normalize_dims(op, dims, x.rank()), keepdim});
}
}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce("sum", x, dims, keepdim);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce("mean", x, dims, keepdim);
}
Tensor max(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce("max", x, dims, keepdim);
}
Tensor min(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce("min", x, dims, keepdim);
}
Tensor prod(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce("prod", x, dims, keepdim);
}
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce("argmax", x, {dim}, keepdim);
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce("argmin", x, {dim}, keepdim);
}
Tensor softmax(const Tensor& x, int64_t axis) {
  EMBER_CHECK(x.defined(), "softmax: input 0 is an undefined tensor");
  return apply1("softmax", {x}, AxisAttrs{normalize_dim("softmax", axis, x.rank())});
}

Tensor matmul(const Tensor& a, const Tensor& b) { return apply1("matmul", {a, b}); }
Tensor matmul_nt(const Tensor& a, const Tensor& b) { return apply1("matmul_nt", {a, b}); }

// ---- transforms ----

Tensor reshape(const Tensor& x, const Shape& shape) {
  return apply1("reshape", {x}, ShapeAttrs{shape});
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  EMBER_CHECK(x.defined(), "permute: input 0 is an undefined tensor");
  std::vector<int64_t> p;
  for (int64_t d : perm) p.push_back(normalize_dim("permute", d, x.rank()));
  return apply1("permute", {x}, DimsAttrs{p});
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  EMBER_CHECK(x.defined(), "flip: input 0 is an undefined tensor");
  std::vector<int64_t> d;
  for (int64_t v : dims) d.push_back(normalize_dim("flip", v, x.rank()));
  std::sort(d.begin(), d.end());
  if (d.empty()) return x;
  return apply1("flip", {x}, DimsAttrs{d});
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  EMBER_CHECK(x.defined(), "transpose: input 0 is an undefined tensor");
  const int64_t d0 = normalize_dim("transpose", dim0, x.rank());
  const int64_t d1 = normalize_dim("transpose", dim1, x.rank());
  std::vector<int64_t> perm(x.rank());
  std::iota(perm.begin(), perm.end(), 0);
  if (x.rank() > 0) std::swap(perm[d0], perm[d1]);
  return permute(x, perm);
}

Tensor flatten(const Tensor& x, int64_t start_dim, int64_t end_dim) {
  EMBER_CHECK(x.defined(), "flatten: input 0 is an undefined tensor");
  const int64_t start = normalize_dim("flatten", start_dim, x.rank());
  const int64_t end = normalize_dim("flatten", end_dim, x.rank());
  if (x.rank() == 0) return reshape(x, {ir::Expr(1)});
  EMBER_CHECK(start <= end, "flatten: start_dim " << start_dim << " comes after end_dim " << end_dim
                                                  << " in a tensor of rank " << x.rank());
  Shape shape(x.shape().begin(), x.shape().begin() + start);
  ir::Expr merged(1);
  for (int64_t i = start; i <= end; ++i) merged = merged * x.shape()[i];
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + end + 1, x.shape().end());
  return reshape(x, shape);
}

Tensor squeeze(const Tensor& x, const std::vector<int64_t>& dims) {
  EMBER_CHECK(x.defined(), "squeeze: input 0 is an undefined tensor");
  return apply1("squeeze", {x}, DimsAttrs{normalize_dims("squeeze", dims, x.rank())});
}

Tensor unsqueeze(const Tensor& x, const std::vector<int64_t>& dims) {
  EMBER_CHECK(x.defined(), "unsqueeze: input 0 is an undefined tensor");
  const int64_t rank = x.rank() + static_cast<int64_t>(dims.size());
  return apply1("unsqueeze", {x}, DimsAttrs{normalize_dims("unsqueeze", dims, rank)});
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  EMBER_CHECK(!xs.empty(), "concat: expected at least one tensor, got none");
  EMBER_CHECK(xs[0].defined(), "concat: input 0 is an undefined tensor");
  return apply1("concat", xs, AxisAttrs{normalize_dim("concat", axis, xs[0].rank())});
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
             const std::vector<int64_t>& stops, const std::vector<int64_t>& steps) {
  EMBER_CHECK(x.defined(), "slice: input 0 is an undefined tensor");
  SliceAttrs a{axes, {starts.begin(), starts.end()}, {stops.begin(), stops.end()}, steps};
  if (a.steps.empty()) a.steps.assign(axes.size(), 1);
  const bool consistent = starts.size() == axes.size() && stops.size() == axes.size() &&
                          a.steps.size() == axes.size() && x.rank() > 0;
  // Python-style normalization of the bounds on constant dimensions (the shape rule does
  // the same, so this only makes equal slices compare equal); symbolic ones stay as given.
  for (size_t i = 0; consistent && i < axes.size(); ++i) {
    a.axes[i] = normalize_dim("slice", axes[i], x.rank());
    auto n = x.shape()[a.axes[i]].as_int();
    if (!n) continue;
    auto clamp = [&](int64_t v) { return v < 0 ? std::max<int64_t>(v + *n, 0) : std::min(v, *n); };
    const int64_t b = clamp(starts[i]);
    a.starts[i] = b;
    a.stops[i] = std::max(clamp(stops[i]), b);
  }
  return apply1("slice", {x}, a);
}

Tensor slice_exact(const Tensor& x, const std::vector<int64_t>& axes, const Shape& starts,
                   const Shape& stops, const std::vector<int64_t>& steps) {
  EMBER_CHECK(x.defined(), "slice: input 0 is an undefined tensor");
  SliceAttrs a{axes, starts, stops, steps, /*clamp=*/false};
  if (a.steps.empty()) a.steps.assign(axes.size(), 1);
  for (size_t i = 0; i < a.axes.size() && x.rank() > 0; ++i)
    a.axes[i] = normalize_dim("slice", axes[i], x.rank());
  for (Shape* bounds : {&a.starts, &a.stops})
    for (ir::Expr& d : *bounds) d = opdefs::canonical_dim(d);
  return apply1("slice", {x}, a);
}

Tensor to_layout(const Tensor& x, const Layout& layout) {
  return apply1("to_layout", {x}, LayoutAttrs{layout});
}

Tensor expand(const Tensor& x, const Shape& shape) {
  return apply1("expand", {x}, ShapeAttrs{shape});
}

}  // namespace ember::ops
