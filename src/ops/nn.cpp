// Neural-network operators that the torch frontend maps one to one: resizing
// (upsample_nearest2d, an injective operator; upsample_bilinear2d, a composite), embedding, the
// factories arange and full (no inputs), random_uniform, tril / triu, clamp and the
// piecewise-linear activations relu6, hardsigmoid and hardswish. Normalizations are in norm.cpp,
// convolutions in conv.cpp, pooling in pool.cpp.
//
// Index arithmetic that torch does in floating point (the source index of a resize) is done
// in the same precision here, so results match torch exactly, not only approximately.
#include <algorithm>
#include <cmath>
#include <string>

#include "common.h"
#include "ember/support/cpu.h"
#include "ember/support/error.h"

namespace ember::opdefs {
namespace {

using ir::BinaryOp;
using ir::UnaryOp;

OpDef op_of(const std::string& name, const std::string& title, OpKind kind, int num_inputs) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = kind;
  d.num_inputs = num_inputs;
  return d;
}

// ---- upsample ----

struct ResizeDims {
  int64_t h, w, oh, ow;
};

ResizeDims resize_dims(const std::string& op, const TensorType& x, const UpsampleAttrs& a) {
  EMBER_CHECK(x.rank() == 4, op << ": expected a 4-d input [N, C, H, W], got " << x.str());
  if (op == "upsample_bilinear2d") check_float(op, x);  // nearest only moves elements
  EMBER_CHECK(a.size.size() == 2 && a.size[0] >= 1 && a.size[1] >= 1,
              op << ": size must be 2 output sizes >= 1 (height, width), got " << vec_str(a.size));
  const auto h = x.shape[2].as_int(), w = x.shape[3].as_int();
  EMBER_CHECK(h && w && *h >= 1 && *w >= 1,
              op << ": the input's height and width must be known and >= 1, got " << x.str()
                 << " (the source positions depend on them)");
  return {*h, *w, a.size[0], a.size[1]};
}

std::vector<TensorType> infer_resize(const std::string& op, const std::vector<TensorType>& in,
                                     const OpAttrs& attrs) {
  check_arity(op, in, 1);
  const ResizeDims r = resize_dims(op, in[0], attrs_as<UpsampleAttrs>(attrs));
  return {TensorType{
      in[0].dtype, {in[0].shape[0], in[0].shape[1], Expr(r.oh), Expr(r.ow)}, in[0].device}};
}

// torch's nearest source index: floor(o * (float(in) / out)), at most in - 1.
Expr nearest_source(const Expr& o, int64_t in, int64_t out) {
  if (in == out) return o;
  if (out == 2 * in) return ir::floordiv(o, Expr(2));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const Expr f = ir::binary(BinaryOp::Mul, ir::cast(o, DType::float32),
                            ir::const_float(scale, DType::float32));
  return ir::min(ir::cast(ir::unary(UnaryOp::Floor, f), DType::int64), Expr(in - 1));
}

// The two source indices and their weights along one dimension (torch's linear
// interpolation: half-pixel centres clamped at 0 unless align_corners).
struct Linear {
  Expr i0, i1, l0, l1;
};

Linear linear_source(const Expr& o, int64_t in, int64_t out, bool align_corners, DType t) {
  // The scale is computed in t, as torch does: (in - 1) / (out - 1) or in / out.
  const int64_t num = align_corners ? in - 1 : in, den = align_corners ? out - 1 : out;
  double scale = 0.0;
  if (den > 0) {
    scale = t == DType::float32 ? static_cast<float>(num) / static_cast<float>(den)
                                : static_cast<double>(num) / static_cast<double>(den);
  }
  const Expr s = ir::const_float(scale, t);
  const Expr of = ir::cast(o, t);
  Expr src;
  if (align_corners) {
    src = ir::binary(BinaryOp::Mul, s, of);
  } else {
    const Expr half = ir::const_float(0.5, t);
    src = ir::binary(BinaryOp::Sub,
                     ir::binary(BinaryOp::Mul, s, ir::binary(BinaryOp::Add, of, half)), half);
    src = ir::binary(BinaryOp::Max, src, ir::const_float(0, t));
  }
  Linear l;
  l.i0 = ir::min(ir::cast(ir::unary(UnaryOp::Floor, src), DType::int64), Expr(in - 1));
  l.i1 = ir::min(l.i0 + Expr(1), Expr(in - 1));
  const Expr frac = ir::binary(BinaryOp::Sub, src, ir::cast(l.i0, t));
  l.l1 = ir::binary(BinaryOp::Min, ir::binary(BinaryOp::Max, frac, ir::const_float(0, t)),
                    ir::const_float(1, t));
  l.l0 = ir::binary(BinaryOp::Sub, ir::const_float(1, t), l.l1);
  return l;
}

// torch's bilinear value of x (input 0 of `load`) at output index idx [n, c, oh, ow]:
// (x[h0, w0] w0 + x[h0, w1] w1) h0 + (x[h1, w0] w0 + x[h1, w1] w1) h1, torch's order.
Expr bilinear_value(const TensorType& x, DType out, const UpsampleAttrs& at, const Index& idx,
                    const Loader& load) {
  const ResizeDims r = resize_dims("upsample_bilinear2d", x, at);
  const DType t = compute_dtype(x.dtype);
  const Linear lh = linear_source(idx[2], r.h, r.oh, at.align_corners, t);
  const Linear lw = linear_source(idx[3], r.w, r.ow, at.align_corners, t);
  auto at_ij = [&](const Expr& i, const Expr& j) {
    return to_compute(load(0, {idx[0], idx[1], i, j}));
  };
  auto row = [&](const Expr& i) {
    return ir::binary(BinaryOp::Add, ir::binary(BinaryOp::Mul, at_ij(i, lw.i0), lw.l0),
                      ir::binary(BinaryOp::Mul, at_ij(i, lw.i1), lw.l1));
  };
  const Expr v = ir::binary(BinaryOp::Add, ir::binary(BinaryOp::Mul, row(lh.i0), lh.l0),
                            ir::binary(BinaryOp::Mul, row(lh.i1), lh.l1));
  return cast_to(v, out);
}

// ---- arange / full ----

// The length of an arange with a symbolic bound: (stop - start) / step rounded up (away
// from zero for a negative step), taking the bounds as consistent with the step's sign.
Expr symbolic_arange_length(const ArangeAttrs& a) {
  const std::string op = "arange";
  EMBER_CHECK(a.step != 0 && a.step == std::floor(a.step) && std::isfinite(a.step),
              op << ": with bounds known only at run time the step must be a non-zero integer, "
                 << "got " << a.step);
  EMBER_CHECK(a.dtype != DType::boolean, op << ": dtype bool is not supported");
  for (const Expr* b : {&a.sym_start, &a.sym_stop}) {
    EMBER_CHECK(!b->defined() || b->dtype() == DType::int64,
                op << ": a symbolic bound must be an int64 size expression");
  }
  for (double v : {a.sym_start.defined() ? 0.0 : a.start, a.sym_stop.defined() ? 0.0 : a.stop}) {
    EMBER_CHECK(v == std::floor(v), op << ": with a bound known only at run time, the other "
                                          "bound must be an integer, got "
                                       << v);
  }
  const Expr start = a.sym_start.defined() ? a.sym_start : Expr(static_cast<int64_t>(a.start));
  const Expr stop = a.sym_stop.defined() ? a.sym_stop : Expr(static_cast<int64_t>(a.stop));
  const auto step = static_cast<int64_t>(a.step);
  const int64_t sign = step > 0 ? 1 : -1;
  Expr span = stop - start;
  if (step != 1) span = ir::floordiv(span + Expr(step - sign), Expr(step));
  return canonical_dim(span);
}

int64_t arange_length(const ArangeAttrs& a) {
  const std::string op = "arange";
  EMBER_CHECK(std::isfinite(a.start) && std::isfinite(a.stop) && std::isfinite(a.step),
              op << ": start, stop and step must be finite, got " << a.start << ", " << a.stop
                 << ", " << a.step);
  EMBER_CHECK(a.step != 0, op << ": step must not be 0");
  EMBER_CHECK((a.step > 0 && a.stop >= a.start) || (a.step < 0 && a.stop <= a.start),
              op << ": the bounds [" << a.start << ", " << a.stop
                 << ") are inconsistent with the sign of step " << a.step
                 << "; use a positive step when stop >= start and a negative one otherwise");
  EMBER_CHECK(a.dtype != DType::boolean, op << ": dtype bool is not supported");
  if (is_float(a.dtype)) {
    const double n = std::ceil((a.stop - a.start) / a.step);
    EMBER_CHECK(n < 9.2e18, op << ": [" << a.start << ", " << a.stop << ") in steps of " << a.step
                               << " has " << n << " elements, more than int64 can count");
    return static_cast<int64_t>(n);
  }
  for (double v : {a.start, a.stop, a.step}) {
    EMBER_CHECK(v == std::floor(v), op << ": start, stop and step must be integers for dtype "
                                       << dtype_name(a.dtype) << ", got " << a.start << ", "
                                       << a.stop << ", " << a.step
                                       << "; pass a floating-point dtype");
    EMBER_CHECK(std::fabs(v) < 9.2e18, op << ": " << v << " does not fit in int64");
  }
  const auto start = static_cast<int64_t>(a.start), stop = static_cast<int64_t>(a.stop),
             step = static_cast<int64_t>(a.step);
  const int64_t sign = step > 0 ? 1 : -1;
  int64_t span = 0;
  EMBER_CHECK(!__builtin_sub_overflow(stop, start, &span) &&
                  !__builtin_add_overflow(span, step - sign, &span),
              op << ": [" << a.start << ", " << a.stop << ") has more elements than int64 can "
                 << "count");
  return span / step;
}

// ---- clamp and activations ----

// x clamped to [lo, hi] (either may be undefined), in x's compute dtype.
Expr clamp_expr(const Expr& x, const Expr& lo, const Expr& hi) {
  Expr v = x;
  if (lo.defined()) v = ir::binary(BinaryOp::Max, v, lo);
  if (hi.defined()) v = ir::binary(BinaryOp::Min, v, hi);
  return v;
}

enum class Activation { Relu6, HardSigmoid, HardSwish };

OpDef activation_def(const std::string& name, const std::string& title, Activation act) {
  OpDef d = op_of(name, title, OpKind::Elementwise, 1);
  d.infer = [name, act](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity(name, in, 1);
    if (act == Activation::Relu6) {
      check_not_bool(name, in[0]);
    } else {
      check_float(name, in[0]);
    }
    return std::vector<TensorType>{in[0]};
  };
  // torch: relu6 = min(max(x, 0), 6); hardsigmoid = min(max(x + 3, 0), 6) / 6;
  // hardswish = x * min(max(x + 3, 0), 6) / 6.
  d.compute = [act](const ComputeArgs& a) {
    const Expr x = to_compute(a.load(0, a.idx));
    const DType t = x.dtype();
    auto c = [t](double v) { return ir::const_of(v, t); };
    if (act == Activation::Relu6) return cast_to(clamp_expr(x, c(0), c(6)), a.output.dtype);
    const Expr r6 = clamp_expr(ir::binary(BinaryOp::Add, x, c(3)), c(0), c(6));
    const Expr num = act == Activation::HardSwish ? ir::binary(BinaryOp::Mul, x, r6) : r6;
    return cast_to(ir::binary(BinaryOp::Div, num, c(6)), a.output.dtype);
  };
  return d;
}

}  // namespace

