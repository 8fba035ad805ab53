// Convolutions: conv2d (x [N, C, H, W], weight [O, C/groups, KH, KW]) and conv1d (x [N, C, L],
// weight [O, C/groups, K]), without bias (a separate add, fused into the epilogue).
//
// conv1d is conv2d over a height of 1: one geometry (ConvGeom) serves both, and only the
// indices differ. Both are Composite; float32 with groups == 1 runs on the GEMM template, with
// w viewed as [O, C*KH*KW]:
//   - 1x1, stride 1, no padding: one Matmul stage, out [N, O, H*W] = w x x viewed [N, C, H*W];
//   - stride 1 with a kernel narrow next to the output: the "wide" form: a padded copy of x,
//     col [N, C*KH*KW, OH*Wp] whose rows are contiguous runs of that copy (vectorized), the
//     Matmul into [N, O, OH*Wp], and a crop of the Wp - OW extra columns (the crop, a Compute
//     stage, is where fusion puts the bias / activation epilogue);
//   - otherwise: a padded copy of x (when padded), col [N, C*KH*KW, OH*OW], and the Matmul
//     into out viewed [N, O, OH*OW].
// Depthwise float32 convolutions (one input channel per group, any channel multiplier) are one
// Call stage of ember_rt::lib::depthwise_conv2d, which applies the fused epilogue to each
// output row it finishes (lower_depthwise). Anything else (other grouped convolutions, other
// dtypes) is one Reduce stage over (C/groups, KH, KW): the same definition as OpDef.reduce,
// the generic fallback.
// Padding reads are select(in_bounds, load, 0), so out-of-bounds loads are never made; the
// padded copy pays for its bounds checks once per input element instead of once per col
// element (C*KH*KW / C times as many).
#include <string>

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

// The other forms: out [N, O, OH*OW] = w x col, col from x_padded (or x itself when there is
// no padding), or w x x itself for a 1x1 convolution with stride 1 and no padding.
ir::Task lower_gemm(const ConvGeom& g, const TensorType& x, const TensorType& out) {
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
  if (!direct && use_wide(g)) return lower_wide(g, x, out);
  ir::Task t;
  const GemmBuffers b = gemm_buffers(g, &t, x, out, direct, true);
  int src = b.x;
  if (!direct) {
    const int xpb = g.ph > 0 || g.pw > 0 ? pad_stage(g, &t, b.x, x.dtype, 0) : b.x;
    src = im2col_stage(g, &t, xpb, g.ow);
  }
  t.stages.push_back(matmul_stage(b.w, src, b.out));
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
  t.stages.push_back(std::move(s));
  return t;
}

ir::Task lower_conv(const std::string& op, int spatial, const std::vector<TensorType>& in,
                    const std::vector<TensorType>& out, const OpAttrs& attrs) {
  const ConvAttrs& a = attrs_as<ConvAttrs>(attrs);
  const ConvGeom g = conv_geom(op, spatial, in.at(0), in.at(1), a);
  ir::Task t;
  if (g.groups == 1 && in[0].dtype == DType::float32) {
    t = lower_gemm(g, in[0], out.at(0));
  } else if (is_depthwise(g, in[0].dtype)) {
    t = lower_depthwise(g, in[0], out.at(0));
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
  return d;
}

}  // namespace

EMBER_REGISTER_OP { return conv_def("conv2d", "Conv2d", 2); }
EMBER_REGISTER_OP { return conv_def("conv1d", "Conv1d", 1); }

}  // namespace ember::opdefs
