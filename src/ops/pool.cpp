// Pooling over the last two dimensions of x [N, C, H, W] (or [C, H, W]): max_pool2d,
// avg_pool2d (PoolAttrs) and adaptive_avg_pool2d (AdaptivePoolAttrs). All three are Reduce
// operators over a window, so producers fuse as their prologue and elementwise consumers as
// their epilogue. They keep their input's layout (LayoutRule::Keep): on a channel-blocked x
// the output is blocked too, and the window is a vector along a block's lanes.
//
// Output sizes, padding and divisors follow torch: max pooling pads with -inf (the padding
// never wins); avg_pool2d divides by the window's size clipped to the padded input
// (count_include_pad) or to the input itself. Where the divisor depends on the output
// position it is an index expression, and 1 / divisor scales each element of the window (the
// finalizer only sees the accumulator), which differs from sum / divisor by rounding only.
#include <cmath>
#include <limits>
#include <string>

#include "common.h"
#include "ember/support/error.h"

namespace ember::opdefs {
namespace {

using ir::BinaryOp;

struct PoolGeom {
  Shape lead;  // the dimensions before H, W
  Expr h, w, oh, ow;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool guard_h = false, guard_w = false;  // windows reach outside x (padding, ceil_mode)
};

// Whether some window along a dimension reads outside [0, in): padding, or ceil_mode's last
// window running past the end.
bool needs_guard(const Expr& in, const Expr& out, int64_t k, int64_t s, int64_t p, int64_t d) {
  if (p > 0) return true;
  auto i = in.as_int(), o = out.as_int();
  return !i || !o || (*o - 1) * s + (k - 1) * d >= *i;
}

void check_pair(const std::string& op, const char* name, const std::vector<int64_t>& v,
                int64_t min) {
  EMBER_CHECK(v.size() == 2,
              op << ": " << name << " must have 2 entries (height, width), got " << vec_str(v));
  EMBER_CHECK(v[0] >= min && v[1] >= min, op << ": " << name << " must be >= " << min
                                             << " in both dimensions, got " << vec_str(v));
}

void check_pool_input(const std::string& op, const TensorType& x) {
  EMBER_CHECK(x.rank() == 3 || x.rank() == 4,
              op << ": expected a 3-d [C, H, W] or 4-d [N, C, H, W] input, got " << x.str());
  // A layout's channel is dimension 1: that of [N, C, H, W], but the height of [C, H, W].
  EMBER_CHECK(x.layout.is_plain() || x.rank() == 4,
              op << ": a 3-d input must be plain, got " << x.str()
                 << "; convert it with to_layout(x, 'plain') or add the batch dimension");
  for (int64_t d = x.rank() - 2; d < x.rank(); ++d) {
    EMBER_CHECK(!is_const(x.shape[d], 0), op << ": the input " << x.str()
                                             << " has an empty spatial dimension; height and "
                                                "width must be >= 1");
  }
}

// torch's pooling output size along one dimension.
Expr pool_out_size(const std::string& op, const TensorType& x, const Expr& in, int64_t k, int64_t s,
                   int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = d * (k - 1) + 1;
  auto v = in.as_int();
  if (!v) {
    // With stride 1, one sum: a "same" padding keeps the dimension itself (h, not h - 1 + 1);
    // stride 1 rounds the same way up and down.
    if (s == 1) return in + Expr(2 * p - span + 1);
    if (!ceil_mode) return ir::floordiv(in + Expr(2 * p - span), Expr(s)) + Expr(1);
    // ceil_mode, with the rule below as a min: the last window must start inside x or its
    // left padding, (out - 1) * s < in + p. Since p <= span / 2, the rounded-up count breaks
    // it by at most one window.
    const Expr up = ir::floordiv(in + Expr(2 * p - span + s - 1), Expr(s)) + Expr(1);
    return ir::min(up, ir::floordiv(in + Expr(p - 1), Expr(s)) + Expr(1));
  }
  const int64_t num = *v + 2 * p - span + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= *v + p) --out;
  EMBER_CHECK(out >= 1, op << ": the input " << x.str() << " is too small for a kernel of " << k
                           << " (dilation " << d << ", padding " << p << ", stride " << s
                           << "): the output size would be " << out
                           << "; the rule is size + 2 * padding >= dilation * (kernel - 1) + 1");
  return Expr(out);
}

PoolGeom pool_geom(const std::string& op, const TensorType& x, const PoolAttrs& a, bool max) {
  check_pool_input(op, x);
  check_pair(op, "kernel_size", a.kernel, 1);
  check_pair(op, "stride", a.stride, 1);
  check_pair(op, "padding", a.padding, 0);
  check_pair(op, "dilation", a.dilation, 1);
  for (int i = 0; i < 2; ++i) {
    // torch: the padding may be at most half the (dilated) kernel.
    const int64_t half = max ? ((a.kernel[i] - 1) * a.dilation[i] + 1) / 2 : a.kernel[i] / 2;
    EMBER_CHECK(a.padding[i] <= half,
                op << ": padding " << vec_str(a.padding) << " is more than half the "
                   << (max ? "dilated " : "") << "kernel " << vec_str(a.kernel)
                   << "; the rule is padding <= "
                   << (max ? "(dilation * (kernel - 1) + 1)" : "kernel") << " / 2");
  }
  PoolGeom g;
  g.lead.assign(x.shape.begin(), x.shape.end() - 2);
  g.h = x.shape[x.rank() - 2];
  g.w = x.shape.back();
  g.kh = a.kernel[0], g.kw = a.kernel[1];
  g.sh = a.stride[0], g.sw = a.stride[1];
  g.ph = a.padding[0], g.pw = a.padding[1];
  g.dh = a.dilation[0], g.dw = a.dilation[1];
  g.oh = pool_out_size(op, x, g.h, g.kh, g.sh, g.ph, g.dh, a.ceil_mode);
  g.ow = pool_out_size(op, x, g.w, g.kw, g.sw, g.pw, g.dw, a.ceil_mode);
  g.guard_h = needs_guard(g.h, g.oh, g.kh, g.sh, g.ph, g.dh);
  g.guard_w = needs_guard(g.w, g.ow, g.kw, g.sw, g.pw, g.dw);
  return g;
}

Shape pool_shape(const Shape& lead, const Expr& oh, const Expr& ow) {
  Shape s = lead;
  s.push_back(oh);
  s.push_back(ow);
  return s;
}

Expr in_range(const Expr& i, const Expr& hi) {
  return ir::binary(BinaryOp::And, ir::binary(BinaryOp::Ge, i, Expr(0)),
                    ir::binary(BinaryOp::Lt, i, hi));
}

// x at window position (rh, rw) of output idx in the compute dtype; `pad` outside x.
Expr window_value(const PoolGeom& g, const Index& idx, const Index& ridx, const Loader& load,
                  double pad) {
  const size_t lead = g.lead.size();
  const Expr ih = idx[lead] * Expr(g.sh) - Expr(g.ph) + ridx[0] * Expr(g.dh);
  const Expr iw = idx[lead + 1] * Expr(g.sw) - Expr(g.pw) + ridx[1] * Expr(g.dw);
  Index xi(idx.begin(), idx.begin() + lead);
  xi.push_back(ih);
  xi.push_back(iw);
  const Expr v = to_compute(load(0, xi));
  Expr cond;
  if (g.guard_h) cond = in_range(ih, g.h);
  if (g.guard_w) {
    cond = cond.defined() ? ir::binary(BinaryOp::And, cond, in_range(iw, g.w)) : in_range(iw, g.w);
  }
  return cond.defined() ? ir::select(cond, v, ir::const_of(pad, v.dtype())) : v;
}

// The smallest value of t: the identity of max.
double lowest(DType t) {
  switch (t) {
    case DType::int8:
      return std::numeric_limits<int8_t>::lowest();
    case DType::int16:
      return std::numeric_limits<int16_t>::lowest();
    case DType::int32:
      return std::numeric_limits<int32_t>::lowest();
    case DType::int64:
      return static_cast<double>(std::numeric_limits<int64_t>::lowest());
    case DType::uint8:
      return 0;
    default:
      return -std::numeric_limits<double>::infinity();
  }
}

// The number of elements avg_pool2d divides by along one dimension at output index o.
Expr avg_extent(const Expr& o, int64_t s, int64_t p, int64_t k, const Expr& in, bool with_pad) {
  const Expr start = o * Expr(s) - Expr(p);
  const Expr end = ir::min(start + Expr(k), in + Expr(p));
  if (with_pad) return end - start;
  return ir::min(end, in) - ir::max(start, Expr(0));
}

ReduceDef reduce_pool(const std::string& op, bool max, const std::vector<TensorType>& in,
                      const TensorType& out, const OpAttrs& attrs) {
  const PoolAttrs& a = attrs_as<PoolAttrs>(attrs);
  const PoolGeom g = pool_geom(op, in.at(0), a, max);
  ReduceDef r;
  r.op = max ? ir::ReduceOp::Max : ir::ReduceOp::Sum;
  r.acc_dtype = compute_dtype(in[0].dtype);
  r.rextents = {Expr(g.kh), Expr(g.kw)};
  const DType acc = r.acc_dtype, o = out.dtype;
  // avg_pool2d: the divisor is k * k unless windows can be clipped (ceil_mode's last window
  // by the padded input, or padding not counted).
  const bool fixed = !a.ceil_mode && (a.count_include_pad || (g.ph == 0 && g.pw == 0));
  const bool with_pad = a.count_include_pad;
  r.value = [g, max, fixed, with_pad, acc](const Index& idx, const Index& ridx,
                                           const Loader& load) {
    const double pad = max ? lowest(acc) : 0.0;
    Expr v = cast_to(window_value(g, idx, ridx, load, pad), acc);
    if (max || fixed) return v;
    const size_t lead = g.lead.size();
    const Expr count = avg_extent(idx[lead], g.sh, g.ph, g.kh, g.h, with_pad) *
                       avg_extent(idx[lead + 1], g.sw, g.pw, g.kw, g.w, with_pad);
    const Expr inv = ir::binary(BinaryOp::Div, ir::const_of(1, acc), ir::cast(count, acc));
    return ir::binary(BinaryOp::Mul, v, inv);
  };
  if (!max && fixed) {
    const Expr count = ir::const_of(static_cast<double>(g.kh * g.kw), acc);
    r.finalize = [count, o](const Expr& v) {
      return cast_to(ir::binary(BinaryOp::Div, v, count), o);
    };
  } else if (acc != o) {
    r.finalize = [o](const Expr& v) { return cast_to(v, o); };
  }
  return r;
}

// A pool windows each channel of each image on its own, indexing x logically: x may have a
// non-plain layout (a chain of blocked convolutions), and the output takes it, so that the
// window runs in vectors along a channel block's lanes.
OpTraits pool_traits() {
  OpTraits t = default_traits(OpKind::Reduce);
  t.layouts = LayoutRule::Keep;
  return t;
}

OpDef pool_def(const std::string& name, const std::string& title, bool max) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = OpKind::Reduce;
  d.num_inputs = 1;
  d.declared_traits = pool_traits();
  d.infer = [name, max](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    check_arity(name, in, 1);
    if (max) {
      check_not_bool(name, in[0]);
    } else {
      check_float(name, in[0]);
    }
    const PoolGeom g = pool_geom(name, in[0], attrs_as<PoolAttrs>(attrs), max);
    return std::vector<TensorType>{
        TensorType{in[0].dtype, pool_shape(g.lead, g.oh, g.ow), in[0].device}};
  };
  d.reduce = [name, max](const std::vector<TensorType>& in, const TensorType& out,
                         const OpAttrs& a) { return reduce_pool(name, max, in, out, a); };
  return d;
}

