// Convolutions: conv2d (x [N, C, H, W], weight [O, C/groups, KH, KW]) and conv1d (x [N, C, L],
// weight [O, C/groups, K]), without bias (a separate add, fused into the epilogue).
//
// conv1d is conv2d over a height of 1: one geometry (ConvGeom) serves both, and only the
// indices differ. Both are Composite, lowered by one of the algorithms of conv_algos()
// (below), which the choose_algorithms pass names in the node's attributes (ConvAttrs::algo):
//   - gemm1x1: 1x1, stride 1, no padding: one Matmul stage, out [N, O, H*W] = w x x viewed
//     [N, C, H*W], w viewed [O, C*KH*KW];
//   - winograd: 3x3, stride 1, a constant weight, where it wins: conv2d_winograd on the
//     filter transformed by winograd_filter (F(4x4, 3x3), ember_rt/winograd.h);
//   - wide: stride 1 with a kernel narrow next to the output: a padded copy of x,
//     col [N, C*KH*KW, OH*Wp] whose rows are contiguous runs of that copy (vectorized), the
//     Matmul into [N, O, OH*Wp], and a crop of the Wp - OW extra columns (the crop, a Compute
//     stage, is where fusion puts the bias / activation epilogue);
//   - im2col: a padded copy of x (when padded), col [N, C*KH*KW, OH*OW], and the Matmul
//     into out viewed [N, O, OH*OW];
//   - depthwise: float32 with one input channel per group (any channel multiplier): one Call
//     stage of ember_rt::lib::depthwise_conv2d (ember_rt/depthwise.h), which applies the
//     fused epilogue to each output row it finishes;
//   - reduce: anything else (other grouped convolutions, other dtypes) is one Reduce stage
//     over (C/groups, KH, KW): the same definition as OpDef.reduce, the generic fallback.
// Padding reads are select(in_bounds, load, 0), so out-of-bounds loads are never made; the
// padded copy pays for its bounds checks once per input element instead of once per col
// element (C*KH*KW / C times as many).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "ember/support/error.h"

