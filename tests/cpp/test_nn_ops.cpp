// The neural-network operators (src/ops/{conv,pool,nn,norm}.cpp, ember/ops/nn.h): shape rules,
// every user-facing message they give, the tasks convolutions lower to, and a few numeric
// checks against naive loops (the Python tests compare every operator with torch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "ember/ops/nn.h"
#include "ember/ops/op_def.h"
#include "ember/support/error.h"
#include "error_text.h"

namespace ember {
namespace {

using ir::Expr;

const Expr n = ir::var("n");

TensorType tt(DType d, Shape s) { return TensorType{d, std::move(s), Device::cpu()}; }
TensorType f32(Shape s) { return tt(DType::float32, std::move(s)); }

std::string infer1(const std::string& op, std::vector<TensorType> in, OpAttrs a) {
  std::vector<TensorType> out = op_def(op).infer(in, a);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0).str();
}

std::string infer_error(const std::string& op, std::vector<TensorType> in, OpAttrs a) {
  return error_of([&] { op_def(op).infer(in, a); });
}

ConvAttrs conv(std::vector<int64_t> stride, std::vector<int64_t> pad, std::vector<int64_t> dil,
               int64_t groups = 1) {
  ConvAttrs a;
  a.stride = std::move(stride);
  a.padding = std::move(pad);
  a.dilation = std::move(dil);
  a.groups = groups;
  return a;
}

PoolAttrs pool(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p,
               bool ceil = false, bool include_pad = true) {
  return PoolAttrs{std::move(k), std::move(s), std::move(p), {1, 1}, ceil, include_pad};
}

// ---- registry ----

TEST(NnOps, Registered) {
  const std::vector<std::pair<const char*, OpKind>> ops = {
      {"conv2d", OpKind::Composite},
      {"conv1d", OpKind::Composite},
      {"max_pool2d", OpKind::Reduce},
      {"avg_pool2d", OpKind::Reduce},
      {"adaptive_avg_pool2d", OpKind::Reduce},
      {"upsample_nearest2d", OpKind::Injective},
      {"upsample_bilinear2d", OpKind::Composite},
      {"embedding", OpKind::Injective},
      {"arange", OpKind::Injective},
      {"full", OpKind::Injective},
      {"tril", OpKind::Injective},
      {"triu", OpKind::Injective},
      {"clamp", OpKind::Elementwise},
      {"relu6", OpKind::Elementwise},
      {"hardsigmoid", OpKind::Elementwise},
      {"hardswish", OpKind::Elementwise},
      {"layer_norm", OpKind::Composite},
      {"batch_norm", OpKind::Elementwise}};
  for (const auto& [name, kind] : ops) {
    ASSERT_NE(find_op_def(name), nullptr) << name;
    EXPECT_EQ(op_def(name).kind, kind) << name;
  }
  EXPECT_EQ(op_def("conv2d").title, "Conv2d");
  EXPECT_EQ(op_def("upsample_bilinear2d").title, "UpsampleBilinear2d");
  EXPECT_TRUE(op_def("conv2d").reduce != nullptr);  // the generic fallback
  EXPECT_TRUE(op_def("conv2d").lower != nullptr);
  EXPECT_EQ(op_def("arange").num_inputs, 0);
  EXPECT_EQ(op_def("full").num_inputs, 0);
}

TEST(NnOps, AttrFields) {
  EXPECT_EQ(attr_fields(conv({2, 2}, {1, 1}, {1, 1}, 4)).at(3).second, "4");
  EXPECT_EQ(attr_fields(conv({2, 1}, {1, 0}, {1, 1})).at(0).second, "[2, 1]");
  NormAttrs a;
  a.eps = 1e-5;
  EXPECT_EQ(attr_fields(a).at(0), (std::pair<std::string, std::string>{"eps", "1e-05"}));
  EXPECT_EQ(attr_fields(ClampAttrs{std::nullopt, 6.0}).at(0).second, "None");
  EXPECT_EQ(attr_fields(ArangeAttrs{0, 1, 0.1, DType::float32}).at(2).second, "0.1");
  EXPECT_FALSE(ConvAttrs(conv({1, 1}, {0, 0}, {1, 1})) == ConvAttrs(conv({1, 1}, {1, 1}, {1, 1})));
}

// ---- conv ----

TEST(NnOps, ConvShapes) {
  EXPECT_EQ(
      infer1("conv2d", {f32({1, 64, 56, 56}), f32({64, 64, 3, 3})}, conv({1, 1}, {1, 1}, {1, 1})),
      "float32[1, 64, 56, 56]");
  EXPECT_EQ(
      infer1("conv2d", {f32({2, 3, 224, 224}), f32({64, 3, 7, 7})}, conv({2, 2}, {3, 3}, {1, 1})),
      "float32[2, 64, 112, 112]");
  EXPECT_EQ(
      infer1("conv2d", {f32({1, 4, 10, 9}), f32({6, 2, 3, 2})}, conv({2, 1}, {0, 1}, {2, 1}, 2)),
      "float32[1, 6, 3, 10]");
  EXPECT_EQ(
      infer1("conv2d", {f32({1, 8, 5, 5}), f32({8, 1, 3, 3})}, conv({1, 1}, {1, 1}, {1, 1}, 8)),
      "float32[1, 8, 5, 5]");
  EXPECT_EQ(infer1("conv1d", {f32({2, 4, 16}), f32({8, 4, 5})}, conv({2}, {2}, {1})),
            "float32[2, 8, 8]");
  // Symbolic sizes stay symbolic; a "same" convolution keeps the very same dimension.
  EXPECT_EQ(infer1("conv2d", {f32({n, 3, n, 8}), f32({4, 3, 3, 3})}, conv({1, 1}, {1, 1}, {1, 1})),
            "float32[n, 4, n, 8]");
  EXPECT_EQ(infer1("conv2d", {f32({n, 3, n, 8}), f32({4, 3, 3, 3})}, conv({2, 1}, {0, 1}, {1, 1})),
            "float32[n, 4, (((n + -3) // 2) + 1), 8]");
}

TEST(NnOps, ConvErrors) {
  EXPECT_EQ(
      infer_error("conv2d", {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})}, conv({1, 1}, {0, 0}, {1, 1})),
      "conv2d: input float32[1, 3, 8, 8], weight float32[4, 2, 3, 3] do not match: the input "
      "has 3 channels but the weight expects 2 per group x 1 group = 2; the rule is C == "
      "weight.shape[1] * groups");
  EXPECT_EQ(
      infer_error("conv2d", {f32({1, 3, 8}), f32({4, 3, 3, 3})}, conv({1, 1}, {0, 0}, {1, 1})),
      "conv2d: expected a 4-d input [N, C, H, W] and a 4-d weight [O, C / groups, KH, KW], "
      "got input float32[1, 3, 8], weight float32[4, 3, 3, 3]");
  EXPECT_EQ(infer_error("conv2d", {f32({1, 4, 8, 8}), f32({3, 2, 3, 3})},
                        conv({1, 1}, {0, 0}, {1, 1}, 2)),
            "conv2d: the weight's 3 output channels are not divisible by groups = 2 (input "
            "float32[1, 4, 8, 8], weight float32[3, 2, 3, 3])");
  EXPECT_EQ(
      infer_error("conv2d", {f32({1, 3, 2, 8}), f32({4, 3, 3, 3})}, conv({1, 1}, {0, 0}, {1, 1})),
      "conv2d: the input is too small for the kernel: input float32[1, 3, 2, 8], weight "
      "float32[4, 3, 3, 3] give a padded size of 2 but the dilated kernel spans 3; the rule "
      "is size + 2 * padding >= dilation * (kernel - 1) + 1");
  EXPECT_EQ(
      infer_error("conv2d", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, conv({1}, {0, 0}, {1, 1})),
      "conv2d: stride must have 2 entries (one per spatial dimension), got [1]");
  EXPECT_EQ(
      infer_error("conv2d", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, conv({1, 0}, {0, 0}, {1, 1})),
      "conv2d: stride must be >= 1 in every dimension, got [1, 0]");
  EXPECT_EQ(infer_error("conv1d", {tt(DType::int32, {1, 3, 8}), tt(DType::int32, {4, 3, 3})},
                        conv({1}, {0}, {1})),
            "conv1d: expected a floating-point tensor (float16, bfloat16, float32 or float64), got "
            "int32; cast it first with ember.ops.cast(x, ember.float32)");
  EXPECT_EQ(error_of([] {
              ops::conv2d(randn({1, 3, 4, 4}), randn({2, 3, 1, 1}), {1, 1, 1});
            }),
            "conv2d: stride must be one value or 2 (one per spatial dimension), got 3 values");
}

