// The convolutions' algorithms: conv_algos() (at the end) lists them in order of preference,
// each with its rule (where it applies) and its lowering. Dense float32 convolutions
// (groups == 1) of conv2d and conv1d on a constant weight (the model's, after folding) run
// blocked:
//   - blocked: a constant weight, any geometry: conv2d_blocked on the input converted to the
//     channel-blocked layout nChw<b>c (conv1d: nCw<b>c, run as a height of 1) and the weight
//     prepared by conv_blocked_filter, a direct convolution (ember_rt/conv_blocked.h) whose
//     output stays blocked;
// the others (a weight computed at run time, or the plain layout asked for:
// EMBER_CONV_ALGORITHM=plain) are GEMMs, out [N, O, pixels] = w [O, C*KH*KW] x
// columns [N, C*KH*KW, pixels]:
//   - gemm1x1: 1x1, stride 1, no padding: the columns are x itself, viewed [N, C, H*W];
//   - winograd: 3x3, stride 1, a constant weight, where it wins: conv2d_winograd on the
//     filter transformed by winograd_filter (F(4x4, 3x3), ember_rt/winograd.h);
//   - implicit: any stride, dilation and padding: the columns are never materialized. A
//     padded copy of x, split into stride phases, is read in place by the GEMM through a view
//     (ir::Stage::b_row_offset): row k = (c, kh, kw) of the columns is a contiguous run of
//     that copy starting at an offset that depends on k only, so the GEMM packs its B panels
//     straight from it. The product is "wide" (OH x Ws outputs, Ws the phases' width) and a
//     crop keeps the OW real columns (the crop, a Compute stage, is where fusion puts the
//     bias / activation epilogue);
//   - wide: stride 1 with a kernel narrow next to the output: the same wide product, on a
//     materialized col [N, C*KH*KW, OH*Wp] copied from the padded x (vectorized runs);
//   - im2col: a padded copy of x (when padded), col [N, C*KH*KW, OH*OW], and the Matmul
//     into out viewed [N, O, OH*OW] (no wasted columns);
//   - depthwise_blocked: float32 depthwise with channel multiplier 1, conv2d:
//     conv2d_depthwise_blocked on the input in the channel-blocked layout (ember_rt/
//     depthwise_blocked.h: the block's channels are the vector lanes), output blocked;
//   - depthwise: float32 with one input channel per group (any channel multiplier): one Call
//     stage of ember_rt::lib::depthwise_conv2d (ember_rt/depthwise.h), which applies the
//     fused epilogue to each output row it finishes;
//   - reduce: anything else (other grouped convolutions, other dtypes) is one Reduce stage
//     over (C/groups, KH, KW): the same definition as OpDef.reduce, the generic fallback.
// Padding reads are select(in_bounds, load, 0), so out-of-bounds loads are never made; the
// padded copy pays for its bounds checks once per input element instead of once per column
// element (C*KH*KW / C times as many).
#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "conv.h"