// ---- max_pool2d_indices ----

// max_pool2d's indices, as torch's max_pool2d_with_indices gives them: per output, the flat
// position ih * W + iw in its input plane of the window's largest element (the first of equal
// ones, a NaN before any number; the first of several NaNs, where torch gives the last). An
// arg-max over the KH * KW window positions; a padded position (-inf, or the dtype's lowest)
// only wins a window whose every element is the lowest value, where torch answers the
// window's first position inside the input.
ReduceDef reduce_pool_indices(const std::vector<TensorType>& in, const TensorType&,
                              const OpAttrs& attrs) {
  const std::string op = "max_pool2d_indices";
  const PoolGeom g = pool_geom(op, in.at(0), attrs_as<PoolAttrs>(attrs), true);
  ReduceDef r;
  r.op = ir::ReduceOp::ArgMax;
  r.acc_dtype = compute_dtype(in[0].dtype);
  r.rextents = {Expr(g.kh), Expr(g.kw)};  // the arg-max's position: kh * KW + kw
  const DType acc = r.acc_dtype;
  r.value = [g, acc](const Index& idx, const Index& ridx, const Loader& load) {
    return cast_to(window_value(g, idx, ridx, load, lowest(acc)), acc);
  };
  r.finalize_at = [g](const Expr& position, const Index& idx) {
    const size_t lead = g.lead.size();
    const Expr h0 = idx[lead] * Expr(g.sh) - Expr(g.ph);
    const Expr w0 = idx[lead + 1] * Expr(g.sw) - Expr(g.pw);
    const Expr ih = h0 + ir::floordiv(position, Expr(g.kw)) * Expr(g.dh);
    const Expr iw = w0 + ir::mod(position, Expr(g.kw)) * Expr(g.dw);
    // The window's first position inside x: its first tap at or past 0 (windows start before
    // the end of x).
    const Expr fh =
        h0 + ir::max(ir::floordiv(Expr(g.dh - 1) - h0, Expr(g.dh)), Expr(0)) * Expr(g.dh);
    const Expr fw =
        w0 + ir::max(ir::floordiv(Expr(g.dw - 1) - w0, Expr(g.dw)), Expr(0)) * Expr(g.dw);
    Expr at = ih * g.w + iw;
    if (g.guard_h || g.guard_w) {
      const Expr inside = ir::binary(BinaryOp::And, in_range(ih, g.h), in_range(iw, g.w));
      at = ir::select(inside, at, fh * g.w + fw);
    }
    return ir::cast(at, DType::int64);
  };
  return r;
}