// The tasks convolutions lower to: which stages, which buffer views.
std::vector<ir::StageKind> stage_kinds(const ir::Task& t) {
  std::vector<ir::StageKind> k;
  for (const auto& s : t.stages) k.push_back(s.kind);
  return k;
}

ir::Task lower_conv(std::vector<TensorType> in, const ConvAttrs& a, const char* op = "conv2d") {
  const std::vector<TensorType> out = op_def(op).infer(in, a);
  return op_def(op).lower(in, out, a);
}

TEST(NnOps, ConvLowering) {
  using K = ir::StageKind;
  // 3x3, stride 1, pad 1 (implicit): the padded copy (one stride phase; one extra row), the
  // GEMM reading it through its row view into the wide output, the crop.
  ir::Task t =
      lower_conv({f32({1, 64, 56, 56}), f32({64, 64, 3, 3})}, conv({1, 1}, {1, 1}, {1, 1}));
  EXPECT_EQ(stage_kinds(t), (std::vector<K>{K::Compute, K::Matmul, K::Compute}));
  EXPECT_EQ(shape_str(t.buffers[1].shape), "[64, 576]");  // w viewed [O, C*KH*KW]
  EXPECT_EQ(t.buffers[2].role, ir::BufferRole::Output);
  EXPECT_EQ(shape_str(t.buffers[2].shape), "[1, 64, 56, 56]");
  auto buffer = [&t](const char* name) {
    return std::find_if(t.buffers.begin(), t.buffers.end(),
                        [&](const ir::Buffer& b) { return b.name == name; });
  };
  ASSERT_NE(buffer("x_phased"), t.buffers.end());
  EXPECT_EQ(shape_str(buffer("x_phased")->shape), "[1, 64, 1, 59, 58]");
  EXPECT_EQ(shape_str(buffer("wide")->shape), "[1, 64, 3248]");  // 56 rows of 58
  EXPECT_EQ(buffer("col"), t.buffers.end());
  const ir::Stage& mm = t.stages[1];
  EXPECT_EQ(mm.b, static_cast<int>(buffer("x_phased") - t.buffers.begin()));
  ASSERT_TRUE(mm.b_row_offset.defined());
  // Row k = (c, kh, kw) of the columns starts at c*Hs*Ws + kh*Ws + kw (Hs = 59, Ws = 58).
  const std::map<std::string, int64_t> k = {{mm.b_row_var->name, 9 * 5 + 3 * 2 + 1}};
  EXPECT_EQ(ir::eval_int(mm.b_row_offset, k), 5 * 59 * 58 + 2 * 58 + 1);
  // Stride 2: four phases of 30 rows (OH = 28, one more for kh = 2, one for kw = 2) of 29.
  t = lower_conv({f32({1, 64, 56, 56}), f32({128, 64, 3, 3})}, conv({2, 2}, {1, 1}, {1, 1}));
  EXPECT_EQ(stage_kinds(t), (std::vector<K>{K::Compute, K::Matmul, K::Compute}));
  EXPECT_EQ(shape_str(buffer("x_phased")->shape), "[1, 64, 4, 30, 29]");
  EXPECT_EQ(shape_str(buffer("wide")->shape), "[1, 128, 812]");  // 28 rows of 29
  // (c, kh, kw) = (3, 2, 1): phase (0, 1), row 1, column 0.
  const std::map<std::string, int64_t> k2 = {{t.stages[1].b_row_var->name, 9 * 3 + 3 * 2 + 1}};
  EXPECT_EQ(ir::eval_int(t.stages[1].b_row_offset, k2), ((3 * 4 + 1) * 30 + 1) * 29);
  // Only the phases the kernel reads are copied. 1x1 stride 2 (ResNet's downsampling): one
  // phase of 28 rows of 28, a quarter of the four phases.
  ConvAttrs implicit = conv({2, 2}, {0, 0}, {1, 1});
  implicit.algo = "implicit";
  t = lower_conv({f32({1, 64, 56, 56}), f32({128, 64, 1, 1})}, implicit);
  EXPECT_EQ(shape_str(buffer("x_phased")->shape), "[1, 64, 1, 28, 28]");
  const std::map<std::string, int64_t> k3 = {{t.stages[1].b_row_var->name, 5}};
  EXPECT_EQ(ir::eval_int(t.stages[1].b_row_offset, k3), 5 * 28 * 28);
  // 2x2 stride 3, dilation (1, 2): rows read phases 0 and 1 of 3; columns 0 and 2 (kw dw = 2),
  // phase index 1 for kw = 1. Row k = (c, kh, kw) = (2, 1, 1): phase (1, 1) = 3 of 4, row 0,
  // column 0.
  implicit = conv({3, 3}, {0, 0}, {1, 2});
  implicit.algo = "implicit";
  t = lower_conv({f32({1, 4, 12, 12}), f32({8, 4, 2, 2})}, implicit);
  EXPECT_EQ(shape_str(buffer("x_phased")->shape), "[1, 4, 4, 4, 4]");
  const std::map<std::string, int64_t> k4 = {{t.stages[1].b_row_var->name, 2 * 4 + 2 + 1}};
  EXPECT_EQ(ir::eval_int(t.stages[1].b_row_offset, k4), (2 * 4 + 3) * 4 * 4);
  // One output pixel: im2col, a GEMM into out viewed [N, O, OH*OW] from a materialized col.
  t = lower_conv({f32({1, 64, 3, 3}), f32({128, 64, 3, 3})}, conv({1, 1}, {0, 0}, {1, 1}));
  EXPECT_EQ(stage_kinds(t), (std::vector<K>{K::Compute, K::Matmul}));
  EXPECT_EQ(shape_str(t.buffers[2].shape), "[1, 128, 1]");
  ASSERT_NE(buffer("col"), t.buffers.end());
  EXPECT_EQ(shape_str(buffer("col")->shape), "[1, 576, 1]");
  // 1x1 stride 1 without padding: one GEMM on x viewed [N, C, H*W].
  t = lower_conv({f32({2, 64, 7, 7}), f32({256, 64, 1, 1})}, conv({1, 1}, {0, 0}, {1, 1}));
  EXPECT_EQ(stage_kinds(t), (std::vector<K>{K::Matmul}));
  EXPECT_EQ(shape_str(t.buffers[0].shape), "[2, 64, 49]");
  EXPECT_EQ(shape_str(t.buffers[2].shape), "[2, 256, 49]");
  // Depthwise float32: one Call of the routine, w viewed [O, KH*KW], sizes as parameters.
  t = lower_conv({f32({1, 32, 8, 8}), f32({64, 1, 3, 3})}, conv({2, 2}, {1, 1}, {1, 1}, 32));
  ASSERT_EQ(stage_kinds(t), (std::vector<K>{K::Call}));
  EXPECT_EQ(t.stages[0].routine, "depthwise_conv2d");
  EXPECT_EQ(shape_str(t.buffers[1].shape), "[64, 9]");
  EXPECT_EQ(t.stages[0].axes.size(), 4u);  // over out, for a fused epilogue
  ASSERT_EQ(t.stages[0].params.size(), 15u);
  EXPECT_EQ(ir::to_string(t.stages[0].params[5]), "4");  // OH
  // conv1d depthwise: the same routine over a height of 1.
  t = lower_conv({f32({2, 4, 32}), f32({4, 1, 3})}, conv({1}, {1}, {1}, 4), "conv1d");
  ASSERT_EQ(stage_kinds(t), (std::vector<K>{K::Call}));
  EXPECT_EQ(shape_str(t.buffers[0].shape), "[2, 4, 1, 32]");
  // Other grouped convolutions: one direct reduction over (C/groups, KH, KW).
  t = lower_conv({f32({1, 32, 8, 8}), f32({32, 2, 3, 3})}, conv({1, 1}, {1, 1}, {1, 1}, 16));
  ASSERT_EQ(stage_kinds(t), (std::vector<K>{K::Reduce}));
  EXPECT_EQ(t.stages[0].rextents.size(), 3u);
  // Other dtypes take the direct reduction too.
  t = lower_conv({tt(DType::float64, {1, 3, 8, 8}), tt(DType::float64, {4, 3, 3, 3})},
                 conv({1, 1}, {0, 0}, {1, 1}));
  EXPECT_EQ(stage_kinds(t), (std::vector<K>{K::Reduce}));
  // conv1d: the same forms over a height of 1.
  t = lower_conv({f32({2, 4, 32}), f32({8, 4, 3})}, conv({1}, {1}, {1}), "conv1d");
  EXPECT_EQ(stage_kinds(t), (std::vector<K>{K::Compute, K::Matmul, K::Compute}));
}