namespace ember::opdefs {

using ir::BinaryOp;

namespace {

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

// ---- the implicit GEMM: the columns read in place ----
//
// The padded x split into stride phases, x_phased [N, C, phases, Hs, Ws]: phase (a, b) holds
//   x_phased[n, c, (a, b), i, j] = x_padded[n, c, i * sh + a, j * sw + b]
// (x_padded: x inside ph rows and pw columns of zeros; zeros past it too). Column (oh, ow)
// of row k = (c, kh, kw) of the columns, x_padded[n, c, oh sh + kh dh, ow sw + kw dw], is
// then x_phased[n, c, (kh dh % sh, kw dw % sw), oh + kh dh / sh, ow + kw dw / sw]: with
// the wide index j = oh * Ws + ow, element off(k) + j of a batch's part of x_phased, where
//   off(k) = ((c * phases + phase(kh, kw)) * Hs + kh dh / sh) * Ws + kw dw / sw.
// Only the phases some tap reads are copied: row phase kh dh % sh repeats with period
// sh / gcd(dh, sh) in kh, so there are min(KH, that period) of them, the i-th being
// i dh % sh (the same along the width); a 1x1 with stride 2 (ResNet's downsampling) reads
// one phase of four. With stride 1 there is one phase: x_phased is x_padded. Sizes: Ws =
// ceil((W + 2 pw) / sw) (the real outputs read columns ow + kw dw / sw < Ws); Hs = (KH - 1)
// dh / sh + OH rows, and one more when some kw dw / sw > 0 (the last row's wide columns run
// that far into the next row), so that every element of the view, up to off(k) + OH * Ws - 1,
// lies in its channel's phase.
struct PhaseAxis {
  int64_t count = 1;   // the phases read along this axis: min(K, period)
  int64_t period = 1;  // s / gcd(d, s): tap k reads phase k % period
  int64_t d = 1, s = 1;
  // The offset (a in [0, s)) of phase i.
  Expr offset(const Expr& i) const {
    if (count == 1) return Expr(0);
    if (d % s == 1) return i;  // i < period = s
    return ir::mod(i * Expr(d), Expr(s));
  }
  // The phase that tap k reads.
  Expr of_tap(const Expr& k) const {
    if (count == 1) return Expr(0);
    return count == period ? ir::mod(k, Expr(period)) : k;  // else every tap has its own
  }
};

PhaseAxis phase_axis(int64_t k, int64_t d, int64_t s) {
  PhaseAxis a;
  a.d = d, a.s = s;
  a.period = s / std::gcd(d, s);
  a.count = std::min(k, a.period);
  return a;
}

struct Phases {
  PhaseAxis h, w;
  int64_t count = 1;  // h.count * w.count
  Expr rows, cols;    // Hs, Ws
};

Phases phases_of(const ConvGeom& g) {
  Phases p;
  p.h = phase_axis(g.kh, g.dh, g.sh);
  p.w = phase_axis(g.kw, g.dw, g.sw);
  p.count = p.h.count * p.w.count;
  const int64_t row_reach = (g.kh - 1) * g.dh / g.sh, col_reach = (g.kw - 1) * g.dw / g.sw;
  p.rows = g.oh + Expr(row_reach + (col_reach > 0 ? 1 : 0));
  const Expr wp = g.w + Expr(2 * g.pw);
  p.cols = g.sw == 1 ? wp : ir::floordiv(wp + Expr(g.sw - 1), Expr(g.sw));
  return p;
}

// r = q * s + rem: {rem, q}, without index arithmetic for s == 1.
std::pair<Expr, Expr> split_by(const Expr& r, int64_t s) {
  if (s == 1) return {Expr(0), r};
  return {ir::mod(r, Expr(s)), ir::floordiv(r, Expr(s))};
}

// x_phased from x; written once (N*C*Hs*Ws*phases elements: about x's size when every phase
// is read, a quarter of it for a 1x1 with stride 2).
int phase_stage(const ConvGeom& g, const Phases& ph, ir::Task* t, int xb, DType dtype) {
  const int xpb = t->add_buffer("x_phased", dtype, {g.n, g.c, Expr(ph.count), ph.rows, ph.cols},
                                ir::BufferRole::Scratch);
  ir::Stage s = compute_stage(xpb, 5, "p");
  const auto [i_w, i_h] = split_by(s.axes[2], ph.w.count);  // phase = i_h * w.count + i_w
  const Expr ih = s.axes[3] * Expr(g.sh) + ph.h.offset(i_h) - Expr(g.ph);
  const Expr iw = s.axes[4] * Expr(g.sw) + ph.w.offset(i_w) - Expr(g.pw);
  Expr cond = in_range(ih, g.h);  // rows past x_padded's are read (as zeros) too
  if (g.pw > 0 || g.sw > 1) cond = ir::binary(BinaryOp::And, cond, in_range(iw, g.w));
  const Expr v = ir::load(xb, dtype, spatial_index(g, s.axes[0], s.axes[1], ih, iw));
  s.value = ir::select(cond, v, ir::const_of(0, dtype));
  t->stages.push_back(std::move(s));
  return xpb;
}

// Stages: x_phased, the GEMM reading it through the row view into `wide` [N, O, OH*Ws], the
// crop of the Ws - OW extra columns into out.
ir::Task lower_implicit(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  ir::Task t;
  const GemmBuffers b = gemm_buffers(g, &t, x, out, false, false);
  const Phases ph = phases_of(g);
  const int xpb = phase_stage(g, ph, &t, b.x, x.dtype);
  const int wide =
      t.add_buffer("wide", out.dtype, {g.n, Expr(g.o), g.oh * ph.cols}, ir::BufferRole::Scratch);
  ir::Stage mm = matmul_stage(b.w, xpb, wide);
  mm.b_row_var = make_vars("r", 1)[0];
  const Index ck = unravel(mm.b_row_var, {g.c, Expr(g.kh), Expr(g.kw)});
  const Expr row = split_by(ck[1] * Expr(g.dh), g.sh).second;
  const Expr col = split_by(ck[2] * Expr(g.dw), g.sw).second;
  const Expr phase = ph.h.of_tap(ck[1]) * Expr(ph.w.count) + ph.w.of_tap(ck[2]);
  mm.b_row_offset = ((ck[0] * Expr(ph.count) + phase) * ph.rows + row) * ph.cols + col;
  t.stages.push_back(std::move(mm));
  ir::Stage crop = compute_stage(b.out, out.shape.size(), "k");
  const Expr oh = g.spatial == 2 ? crop.axes[2] : Expr(0);
  crop.value =
      ir::load(wide, out.dtype, {crop.axes[0], crop.axes[1], oh * ph.cols + crop.axes.back()});
  t.stages.push_back(std::move(crop));
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

constexpr int64_t kWinogradTile = 4;  // outputs per tile side: F(4x4, 3x3)

// The rule's thresholds (winograd_wins).
constexpr int64_t kWinogradMinChannels = 64;    // input and output channels
constexpr int64_t kWinogradMinTiles = 49;       // tiles per image (a 28x28 output)
constexpr int64_t kWinogradWideChannels = 128;  // from here on, down to ...
constexpr int64_t kWinogradWideMinTiles = 25;   // ... this many tiles (20x20)
constexpr double kWinogradMaxWaste = 1.35;      // tile outputs computed per output kept

int64_t tiles_along(int64_t out) { return (out + kWinogradTile - 1) / kWinogradTile; }

}  // namespace

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

// ---- the direct convolution on the channel-blocked layout (ember_rt/conv_blocked.h) ----
//
// One Call stage of ember_rt::lib::conv2d_blocked_layout on x [N, C, H, W] and out
// [N, O, OH, OW] (conv1d: [N, C, L] and [N, O, OL], passed as H = OH = 1), both laid out
// nChw<b>c (the routine addresses their memory itself:
// Stage::call_takes_layouts), or of conv2d_blocked_plain_layout on a plain x (fewer channels
// than a block: ConvAlgo::reads_plain_few_channels), and the prepared weight wp [OB, CB, KH,
// KW, b, b]; the block is passed too, and the routine refuses one that is not its vector
// width. The routine applies a fused epilogue to each finished pixel's b lanes in place
// (physical_task plans it over the output viewed [N, OB, OH * OW, b],
// ember_rt::lib::conv2d_blocked_layout).
ir::Task lower_blocked(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  const int64_t b = out.layout.block;
  EMBER_ASSERT(out.layout.kind == LayoutKind::Blocked &&
                   (x.layout == out.layout || x.layout.is_plain()) && g.groups == 1,
               "conv2d_blocked lowered on " << x.str() << " -> " << out.str());
  const int64_t cb = (*g.c.as_int() + b - 1) / b, ob = (g.o + b - 1) / b;
  ir::Task t;
  const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input, x.layout);
  const int wb =
      t.add_buffer("w", x.dtype, {Expr(ob), Expr(cb), Expr(g.kh), Expr(g.kw), Expr(b), Expr(b)},
                   ir::BufferRole::Input);
  const int outb = t.add_buffer("out", out.dtype, out.shape, ir::BufferRole::Output, out.layout);
  ir::Stage s =
      call_stage(x.layout.is_plain() ? "conv2d_blocked_plain_layout" : "conv2d_blocked_layout",
                 {xb, wb}, {outb},
                 {g.n, g.c, g.h, g.w, Expr(g.o), g.oh, g.ow, Expr(g.kh), Expr(g.kw), Expr(g.sh),
                  Expr(g.sw), Expr(g.ph), Expr(g.pw), Expr(g.dh), Expr(g.dw), Expr(b)},
                 // a multiply-add per tap and input channel
                 Expr(2 * g.cg * g.kh * g.kw) * g.n * Expr(g.o) * g.oh * g.ow);
  s.call_takes_layouts = true;
  s.call_channel_affine = true;  // a folded batch norm, bias, ReLU / ReLU6 in registers
  s.axes = make_vars("d", out.shape.size());  // the fused epilogue's, over the output
  t.stages.push_back(std::move(s));
  return t;
}

// ---- the depthwise convolution on the channel-blocked layout (ember_rt/depthwise_blocked.h) ----
//
// One Call stage of ember_rt::lib::depthwise_conv2d_blocked_layout on x and out [N, C, H, W]
// laid out nChw<b>c (Stage::call_takes_layouts) and the weight as it is, viewed [C, KH * KW]
// (the routine gathers each block's taps into vectors); channel multiplier 1. Its fused
// epilogue is planned per pixel as conv2d_blocked's is.
ir::Task lower_depthwise_blocked(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  const int64_t b = x.layout.block;
  EMBER_ASSERT(x.layout.kind == LayoutKind::Blocked && out.layout == x.layout && g.cg == 1 &&
                   g.groups == g.o && g.spatial == 2,
               "conv2d_depthwise_blocked lowered on " << x.str() << " -> " << out.str());
  ir::Task t;
  const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input, x.layout);
  const int wb = t.add_buffer("w", x.dtype, {Expr(g.o), Expr(g.kh * g.kw)}, ir::BufferRole::Input);
  const int outb = t.add_buffer("out", out.dtype, out.shape, ir::BufferRole::Output, out.layout);
  ir::Stage s = call_stage("depthwise_conv2d_blocked_layout", {xb, wb}, {outb},
                           {g.n, g.c, g.h, g.w, g.oh, g.ow, Expr(g.kh), Expr(g.kw), Expr(g.sh),
                            Expr(g.sw), Expr(g.ph), Expr(g.pw), Expr(g.dh), Expr(g.dw), Expr(b)},
                           // a multiply-add per tap
                           Expr(2 * g.kh * g.kw) * g.n * Expr(g.o) * g.oh * g.ow);
  s.call_takes_layouts = true;
  s.call_channel_affine = true;  // a folded batch norm, bias, ReLU / ReLU6 in registers
  s.axes = make_vars("d", 4);    // the fused epilogue's, over the output
  t.stages.push_back(std::move(s));
  return t;
}