// float32: one Call stage of ember_rt::lib::max_pool2d_indices (ember_rt/pool_indices.h),
// the arg-max in vectors of consecutive outputs (ResNet-18's stem pooling at batch 8, 2
// threads: 4.9 ms, against 20.7 ms as the reduction, whose int64 positions keep it scalar,
// and 21 ms for torch's values and indices), with torch's choice among several NaNs (the
// last). Other dtypes: the reduction (reduce_pool_indices), whose arg-max takes the first
// NaN of a window that holds several.
ir::Task lower_pool_indices(const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                            const OpAttrs& attrs) {
  const std::string op = "max_pool2d_indices";
  const TensorType& x = in.at(0);
  const PoolGeom g = pool_geom(op, x, attrs_as<PoolAttrs>(attrs), true);
  ir::Task t;
  t.name = op;
  const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input);
  const int ob = t.add_buffer("out", out.at(0).dtype, out[0].shape, ir::BufferRole::Output);
  if (x.dtype == DType::float32) {
    Expr planes(1);
    for (const Expr& d : g.lead) planes = planes * d;
    // a comparison per window element
    t.stages.push_back(call_stage(op, {xb}, {ob},
                                  {planes, g.h, g.w, g.oh, g.ow, Expr(g.kh), Expr(g.kw), Expr(g.sh),
                                   Expr(g.sw), Expr(g.ph), Expr(g.pw), Expr(g.dh), Expr(g.dw)},
                                  planes * g.oh * g.ow * Expr(g.kh * g.kw)));
    return t;
  }
  const ReduceDef r = reduce_pool_indices(in, out[0], attrs);
  t.stages.push_back(
      reduce_stage(r, ob, make_vars("i", out[0].shape.size()), buffer_loader(t, {xb})));
  return t;
}