// ---- pooling ----

TEST(NnOps, PoolShapes) {
  EXPECT_EQ(infer1("max_pool2d", {f32({1, 64, 112, 112})}, pool({3, 3}, {2, 2}, {1, 1})),
            "float32[1, 64, 56, 56]");
  EXPECT_EQ(infer1("max_pool2d", {f32({1, 2, 6, 6})}, pool({3, 3}, {2, 2}, {0, 0}, true)),
            "float32[1, 2, 3, 3]");
  EXPECT_EQ(infer1("max_pool2d", {f32({1, 2, 5, 5})}, pool({2, 2}, {2, 2}, {0, 0}, true)),
            "float32[1, 2, 3, 3]");
  EXPECT_EQ(infer1("avg_pool2d", {f32({3, 7, 9})}, pool({3, 2}, {2, 3}, {1, 1})),
            "float32[3, 4, 4]");
  EXPECT_EQ(infer1("adaptive_avg_pool2d", {f32({2, 3, 7, 9})}, AdaptivePoolAttrs{{1, 1}}),
            "float32[2, 3, 1, 1]");
  EXPECT_EQ(infer1("max_pool2d", {f32({n, 4, 8, 8})}, pool({2, 2}, {2, 2}, {0, 0})),
            "float32[n, 4, 4, 4]");
  EXPECT_EQ(infer1("max_pool2d", {f32({1, 4, n, 8})}, pool({3, 3}, {1, 1}, {1, 1})),
            "float32[1, 4, n, 8]");
}