// ---- upsample ----

EMBER_REGISTER_OP {
  OpDef d = op_of("upsample_nearest2d", "UpsampleNearest2d", OpKind::Injective, 1);
  OpTraits traits = default_traits(OpKind::Injective);
  traits.layouts = LayoutRule::Keep;  // a gather of whole pixels: blocked in, blocked out
  d.declared_traits = traits;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    return infer_resize("upsample_nearest2d", in, a);
  };
  d.compute = [](const ComputeArgs& a) {
    const ResizeDims r =
        resize_dims("upsample_nearest2d", a.inputs[0], attrs_as<UpsampleAttrs>(a.attrs));
    return a.load(0, {a.idx[0], a.idx[1], nearest_source(a.idx[2], r.h, r.oh),
                      nearest_source(a.idx[3], r.w, r.ow)});
  };
  return d;
}

// A composite: float32 is one Call stage of ember_rt::lib::resize_bilinear
// (ember_rt/resize.h: source tables made once, input rows interpolated once for the output
// rows that read them, vectors along the output rows), which applies a fused epilogue to
// each output row; other dtypes are one Compute stage of bilinear_value. It keeps its
// input's layout (LayoutRule::Keep) where that is float32 blocked by the ISA's vector width:
// it then runs resize_bilinear_blocked_layout (a pixel's lanes as one vector, the epilogue
// per output pixel), so a UNet's decoder stays blocked through it. Other layouts are refused
// (the layout pass keeps the operator plain there).
EMBER_REGISTER_OP {
  OpDef d = op_of("upsample_bilinear2d", "UpsampleBilinear2d", OpKind::Composite, 1);
  OpTraits traits = default_traits(OpKind::Composite);
  traits.layouts = LayoutRule::Keep;
  d.declared_traits = traits;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    const std::string op = "upsample_bilinear2d";
    check_arity(op, in, 1);
    const TensorType& x = in[0];
    const int64_t lanes = isa_float_lanes(isa_from_env());
    EMBER_CHECK(
        x.layout.is_plain() || (x.dtype == DType::float32 && x.layout == Layout::blocked(lanes)),
        op << ": takes a plain input, or a float32 one in the channel-blocked layout of "
              "this ISA's vectors (nChw"
           << lanes << "c), got " << x.str() << "; convert it with to_layout");
    return infer_resize(op, in, a);
  };
  d.lower = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
               const OpAttrs& attrs) {
    const UpsampleAttrs& at = attrs_as<UpsampleAttrs>(attrs);
    const TensorType& x = in.at(0);
    const ResizeDims r = resize_dims("upsample_bilinear2d", x, at);
    ir::Task t;
    t.name = "upsample_bilinear2d";
    const int xb = t.add_buffer("x", x.dtype, x.shape, ir::BufferRole::Input, x.layout);
    const int ob =
        t.add_buffer("out", out.at(0).dtype, out[0].shape, ir::BufferRole::Output, out[0].layout);
    ir::Stage s;
    s.out = ob;
    s.axes = make_vars("u", 4);
    if (x.layout.kind == LayoutKind::Blocked) {  // float32, the ISA's block (infer)
      s.kind = ir::StageKind::Call;
      s.routine = "resize_bilinear_blocked_layout";
      s.call_inputs = {xb};
      s.call_outputs = {ob};
      s.call_takes_layouts = true;
      s.acc_dtype = DType::float32;
      s.params = {x.shape[0],
                  x.shape[1],
                  Expr(r.h),
                  Expr(r.w),
                  Expr(r.oh),
                  Expr(r.ow),
                  Expr(int64_t{at.align_corners}),
                  Expr(x.layout.block)};
      const int64_t b = x.layout.block;
      const Expr lanes = ir::floordiv(x.shape[1] + Expr(b - 1), Expr(b)) * Expr(b);
      s.flops = x.shape[0] * lanes * Expr(3 * r.ow * (r.oh + std::min(r.h, 2 * r.oh)));
    } else if (x.dtype == DType::float32) {
      s.kind = ir::StageKind::Call;
      s.routine = "resize_bilinear";
      s.call_inputs = {xb};
      s.call_outputs = {ob};
      s.acc_dtype = DType::float32;
      s.params = {x.shape[0] * x.shape[1],        Expr(r.h), Expr(r.w), Expr(r.oh), Expr(r.ow),
                  Expr(int64_t{at.align_corners})};
      // Two products and a sum per element of each input row interpolated along the width
      // (at most two per output row, each once), and of each output row.
      s.flops = x.shape[0] * x.shape[1] * Expr(3 * r.ow * (r.oh + std::min(r.h, 2 * r.oh)));
    } else {
      s.kind = ir::StageKind::Compute;
      s.value = bilinear_value(x, out[0].dtype, at, s.axes, buffer_loader(t, {xb}));
    }
    t.stages.push_back(std::move(s));
    return t;
  };
  return d;
}