namespace {

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

bool dense_float32(const ConvProblem& p) { return p.g.groups == 1 && p.dtype == DType::float32; }

// Whether the implicit GEMM beats the materialized columns (wide, im2col), measured with
// benchmarks/kernels/conv_algorithms.py (bias and relu, batch 1, best of 5-15 interleaved
// rounds, 2 threads, on the shared 2-core AVX-512 development machine): it never loses
// where it has more than one output pixel, since it does the GEMM the wide form does
// without writing and reading the columns. 3x3 stride 1: unet_block's 96 -> 32 128x128
// 14.4 ms (wide 26.6, im2col 25.0), 32 -> 32 128x128 4.5 ms (8.9), ResNet's 128 28x28
// 2.0 ms (3.9), 256 14x14 1.9 ms (wide 1.9), 512 7x7 4.3 ms (im2col 6.2, 9 columns
// computed per 7 kept); stride 2: the 7x7 stem at 224x224 4.1 ms (im2col 6.9), ResNet's 3x3
// at 28x28 0.89 ms (1.42), at 56x56 and 14x14 0.40 / 0.47 ms (0.45 / 0.48). Its wide rows
// waste (Ws - OW) / Ws of the columns, which costs nothing measurable while the GEMM's N is
// a few micro-tiles (5x5 -> 3x3 outputs: equal), but a single output pixel (OH = OW = 1)
// is a matrix-vector product for im2col and a micro-tile of Ws columns here: 0.11 vs 1.5 ms
// for 512 channels, 3x3 on 3x3.
bool implicit_wins(const ConvGeom& g) {
  const auto oh = g.oh.as_int(), ow = g.ow.as_int();
  return !(oh && ow && *oh * *ow == 1);
}

}  // namespace

