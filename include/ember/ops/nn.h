// Neural-network operators as functions on tensors: convolution, pooling, resizing,
// normalization, embedding, factories and activations (the C++ face of these ember.ops).
//
// Like ops.h: concrete inputs run at once, symbolic ones record a trace; a bad shape, dtype
// or attribute is an ember::Error naming the operator, the shapes and the rule. Per-dimension
// arguments (stride, padding, ...) take one value per spatial dimension, or a single value
// used for every one of them, as torch's ints do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ember/ops/ops.h"

namespace ember::ops {

// x [N, C, H, W] (*) w [O, C / groups, KH, KW] -> [N, O, OH, OW], no bias (add it after:
// fusion makes it the convolution's epilogue). OH = (H + 2 pad - dil (KH - 1) - 1) / stride + 1.
// `algo` forces an algorithm (gemm1x1, winograd, wide, im2col, reduce; src/ops/conv.cpp);
// empty: the graph optimizer's rules choose (choose_algorithms).
Tensor conv2d(const Tensor& x, const Tensor& w, const std::vector<int64_t>& stride = {1},
              const std::vector<int64_t>& padding = {0}, const std::vector<int64_t>& dilation = {1},
              int64_t groups = 1, const std::string& algo = "");
// The gradient of conv2d's weight: dy [N, O, OH, OW] (the output's gradient) and x [N, C, H,
// W] (the input) -> dw [O, C / groups, KH, KW], dw[o, c, kh, kw] = sum over n, oh, ow of
// dy[n, o, oh, ow] * x[n, group(o) * C / groups + c, oh * sh - ph + kh * dh, ow * sw - pw + kw *
// dw]. `kernel` is (KH, KW). float32 is computed by a routine whose scratch is a few MB (the
// input's windows a chunk of output rows at a time), never the whole im2col.
Tensor conv2d_weight_grad(const Tensor& dy, const Tensor& x, const std::vector<int64_t>& kernel,
                          const std::vector<int64_t>& stride = {1},
                          const std::vector<int64_t>& padding = {0},
                          const std::vector<int64_t>& dilation = {1}, int64_t groups = 1);
// x [N, C, L] (*) w [O, C / groups, K] -> [N, O, OL].
Tensor conv1d(const Tensor& x, const Tensor& w, const std::vector<int64_t>& stride = {1},
              const std::vector<int64_t>& padding = {0}, const std::vector<int64_t>& dilation = {1},
              int64_t groups = 1, const std::string& algo = "");

// Pooling over the last two dimensions of [N, C, H, W] or [C, H, W]; an empty stride means
// the kernel size.
Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0},
                  const std::vector<int64_t>& dilation = {1}, bool ceil_mode = false);
// max_pool2d's indices (int64, torch's max_pool2d_with_indices): the flat position ih * W + iw
// of each window's largest element in its input plane.
Tensor max_pool2d_indices(const Tensor& x, const std::vector<int64_t>& kernel,
                          const std::vector<int64_t>& stride = {},
                          const std::vector<int64_t>& padding = {0},
                          const std::vector<int64_t>& dilation = {1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0}, bool ceil_mode = false,
                  bool count_include_pad = true);
Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size);

// Resizing of [N, C, H, W] to [N, C, size[0], size[1]], as torch's interpolate.
Tensor upsample_nearest2d(const Tensor& x, const std::vector<int64_t>& size);
Tensor upsample_bilinear2d(const Tensor& x, const std::vector<int64_t>& size,
                           bool align_corners = false);

// weight [V, D] rows picked by int32 / int64 indices [...] -> [..., D]. Indices must be in
// [0, V): they are not checked.
Tensor embedding(const Tensor& weight, const Tensor& indices);

// Factories (no inputs, CPU): start, start + step, ... before stop; a constant tensor.
Tensor arange(double start, double stop, double step = 1, DType dtype = DType::int64);
// arange with integer bounds that may be size expressions ("n", "n - 1"), known at run time.
Tensor arange(const ir::Expr& start, const ir::Expr& stop, int64_t step = 1,
              DType dtype = DType::int64);
// in_graph: traced even where the shape is known, so that the graph computes it where it is
// read instead of keeping a constant (FullAttrs::in_graph).
Tensor full(const Shape& shape, double value, DType dtype = DType::float32, bool in_graph = false);
// float32 uniform in [0, 1) of `shape`, drawn by Philox-4x32-10 from seed, an int64 tensor
// [seed, offset]: element i (row-major) uses key `seed` and counter (i, offset). The same
// seed gives the same values, on any ISA and however the kernel is fused.
Tensor random_uniform(const Tensor& seed, const Shape& shape);

// The lower (tril) or upper (triu) triangle of the last two dimensions from diagonal k on;
// the rest is zero.
Tensor tril(const Tensor& x, int64_t k = 0);
Tensor triu(const Tensor& x, int64_t k = 0);

// min(max(x, min), max); at least one bound.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);
Tensor relu6(const Tensor& x);        // min(max(x, 0), 6)
Tensor hardsigmoid(const Tensor& x);  // relu6(x + 3) / 6
Tensor hardswish(const Tensor& x);    // x * relu6(x + 3) / 6

// Normalizes over the last normalized_ndim dimensions; weight and bias have their shape.
Tensor layer_norm(const Tensor& x, int64_t normalized_ndim,
                  const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);
// Inference batch norm over channel dimension 1 with running statistics ([C] each).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);

// Scaled-dot-product attention, softmax(scale * q k^T + mask) v, without storing the scores:
// q [B.., Lq, E], k [B.., Lk, E], v [B.., Lk, Ev] -> [B.., Lq, Ev], float32. mask: float32
// (added) or bool (true keeps), broadcastable to [B.., Lq, Lk]; causal keeps key j for query
// i when j <= i (torch's is_causal); scale defaults to 1 / sqrt(E). A row whose every key is
// masked gives 0, as torch's scaled_dot_product_attention.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v,
                 const std::optional<Tensor>& mask = std::nullopt,
                 std::optional<double> scale = std::nullopt, bool causal = false);

}  // namespace ember::ops
