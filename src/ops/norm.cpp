// Normalizations (NormAttrs): layer_norm, a composite of two reductions and a normalizing
// stage, and batch_norm in inference form (running statistics), an elementwise operator;
// scale_shift, the form batch_norm takes when constant folding folds its parameters.
//
// The optional weight and bias are inputs that follow the required ones, in that order;
// NormAttrs says which are present.
#include <cmath>
#include <optional>
#include <string>

#include "common.h"
#include "ember/support/error.h"

namespace ember::opdefs {
namespace {

using ir::BinaryOp;

// The number of inputs the attributes call for, checked against what was given.
void check_norm_inputs(const std::string& op, const std::vector<TensorType>& in, int required,
                       const NormAttrs& a) {
  const int expected = required + (a.has_weight ? 1 : 0) + (a.has_bias ? 1 : 0);
  EMBER_CHECK(static_cast<int>(in.size()) == expected,
              op << ": expected " << expected << " inputs (weight " << (a.has_weight ? "" : "not ")
                 << "given, bias " << (a.has_bias ? "" : "not ") << "given), got " << in.size());
  check_float(op, in[0]);
  for (size_t i = 1; i < in.size(); ++i) check_same_dtype(op, in[0], in[i]);
  EMBER_CHECK(a.eps >= 0, op << ": eps must be >= 0, got " << a.eps);
}

// ---- layer_norm ----

int64_t normalized_ndim(const TensorType& x, const NormAttrs& a) {
  EMBER_CHECK(a.normalized_ndim >= 1 && a.normalized_ndim <= x.rank(),
              "layer_norm: normalized_ndim must be in [1, " << x.rank() << "] for " << x.str()
                                                            << ", got " << a.normalized_ndim);
  return a.normalized_ndim;
}

std::vector<TensorType> infer_layer_norm(const std::vector<TensorType>& in, const OpAttrs& attrs) {
  const std::string op = "layer_norm";
  const NormAttrs& a = attrs_as<NormAttrs>(attrs);
  check_arity(op, in, -1);
  check_norm_inputs(op, in, 1, a);
  const Device device = common_device(op, in);
  const TensorType& x = in[0];
  const int64_t k = normalized_ndim(x, a);
  const Shape normalized(x.shape.end() - k, x.shape.end());
  for (size_t i = 1; i < in.size(); ++i) {
    const char* what = (i == 1 && a.has_weight) ? "weight" : "bias";
    EMBER_CHECK(shape_equal(in[i].shape, normalized),
                op << ": the " << what << " " << in[i].str() << " must have the normalized shape "
                   << shape_str(normalized) << " (the last " << k << " dimensions of " << x.str()
                   << ")");
  }
  return {TensorType{x.dtype, x.shape, device}};
}

// mean[rows] = x0 + sum (x - x0) / D; rstd[rows] = 1 / sqrt(sum (x - mean)^2 / D + eps) (two
// passes, for accuracy); out = (x - mean) * rstd [* weight] [+ bias].
ir::Task lower_layer_norm(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                          const OpAttrs& attrs) {
  const NormAttrs& a = attrs_as<NormAttrs>(attrs);
  const TensorType& x = in.at(0);
  const size_t k = static_cast<size_t>(normalized_ndim(x, a));
  const size_t lead = x.shape.size() - k;
  const DType ct = compute_dtype(x.dtype);
  const Shape rows(x.shape.begin(), x.shape.begin() + lead);
  const Shape normalized(x.shape.begin() + lead, x.shape.end());

  ir::Task t;
  t.name = "layer_norm";
  const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input);
  const int wb =
      a.has_weight ? t.add_buffer("weight", x.dtype, normalized, ir::BufferRole::Input) : -1;
  const int bb = a.has_bias ? t.add_buffer("bias", x.dtype, normalized, ir::BufferRole::Input) : -1;
  const int ob = t.add_buffer("out", out.at(0).dtype, x.shape, ir::BufferRole::Output);
  const int mb = t.add_buffer("mean", ct, rows, ir::BufferRole::Scratch);
  const int rb = t.add_buffer("rstd", ct, rows, ir::BufferRole::Scratch);

  const Index row = make_vars("i", lead);
  Index xi = row;
  const Index r = make_vars("r", k);
  xi.insert(xi.end(), r.begin(), r.end());
  const Expr xv = to_compute(ir::load(xb, x.dtype, xi));
  const Expr count = ir::cast(shape_numel_expr(normalized), ct);
  // The row's first element: the mean is summed relative to it, so a constant row has a
  // mean of exactly that value, a variance of exactly 0, and an output of 0 however small
  // eps is (a plain sum / D rounds, and (x - mean) * rsqrt(tiny + eps) magnifies it).
  Index first = row;
  for (size_t d = 0; d < k; ++d) first.push_back(ir::const_int(0));
  const Expr x0 = to_compute(ir::load(xb, x.dtype, first));