namespace ember::opdefs {
namespace {

using ir::BinaryOp;

// A convolution's dimensions, conv1d read as conv2d with H = KH = 1.
struct ConvGeom {
  int spatial = 2;  // 1: conv1d, 2: conv2d
  Expr n, c, h, w;  // input (c is a constant)
  int64_t o = 0, cg = 0, kh = 1, kw = 1, groups = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  Expr oh, ow;  // output
};

std::string conv_shapes(const TensorType& x, const TensorType& w) {
  return "input " + x.str() + ", weight " + w.str();
}

// Checks that an attribute has one positive (non-negative for padding) entry per spatial
// dimension.
void check_attr(const std::string& op, const char* name, const std::vector<int64_t>& v, int spatial,
                int64_t min) {
  EMBER_CHECK(static_cast<int>(v.size()) == spatial, op << ": " << name << " must have " << spatial
                                                        << " entr" << (spatial == 1 ? "y" : "ies")
                                                        << " (one per spatial dimension), got "
                                                        << vec_str(v));
  for (int64_t x : v) {
    EMBER_CHECK(x >= min, op << ": " << name << " must be >= " << min << " in every dimension, got "
                             << vec_str(v));
  }
}

// The output size along one dimension: (in + 2 pad - dil (k - 1) - 1) // stride + 1.
Expr conv_out_size(const std::string& op, const Expr& in, int64_t k, int64_t s, int64_t p,
                   int64_t d, const std::string& shapes) {
  const int64_t span = d * (k - 1) + 1;  // the kernel's extent with dilation
  if (auto v = in.as_int()) {
    EMBER_CHECK(*v + 2 * p >= span,
                op << ": the input is too small for the kernel: " << shapes << " give a padded "
                   << "size of " << *v + 2 * p << " but the dilated kernel spans " << span
                   << "; the rule is size + 2 * padding >= dilation * (kernel - 1) + 1");
    return Expr((*v + 2 * p - span) / s + 1);
  }
  // With stride 1, one sum: a "same" padding keeps the dimension itself (h, not h - 1 + 1).
  if (s == 1) return in + Expr(2 * p - span + 1);
  return ir::floordiv(in + Expr(2 * p - span), Expr(s)) + Expr(1);
}

ConvGeom conv_geom(const std::string& op, int spatial, const TensorType& x, const TensorType& w,
                   const ConvAttrs& a) {
  const std::string shapes = conv_shapes(x, w);
  const int64_t rank = 2 + spatial;
  EMBER_CHECK(x.rank() == rank && w.rank() == rank,
              op << ": expected a " << rank << "-d input [N, C, " << (spatial == 2 ? "H, W" : "L")
                 << "] and a " << rank << "-d weight [O, C / groups, "
                 << (spatial == 2 ? "KH, KW" : "K") << "], got " << shapes);
  check_float(op, x);
  check_same_dtype(op, x, w);
  check_attr(op, "stride", a.stride, spatial, 1);
  check_attr(op, "padding", a.padding, spatial, 0);
  check_attr(op, "dilation", a.dilation, spatial, 1);
  EMBER_CHECK(a.groups >= 1, op << ": groups must be >= 1, got " << a.groups);
  for (int64_t d = 0; d < rank; ++d) {
    EMBER_CHECK(
        w.shape[d].as_int().has_value() && (d < 2 || *w.shape[d].as_int() >= 1),
        op << ": the weight's dimensions must be known and its kernel non-empty, got " << shapes);
  }
  ConvGeom g;
  g.spatial = spatial;
  g.groups = a.groups;
  g.o = *w.shape[0].as_int();
  g.cg = *w.shape[1].as_int();
  g.kh = spatial == 2 ? *w.shape[2].as_int() : 1;
  g.kw = *w.shape.back().as_int();
  const auto c = x.shape[1].as_int();
  EMBER_CHECK(c.has_value() && *c == g.cg * a.groups,
              op << ": " << shapes << " do not match: the input has " << ir::to_string(x.shape[1])
                 << " channels but the weight expects " << g.cg << " per group x " << a.groups
                 << " group" << (a.groups == 1 ? "" : "s") << " = " << g.cg * a.groups
                 << "; the rule is C == weight.shape[1] * groups");
  EMBER_CHECK(g.o % a.groups == 0, op << ": the weight's " << g.o
                                      << " output channels are not divisible by groups = "
                                      << a.groups << " (" << shapes << ")");
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.h = spatial == 2 ? x.shape[2] : Expr(1);
  g.w = x.shape.back();
  if (spatial == 2) {
    g.sh = a.stride[0], g.ph = a.padding[0], g.dh = a.dilation[0];
  }
  g.sw = a.stride.back(), g.pw = a.padding.back(), g.dw = a.dilation.back();
  g.oh = conv_out_size(op, g.h, g.kh, g.sh, g.ph, g.dh, shapes);
  g.ow = conv_out_size(op, g.w, g.kw, g.sw, g.pw, g.dw, shapes);
  return g;
}

// Index helpers: conv1d drops the height index.
Index spatial_index(const ConvGeom& g, Expr a, Expr b, Expr hi, Expr wi) {
  if (g.spatial == 2) return {std::move(a), std::move(b), std::move(hi), std::move(wi)};
  return {std::move(a), std::move(b), std::move(wi)};
}

// 0 <= i < hi as a bool expression.
Expr in_range(const Expr& i, const Expr& hi) {
  return ir::binary(BinaryOp::And, ir::binary(BinaryOp::Ge, i, Expr(0)),
                    ir::binary(BinaryOp::Lt, i, hi));
}

// x[n, c, oh * sh - ph + kh * dh, ow * sw - pw + kw * dw] in the compute dtype, 0 in the
// padding (only the padded dimensions are checked).
Expr input_at(const ConvGeom& g, const Loader& load, const Expr& n, const Expr& c, const Expr& oh,
              const Expr& ow, const Expr& kh, const Expr& kw) {
  const Expr ih = oh * Expr(g.sh) - Expr(g.ph) + kh * Expr(g.dh);
  const Expr iw = ow * Expr(g.sw) - Expr(g.pw) + kw * Expr(g.dw);
  const Expr v = to_compute(load(0, spatial_index(g, n, c, ih, iw)));
  Expr cond;
  if (g.ph > 0) cond = in_range(ih, g.h);
  if (g.pw > 0) {
    cond = cond.defined() ? ir::binary(BinaryOp::And, cond, in_range(iw, g.w)) : in_range(iw, g.w);
  }
  return cond.defined() ? ir::select(cond, v, ir::const_of(0, v.dtype())) : v;
}

std::vector<TensorType> infer_conv(const std::string& op, int spatial,
                                   const std::vector<TensorType>& in, const OpAttrs& attrs) {
  check_arity(op, in, 2);
  const Device device = common_device(op, in);
  const ConvGeom g = conv_geom(op, spatial, in[0], in[1], attrs_as<ConvAttrs>(attrs));
  Shape s = spatial == 2 ? Shape{g.n, Expr(g.o), g.oh, g.ow} : Shape{g.n, Expr(g.o), g.ow};
  return {TensorType{in[0].dtype, s, device}};
}

// out[n, o, oh, ow] = sum over (c, kh, kw) of w[o, c, kh, kw] * x[n, group(o) * C/groups + c,
// oh * sh - ph + kh * dh, ow * sw - pw + kw * dw].
ReduceDef reduce_conv(const std::string& op, int spatial, const std::vector<TensorType>& in,
                      const TensorType& out, const OpAttrs& attrs) {
  const ConvGeom g = conv_geom(op, spatial, in.at(0), in.at(1), attrs_as<ConvAttrs>(attrs));
  ReduceDef r;
  r.op = ir::ReduceOp::Sum;
  r.acc_dtype = compute_dtype(in[0].dtype);
  r.rextents = {Expr(g.cg), Expr(g.kh), Expr(g.kw)};
  r.value = [g](const Index& idx, const Index& ridx, const Loader& load) {
    const Expr& n = idx[0];
    const Expr& o = idx[1];
    const Expr oh = g.spatial == 2 ? idx[2] : Expr(0);
    const Expr& ow = idx.back();
    const Expr& c = ridx[0];
    const Expr c_in = g.groups == 1 ? c : ir::floordiv(o, Expr(g.o / g.groups)) * Expr(g.cg) + c;
    const Expr xv = input_at(g, load, n, c_in, oh, ow, ridx[1], ridx[2]);
    const Expr wv = to_compute(load(1, spatial_index(g, o, c, ridx[1], ridx[2])));
    return ir::binary(BinaryOp::Mul, wv, xv);
  };
  if (r.acc_dtype != out.dtype) {
    const DType o = out.dtype;
    r.finalize = [o](const Expr& v) { return cast_to(v, o); };
  }
  return r;
}

// ---- lowering of groups == 1, float32: im2col + GEMM ----

ir::Stage compute_stage(int out, size_t rank, const std::string& prefix) {
  ir::Stage s;
  s.kind = ir::StageKind::Compute;
  s.out = out;
  s.axes = make_vars(prefix, rank);
  return s;
}

ir::Stage matmul_stage(int a, int b, int out) {
  ir::Stage s;
  s.kind = ir::StageKind::Matmul;
  s.a = a;
  s.b = b;
  s.out = out;
  s.axes = make_vars("j", 3);
  return s;
}

// x_padded[n, c, hp, wp] = x[n, c, hp - ph, wp - pw], 0 outside x, with `extra_rows` more
// rows of zeros at the bottom; 4-d for conv1d too. Written once (N*C*Hp*Wp elements) so that
// im2col (C*KH*KW times as many) reads it without bounds checks.
int pad_stage(const ConvGeom& g, ir::Task* t, int xb, DType dtype, int64_t extra_rows) {
  const Shape shape = {g.n, g.c, g.h + Expr(2 * g.ph + extra_rows), g.w + Expr(2 * g.pw)};
  const int xpb = t->add_buffer("x_padded", dtype, shape, ir::BufferRole::Scratch);
  ir::Stage pad = compute_stage(xpb, 4, "p");
  const Expr ih = pad.axes[2] - Expr(g.ph), iw = pad.axes[3] - Expr(g.pw);
  Expr cond;
  if (g.ph > 0 || extra_rows > 0) cond = in_range(ih, g.h);
  if (g.pw > 0) {
    cond = cond.defined() ? ir::binary(BinaryOp::And, cond, in_range(iw, g.w)) : in_range(iw, g.w);
  }
  const Expr v = ir::load(xb, dtype, spatial_index(g, pad.axes[0], pad.axes[1], ih, iw));
  pad.value = cond.defined() ? ir::select(cond, v, ir::const_of(0, dtype)) : v;
  t->stages.push_back(std::move(pad));
  return xpb;
}

// col[n, (c, kh, kw), (oh, ow)] = x_padded[n, c, oh * sh + kh * dh, ow * sw + kw * dw] for ow
// in [0, width): width is OW, or Wp for the wide form. Reads x itself when nothing is padded.
int im2col_stage(const ConvGeom& g, ir::Task* t, int xpb, const Expr& width) {
  const DType dtype = t->buffers[xpb].dtype;
  const Expr ckk(g.cg * g.kh * g.kw);
  const int cb = t->add_buffer("col", dtype, {g.n, ckk, g.oh * width}, ir::BufferRole::Scratch);
  ir::Stage s = compute_stage(cb, 3, "i");
  const Index ck = unravel(s.axes[1], {g.c, Expr(g.kh), Expr(g.kw)});
  const Index pos = unravel(s.axes[2], {g.oh, width});
  const Expr ih = pos[0] * Expr(g.sh) + ck[1] * Expr(g.dh);
  const Expr iw = pos[1] * Expr(g.sw) + ck[2] * Expr(g.dw);
  // x_padded is 4-d; x itself (read when there is no padding) is 3-d for conv1d.
  s.value = t->buffers[xpb].shape.size() == 4 ? ir::load(xpb, dtype, {s.axes[0], ck[0], ih, iw})
                                              : ir::load(xpb, dtype, {s.axes[0], ck[0], iw});
  t->stages.push_back(std::move(s));
  return cb;
}

// Buffers x (viewed [N, C, H*W] by the 1x1 form), w viewed [O, C*KH*KW], out; scratch after.
struct GemmBuffers {
  int x, w, out;
};

GemmBuffers gemm_buffers(const ConvGeom& g, ir::Task* t, const TensorType& x, const TensorType& out,
                         bool x_flat, bool out_flat) {
  const Shape x_shape = x_flat ? Shape{g.n, g.c, g.h * g.w} : x.shape;
  const Shape out_shape = out_flat ? Shape{g.n, Expr(g.o), g.oh * g.ow} : out.shape;
  GemmBuffers b;
  b.x = t->add_buffer("x", x.dtype, x_shape, ir::BufferRole::Input);
  b.w = t->add_buffer("w", x.dtype, {Expr(g.o), Expr(g.cg * g.kh * g.kw)}, ir::BufferRole::Input);
  b.out = t->add_buffer("out", out.dtype, out_shape, ir::BufferRole::Output);
  return b;
}

// Stride 1, when the kernel's width is small next to the output's: the "wide" form computes
// OH x Wp outputs (Wp = W + 2 pw), so that im2col's rows are contiguous runs of x_padded
// (vectorized copies), then crops the Wp - OW extra columns (an extra row of zeros keeps the
// last run in bounds). Stages: pad, im2col, GEMM into `wide`, crop into out.
bool use_wide(const ConvGeom& g) {
  const auto ow = g.ow.as_int();
  return g.sh == 1 && g.sw == 1 && ow && 4 * (g.kw - 1) * g.dw <= *ow;
}

ir::Task lower_wide(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  ir::Task t;
  const GemmBuffers b = gemm_buffers(g, &t, x, out, false, false);
  const Expr wp = g.w + Expr(2 * g.pw);
  const int xpb = pad_stage(g, &t, b.x, x.dtype, 1);
  const int cb = im2col_stage(g, &t, xpb, wp);
  const int wide =
      t.add_buffer("wide", out.dtype, {g.n, Expr(g.o), g.oh * wp}, ir::BufferRole::Scratch);
  t.stages.push_back(matmul_stage(b.w, cb, wide));
  ir::Stage crop = compute_stage(b.out, out.shape.size(), "k");
  const Expr oh = g.spatial == 2 ? crop.axes[2] : Expr(0);
  crop.value = ir::load(wide, out.dtype, {crop.axes[0], crop.axes[1], oh * wp + crop.axes.back()});
  t.stages.push_back(std::move(crop));
  return t;
}

// out [N, O, OH*OW] = w x col, col from x_padded (or x itself when there is no padding).
ir::Task lower_im2col(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  ir::Task t;
  const GemmBuffers b = gemm_buffers(g, &t, x, out, false, true);
  const int xpb = g.ph > 0 || g.pw > 0 ? pad_stage(g, &t, b.x, x.dtype, 0) : b.x;
  t.stages.push_back(matmul_stage(b.w, im2col_stage(g, &t, xpb, g.ow), b.out));
  return t;
}

// ---- lowering of depthwise convolutions, float32: one Call stage ----

// groups == C with one input channel per group (output channel o reads input channel
// o / (O / C)), float32.
bool is_depthwise(const ConvGeom& g, DType dtype) {
  return dtype == DType::float32 && g.groups > 1 && g.cg == 1;
}

// ember_rt::lib::depthwise_conv2d (ember_rt/depthwise.h) on x viewed [N, C, H, W], w viewed
// [O, KH*KW] and out viewed [N, O, OH, OW] (conv1d: H = OH = 1). The routine takes an
// epilogue (Acc is the convolution's value at the stage's axes) and applies it to each
// output row as it finishes, so fused consumers cost no extra pass over the output.
ir::Task lower_depthwise(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  ir::Task t;
  const int xb = t.add_buffer("x", x.dtype, {g.n, g.c, g.h, g.w}, ir::BufferRole::Input);
  const int wb = t.add_buffer("w", x.dtype, {Expr(g.o), Expr(g.kh * g.kw)}, ir::BufferRole::Input);
  const int ob =
      t.add_buffer("out", out.dtype, {g.n, Expr(g.o), g.oh, g.ow}, ir::BufferRole::Output);
  ir::Stage s;
  s.kind = ir::StageKind::Call;
  s.routine = "depthwise_conv2d";
  s.call_inputs = {xb, wb};
  s.call_outputs = {ob};
  s.out = ob;
  s.axes = make_vars("d", 4);
  s.acc_dtype = DType::float32;
  s.params = {g.n,        g.c,        g.h,        g.w,        Expr(g.o),
              g.oh,       g.ow,       Expr(g.kh), Expr(g.kw), Expr(g.sh),
              Expr(g.sw), Expr(g.ph), Expr(g.pw), Expr(g.dh), Expr(g.dw)};
  s.flops = Expr(2) * g.n * Expr(g.o) * g.oh * g.ow * Expr(g.kh * g.kw);  // a multiply-add per tap
  t.stages.push_back(std::move(s));
  return t;
}

// A 1x1 convolution with stride 1 and no padding: out [N, O, H*W] = w x x itself.
ir::Task lower_gemm1x1(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  ir::Task t;
  const GemmBuffers b = gemm_buffers(g, &t, x, out, true, true);
  t.stages.push_back(matmul_stage(b.w, b.x, b.out));
  return t;
}

// ---- Winograd F(4x4, 3x3) (ember_rt/winograd.h) ----
//
// conv2d_winograd reads the filter transformed by winograd_filter (u [36, O, C]): stages
// input transform (x -> v [36, C, P], P = N * th * tw tiles), 36 GEMMs (u x v -> m
// [36, O, P]), output transform (m -> y [N, O, OH, OW]) and a copy of y into out, the
// Compute stage that takes the epilogue (bias, batch norm, activation, residual).

constexpr int64_t kWinogradTile = 4;     // outputs per tile side: F(4x4, 3x3)
constexpr int64_t kWinogradPoints = 36;  // 6x6 transformed values per tile

// The rule's thresholds (winograd_wins).
constexpr int64_t kWinogradMinChannels = 64;    // input and output channels
constexpr int64_t kWinogradMinTiles = 49;       // tiles per image (a 28x28 output)
constexpr int64_t kWinogradWideChannels = 128;  // from here on, down to ...
constexpr int64_t kWinogradWideMinTiles = 25;   // ... this many tiles (20x20)
constexpr double kWinogradMaxWaste = 1.35;      // tile outputs computed per output kept

int64_t tiles_along(int64_t out) { return (out + kWinogradTile - 1) / kWinogradTile; }

ir::Stage call_stage(const std::string& routine, std::vector<int> in, std::vector<int> out,
                     std::vector<Expr> params, Expr flops) {
  ir::Stage s;
  s.flops = std::move(flops);
  s.kind = ir::StageKind::Call;
  s.routine = routine;
  s.call_inputs = std::move(in);
  s.call_outputs = std::move(out);
  s.out = s.call_outputs.at(0);
  s.params = std::move(params);
  return s;
}

ir::Task lower_winograd(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  const int64_t oh = *g.oh.as_int(), ow = *g.ow.as_int();
  const int64_t th = tiles_along(oh), tw = tiles_along(ow);
  const Expr p = g.n * Expr(th * tw);
  const Expr points(kWinogradPoints);
  ir::Task t;
  const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input);
  const int ub = t.add_buffer("u", x.dtype, {points, Expr(g.o), g.c}, ir::BufferRole::Input);
  const int ob = t.add_buffer("out", out.dtype, out.shape, ir::BufferRole::Output);
  const int vb = t.add_buffer("v", x.dtype, {points, g.c, p}, ir::BufferRole::Scratch);
  const int mb = t.add_buffer("m", x.dtype, {points, Expr(g.o), p}, ir::BufferRole::Scratch);
  const int yb = t.add_buffer("y", x.dtype, out.shape, ir::BufferRole::Scratch);
  // Operations per tile and channel (ember_rt/winograd.h, an fma two): B^T d B is 12 input_1d
  // of 24, A^T m A 10 output_1d of 13.
  t.stages.push_back(call_stage("winograd_f43_input", {xb}, {vb},
                                {g.n, g.c, g.h, g.w, Expr(g.ph), Expr(g.pw), Expr(th), Expr(tw)},
                                Expr(12 * 24) * g.c * p));
  t.stages.push_back(matmul_stage(ub, vb, mb));
  t.stages.push_back(call_stage("winograd_f43_output", {mb}, {yb},
                                {g.n, Expr(g.o), g.oh, g.ow, Expr(th), Expr(tw)},
                                Expr(10 * 13) * Expr(g.o) * p));
  ir::Stage copy = compute_stage(ob, 4, "k");
  copy.value = ir::load(yb, out.dtype, copy.axes);
  t.stages.push_back(std::move(copy));
  return t;
}

// Whether Winograd beats the GEMM forms (wide, im2col), measured on the 2-core AVX-512
// development machine with benchmarks/kernels/conv_algorithms.py (3x3, padding 1, bias and
// relu, batch 1; docs/architecture.md has the table). It saves 4x the multiplications but
// pays for the transforms (memory bound: v and m are 36 / 16 of the input and output) and
// reads a filter 4x the size of w; its 36 GEMMs are [O, C] x [C, tiles]. So it loses with
// few channels (16, 32: the transforms dominate, 0.3x-0.9x) and with few tiles (a 14x14
// output has 16: 0.3x-0.6x at every channel count; 7x7: 0.1x, the 4x filter streamed for
// 4 tiles), and wins from 64 channels on 28x28 and larger outputs (1.05x-1.4x at 64, 1.7x-
// 2.2x at 128-256), and from 128 channels on 20x20 (1.15x-1.3x). Tiles cut by the output's
// edge compute outputs nobody keeps: at most kWinogradMaxWaste per kept one.
bool winograd_wins(const ConvGeom& g) {
  const int64_t oh = *g.oh.as_int(), ow = *g.ow.as_int();
  const int64_t tiles = tiles_along(oh) * tiles_along(ow);
  const double waste =
      static_cast<double>(tiles * kWinogradTile * kWinogradTile) / static_cast<double>(oh * ow);
  const int64_t channels = std::min(g.cg, g.o);
  const int64_t min_tiles =
      channels >= kWinogradWideChannels ? kWinogradWideMinTiles : kWinogradMinTiles;
  return channels >= kWinogradMinChannels && tiles >= min_tiles && waste <= kWinogradMaxWaste;
}

// ---- the algorithms: one rule and one lowering each ----

struct ConvProblem {
  const ConvGeom& g;
  DType dtype;
  bool weight_constant;  // the weight is a constant of the graph (its transform folds)
};

bool dense_float32(const ConvProblem& p) { return p.g.groups == 1 && p.dtype == DType::float32; }

// A convolution algorithm: where it applies, how it lowers, and, when it runs as another
// operator on a prepared weight, that operator and the preparation.
struct ConvAlgo {
  const char* name;  // ConvAttrs::algo
  bool (*applies)(const ConvProblem& p);
  ir::Task (*lower)(const ConvGeom& g, const TensorType& x, const TensorType& out);
  const char* op = nullptr;              // the operator it runs as; null: the convolution
  const char* prepare_weight = nullptr;  // applied to the weight first; null: none
};

// In order of preference: a convolution takes the first algorithm whose rule applies.
// Adding an algorithm is adding its entry here and its lowering.
const std::vector<ConvAlgo>& conv_algos() {
  static const std::vector<ConvAlgo> algos = {
      // A GEMM on the input as it is.
      {"gemm1x1",
       [](const ConvProblem& p) {
         const ConvGeom& g = p.g;
         return dense_float32(p) && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 &&
                g.pw == 0;
       },
       lower_gemm1x1},
      // 3x3, stride 1, on a constant weight, where it wins (winograd_wins).
      {"winograd",
       [](const ConvProblem& p) {
         const ConvGeom& g = p.g;
         return dense_float32(p) && p.weight_constant && g.spatial == 2 && g.kh == 3 && g.kw == 3 &&
                g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.oh.as_int() &&
                g.ow.as_int() && g.h.as_int() && g.w.as_int() && winograd_wins(g);
       },
       lower_winograd, "conv2d_winograd", "winograd_filter"},
      // Stride 1 with a kernel narrow next to the output (use_wide).
      {"wide", [](const ConvProblem& p) { return dense_float32(p) && use_wide(p.g); }, lower_wide},
      {"im2col", dense_float32, lower_im2col},
      // Depthwise float32 (is_depthwise): the runtime routine.
      {"depthwise", [](const ConvProblem& p) { return is_depthwise(p.g, p.dtype); },
       lower_depthwise},
      // Anything else (other grouped convolutions, other dtypes): the generic reduction.
      {"reduce", [](const ConvProblem&) { return true; }, nullptr},
  };
  return algos;
}

const ConvAlgo& choose_conv_algo(const ConvProblem& p) {
  for (const ConvAlgo& a : conv_algos())
    if (a.applies(p)) return a;
  throw InternalError("no convolution algorithm applies");
}

const ConvAlgo& conv_algo_named(const std::string& op, const std::string& name) {
  std::string known;
  for (const ConvAlgo& a : conv_algos()) {
    if (name == a.name) return a;
    known += std::string(known.empty() ? "" : ", ") + a.name;
  }
  EMBER_THROW(op << ": unknown convolution algorithm '" << name << "'; known: " << known);
}

// The algorithm of a convolution node: the one its attributes name (checked to apply; a
// weight named in them is taken as prepared), else the rules' choice for a weight that is
// not known to be constant.
const ConvAlgo& conv_algo_of(const std::string& op, const ConvGeom& g, DType dtype,
                             const ConvAttrs& a) {
  if (a.algo.empty()) return choose_conv_algo({g, dtype, false});
  const ConvAlgo& algo = conv_algo_named(op, a.algo);
  EMBER_CHECK(algo.applies({g, dtype, true}),
              op << ": the convolution algorithm '" << a.algo << "' does not apply here");
  return algo;
}

ir::Task lower_conv(const std::string& op, int spatial, const std::vector<TensorType>& in,
                    const std::vector<TensorType>& out, const OpAttrs& attrs) {
  const ConvAttrs& a = attrs_as<ConvAttrs>(attrs);
  const ConvGeom g = conv_geom(op, spatial, in.at(0), in.at(1), a);
  const ConvAlgo& algo = conv_algo_of(op, g, in[0].dtype, a);
  EMBER_CHECK(algo.op == nullptr, op << ": the algorithm '" << algo.name << "' runs as " << algo.op
                                     << " on a prepared weight");
  ir::Task t;
  if (algo.lower) {
    t = algo.lower(g, in[0], out.at(0));
  } else {
    const int xb = t.add_buffer("x", in[0].dtype, in[0].shape, ir::BufferRole::Input);
    const int wb = t.add_buffer("w", in[1].dtype, in[1].shape, ir::BufferRole::Input);
    const int ob = t.add_buffer("out", out.at(0).dtype, out[0].shape, ir::BufferRole::Output);
    const ReduceDef r = reduce_conv(op, spatial, in, out[0], attrs);
    t.stages.push_back(
        reduce_stage(r, ob, make_vars("i", out[0].shape.size()), buffer_loader(t, {xb, wb})));
  }
  t.name = op;
  return t;
}

// The choose_algorithm hook of conv1d / conv2d (AlgorithmChoice).
std::optional<AlgorithmChoice> choose_conv(const std::string& op, int spatial,
                                           const std::vector<TensorType>& in, const OpAttrs& attrs,
                                           const std::vector<bool>& constant) {
  ConvAttrs a = attrs_as<ConvAttrs>(attrs);
  if (!a.algo.empty()) return std::nullopt;
  const ConvGeom g = conv_geom(op, spatial, in.at(0), in.at(1), a);
  const ConvAlgo& algo = choose_conv_algo({g, in[0].dtype, constant.at(1)});
  a.algo = algo.name;
  AlgorithmChoice c;
  c.op = &op_def(algo.op ? algo.op : op);
  c.attrs = a;
  c.prepare = {nullptr, algo.prepare_weight ? &op_def(algo.prepare_weight) : nullptr};
  return c;
}

OpDef conv_def(const std::string& name, const std::string& title, int spatial) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = OpKind::Composite;
  d.num_inputs = 2;
  d.infer = [name, spatial](const std::vector<TensorType>& in, const OpAttrs& a) {
    return infer_conv(name, spatial, in, a);
  };
  d.reduce = [name, spatial](const std::vector<TensorType>& in, const TensorType& out,
                             const OpAttrs& a) { return reduce_conv(name, spatial, in, out, a); };
  d.lower = [name, spatial](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                            const OpAttrs& a) { return lower_conv(name, spatial, in, out, a); };
  d.choose_algorithm = [name, spatial](const std::vector<TensorType>& in, const OpAttrs& a,
                                       const std::vector<bool>& constant) {
    return choose_conv(name, spatial, in, a, constant);
  };
  return d;
}