// ceil_mode over a symbolic size: the size expression agrees with torch's rule (the rounded-up
// count, less a last window starting past the padding) at every size.
TEST(NnOps, PoolCeilModeOfSymbolicSizes) {
  for (int64_t k : {2, 3}) {
    for (int64_t s : {2, 3}) {
      for (int64_t p = 0; p <= k / 2; ++p) {
        const std::vector<TensorType> out =
            op_def("max_pool2d").infer({f32({1, 4, n, 8})}, pool({k, k}, {s, s}, {p, p}, true));
        const Expr oh = out.at(0).shape[2];
        for (int64_t h = k; h <= 20; ++h) {
          int64_t want = (h + 2 * p - k + s - 1) / s + 1;
          if ((want - 1) * s >= h + p) --want;
          EXPECT_EQ(ir::eval_int(oh, {{"n", h}}), want)
              << "k " << k << " s " << s << " p " << p << " h " << h;
        }
      }
    }
  }
  EXPECT_EQ(infer1("adaptive_avg_pool2d", {f32({1, 4, n, 8})}, AdaptivePoolAttrs{{2, 3}}),
            "float32[1, 4, 2, 3]");
}

TEST(NnOps, PoolErrors) {
  EXPECT_EQ(infer_error("max_pool2d", {f32({1, 2, 8, 8})}, pool({3, 3}, {1, 1}, {2, 2})),
            "max_pool2d: padding [2, 2] is more than half the dilated kernel [3, 3]; the rule is "
            "padding <= (dilation * (kernel - 1) + 1) / 2");
  EXPECT_EQ(infer_error("avg_pool2d", {f32({1, 2, 2, 2})}, pool({3, 3}, {1, 1}, {0, 0})),
            "avg_pool2d: the input float32[1, 2, 2, 2] is too small for a kernel of 3 (dilation 1, "
            "padding 0, stride 1): the output size would be 0; the rule is size + 2 * padding >= "
            "dilation * (kernel - 1) + 1");
  EXPECT_EQ(infer_error("max_pool2d", {f32({8, 8})}, pool({2, 2}, {2, 2}, {0, 0})),
            "max_pool2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input, got float32[8, 8]");
  EXPECT_EQ(
      infer_error("avg_pool2d", {tt(DType::int64, {1, 1, 4, 4})}, pool({2, 2}, {2, 2}, {0, 0})),
      "avg_pool2d: expected a floating-point tensor (float16, bfloat16, float32 or float64), "
      "got int64; cast it first with ember.ops.cast(x, ember.float32)");
  EXPECT_EQ(infer_error("adaptive_avg_pool2d", {f32({1, 4, 8, 8})}, AdaptivePoolAttrs{{0, 2}}),
            "adaptive_avg_pool2d: output_size must be 2 sizes >= 1 (height, width), got [0, 2]");
}

