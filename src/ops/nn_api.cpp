// The functions of include/ember/ops/nn.h: each builds its operator's attributes and calls
// ops::apply. Per-dimension arguments given as one value are repeated here, so that the
// attributes are canonical (equal convolutions share one compiled kernel).
#include <optional>
#include <string>

#include "common.h"
#include "ember/ops/nn.h"
#include "ember/support/error.h"

namespace ember::ops {
namespace {

Tensor apply1(const std::string& op, const std::vector<Tensor>& inputs, const OpAttrs& attrs) {
  return apply(op, inputs, attrs).at(0);
}

// v with one entry per spatial dimension: a single value is repeated.
std::vector<int64_t> per_dim(const std::string& op, const char* name, const std::vector<int64_t>& v,
                             size_t n) {
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  EMBER_CHECK(v.size() == n, op << ": " << name << " must be one value or " << n
                                << " (one per spatial dimension), got " << v.size() << " values");
  return v;
}

Tensor conv(const std::string& op, size_t n, const Tensor& x, const Tensor& w,
            const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
            const std::vector<int64_t>& dilation, int64_t groups, const std::string& algo) {
  ConvAttrs a;
  a.stride = per_dim(op, "stride", stride, n);
  a.padding = per_dim(op, "padding", padding, n);
  a.dilation = per_dim(op, "dilation", dilation, n);
  a.groups = groups;
  a.algo = algo;
  if (algo.empty()) return apply1(op, {x, w}, a);
  const auto o = w.shape().empty() ? std::nullopt : w.shape()[0].as_int();
  const opdefs::ConvAlgoOps run_as = opdefs::conv_algo_ops(op, algo, o.value_or(0));
  const Tensor weight =
      run_as.prepare_weight.empty() ? w : apply1(run_as.prepare_weight, {w}, NoAttrs{});
  a.out_channels = run_as.out_channels;
  if (run_as.layout.is_plain()) return apply1(run_as.op, {x, weight}, a);
  const Tensor xl = apply1("to_layout", {x}, LayoutAttrs{run_as.layout});
  return apply1("to_layout", {apply1(run_as.op, {xl, weight}, a)}, LayoutAttrs{Layout::plain()});
}

PoolAttrs pool_attrs(const std::string& op, const std::vector<int64_t>& kernel,
                     const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                     const std::vector<int64_t>& dilation) {
  PoolAttrs a;
  a.kernel = per_dim(op, "kernel_size", kernel, 2);
  a.stride = stride.empty() ? a.kernel : per_dim(op, "stride", stride, 2);
  a.padding = per_dim(op, "padding", padding, 2);
  a.dilation = per_dim(op, "dilation", dilation, 2);
  return a;
}

// The inputs and flags of an operator with an optional weight and bias.
std::vector<Tensor> with_optional(std::vector<Tensor> inputs, const std::optional<Tensor>& weight,
                                  const std::optional<Tensor>& bias, NormAttrs* a) {
  a->has_weight = weight.has_value();
  a->has_bias = bias.has_value();
  if (weight) inputs.push_back(*weight);
  if (bias) inputs.push_back(*bias);
  return inputs;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
              int64_t groups, const std::string& algo) {
  return conv("conv2d", 2, x, w, stride, padding, dilation, groups, algo);
}

Tensor conv2d_weight_grad(const Tensor& dy, const Tensor& x, const std::vector<int64_t>& kernel,
                          const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                          const std::vector<int64_t>& dilation, int64_t groups) {
  const std::string op = "conv2d_weight_grad";
  ConvAttrs a;
  a.kernel = per_dim(op, "kernel", kernel, 2);
  a.stride = per_dim(op, "stride", stride, 2);
  a.padding = per_dim(op, "padding", padding, 2);
  a.dilation = per_dim(op, "dilation", dilation, 2);
  a.groups = groups;
  return apply1(op, {dy, x}, a);
}

Tensor conv1d(const Tensor& x, const Tensor& w, const std::vector<int64_t>& stride,
              const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation,
              int64_t groups, const std::string& algo) {
  return conv("conv1d", 1, x, w, stride, padding, dilation, groups, algo);
}

namespace {

// max_pool2d and max_pool2d_indices: the same windows, their maxima or where they are.
Tensor max_pool(const std::string& op, const Tensor& x, const std::vector<int64_t>& kernel,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                const std::vector<int64_t>& dilation, bool ceil_mode) {
  PoolAttrs a = pool_attrs(op, kernel, stride, padding, dilation);
  a.ceil_mode = ceil_mode;
  return apply1(op, {x}, a);
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  const std::vector<int64_t>& dilation, bool ceil_mode) {
  return max_pool("max_pool2d", x, kernel, stride, padding, dilation, ceil_mode);
}

Tensor max_pool2d_indices(const Tensor& x, const std::vector<int64_t>& kernel,
                          const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                          const std::vector<int64_t>& dilation, bool ceil_mode) {
  return max_pool("max_pool2d_indices", x, kernel, stride, padding, dilation, ceil_mode);
}

Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  bool ceil_mode, bool count_include_pad) {
  PoolAttrs a = pool_attrs("avg_pool2d", kernel, stride, padding, {1});
  a.ceil_mode = ceil_mode;
  a.count_include_pad = count_include_pad;
  return apply1("avg_pool2d", {x}, a);
}

Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size) {
  const std::string op = "adaptive_avg_pool2d";
  return apply1(op, {x}, AdaptivePoolAttrs{per_dim(op, "output_size", output_size, 2)});
}

Tensor upsample_nearest2d(const Tensor& x, const std::vector<int64_t>& size) {
  const std::string op = "upsample_nearest2d";
  return apply1(op, {x}, UpsampleAttrs{per_dim(op, "size", size, 2), false});
}

Tensor upsample_bilinear2d(const Tensor& x, const std::vector<int64_t>& size, bool align_corners) {
  const std::string op = "upsample_bilinear2d";
  return apply1(op, {x}, UpsampleAttrs{per_dim(op, "size", size, 2), align_corners});
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return apply1("embedding", {weight, indices}, NoAttrs{});
}

Tensor arange(double start, double stop, double step, DType dtype) {
  return apply1("arange", {}, ArangeAttrs{start, stop, step, dtype});
}

Tensor arange(const ir::Expr& start, const ir::Expr& stop, int64_t step, DType dtype) {
  ArangeAttrs a{0, 0, static_cast<double>(step), dtype};
  // Constant bounds stay numbers, so a static arange is the same operator either way.
  auto set = [](const ir::Expr& bound, double* number, ir::Expr* symbolic) {
    if (auto c = bound.as_int()) {
      *number = static_cast<double>(*c);
    } else {
      *symbolic = bound;
    }
  };
  set(start, &a.start, &a.sym_start);
  set(stop, &a.stop, &a.sym_stop);
  return apply1("arange", {}, a);
}

Tensor full(const Shape& shape, double value, DType dtype, bool in_graph) {
  return apply1("full", {}, FullAttrs{shape, value, dtype, in_graph});
}

Tensor random_uniform(const Tensor& seed, const Shape& shape) {
  return apply1("random_uniform", {seed}, ShapeAttrs{shape});
}

Tensor tril(const Tensor& x, int64_t k) { return apply1("tril", {x}, TriAttrs{k}); }
Tensor triu(const Tensor& x, int64_t k) { return apply1("triu", {x}, TriAttrs{k}); }

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  return apply1("clamp", {x}, ClampAttrs{min, max});
}
Tensor relu6(const Tensor& x) { return apply1("relu6", {x}, NoAttrs{}); }
Tensor hardsigmoid(const Tensor& x) { return apply1("hardsigmoid", {x}, NoAttrs{}); }
Tensor hardswish(const Tensor& x) { return apply1("hardswish", {x}, NoAttrs{}); }

Tensor layer_norm(const Tensor& x, int64_t normalized_ndim, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  NormAttrs a;
  a.normalized_ndim = normalized_ndim;
  a.eps = eps;
  const std::vector<Tensor> inputs = with_optional({x}, weight, bias, &a);
  return apply1("layer_norm", inputs, a);
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps) {
  NormAttrs a;
  a.eps = eps;
  const std::vector<Tensor> inputs =
      with_optional({x, running_mean, running_var}, weight, bias, &a);
  return apply1("batch_norm", inputs, a);
}

}  // namespace ember::ops