// conv2d_winograd: x [N, C, H, W] and u [36, O, C], the filter of a 3x3 convolution
// transformed by winograd_filter; the attributes are conv2d's (stride and dilation 1).
// Its geometry is that of x with a weight [O, C, 3, 3].
ConvGeom winograd_geom(const std::vector<TensorType>& in, const ConvAttrs& a) {
  const std::string op = "conv2d_winograd";
  check_arity(op, in, 2);
  const TensorType& u = in[1];
  EMBER_CHECK(
      u.rank() == 3 && is_const(u.shape[0], kWinogradPoints) && u.shape[1].as_int() &&
          u.shape[2].as_int(),
      op << ": expected a transformed filter [36, O, C] (winograd_filter), got " << u.str());
  const TensorType w{u.dtype, {u.shape[1], u.shape[2], Expr(3), Expr(3)}, u.device};
  const ConvGeom g = conv_geom(op, 2, in[0], w, a);
  EMBER_CHECK(a.algo == "winograd" && g.groups == 1 && g.sh == 1 && g.sw == 1 && g.dh == 1 &&
                  g.dw == 1 && in[0].dtype == DType::float32 && g.oh.as_int() && g.ow.as_int(),
              op << ": takes a float32 input of known height and width, stride 1, dilation 1, "
                    "groups 1 and algo 'winograd', got input "
                 << in[0].str() << " and " << vec_str(a.stride) << " / " << vec_str(a.dilation)
                 << " / groups " << a.groups << " / algo '" << a.algo << "'");
  return g;
}