// ---- the rest ----

TEST(NnOps, OtherShapes) {
  EXPECT_EQ(infer1("upsample_bilinear2d", {f32({1, 3, 4, 5})}, UpsampleAttrs{{8, 3}, true}),
            "float32[1, 3, 8, 3]");
  EXPECT_EQ(infer1("embedding", {f32({100, 16}), tt(DType::int32, {2, 7})}, NoAttrs{}),
            "float32[2, 7, 16]");
  EXPECT_EQ(infer1("arange", {}, ArangeAttrs{0, 10, 3, DType::int64}), "int64[4]");
  EXPECT_EQ(infer1("arange", {}, ArangeAttrs{10, 0, -3, DType::int32}), "int32[4]");
  EXPECT_EQ(infer1("arange", {}, ArangeAttrs{0, 1, 0.1, DType::float32}), "float32[10]");
  EXPECT_EQ(infer1("arange", {}, ArangeAttrs{2, 2, 1, DType::int64}), "int64[0]");
  EXPECT_EQ(infer1("full", {}, FullAttrs{{2, 0, 3}, 1.5, DType::float16}), "float16[2, 0, 3]");
  EXPECT_EQ(infer1("tril", {f32({n, 3, 4})}, TriAttrs{-1}), "float32[n, 3, 4]");
  EXPECT_EQ(infer1("clamp", {tt(DType::int32, {3})}, ClampAttrs{0.0, std::nullopt}), "int32[3]");
  NormAttrs ln;
  ln.normalized_ndim = 2;
  ln.has_weight = true;
  EXPECT_EQ(infer1("layer_norm", {f32({n, 4, 8}), f32({4, 8})}, ln), "float32[n, 4, 8]");
  NormAttrs bn;
  bn.has_bias = true;
  EXPECT_EQ(infer1("batch_norm", {f32({2, 3, 5}), f32({3}), f32({3}), f32({3})}, bn),
            "float32[2, 3, 5]");
}