// ---- embedding ----

EMBER_REGISTER_OP {
  OpDef d = op_of("embedding", "Embedding", OpKind::Injective, 2);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity("embedding", in, 2);
    const Device device = common_device("embedding", in);
    const TensorType& w = in[0];
    const TensorType& ids = in[1];
    EMBER_CHECK(w.rank() == 2,
                "embedding: the weight must be 2-d [num_embeddings, dim], got " << w.str());
    EMBER_CHECK(ids.dtype == DType::int32 || ids.dtype == DType::int64,
                "embedding: the indices must be int32 or int64, got "
                    << ids.str() << "; cast them with ember.ops.cast(indices, 'int64')");
    Shape s = ids.shape;
    s.push_back(w.shape[1]);
    return std::vector<TensorType>{TensorType{w.dtype, s, device}};
  };
  // out[..., d] = weight[indices[...], d]. Indices are not range-checked (torch raises).
  d.compute = [](const ComputeArgs& a) {
    const Index ids(a.idx.begin(), a.idx.end() - 1);
    const Expr row = cast_to(a.load(1, ids), DType::int64);
    return a.load(0, {row, a.idx.back()});
  };
  return d;
}

// ---- factories ----

EMBER_REGISTER_OP {
  OpDef d = op_of("arange", "Arange", OpKind::Injective, 0);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    check_arity("arange", in, 0);
    const ArangeAttrs& a = attrs_as<ArangeAttrs>(attrs);
    const bool symbolic = a.sym_start.defined() || a.sym_stop.defined();
    const Expr n = symbolic ? symbolic_arange_length(a) : Expr(arange_length(a));
    return std::vector<TensorType>{TensorType{a.dtype, {n}, Device::cpu()}};
  };
  // torch: start + step * i in double for floating-point dtypes, in int64 for integers.
  d.compute = [](const ComputeArgs& args) {
    const ArangeAttrs& a = attrs_as<ArangeAttrs>(args.attrs);
    const Expr i = args.idx[0];
    if (a.sym_start.defined() || a.sym_stop.defined()) {  // integer bounds and step
      const Expr start = a.sym_start.defined() ? a.sym_start : Expr(static_cast<int64_t>(a.start));
      return cast_to(start + Expr(static_cast<int64_t>(a.step)) * i, a.dtype);
    }
    if (!is_float(a.dtype)) {
      const Expr v = Expr(static_cast<int64_t>(a.start)) + Expr(static_cast<int64_t>(a.step)) * i;
      return cast_to(v, a.dtype);
    }
    const Expr v = ir::binary(BinaryOp::Add, ir::const_float(a.start, DType::float64),
                              ir::binary(BinaryOp::Mul, ir::const_float(a.step, DType::float64),
                                         ir::cast(i, DType::float64)));
    return cast_to(v, a.dtype);
  };
  return d;
}

