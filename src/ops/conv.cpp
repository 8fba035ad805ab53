// Convolutions: conv2d (x [N, C, H, W], weight [O, C/groups, KH, KW]) and conv1d (x [N, C, L],
// weight [O, C/groups, K]), without bias (a separate add, fused into the epilogue).
//
// conv1d is conv2d over a height of 1: one geometry (ConvGeom, conv.h) serves both, and only
// the indices differ. Both are Composite, lowered by one of the algorithms of conv_algos()
// (conv_algos.cpp: each algorithm's rule and lowering), which the choose_algorithms pass
// names in the node's attributes (ConvAttrs::algo). This file has the geometry, the shape
// rules, the generic reduction, the choice and the operators' definitions.
#include "conv.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "ember/support/cpu.h"
#include "ember/support/error.h"

namespace ember::opdefs {

using ir::BinaryOp;

namespace {

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

}  // namespace

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

Layout conv_block_layout() { return Layout::blocked(isa_float_lanes(isa_from_env())); }

bool reads_plain(const ConvAlgo& algo, const ConvGeom& g) {
  const auto c = g.c.as_int();
  return algo.reads_plain_few_channels && c && *c < conv_block_layout().block;
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

namespace {

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

const ConvAlgo& conv_algo_named(const std::string& op, const std::string& name);

// EMBER_CONV_ALGORITHM: algorithms the rules take wherever they apply, a comma-separated list
// in order of preference (empty: unset); the name `plain` keeps every convolution on the
// plain layout instead (no blocked algorithm, the rules' choice among the others).
struct ConvPreference {
  std::vector<const ConvAlgo*> algos;
  bool plain = false;
};

ConvPreference conv_preference() {
  ConvPreference out;
  const char* env = std::getenv("EMBER_CONV_ALGORITHM");
  if (env == nullptr) return out;
  const std::string names = env;
  for (size_t at = 0; at <= names.size();) {
    size_t end = names.find(',', at);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(at, end - at);
    if (name == "plain")
      out.plain = true;
    else if (!name.empty())
      out.algos.push_back(&conv_algo_named("EMBER_CONV_ALGORITHM", name));
    at = end + 1;
  }
  EMBER_CHECK(!out.plain || std::none_of(out.algos.begin(), out.algos.end(),
                                         [](const ConvAlgo* a) { return a->blocked; }),
              "EMBER_CONV_ALGORITHM='" << names << "' names `plain` and a blocked algorithm");
  return out;
}

// The rules' choice: the first algorithm EMBER_CONV_ALGORITHM names that applies; where none
// does and one of them is blocked, the first blocked algorithm that applies (so that
// `blocked` keeps a chain's depthwise convolutions blocked too: `blocked,depthwise` runs
// them plain); else the first algorithm that applies and wins (not a blocked one under
// `plain`). `in_place`: only algorithms that run as the convolution itself (a node lowered
// without the choose_algorithms pass, which rewrites into the others' operators).
const ConvAlgo& choose_conv_algo(const ConvProblem& p, bool in_place = false) {
  const ConvPreference preferred = conv_preference();
  auto takes = [&](const ConvAlgo& a) { return a.applies(p) && !(in_place && a.op != nullptr); };
  for (const ConvAlgo* a : preferred.algos)
    if (takes(*a)) return *a;
  for (const ConvAlgo* a : preferred.algos)
    if (a->blocked)
      for (const ConvAlgo& b : conv_algos())
        if (b.blocked && takes(b)) return b;
  for (const ConvAlgo& a : conv_algos())
    if (!(a.blocked && preferred.plain) && takes(a) && (a.wins == nullptr || a.wins(p))) return a;
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
  if (a.algo.empty()) return choose_conv_algo({g, dtype, false}, /*in_place=*/true);
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

// The choose_algorithm hook of conv1d / conv2d (AlgorithmChoice): the rules' choice, then
// the other algorithms that apply, in conv_algos() order (none where the rules' choice
// dominates them).
std::vector<AlgorithmChoice> choose_conv(const std::string& op, int spatial,
                                         const std::vector<TensorType>& in, const OpAttrs& attrs,
                                         const std::vector<bool>& constant) {
  const ConvAttrs& a = attrs_as<ConvAttrs>(attrs);
  if (!a.algo.empty()) return {};
  const ConvGeom g = conv_geom(op, spatial, in.at(0), in.at(1), a);
  const ConvProblem p{g, in[0].dtype, constant.at(1)};
  const ConvAlgo& rule = choose_conv_algo(p);
  auto choice = [&](const ConvAlgo& algo) {
    AlgorithmChoice c;
    c.name = algo.name;
    c.op = &op_def(algo.op ? algo.op : op);
    ConvAttrs chosen = a;
    chosen.algo = algo.name;
    c.attrs = chosen;
    c.prepare = {nullptr, algo.prepare_weight ? &op_def(algo.prepare_weight) : nullptr};
    if (algo.blocked) {
      chosen.out_channels = g.o;
      c.attrs = chosen;
      c.layouts = {conv_block_layout(), Layout::plain()};
      c.reads_plain = {reads_plain(algo, g)};
    }
    return c;
  };
  std::vector<AlgorithmChoice> out = {choice(rule)};
  if (rule.dominates) return out;
  const bool plain = conv_preference().plain;
  for (const ConvAlgo& algo : conv_algos())
    if (&algo != &rule && algo.applies(p) && !(algo.blocked && plain)) out.push_back(choice(algo));
  return out;
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
// G^T)[i, j]; one Call stage, or, when w is a constant, a prepared constant made once at
// build time (and again at load from a saved model's w).
OpDef winograd_filter_def() {
  OpDef d;
  d.name = "winograd_filter";
  d.title = "WinogradFilter";
  d.kind = OpKind::Composite;
  OpTraits traits;
  traits.anchor = true;
  traits.epilogue = EpilogueRule::None;
  d.declared_traits = traits;
  d.constant_preparation = Preparation::WinogradFilter;
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

// conv2d_blocked: x [N, C, H, W] in the channel-blocked layout (block b), or plain (a
// network's first convolution on its few-channel image: ConvAlgo::reads_plain_few_channels),
// and wp [ceil(O / b), ceil(C / b), KH, KW, b, b], the weight prepared by conv_blocked_filter;
// the attributes are conv2d's with algo 'blocked' and out_channels O. The output is blocked.
// conv1d runs as it too: x [N, C, L] (nCw<b>c, the memory of [N, C, 1, L] in nChw<b>c), a
// weight prepared with KH = 1, and conv1d's attributes; the output is [N, O, OL].
ConvGeom blocked_geom(const std::vector<TensorType>& in, const ConvAttrs& a) {
  const std::string op = "conv2d_blocked";
  check_arity(op, in, 2);
  const TensorType& x = in[0];
  const TensorType& wp = in[1];
  bool known = wp.rank() == 6;
  for (size_t d = 0; known && d < 6; ++d) known = wp.shape[d].as_int().has_value();
  const int64_t b = known ? *wp.shape[4].as_int() : 0;
  const bool x_ok =
      x.layout.is_plain() || (x.layout.kind == LayoutKind::Blocked && x.layout.block == b);
  const int spatial = static_cast<int>(x.rank()) - 2;
  EMBER_CHECK(b > 0 && x_ok && (spatial == 1 || spatial == 2) && x.shape[1].as_int() &&
                  is_const(wp.shape[5], b) && (spatial == 2 || is_const(wp.shape[2], 1)) &&
                  a.out_channels > 0 && a.algo == "blocked",
              op << ": takes an input [N, C, H, W] (or [N, C, L]) in the channel-blocked layout "
                    "of the weight's block (nChw<b>c, nCw<b>c) or plain, the weight prepared by "
                    "conv_blocked_filter [ceil(O / b), ceil(C / b), KH, KW, b, b] (KH = 1 for "
                    "[N, C, L]), algo 'blocked' and out_channels O; got "
                 << x.str() << ", " << wp.str() << ", algo '" << a.algo << "', out_channels "
                 << a.out_channels);
  const int64_t c = *x.shape[1].as_int();
  EMBER_CHECK(
      is_const(wp.shape[0], (a.out_channels + b - 1) / b) && is_const(wp.shape[1], (c + b - 1) / b),
      op << ": the prepared weight " << wp.str() << " does not hold " << a.out_channels
         << " output and " << c << " input channels in blocks of " << b);
  Shape ws = {Expr(a.out_channels), Expr(c), wp.shape[2], wp.shape[3]};
  if (spatial == 1) ws.erase(ws.begin() + 2);
  const TensorType w{wp.dtype, ws, wp.device};
  TensorType xp = x;
  xp.layout = Layout::plain();
  const ConvGeom g = conv_geom(op, spatial, xp, w, a);
  EMBER_CHECK(
      g.groups == 1 && x.dtype == DType::float32,
      op << ": takes a float32 input and groups 1, got " << x.str() << " and groups " << g.groups);
  return g;
}

OpDef conv2d_blocked_def() {
  OpDef d;
  d.name = "conv2d_blocked";
  d.title = "Conv2dBlocked";
  d.kind = OpKind::Composite;
  OpTraits traits = default_traits(OpKind::Composite);  // its routine applies the epilogue
  traits.layouts = LayoutRule::Own;
  d.declared_traits = traits;
  d.num_inputs = 2;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    const ConvGeom g = blocked_geom(in, attrs_as<ConvAttrs>(a));
    Shape shape = {g.n, Expr(g.o), g.oh, g.ow};
    if (g.spatial == 1) shape.erase(shape.begin() + 2);
    TensorType out{in[0].dtype, shape, common_device("conv2d_blocked", in)};
    out.layout = Layout::blocked(*in[1].shape[4].as_int());
    return std::vector<TensorType>{out};
  };
  d.lower = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
               const OpAttrs& a) {
    ir::Task t = lower_blocked(blocked_geom(in, attrs_as<ConvAttrs>(a)), in.at(0), out.at(0));
    t.name = "conv2d_blocked";
    return t;
  };
  return d;
}

// conv_blocked_filter: w [O, C, KH, KW] (float32) -> wp [ceil(O / b), ceil(C / b), KH, KW, b,
// b] in ember_rt::lib::conv_blocked_prepare's order (zero past O and C), b the channel block
// of this ISA (conv_block_layout): one Call stage, or, when w is a constant, a prepared
// constant made once at build time (and again at load from a saved model's w). A conv1d
// weight [O, C, K] is one of KH = 1.
OpDef conv_blocked_filter_def() {
  OpDef d;
  d.name = "conv_blocked_filter";
  d.title = "ConvBlockedFilter";
  d.kind = OpKind::Composite;
  OpTraits traits;
  traits.anchor = true;
  traits.epilogue = EpilogueRule::None;
  d.declared_traits = traits;
  d.constant_preparation = Preparation::ConvBlockedFilter;
  d.num_inputs = 1;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs&) {
    const std::string op = "conv_blocked_filter";
    check_arity(op, in, 1);
    const TensorType& w = in[0];
    bool known = w.rank() == 3 || w.rank() == 4;
    for (size_t k = 0; known && k < static_cast<size_t>(w.rank()); ++k)
      known = w.shape[k].as_int().has_value();
    EMBER_CHECK(w.dtype == DType::float32 && known,
                op << ": expected a float32 weight [O, C, KH, KW] or [O, C, K] of known size, got "
                   << w.str());
    const int64_t b = conv_block_layout().block;
    auto blocks = [&](size_t k) { return Expr((*w.shape[k].as_int() + b - 1) / b); };
    const Expr kh = w.rank() == 4 ? w.shape[2] : Expr(1);
    return std::vector<TensorType>{TensorType{
        w.dtype, {blocks(0), blocks(1), kh, w.shape.back(), Expr(b), Expr(b)}, w.device}};
  };
  d.lower = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
               const OpAttrs&) {
    ir::Task t;
    t.name = "conv_blocked_filter";
    const Shape& w = in.at(0).shape;
    const int wb = t.add_buffer("w", in[0].dtype, w, ir::BufferRole::Input);
    const int pb = t.add_buffer("wp", out.at(0).dtype, out[0].shape, ir::BufferRole::Output);
    const Shape& wp = out.at(0).shape;  // [OB, CB, KH, KW, b, b]
    t.stages.push_back(
        call_stage("conv_blocked_filter", {wb}, {pb}, {w[0], w[1], wp[2], wp[3], wp[5]}, Expr(0)));
    return t;
  };
  return d;
}

// conv2d_depthwise_blocked: x [N, C, H, W] in the channel-blocked layout (block b) and the
// depthwise weight [C, 1, KH, KW] as it is (groups C, channel multiplier 1); the attributes
// are conv2d's with algo 'depthwise_blocked'. The output is blocked as x is.
ConvGeom depthwise_blocked_geom(const std::vector<TensorType>& in, const ConvAttrs& a) {
  const std::string op = "conv2d_depthwise_blocked";
  check_arity(op, in, 2);
  const TensorType& x = in[0];
  EMBER_CHECK(x.layout.kind == LayoutKind::Blocked && x.rank() == 4 && x.shape[1].as_int() &&
                  in[1].layout.is_plain() && a.algo == "depthwise_blocked",
              op << ": takes an input [N, C, H, W] in a channel-blocked layout (nChw<b>c), a "
                    "plain weight [C, 1, KH, KW] and algo 'depthwise_blocked'; got "
                 << x.str() << ", " << in[1].str() << ", algo '" << a.algo << "'");
  TensorType xp = x;
  xp.layout = Layout::plain();
  const ConvGeom g = conv_geom(op, 2, xp, in[1], a);
  EMBER_CHECK(x.dtype == DType::float32 && g.cg == 1 && g.groups == g.o,
              op << ": takes a float32 input and a depthwise weight with channel multiplier 1 "
                    "(groups == C == O), got "
                 << x.str() << ", weight " << in[1].str() << " and groups " << g.groups);
  return g;
}

OpDef conv2d_depthwise_blocked_def() {
  OpDef d;
  d.name = "conv2d_depthwise_blocked";
  d.title = "Conv2dDepthwiseBlocked";
  d.kind = OpKind::Composite;
  OpTraits traits = default_traits(OpKind::Composite);  // its routine applies the epilogue
  traits.layouts = LayoutRule::Own;
  d.declared_traits = traits;
  d.num_inputs = 2;
  d.infer = [](const std::vector<TensorType>& in, const OpAttrs& a) {
    const ConvGeom g = depthwise_blocked_geom(in, attrs_as<ConvAttrs>(a));
    TensorType out{
        in[0].dtype, {g.n, Expr(g.o), g.oh, g.ow}, common_device("conv2d_depthwise_blocked", in)};
    out.layout = in[0].layout;
    return std::vector<TensorType>{out};
  };
  d.lower = [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
               const OpAttrs& a) {
    ir::Task t = lower_depthwise_blocked(depthwise_blocked_geom(in, attrs_as<ConvAttrs>(a)),
                                         in.at(0), out.at(0));
    t.name = "conv2d_depthwise_blocked";
    return t;
  };
  return d;
}

}  // namespace

ConvAlgoOps conv_algo_ops(const std::string& op, const std::string& algo, int64_t o) {
  const ConvAlgo& a = conv_algo_named(op, algo);
  ConvAlgoOps r{a.op ? a.op : op, a.prepare_weight ? a.prepare_weight : "", {}, 0};
  if (a.blocked) {
    r.layout = conv_block_layout();
    r.out_channels = o;
  }
  return r;
}

EMBER_REGISTER_OP { return conv_def("conv2d", "Conv2d", 2); }
EMBER_REGISTER_OP { return conv_def("conv1d", "Conv1d", 1); }
EMBER_REGISTER_OP { return conv2d_winograd_def(); }
EMBER_REGISTER_OP { return winograd_filter_def(); }
EMBER_REGISTER_OP { return conv2d_blocked_def(); }
EMBER_REGISTER_OP { return conv_blocked_filter_def(); }
EMBER_REGISTER_OP { return conv2d_depthwise_blocked_def(); }

}  // namespace ember::opdefs