OpDef max_pool2d_indices_def() {
  OpDef d;
  d.name = "max_pool2d_indices";
  d.title = "MaxPool2dIndices";
  d.kind = OpKind::Composite;
  d.num_inputs = 1;
  OpTraits traits;  // a routine reading its whole input: its own kernel, no epilogue
  traits.anchor = true;
  traits.epilogue = EpilogueRule::None;
  d.declared_traits = traits;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    const std::string op = "max_pool2d_indices";
    check_arity(op, in, 1);
    check_not_bool(op, in[0]);  // a plain input: OpTraits::layouts, checked by infer_types
    const PoolGeom g = pool_geom(op, in[0], attrs_as<PoolAttrs>(attrs), true);
    return std::vector<TensorType>{
        TensorType{DType::int64, pool_shape(g.lead, g.oh, g.ow), in[0].device}};
  };
  d.lower = lower_pool_indices;
  return d;
}

// ---- adaptive_avg_pool2d ----

// The input's spatial sizes (known, or symbolic) and the output's (known).
struct AdaptiveGeom {
  Shape lead;
  Expr h, w;
  int64_t oh = 0, ow = 0;
};

AdaptiveGeom adaptive_geom(const TensorType& x, const AdaptivePoolAttrs& a) {
  const std::string op = "adaptive_avg_pool2d";
  check_pool_input(op, x);
  check_float(op, x);
  EMBER_CHECK(
      a.output_size.size() == 2 && a.output_size[0] >= 1 && a.output_size[1] >= 1,
      op << ": output_size must be 2 sizes >= 1 (height, width), got " << vec_str(a.output_size));
  AdaptiveGeom g;
  g.lead.assign(x.shape.begin(), x.shape.end() - 2);
  g.h = x.shape[x.rank() - 2], g.w = x.shape.back();
  g.oh = a.output_size[0], g.ow = a.output_size[1];
  return g;
}

