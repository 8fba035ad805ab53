// conv2d_weight_grad: the gradient of conv2d's weight, dy [N, O, OH, OW] (the output's
// gradient) and x [N, C, H, W] (the input) -> dw [O, C / groups, KH, KW],
//   dw[o, c, kh, kw] = sum over n, oh, ow of dy[n, o, oh, ow] *
//                      x[n, group(o) * C / groups + c, oh * sh - ph + kh * dh, ow * sw - pw + kw *
//                      dw]
// (0 in the padding). ConvAttrs gives the convolution's stride, padding, dilation and groups,
// and `kernel` the weight's (KH, KW).
//
// float32 is one Call stage of a routine of ember_rt/conv_wgrad.h, a product per group:
//   - conv2d_weight_grad_pointwise for a 1x1 convolution with stride 1 and no padding whose
//     plane has at least kPointwiseMinPlane positions (or sizes known only at run time): one
//     GEMM per image reading dy and x in place, nothing copied (smaller planes: windows);
//   - conv2d_weight_grad_inplace where few of the positions it reads are junk (waste() <=
//     kMaxWaste: outputs of 28x28 and more with a 3x3 kernel): dw^T = the input,
//     copied into phase planes (ember_rt/conv_wgrad_plan.h) and read in place, times dy
//     transposed, over chunks of images whose copies are about kInplaceChunkFloats floats
//     (the scratch holds dy's transpose and dw^T padded to whole tiles: 16 channels, 6 taps);
//   - conv2d_weight_grad elsewhere, a GEMM over chunks of output rows, each chunk's windows
//     copied into a scratch buffer of about kWindowChunkFloats floats, so that the scratch
//     stays a few MB where the whole im2col ([N * OH * OW, C / groups * KH * KW]: 58 MB for
//     ResNet-18's first 3x3 layers at batch 8) would not.
// Other float dtypes, and depthwise convolutions (groups > 1 with one input channel per
// group), are one Reduce stage over (N, OH, OW).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "conv.h"
#include "ember/support/error.h"
#include "ember_rt/conv_wgrad_plan.h"