  ir::Stage mean;
  mean.kind = ir::StageKind::Reduce;
  mean.out = mb;
  mean.axes = row;
  mean.raxes = r;
  mean.rextents = normalized;
  mean.acc_dtype = ct;
  mean.value = ir::binary(BinaryOp::Sub, xv, x0);
  mean.epilogue = ir::binary(BinaryOp::Add, x0, ir::binary(BinaryOp::Div, ir::acc(ct), count));

  ir::Stage var = mean;
  var.out = rb;
  const Expr centered = ir::binary(BinaryOp::Sub, xv, ir::load(mb, ct, row));
  var.value = ir::binary(BinaryOp::Mul, centered, centered);
  const Expr variance = ir::binary(BinaryOp::Div, ir::acc(ct), count);
  var.epilogue = ir::binary(
      BinaryOp::Div, ir::const_of(1, ct),
      ir::unary(ir::UnaryOp::Sqrt, ir::binary(BinaryOp::Add, variance, ir::const_of(a.eps, ct))));

  ir::Stage norm;
  norm.kind = ir::StageKind::Compute;
  norm.out = ob;
  norm.axes = make_vars("j", x.shape.size());
  const Index nrow(norm.axes.begin(), norm.axes.begin() + lead);
  const Index ncol(norm.axes.begin() + lead, norm.axes.end());
  Expr v = ir::binary(BinaryOp::Mul,
                      ir::binary(BinaryOp::Sub, to_compute(ir::load(xb, x.dtype, norm.axes)),
                                 ir::load(mb, ct, nrow)),
                      ir::load(rb, ct, nrow));
  if (wb >= 0) v = ir::binary(BinaryOp::Mul, v, to_compute(ir::load(wb, x.dtype, ncol)));
  if (bb >= 0) v = ir::binary(BinaryOp::Add, v, to_compute(ir::load(bb, x.dtype, ncol)));
  norm.value = cast_to(v, out[0].dtype);