EMBER_REGISTER_OP {
  OpDef d = op_of("full", "Full", OpKind::Injective, 0);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    check_arity("full", in, 0);
    const FullAttrs& a = attrs_as<FullAttrs>(attrs);
    for (const Expr& dim : a.shape) {
      auto v = dim.as_int();
      EMBER_CHECK(!v || *v >= 0, "full: the shape " << shape_str(a.shape)
                                                    << " has a negative size; sizes must be >= 0");
      EMBER_CHECK(v || dim.dtype() == DType::int64,
                  "full: the sizes of " << shape_str(a.shape) << " must be int64");
    }
    if (!is_float(a.dtype) && a.dtype != DType::boolean) {
      EMBER_CHECK(a.value == std::floor(a.value),
                  "full: the value " << a.value << " is not an integer but the dtype is "
                                     << dtype_name(a.dtype) << "; pass a floating-point dtype");
    }
    return std::vector<TensorType>{TensorType{a.dtype, canonical_shape(a.shape), Device::cpu()}};
  };
  d.compute = [](const ComputeArgs& args) {
    const FullAttrs& a = attrs_as<FullAttrs>(args.attrs);
    return ir::const_of(a.value, a.dtype);
  };
  return d;
}

// ---- random_uniform ----

// Floats uniform in [0, 1): element i (the row-major linear index) is Philox-4x32-10 drawn
// with key seed[0] and counter (i, seed[1]) (ember_rt/random.h). The seed tensor is a
// runtime input, so one compiled graph draws anew on every call; the values do not depend
// on how the kernel is split or fused.
EMBER_REGISTER_OP {
  OpDef d = op_of("random_uniform", "RandomUniform", OpKind::Injective, 1);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    check_arity("random_uniform", in, 1);
    const Shape& shape = attrs_as<ShapeAttrs>(attrs).shape;
    EMBER_CHECK(in[0].dtype == DType::int64 && in[0].rank() == 1 &&
                    in[0].shape[0].as_int().value_or(0) == 2,
                "random_uniform: the seed must be an int64 tensor of 2 elements (seed, offset), "
                "got "
                    << in[0].str());
    for (const Expr& dim : shape) {
      auto v = dim.as_int();
      EMBER_CHECK(!v || *v >= 0,
                  "random_uniform: the shape " << shape_str(shape) << " has a negative size");
    }
    return std::vector<TensorType>{
        TensorType{DType::float32, canonical_shape(shape), in[0].device}};
  };
  d.compute = [](const ComputeArgs& a) {
    const Expr seed = a.load(0, {Expr(0)});
    const Expr offset = a.load(0, {Expr(1)});
    return ir::philox_uniform(seed, offset, flat_offset(a.idx, a.output.shape));
  };
  return d;
}