OpDef conv2d_winograd_def() {
  OpDef d;
  d.name = "conv2d_winograd";
  d.title = "Conv2dWinograd";
  d.kind = OpKind::Composite;
  d.num_inputs = 2;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    const ConvGeom g = winograd_geom(in, attrs_as<ConvAttrs>(a));
    return std::vector<TensorType>{TensorType{
        in[0].dtype, {g.n, Expr(g.o), g.oh, g.ow}, common_device("conv2d_winograd", in)}};
  };
  d.lower = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
               const OpAttrs& a) {
    ir::Task t = lower_winograd(winograd_geom(in, attrs_as<ConvAttrs>(a)), in.at(0), out.at(0));
    t.name = "conv2d_winograd";
    return t;
  };
  return d;
}

// winograd_filter: w [O, C, 3, 3] (float32) -> u [36, O, C], u[6 i + j, o, c] = (G w[o, c]
// G^T)[i, j]; one Call stage, folded at build time when w is a constant.
OpDef winograd_filter_def() {
  OpDef d;
  d.name = "winograd_filter";
  d.title = "WinogradFilter";
  d.kind = OpKind::Composite;
  OpTraits traits;
  traits.anchor = true;
  traits.epilogue = EpilogueRule::None;
  d.declared_traits = traits;
  d.num_inputs = 1;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs&) {
    const std::string op = "winograd_filter";
    check_arity(op, in, 1);
    const TensorType& w = in[0];
    EMBER_CHECK(w.dtype == DType::float32 && w.rank() == 4 && w.shape[0].as_int() &&
                    w.shape[1].as_int() && is_const(w.shape[2], 3) && is_const(w.shape[3], 3),
                op << ": expected a float32 weight [O, C, 3, 3], got " << w.str());
    return std::vector<TensorType>{
        TensorType{w.dtype, {Expr(kWinogradPoints), w.shape[0], w.shape[1]}, w.device}};
  };
  d.lower = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
               const OpAttrs&) {
    ir::Task t;
    t.name = "winograd_filter";
    const int wb = t.add_buffer("w", in.at(0).dtype, in[0].shape, ir::BufferRole::Input);
    const int ub = t.add_buffer("u", out.at(0).dtype, out[0].shape, ir::BufferRole::Output);
    // G g G^T per (o, c): 18 + 36 dot products of 3 (5 operations each).
    t.stages.push_back(call_stage("winograd_f43_filter", {wb}, {ub},
                                  {in[0].shape[0], in[0].shape[1]},
                                  Expr(54 * 5) * in[0].shape[0] * in[0].shape[1]));
    return t;
  };
  return d;
}

}  // namespace

ConvAlgoOps conv_algo_ops(const std::string& op, const std::string& algo) {
  const ConvAlgo& a = conv_algo_named(op, algo);
  return {a.op ? a.op : op, a.prepare_weight ? a.prepare_weight : ""};
}

EMBER_REGISTER_OP { return conv_def("conv2d", "Conv2d", 2); }
EMBER_REGISTER_OP { return conv_def("conv1d", "Conv1d", 1); }
EMBER_REGISTER_OP { return conv2d_winograd_def(); }
EMBER_REGISTER_OP { return winograd_filter_def(); }

}  // namespace ember::opdefs