  t.stages = {mean, var, norm};
  return t;
}

// A per-channel parameter `p` of `x` [N, C, ...]: 1-d with C entries.
void check_per_channel(const std::string& op, const char* name, const TensorType& p,
                       const TensorType& x) {
  EMBER_CHECK(p.rank() == 1 && same_dim(p.shape[0], x.shape[1]),
              op << ": " << name << " " << p.str() << " must be 1-d with one entry per channel "
                 << "(dimension 1 of " << x.str() << ")");
}

// ---- batch_norm ----
// With constant float32 parameters, constant folding turns it into scale_shift
// (fold_batch_norm, below).

std::vector<TensorType> infer_batch_norm(const std::vector<TensorType>& in, const OpAttrs& attrs) {
  const std::string op = "batch_norm";
  const NormAttrs& a = attrs_as<NormAttrs>(attrs);
  check_arity(op, in, -1);
  check_norm_inputs(op, in, 3, a);
  const Device device = common_device(op, in);
  const TensorType& x = in[0];
  EMBER_CHECK(x.rank() >= 2, op << ": expected an input [N, C, ...] with at least 2 dimensions, "
                                   "got "
                                << x.str());
  const char* names[] = {"running_mean", "running_var", a.has_weight ? "weight" : "bias", "bias"};
  for (size_t i = 1; i < in.size(); ++i) check_per_channel(op, names[i - 1], in[i], x);
  return {TensorType{x.dtype, x.shape, device}};
}

// torch's inference form: alpha = weight / sqrt(var + eps), beta = bias - mean * alpha,
// out = x * alpha + beta.
Expr compute_batch_norm(const ComputeArgs& args) {
  const NormAttrs& a = attrs_as<NormAttrs>(args.attrs);
  const Index c = {args.idx.at(1)};
  auto param = [&](int i) { return to_compute(args.load(i, c)); };
  const Expr x = to_compute(args.load(0, args.idx));
  const DType ct = x.dtype();
  const Expr stdev =
      ir::unary(ir::UnaryOp::Sqrt, ir::binary(BinaryOp::Add, param(2), ir::const_of(a.eps, ct)));
  Expr alpha = ir::binary(BinaryOp::Div, ir::const_of(1, ct), stdev);
  if (a.has_weight) alpha = ir::binary(BinaryOp::Mul, alpha, param(3));
  const Expr shift = ir::binary(BinaryOp::Mul, param(1), alpha);
  const Expr bias = a.has_bias ? param(a.has_weight ? 4 : 3) : ir::const_of(0, ct);
  const Expr beta = ir::binary(BinaryOp::Sub, bias, shift);
  return cast_to(ir::binary(BinaryOp::Add, ir::binary(BinaryOp::Mul, x, alpha), beta),
                 args.output.dtype);
}

// ---- scale_shift: batch norm with its parameters folded ----

// x [N, C, ...], scale [C], shift [C] -> x * scale[c] + shift[c] (what batch_norm's
// fold_parameters gives when its parameters are constants).
std::vector<TensorType> infer_scale_shift(const std::vector<TensorType>& in, const OpAttrs&) {
  const std::string op = "scale_shift";
  check_arity(op, in, 3);
  const TensorType& x = in[0];
  check_float(op, x);
  EMBER_CHECK(x.rank() >= 2, op << ": expected an input [N, C, ...], got " << x.str());
  for (size_t i = 1; i < 3; ++i) {
    check_same_dtype(op, x, in[i]);
    check_per_channel(op, i == 1 ? "scale" : "shift", in[i], x);
  }
  return {TensorType{x.dtype, x.shape, common_device(op, in)}};
}

Expr compute_scale_shift(const ComputeArgs& args) {
  const Index c = {args.idx.at(1)};
  const Expr x = to_compute(args.load(0, args.idx));
  const Expr y =
      ir::binary(BinaryOp::Add, ir::binary(BinaryOp::Mul, x, to_compute(args.load(1, c))),
                 to_compute(args.load(2, c)));
  return cast_to(y, args.output.dtype);
}

// batch_norm on constant float32 parameters: alpha and beta of compute_batch_norm computed
// once, in the same float32 operations, so the kernel computes x * alpha + beta as before
// without a square root and a division per element.
std::optional<ParameterFold> fold_batch_norm(const std::vector<TensorType>& in,
                                             const std::vector<Tensor>& constants,
                                             const OpAttrs& attrs) {
  const NormAttrs& a = attrs_as<NormAttrs>(attrs);
  if (in.size() < 3 || in[0].dtype != DType::float32) return std::nullopt;
  for (size_t i = 1; i < in.size(); ++i)
    if (!constants[i].defined() || constants[i].dtype() != DType::float32 ||
        constants[i].data() == nullptr)
      return std::nullopt;
  const int64_t C = constants[1].numel();
  auto param = [&](size_t i) { return constants[i].data_as<const float>(); };
  const float* mean = param(1);
  const float* var = param(2);
  const float* weight = a.has_weight ? param(3) : nullptr;
  const float* bias = a.has_bias ? param(a.has_weight ? 4 : 3) : nullptr;
  Tensor scale = Tensor::empty({C}, DType::float32);
  Tensor shift = Tensor::empty({C}, DType::float32);
  float* sc = scale.data_as<float>();
  float* sh = shift.data_as<float>();
  const auto eps = static_cast<float>(a.eps);
  for (int64_t c = 0; c < C; ++c) {
    float alpha = 1.0f / std::sqrt(var[c] + eps);
    if (weight) alpha *= weight[c];
    sc[c] = alpha;
    sh[c] = (bias ? bias[c] : 0.0f) - mean[c] * alpha;
  }
  ParameterFold f;
  f.op = find_op_def("scale_shift");
  f.attrs = NoAttrs{};
  f.from = {0, -1, -1};
  f.constants = {Tensor{}, scale, shift};
  f.names = {"", "scale", "shift"};
  return f;
}

}  // namespace

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "scale_shift";
  d.title = "ScaleShift";
  d.kind = OpKind::Elementwise;
  d.num_inputs = 3;
  d.infer = infer_scale_shift;
  d.compute = compute_scale_shift;
  return d;
}

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "layer_norm";
  d.title = "LayerNorm";
  d.kind = OpKind::Composite;
  d.num_inputs = -1;
  d.infer = infer_layer_norm;
  d.lower = lower_layer_norm;
  return d;
}

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "batch_norm";
  d.title = "BatchNorm";
  d.kind = OpKind::Elementwise;
  d.num_inputs = -1;
  d.infer = infer_batch_norm;
  d.compute = compute_batch_norm;
  d.fold_parameters = fold_batch_norm;
  return d;
}

}  // namespace ember::opdefs