TEST(NnOps, OtherErrors) {
  EXPECT_EQ(infer_error("embedding", {f32({10, 4}), f32({3})}, NoAttrs{}),
            "embedding: the indices must be int32 or int64, got float32[3]; cast them with "
            "ember.ops.cast(indices, 'int64')");
  EXPECT_EQ(infer_error("embedding", {f32({10}), tt(DType::int64, {3})}, NoAttrs{}),
            "embedding: the weight must be 2-d [num_embeddings, dim], got float32[10]");
  EXPECT_EQ(infer_error("arange", {}, ArangeAttrs{0, 5, -1, DType::int64}),
            "arange: the bounds [0, 5) are inconsistent with the sign of step -1; use a positive "
            "step when stop >= start and a negative one otherwise");
  EXPECT_EQ(infer_error("arange", {}, ArangeAttrs{0, 5, 0, DType::int64}),
            "arange: step must not be 0");
  EXPECT_EQ(infer_error("arange", {}, ArangeAttrs{0, 1, 0.5, DType::int64}),
            "arange: start, stop and step must be integers for dtype int64, got 0, 1, 0.5; pass "
            "a floating-point dtype");
  EXPECT_EQ(infer_error("full", {}, FullAttrs{{n, -2}, 0, DType::float32}),
            "full: the shape [n, -2] has a negative size; sizes must be >= 0");
  EXPECT_EQ(infer_error("tril", {f32({4})}, TriAttrs{0}),
            "tril: expected a tensor with at least 2 dimensions, got float32[4]");
  EXPECT_EQ(infer_error("clamp", {f32({4})}, ClampAttrs{}),
            "clamp: at least one of min and max must be given");
  EXPECT_EQ(infer_error("clamp", {tt(DType::int64, {4})}, ClampAttrs{0.5, std::nullopt}),
            "clamp: the bound 0.5 is not an integer but the input is int64[4]; cast the input to a "
            "floating-point dtype first");
  EXPECT_EQ(infer_error("upsample_nearest2d", {f32({3, 4, 4})}, UpsampleAttrs{{8, 8}, false}),
            "upsample_nearest2d: expected a 4-d input [N, C, H, W], got float32[3, 4, 4]");
  NormAttrs ln;
  ln.normalized_ndim = 1;
  ln.has_weight = true;
  EXPECT_EQ(infer_error("layer_norm", {f32({2, 8}), f32({4})}, ln),
            "layer_norm: the weight float32[4] must have the normalized shape [8] (the last 1 "
            "dimensions of float32[2, 8])");
  EXPECT_EQ(infer_error("layer_norm", {f32({2, 8})}, ln),
            "layer_norm: expected 2 inputs (weight given, bias not given), got 1");
  ln.normalized_ndim = 3;
  ln.has_weight = false;
  EXPECT_EQ(infer_error("layer_norm", {f32({2, 8})}, ln),
            "layer_norm: normalized_ndim must be in [1, 2] for float32[2, 8], got 3");
  EXPECT_EQ(infer_error("scale_shift", {f32({2, 3, 5}), f32({3}), f32({4})}, NoAttrs{}),
            "scale_shift: shift float32[4] must be 1-d with one entry per channel "
            "(dimension 1 of float32[2, 3, 5])");
  EXPECT_EQ(infer_error("scale_shift", {f32({5}), f32({5}), f32({5})}, NoAttrs{}),
            "scale_shift: expected an input [N, C, ...], got float32[5]");
  EXPECT_EQ(infer_error("batch_norm", {f32({2, 3, 5}), f32({4}), f32({3})}, NormAttrs{}),
            "batch_norm: running_mean float32[4] must be 1-d with one entry per channel "
            "(dimension 1 of float32[2, 3, 5])");
}