namespace ember::opdefs {

using ir::BinaryOp;

namespace {

const char* const kOp = "conv2d_weight_grad";
constexpr int64_t kWindowChunkFloats = int64_t{1} << 20;   // 4 MiB of float32 windows
constexpr int64_t kInplaceChunkFloats = int64_t{1} << 21;  // 8 MiB per copy
constexpr double kMaxWaste = 1.3;  // positions read per output pixel, in place
// Measured at batch 8, 2 threads, MobileNetV2's pointwise layers (pointwise / in place /
// windows, ms): [96, 16] at 112x112 6.5 / 22.9 / 15.2, [144, 24] at 56x56 3.0 / 4.6 / 4.5,
// [192, 32] at 28x28 0.9 / 2.4 / 1.6, [576, 96] at 14x14 1.8 / 2.6 / 2.5, but [1280, 320] at
// 7x7 4.2 / 5.3 / 3.5: 49 positions per GEMM are too short a sum, and the windows' chunks
// gather many images into one.
constexpr int64_t kPointwiseMinPlane = 128;

// The convolution's geometry, from x and a weight [O, C / groups, KH, KW] with O = dy's
// channels; dy checked to be the convolution's output shape.
ConvGeom wgrad_geom(const std::vector<TensorType>& in, const ConvAttrs& a) {
  check_arity(kOp, in, 2);
  const TensorType& dy = in[0];
  const TensorType& x = in[1];
  EMBER_CHECK(
      a.kernel.size() == 2 && a.kernel[0] >= 1 && a.kernel[1] >= 1,
      kOp << ": kernel must be the weight's (KH, KW), two sizes >= 1, got " << vec_str(a.kernel));
  EMBER_CHECK(dy.rank() == 4 && x.rank() == 4 && dy.shape[1].as_int() && x.shape[1].as_int(),
              kOp << ": expected the output's gradient [N, O, OH, OW] and the input [N, C, H, W] "
                     "with known channels, got "
                  << dy.str() << " and " << x.str());
  EMBER_CHECK(a.groups >= 1 && *x.shape[1].as_int() % a.groups == 0,
              kOp << ": the input's " << *x.shape[1].as_int()
                  << " channels are not divisible by groups = " << a.groups);
  check_same_dtype(kOp, dy, x);
  const TensorType w{
      x.dtype,
      {dy.shape[1], Expr(*x.shape[1].as_int() / a.groups), Expr(a.kernel[0]), Expr(a.kernel[1])},
      x.device};
  const ConvGeom g = conv_geom(kOp, 2, x, w, a);
  EMBER_CHECK(
      same_dim(dy.shape[0], g.n) && same_dim(dy.shape[2], g.oh) && same_dim(dy.shape[3], g.ow),
      kOp << ": the output's gradient " << dy.str() << " is not the convolution's output "
          << "[" << ir::to_string(g.n) << ", " << g.o << ", " << ir::to_string(g.oh) << ", "
          << ir::to_string(g.ow) << "] for the input " << x.str());
  return g;
}

// Output rows (n, oh) per chunk: their windows fill about kWindowChunkFloats floats (at least
// one row), and no more rows than there are when N is known.
int64_t chunk_rows(const ConvGeom& g) {
  const int64_t ow = *g.ow.as_int(), ck = g.cg * g.kh * g.kw;
  int64_t rows = std::max<int64_t>(1, kWindowChunkFloats / std::max<int64_t>(1, ow * ck));
  if (const auto n = g.n.as_int()) rows = std::min(rows, std::max<int64_t>(1, *n * *g.oh.as_int()));
  return rows;
}

// The in-place form's geometry (ember_rt/conv_wgrad_plan.h), where it applies: known spatial
// sizes, and at most kMaxWaste positions read per output pixel. Measured at batch 8, 2
// threads, 3x3 with padding 1 (in place / windows): 56x56 at 64 channels 6.7 / 17.4 ms,
// 28x28 at 128 6.8 / 11.6, but 14x14 at 256 (1.39 positions per pixel) 8.9 / 7.8 and 7x7 at
// 512 (1.84) 18.7 / 7.1: there the junk products cost more than the windows.
std::optional<ember_rt::WgradPlan> inplace_plan(const ConvGeom& g) {
  const auto w = g.w.as_int(), oh = g.oh.as_int(), ow = g.ow.as_int();
  if (!w || !oh || !ow || !g.h.as_int()) return std::nullopt;
  const ember_rt::WgradPlan p =
      ember_rt::wgrad_plan(*w, *oh, *ow, g.kh, g.kw, g.sh, g.sw, g.pw, g.dh, g.dw);
  if (p.waste() > kMaxWaste) return std::nullopt;
  return p;
}

// Images per chunk: the phased copy and dy's transpose each about kInplaceChunkFloats floats
// (at least one image), and no more images than there are when N is known.
int64_t chunk_images(const ConvGeom& g, const ember_rt::WgradPlan& p) {
  const int64_t per = std::max(g.cg * p.phases(), g.o / g.groups) * p.plane();
  int64_t imgs = std::max<int64_t>(1, kInplaceChunkFloats / std::max<int64_t>(1, per));
  if (const auto n = g.n.as_int()) imgs = std::min(imgs, std::max<int64_t>(1, *n));
  return imgs;
}

// A 1x1 convolution with stride 1 and no padding (dilation changes nothing).
bool is_pointwise(const ConvGeom& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
}

// Whether its plane is large enough for a GEMM per image, or not known until run time.
bool large_plane(const ConvGeom& g) {
  const auto h = g.h.as_int(), w = g.w.as_int();
  return !h || !w || *h * *w >= kPointwiseMinPlane;
}

ir::Task lower_wgrad(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                     const OpAttrs& attrs) {
  const ConvGeom g = wgrad_geom(in, attrs_as<ConvAttrs>(attrs));
  const TensorType& dy = in.at(0);
  const TensorType& x = in.at(1);
  ir::Task t;
  t.name = kOp;
  const int dyb = t.add_buffer("dy", dy.dtype, dy.shape, ir::BufferRole::Input);
  const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input);
  const int dwb = t.add_buffer("dw", out.at(0).dtype, out[0].shape, ir::BufferRole::Output);
  const Expr macs = g.n * Expr(g.o) * g.oh * g.ow * Expr(g.cg * g.kh * g.kw);
  // A depthwise convolution's (one input channel per group) is one Reduce stage too: its
  // GEMMs would be a [O/G, N*OH*OW] x [N*OH*OW, KH*KW] product per group.
  const bool depthwise = g.groups > 1 && g.cg == 1;
  const bool pointwise = is_pointwise(g);
  if (x.dtype == DType::float32 && !depthwise && pointwise && large_plane(g)) {
    t.stages.push_back(call_stage("conv2d_weight_grad_pointwise", {dyb, xb}, {dwb},
                                  {g.n, g.c, g.h * g.w, Expr(g.o), Expr(g.groups)},
                                  Expr(2) * macs));
    return t;
  }
  if (x.dtype == DType::float32 && !depthwise && !pointwise) {
    if (const auto plan = inplace_plan(g)) {
      const int64_t og = ember_rt::wgrad_channel_stride(g.o / g.groups), plane = plan->plane();
      const int64_t ck = ember_rt::wgrad_tap_rows(g.cg * g.kh * g.kw);
      const int64_t imgs = chunk_images(g, *plan);
      const int xphb =
          t.add_buffer("x_phased", x.dtype, {Expr(g.cg * plan->phases() * imgs * plane)},
                       ir::BufferRole::Scratch);
      const int dytb =
          t.add_buffer("dy_t", x.dtype, {Expr(imgs * plane * og)}, ir::BufferRole::Scratch);
      const int dwtb = t.add_buffer("dw_t", x.dtype, {Expr(ck * og)}, ir::BufferRole::Scratch);
      t.stages.push_back(call_stage(
          "conv2d_weight_grad_inplace", {dyb, xb}, {dwb, xphb, dytb, dwtb},
          {g.n, g.c, g.h, g.w, Expr(g.o), g.oh, g.ow, Expr(g.kh), Expr(g.kw), Expr(g.sh),
           Expr(g.sw), Expr(g.ph), Expr(g.pw), Expr(g.dh), Expr(g.dw), Expr(g.groups), Expr(imgs)},
          Expr(2) * macs));
      return t;
    }
  }
  if (x.dtype == DType::float32 && g.oh.as_int() && g.ow.as_int() && !depthwise) {
    const int64_t rows = chunk_rows(g), ow = *g.ow.as_int();
    const int64_t og = g.o / g.groups, ck = g.cg * g.kh * g.kw;
    const int winb =
        t.add_buffer("windows", x.dtype, {Expr(rows * ow * ck)}, ir::BufferRole::Scratch);
    const int dycb =
        t.add_buffer("dy_chunk", x.dtype, {Expr(og * rows * ow)}, ir::BufferRole::Scratch);
    t.stages.push_back(call_stage(
        "conv2d_weight_grad", {dyb, xb}, {dwb, winb, dycb},
        {g.n, g.c, g.h, g.w, Expr(g.o), g.oh, g.ow, Expr(g.kh), Expr(g.kw), Expr(g.sh), Expr(g.sw),
         Expr(g.ph), Expr(g.pw), Expr(g.dh), Expr(g.dw), Expr(g.groups), Expr(rows)},
        Expr(2) * macs));
    return t;
  }
  ReduceDef r;
  r.op = ir::ReduceOp::Sum;
  r.acc_dtype = compute_dtype(x.dtype);
  r.rextents = {g.n, g.oh, g.ow};
  r.value = [g](const Index& idx, const Index& ridx, const Loader& load) {
    const Expr &o = idx[0], &c = idx[1], &kh = idx[2], &kw = idx[3];
    const Expr &n = ridx[0], &oh = ridx[1], &ow = ridx[2];
    const Expr c_in = g.groups == 1 ? c : ir::floordiv(o, Expr(g.o / g.groups)) * Expr(g.cg) + c;
    const Expr ih = oh * Expr(g.sh) - Expr(g.ph) + kh * Expr(g.dh);
    const Expr iw = ow * Expr(g.sw) - Expr(g.pw) + kw * Expr(g.dw);
    Expr xv = to_compute(load(1, {n, c_in, ih, iw}));
    Expr cond;
    if (g.ph > 0) cond = in_range(ih, g.h);
    if (g.pw > 0) {
      cond =
          cond.defined() ? ir::binary(BinaryOp::And, cond, in_range(iw, g.w)) : in_range(iw, g.w);
    }
    if (cond.defined()) xv = ir::select(cond, xv, ir::const_of(0, xv.dtype()));
    return ir::binary(BinaryOp::Mul, to_compute(load(0, {n, o, oh, ow})), xv);
  };
  if (r.acc_dtype != out[0].dtype) {
    const DType o = out[0].dtype;
    r.finalize = [o](const Expr& v) { return cast_to(v, o); };
  }
  t.stages.push_back(reduce_stage(r, dwb, make_vars("i", 4), buffer_loader(t, {dyb, xb})));
  return t;
}

OpDef conv2d_weight_grad_def() {
  OpDef d;
  d.name = kOp;
  d.title = "Conv2dWeightGrad";
  d.kind = OpKind::Composite;
  OpTraits traits;  // a routine reading whole buffers: its own kernel, no epilogue
  traits.anchor = true;
  traits.epilogue = EpilogueRule::None;
  d.declared_traits = traits;
  d.num_inputs = 2;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    const ConvGeom g = wgrad_geom(in, attrs_as<ConvAttrs>(a));
    return std::vector<TensorType>{TensorType{
        in[1].dtype, {Expr(g.o), Expr(g.cg), Expr(g.kh), Expr(g.kw)}, common_device(kOp, in)}};
  };
  d.lower = lower_wgrad;
  return d;
}

}  // namespace

EMBER_REGISTER_OP { return conv2d_weight_grad_def(); }

}  // namespace ember::opdefs
