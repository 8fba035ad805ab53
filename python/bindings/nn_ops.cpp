// The neural-network functions of ember/ops/nn.h in ember._C.ops, with torch-like keyword
// arguments: per-dimension arguments (stride, padding, ...) take an int or a sequence, as
// torch.nn.functional's do; optional tensors and bounds take None.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "bindings.h"
#include "ember/ops/nn.h"
#include "ember/support/error.h"

namespace ember::py {

namespace {

using OptTensor = std::optional<Tensor>;

void bind_conv_pool(nb::module_& m) {
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, const DimsArg& stride, const DimsArg& padding,
         const DimsArg& dilation, int64_t groups, const std::optional<std::string>& algo) {
        return ops::conv2d(x, w, stride.dims, padding.dims, dilation.dims, groups,
                           algo.value_or(""));
      },
      nb::arg("x"), nb::arg("w"), nb::arg("stride") = nb::make_tuple(1, 1),
      nb::arg("padding") = nb::make_tuple(0, 0), nb::arg("dilation") = nb::make_tuple(1, 1),
      nb::arg("groups") = 1, nb::arg("algo") = nb::none(),
      "2-d convolution of x [N, C, H, W] with w [O, C / groups, KH, KW], without bias. algo "
      "forces an algorithm ('gemm1x1', 'winograd', 'implicit', 'wide', 'im2col', 'depthwise', "
      "'reduce'); None lets the graph optimizer choose.");
  m.def(
      "conv2d_weight_grad",
      [](const Tensor& dy, const Tensor& x, const DimsArg& kernel, const DimsArg& stride,
         const DimsArg& padding, const DimsArg& dilation, int64_t groups) {
        return ops::conv2d_weight_grad(dy, x, kernel.dims, stride.dims, padding.dims, dilation.dims,
                                       groups);
      },
      nb::arg("dy"), nb::arg("x"), nb::arg("kernel"), nb::arg("stride") = nb::make_tuple(1, 1),
      nb::arg("padding") = nb::make_tuple(0, 0), nb::arg("dilation") = nb::make_tuple(1, 1),
      nb::arg("groups") = 1,
      "The gradient of conv2d's weight [O, C / groups, KH, KW] (kernel = (KH, KW)) from the "
      "output's gradient dy [N, O, OH, OW] and the input x [N, C, H, W]. float32 never "
      "materializes the whole im2col: its scratch is a few MB.");
  m.def(
      "conv1d",
      [](const Tensor& x, const Tensor& w, const DimsArg& stride, const DimsArg& padding,
         const DimsArg& dilation, int64_t groups, const std::optional<std::string>& algo) {
        return ops::conv1d(x, w, stride.dims, padding.dims, dilation.dims, groups,
                           algo.value_or(""));
      },
      nb::arg("x"), nb::arg("w"), nb::arg("stride") = 1, nb::arg("padding") = 0,
      nb::arg("dilation") = 1, nb::arg("groups") = 1, nb::arg("algo") = nb::none(),
      "1-d convolution of x [N, C, L] with w [O, C / groups, K], without bias. algo forces "
      "an algorithm ('gemm1x1', 'implicit', 'wide', 'im2col', 'depthwise', 'reduce'); None "
      "lets the graph optimizer choose.");
  m.def(
      "max_pool2d",
      [](const Tensor& x, const DimsArg& kernel, const DimsArg& stride, const DimsArg& padding,
         const DimsArg& dilation, bool ceil_mode) {
        return ops::max_pool2d(x, kernel.dims, stride.dims, padding.dims, dilation.dims, ceil_mode);
      },
      nb::arg("x"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
      nb::arg("dilation") = 1, nb::arg("ceil_mode") = false,
      "Maximum over windows of the last two dimensions (stride=None: the kernel size).");
  m.def(
      "max_pool2d_indices",
      [](const Tensor& x, const DimsArg& kernel, const DimsArg& stride, const DimsArg& padding,
         const DimsArg& dilation, bool ceil_mode) {
        return ops::max_pool2d_indices(x, kernel.dims, stride.dims, padding.dims, dilation.dims,
                                       ceil_mode);
      },
      nb::arg("x"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
      nb::arg("dilation") = 1, nb::arg("ceil_mode") = false,
      "max_pool2d's indices (int64): the flat position ih * W + iw of each window's largest "
      "element in its input plane, as torch's max_pool2d_with_indices.");
  m.def(
      "avg_pool2d",
      [](const Tensor& x, const DimsArg& kernel, const DimsArg& stride, const DimsArg& padding,
         bool ceil_mode, bool count_include_pad) {
        return ops::avg_pool2d(x, kernel.dims, stride.dims, padding.dims, ceil_mode,
                               count_include_pad);
      },
      nb::arg("x"), nb::arg("kernel_size"), nb::arg("stride") = nb::none(), nb::arg("padding") = 0,
      nb::arg("ceil_mode") = false, nb::arg("count_include_pad") = true,
      "Mean over windows of the last two dimensions (stride=None: the kernel size).");
  m.def(
      "adaptive_avg_pool2d",
      [](const Tensor& x, const DimsArg& size) { return ops::adaptive_avg_pool2d(x, size.dims); },
      nb::arg("x"), nb::arg("output_size"),
      "Mean over the windows that split the last two dimensions into output_size.");
}

void bind_resize_and_more(nb::module_& m) {
  m.def(
      "upsample_nearest2d",
      [](const Tensor& x, const DimsArg& size) { return ops::upsample_nearest2d(x, size.dims); },
      nb::arg("x"), nb::arg("size"), "Nearest-neighbour resize of [N, C, H, W] to size.");
  m.def(
      "upsample_bilinear2d",
      [](const Tensor& x, const DimsArg& size, bool align_corners) {
        return ops::upsample_bilinear2d(x, size.dims, align_corners);
      },
      nb::arg("x"), nb::arg("size"), nb::arg("align_corners") = false,
      "Bilinear resize of [N, C, H, W] to size, as torch's interpolate.");
  m.def(
      "embedding",
      [](const Tensor& weight, const Tensor& indices) { return ops::embedding(weight, indices); },
      nb::arg("weight"), nb::arg("indices"),
      "Rows of weight [V, D] at int32/int64 indices [...] -> [..., D].");
  m.def(
      "arange",
      [](const nb::object& start, const nb::object& stop, double step, const DTypeArg& dtype) {
        if (!nb::isinstance<nb::str>(start) && !nb::isinstance<nb::str>(stop)) {
          return ops::arange(nb::cast<double>(start), nb::cast<double>(stop), step, dtype.get());
        }
        // Integer bounds, one of them a size expression known at run time.
        auto bound = [](const nb::object& b) -> ir::Expr {
          if (!nb::isinstance<nb::str>(b)) {
            const auto v = nb::cast<double>(b);
            EMBER_CHECK(
                v == static_cast<double>(static_cast<int64_t>(v)),
                "arange: with a symbolic bound the other bound must be an integer, got " << v);
            return ir::Expr(static_cast<int64_t>(v));
          }
          std::string error;
          ir::Expr e = size_from_text(nb::cast<std::string>(b), &error);
          EMBER_CHECK(error.empty(), "arange: " << error);
          return e;
        };
        EMBER_CHECK(step == static_cast<double>(static_cast<int64_t>(step)),
                    "arange: with a symbolic bound the step must be an integer, got " << step);
        return ops::arange(bound(start), bound(stop), static_cast<int64_t>(step), dtype.get());
      },
      nb::arg("start"), nb::arg("stop"), nb::arg("step") = 1, nb::arg("dtype") = "int64",
      "start, start + step, ... before stop, as a 1-d tensor. A bound may be a size "
      "expression of symbols ('n', 'n - 1'); the other bound and the step are then integers.");
  m.def(
      "full",
      [](const ShapeArg& shape, double value, const DTypeArg& dtype, bool in_graph) {
        return ops::full(shape.get(), value, dtype.get(), in_graph);
      },
      nb::arg("shape"), nb::arg("value"), nb::arg("dtype") = "float32", nb::arg("in_graph") = false,
      "A tensor of shape filled with value (an operator: traced graphs keep it as a node). "
      "in_graph=True traces it even where the shape is known: the graph computes it where it "
      "is read instead of keeping a constant of that size.");
  m.def(
      "random_uniform",
      [](const Tensor& seed, const ShapeArg& shape) {
        return ops::random_uniform(seed, shape.get());
      },
      nb::arg("seed"), nb::arg("shape"),
      "float32 uniform in [0, 1) of shape, drawn by Philox-4x32-10 from seed, an int64 tensor "
      "[seed, offset]: element i (row-major) uses key seed and counter (i, offset), so the same "
      "seed gives the same values. Pass the seed as a graph input to draw anew on every call.");
  m.def(
      "tril", [](const Tensor& x, int64_t k) { return ops::tril(x, k); }, nb::arg("x"),
      nb::arg("k") = 0, "The lower triangle (j - i <= k) of the last two dimensions; 0 elsewhere.");
  m.def(
      "triu", [](const Tensor& x, int64_t k) { return ops::triu(x, k); }, nb::arg("x"),
      nb::arg("k") = 0, "The upper triangle (j - i >= k) of the last two dimensions; 0 elsewhere.");
}

void bind_activations_and_norms(nb::module_& m) {
  m.def(
      "clamp",
      [](const Tensor& x, std::optional<double> min, std::optional<double> max) {
        return ops::clamp(x, min, max);
      },
      nb::arg("x"), nb::arg("min") = nb::none(), nb::arg("max") = nb::none(),
      "min(max(x, min), max); either bound may be None, not both.");
  m.def(
      "relu6", [](const Tensor& x) { return ops::relu6(x); }, nb::arg("x"), "min(max(x, 0), 6)");
  m.def(
      "hardsigmoid", [](const Tensor& x) { return ops::hardsigmoid(x); }, nb::arg("x"),
      "relu6(x + 3) / 6");
  m.def(
      "hardswish", [](const Tensor& x) { return ops::hardswish(x); }, nb::arg("x"),
      "x * relu6(x + 3) / 6");
  m.def(
      "layer_norm",
      [](const Tensor& x, int64_t normalized_ndim, const OptTensor& weight, const OptTensor& bias,
         double eps) { return ops::layer_norm(x, normalized_ndim, weight, bias, eps); },
      nb::arg("x"), nb::arg("normalized_ndim"), nb::arg("weight") = nb::none(),
      nb::arg("bias") = nb::none(), nb::arg("eps") = 1e-5,
      "Normalizes over the last normalized_ndim dimensions (two-pass mean and variance).");
  m.def(
      "batch_norm",
      [](const Tensor& x, const Tensor& mean, const Tensor& var, const OptTensor& weight,
         const OptTensor& bias,
         double eps) { return ops::batch_norm(x, mean, var, weight, bias, eps); },
      nb::arg("x"), nb::arg("mean"), nb::arg("var"), nb::arg("weight") = nb::none(),
      nb::arg("bias") = nb::none(), nb::arg("eps") = 1e-5,
      "Inference batch norm over dimension 1 with running statistics.");
  m.def(
      "attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, const OptTensor& mask,
         std::optional<double> scale,
         bool causal) { return ops::attention(q, k, v, mask, scale, causal); },
      nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("mask") = nb::none(),
      nb::arg("scale") = nb::none(), nb::arg("causal") = false,
      "softmax(scale * q k^T + mask) v in one kernel that never stores the scores: q [..., Lq, "
      "E], k [..., Lk, E], v [..., Lk, Ev] (float32). mask: float32 (added) or bool (True "
      "keeps); causal: torch's is_causal; scale: 1 / sqrt(E) by default.");
}

}  // namespace

void bind_nn_ops(nb::module_& ops) {
  bind_conv_pool(ops);
  bind_resize_and_more(ops);
  bind_activations_and_norms(ops);
}

}  // namespace ember::py