// ---- tril / triu ----

namespace {

OpDef tri_def(const std::string& name, const std::string& title, bool upper) {
  OpDef d = op_of(name, title, OpKind::Injective, 1);
  d.infer = [name](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity(name, in, 1);
    EMBER_CHECK(in[0].rank() >= 2,
                name << ": expected a tensor with at least 2 dimensions, got " << in[0].str());
    return std::vector<TensorType>{in[0]};
  };
  // tril keeps x[..., i, j] where j - i <= k, triu where j - i >= k; the rest is 0.
  d.compute = [upper](const ComputeArgs& a) {
    const int64_t k = attrs_as<TriAttrs>(a.attrs).diagonal;
    const size_t r = a.idx.size();
    const Expr i = a.idx[r - 2], j = a.idx[r - 1];
    const Expr keep = ir::binary(upper ? BinaryOp::Ge : BinaryOp::Le, j, i + Expr(k));
    const Expr x = a.load(0, a.idx);
    return ir::select(keep, x, ir::const_of(0, x.dtype()));
  };
  return d;
}

}  // namespace

EMBER_REGISTER_OP { return tri_def("tril", "Tril", false); }
EMBER_REGISTER_OP { return tri_def("triu", "Triu", true); }

// ---- clamp and activations ----

EMBER_REGISTER_OP {
  OpDef d = op_of("clamp", "Clamp", OpKind::Elementwise, 1);
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& attrs) {
    check_arity("clamp", in, 1);
    check_not_bool("clamp", in[0]);
    const ClampAttrs& a = attrs_as<ClampAttrs>(attrs);
    EMBER_CHECK(a.min || a.max, "clamp: at least one of min and max must be given");
    for (const auto& b : {a.min, a.max}) {
      EMBER_CHECK(!b || is_float(in[0].dtype) || *b == std::floor(*b),
                  "clamp: the bound " << *b << " is not an integer but the input is " << in[0].str()
                                      << "; cast the input to a floating-point dtype first");
    }
    return std::vector<TensorType>{in[0]};
  };
  // torch: min(max(x, min), max), so min > max gives max everywhere.
  d.compute = [](const ComputeArgs& args) {
    const ClampAttrs& a = attrs_as<ClampAttrs>(args.attrs);
    const Expr x = to_compute(args.load(0, args.idx));
    const Expr lo = a.min ? ir::const_of(*a.min, x.dtype()) : Expr();
    const Expr hi = a.max ? ir::const_of(*a.max, x.dtype()) : Expr();
    return cast_to(clamp_expr(x, lo, hi), args.output.dtype);
  };
  return d;
}

EMBER_REGISTER_OP { return activation_def("relu6", "Relu6", Activation::Relu6); }
EMBER_REGISTER_OP { return activation_def("hardsigmoid", "HardSigmoid", Activation::HardSigmoid); }
EMBER_REGISTER_OP { return activation_def("hardswish", "HardSwish", Activation::HardSwish); }

}  // namespace ember::opdefs