// ---- numbers (each test compiles one kernel) ----

// Naive conv2d of x [N, C, H, W] with w [O, C/g, KH, KW] (stride s, padding p, groups g).
std::vector<double> naive_conv(const Tensor& x, const Tensor& w, int64_t s, int64_t p, int64_t g) {
  const auto xs = shape_values(x.shape()), ws = shape_values(w.shape());
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2],
                KW = ws[3];
  const int64_t OH = (H + 2 * p - KH) / s + 1, OW = (W + 2 * p - KW) / s + 1;
  std::vector<double> out;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = 0;
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = i * s - p + kh, iw = j * s - p + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t ci = o / (O / g) * CG + c;
                acc += element_as_double(x, ((b * C + ci) * H + ih) * W + iw) *
                       element_as_double(w, ((o * CG + c) * KH + kh) * KW + kw);
              }
          out.push_back(acc);
        }
  (void)C;
  return out;
}

void expect_conv(const Shape& xs, const Shape& wsh, int64_t s, int64_t p, int64_t g) {
  const Tensor x = randn(xs, DType::float32, Device::cpu(), 1);
  const Tensor w = randn(wsh, DType::float32, Device::cpu(), 2);
  const Tensor y = ops::conv2d(x, w, {s}, {p}, {1}, g);
  const std::vector<double> ref = naive_conv(x, w, s, p, g);
  ASSERT_EQ(y.numel(), static_cast<int64_t>(ref.size()));
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(element_as_double(y, static_cast<int64_t>(i)), ref[i],
                1e-4 * (1 + std::fabs(ref[i])))
        << "element " << i;
}

TEST(NnOpsRun, ConvMatchesNaiveLoops) {
  expect_conv({2, 3, 7, 9}, {4, 3, 3, 3}, 1, 1, 1);  // wide im2col + GEMM + crop
  expect_conv({1, 4, 6, 5}, {6, 2, 3, 3}, 2, 1, 2);  // grouped: direct reduction
}

TEST(NnOpsRun, AvgPoolExcludingPadding) {
  const Tensor x = from_values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}, DType::float32);
  const Tensor y = ops::avg_pool2d(x, {2}, {2}, {1}, true, false);
  // Windows {1}, {2, 3}, {4, 7}, {5, 6, 8, 9}.
  const std::vector<double> want = {1, 2.5, 5.5, 7};
  ASSERT_EQ(y.numel(), 4);
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(element_as_double(y, i), want[i], 1e-6);
}

}  // namespace
}  // namespace ember