// Whether `in` splits into `out` equal windows (known sizes only).
bool equal_windows(const Expr& in, int64_t out) {
  auto v = in.as_int();
  return v && *v % out == 0;
}

// Window i of `out` over `in`: [floor(i * in / out), ceil((i + 1) * in / out)).
Expr window_start(const Expr& i, const Expr& in, int64_t out) {
  if (equal_windows(in, out)) return i * Expr(*in.as_int() / out);  // contiguous along i
  return ir::floordiv(i * in, Expr(out));
}
Expr window_end(const Expr& i, const Expr& in, int64_t out) {
  return ir::floordiv((i + Expr(1)) * in + Expr(out - 1), Expr(out));
}

// The largest window: computed for a known size; for a symbolic one the bound
// ceil(in / out) + 1 (the reduction guards each window to its own length).
Expr max_window(const Expr& in, int64_t out) {
  auto v = in.as_int();
  if (!v) return ir::floordiv(in + Expr(out - 1), Expr(out)) + Expr(1);
  int64_t m = 0;
  for (int64_t i = 0; i < out; ++i) m = std::max(m, ((i + 1) * *v + out - 1) / out - i * *v / out);
  return Expr(m);
}

ReduceDef reduce_adaptive(const std::vector<TensorType>& in, const TensorType& out,
                          const OpAttrs& attrs) {
  const AdaptiveGeom g = adaptive_geom(in.at(0), attrs_as<AdaptivePoolAttrs>(attrs));
  ReduceDef r;
  r.op = ir::ReduceOp::Sum;
  r.acc_dtype = compute_dtype(in[0].dtype);
  const DType acc = r.acc_dtype, o = out.dtype;
  // Equal windows (the size divides evenly) need no guard and have one divisor.
  const bool uniform = equal_windows(g.h, g.oh) && equal_windows(g.w, g.ow);
  const Expr kh = max_window(g.h, g.oh), kw = max_window(g.w, g.ow);
  r.rextents = {kh, kw};
  r.value = [g, uniform, acc](const Index& idx, const Index& ridx, const Loader& load) {
    const size_t lead = g.lead.size();
    const Expr hs = window_start(idx[lead], g.h, g.oh), ws = window_start(idx[lead + 1], g.w, g.ow);
    Index xi(idx.begin(), idx.begin() + lead);
    xi.push_back(hs + ridx[0]);
    xi.push_back(ws + ridx[1]);
    const Expr v = cast_to(to_compute(load(0, xi)), acc);
    if (uniform) return v;
    const Expr eh = window_end(idx[lead], g.h, g.oh) - hs;
    const Expr ew = window_end(idx[lead + 1], g.w, g.ow) - ws;
    const Expr inside = ir::binary(BinaryOp::And, ir::binary(BinaryOp::Lt, ridx[0], eh),
                                   ir::binary(BinaryOp::Lt, ridx[1], ew));
    const Expr inv = ir::binary(BinaryOp::Div, ir::const_of(1, acc), ir::cast(eh * ew, acc));
    return ir::binary(BinaryOp::Mul, ir::select(inside, v, ir::const_of(0, acc)), inv);
  };
  if (uniform) {
    const Expr count = ir::const_of(static_cast<double>(*kh.as_int() * *kw.as_int()), acc);
    r.finalize = [count, o](const Expr& v) {
      return cast_to(ir::binary(BinaryOp::Div, v, count), o);
    };
  } else if (acc != o) {
    r.finalize = [o](const Expr& v) { return cast_to(v, o); };
  }
  return r;
}

}  // namespace

EMBER_REGISTER_OP { return pool_def("max_pool2d", "MaxPool2d", true); }
EMBER_REGISTER_OP { return pool_def("avg_pool2d", "AvgPool2d", false); }
EMBER_REGISTER_OP { return max_pool2d_indices_def(); }

EMBER_REGISTER_OP {
  OpDef d;
  d.name = "adaptive_avg_pool2d";
  d.title = "AdaptiveAvgPool2d";
  d.kind = OpKind::Reduce;
  d.num_inputs = 1;
  d.declared_traits = pool_traits();
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    check_arity("adaptive_avg_pool2d", in, 1);
    const AdaptiveGeom g = adaptive_geom(in[0], attrs_as<AdaptivePoolAttrs>(attrs));
    return std::vector<TensorType>{
        TensorType{in[0].dtype, pool_shape(g.lead, Expr(g.oh), Expr(g.ow)), in[0].device}};
  };
  d.reduce = reduce_adaptive;
  return d;
}

}  // namespace ember::opdefs