// In order of preference: a convolution takes the first algorithm that applies and whose
// rule says it wins (no rule: it wins wherever it applies); tuning (search_space >= 1)
// measures every algorithm that applies instead. Adding an algorithm is adding its entry
// here and its lowering.
const std::vector<ConvAlgo>& conv_algos() {
  static const std::vector<ConvAlgo> algos = {
      // The direct convolution on the channel-blocked layout, on a constant weight (prepared
      // once): any kernel, stride, padding and dilation, 1x1 included, conv1d too. First: chains of
      // convolutions, norms, pools and elementwise ops then stay blocked from end to end
      // (choose_layouts), which measured 1.3x-1.5x faster on whole CNNs than the plain
      // algorithms below (docs/architecture.md, "Convolution algorithms").
      {"blocked",
       [](const ConvProblem& p) { return dense_float32(p) && p.weight_constant && p.g.c.as_int(); },
       nullptr, nullptr, "conv2d_blocked", "conv_blocked_filter", /*dominates=*/false,
       /*blocked=*/true, /*reads_plain_few_channels=*/true},
      // A GEMM on the input as it is: the other dense algorithms would compute the same GEMM
      // on a copy of it (the 1x1 columns are the input), so it is never measured against them.
      {"gemm1x1",
       [](const ConvProblem& p) {
         const ConvGeom& g = p.g;
         return dense_float32(p) && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 &&
                g.pw == 0;
       },
       nullptr, lower_gemm1x1, nullptr, nullptr, /*dominates=*/true},
      // 3x3, stride 1, on a constant weight, where it wins (winograd_wins).
      {"winograd",
       [](const ConvProblem& p) {
         const ConvGeom& g = p.g;
         return dense_float32(p) && p.weight_constant && g.spatial == 2 && g.kh == 3 && g.kw == 3 &&
                g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 && g.oh.as_int() &&
                g.ow.as_int() && g.h.as_int() && g.w.as_int();
       },
       [](const ConvProblem& p) { return winograd_wins(p.g); }, lower_winograd, "conv2d_winograd",
       "winograd_filter"},
      // The columns read in place (implicit_wins).
      {"implicit", dense_float32, [](const ConvProblem& p) { return implicit_wins(p.g); },
       lower_implicit},
      // Stride 1, with a kernel narrow next to the output (use_wide).
      {"wide", [](const ConvProblem& p) { return dense_float32(p) && p.g.sh == 1 && p.g.sw == 1; },
       [](const ConvProblem& p) { return use_wide(p.g); }, lower_wide},
      {"im2col", dense_float32, nullptr, lower_im2col},
      // Depthwise float32 with channel multiplier 1 on the channel-blocked layout: any kernel,
      // stride, padding and dilation (a block's channels are the vector lanes). With a constant
      // weight: a model's (inference) convolutions around it are blocked too; a training
      // graph's (weights are inputs) are plain, and converting to and from the blocked layout
      // around each depthwise layer had cost MobileNetV2's step about 100 ms, 5x what the
      // blocked routine saved.
      {"depthwise_blocked",
       [](const ConvProblem& p) {
         return is_depthwise(p.g, p.dtype) && p.g.spatial == 2 && p.g.o == p.g.groups &&
                p.g.c.as_int() && p.weight_constant;
       },
       nullptr, nullptr, "conv2d_depthwise_blocked", nullptr, /*dominates=*/false,
       /*blocked=*/true},
      // Depthwise float32 (is_depthwise): the runtime routine.
      {"depthwise", [](const ConvProblem& p) { return is_depthwise(p.g, p.dtype); }, nullptr,
       lower_depthwise},
      // Anything else (other grouped convolutions, other dtypes): the generic reduction.
      {"reduce",
       [](const ConvProblem& p) { return !dense_float32(p) && !is_depthwise(p.g, p.dtype); },
       nullptr, nullptr},
  };
  return algos;
}

}  // namespace ember::opdefs
