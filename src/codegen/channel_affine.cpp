// match_channel_affine (kernel_plan.h): whether a Call stage's epilogue is a per-channel
// scale and shift, plus a residual, followed by constant bounds, which its routine then
// applies in registers.
//
// The epilogue is read from the outside in: the select that zeroes the padding lanes of a
// partial channel block (physical.h adds it), then the bounds, then the affine map around
// Acc. Every form accepted computes what the per-segment epilogue computes, bit for bit:
// ExprEmitter prints Acc * scale + shift as the fma the routine does (kernels are compiled
// with -ffp-contract=off, so nothing else becomes an fma), a missing scale is fma(Acc, 1, shift) =
// Acc + shift, a missing shift fma(Acc, scale, -0) = Acc * scale (-0 keeps the sign of a zero
// product), a residual is added to that fma as the lambda adds it (addition commutes exactly), and
// a bound is max_c / min_c, which ExprEmitter prints for a max or min by a constant that is not NaN
// (and relu is max_c by 0).
#include <cmath>
#include <optional>
#include <sstream>
#include <vector>

#include "ember/codegen/kernel_plan.h"
#include "ember/ir/simplify.h"
#include "expr_emitter.h"

namespace ember::codegen {

using ir::BinaryOp;
using ir::Expr;
using ir::ExprKind;

namespace {

bool is_binary(const Expr& e, BinaryOp op) {
  return e.kind() == ExprKind::Binary && static_cast<BinaryOp>(e->op) == op;
}

bool is_relu(const Expr& e) {
  return e.kind() == ExprKind::Unary && static_cast<ir::UnaryOp>(e->op) == ir::UnaryOp::Relu &&
         e.dtype() == DType::float32;
}

bool is_float_const(const Expr& e) {
  return e.kind() == ExprKind::Const && e.dtype() == DType::float32;
}

// The buffer a float32 load reads at flat offset `at` of its memory (a plain buffer, not
// the stage's output), or -1.
int load_at(const ir::Task& task, const ir::Stage& s, const Expr& e, const Expr& at) {
  if (e.kind() != ExprKind::Load || e.dtype() != DType::float32 || e->buffer == s.out) return -1;
  const ir::Buffer& b = task.buffers.at(static_cast<size_t>(e->buffer));
  if (b.dtype != DType::float32 || !b.layout.is_plain() || b.shape.size() != e->args.size())
    return -1;
  Expr off = ir::const_int(0);
  for (size_t d = 0; d < b.shape.size(); ++d) off = off * b.shape[d] + e->args[d];
  return ir::equal(ir::simplify_index(off), at) ? e->buffer : -1;
}

// The buffer a float32 load reads at the output's element, or -1: a buffer of the output's
// memory [N, CB, pixels, b] read at the stage's axes, or one blocked as the output before
// its pixels were viewed as one axis, [N, CB, H, W, b] read at (pixel // W, pixel % W).
int element_of(const ir::Task& task, const ir::Stage& s, const Expr& e) {
  if (e.kind() != ExprKind::Load || e.dtype() != DType::float32 || e->buffer == s.out) return -1;
  const ir::Buffer& b = task.buffers.at(static_cast<size_t>(e->buffer));
  const Shape& o = task.buffers.at(static_cast<size_t>(s.out)).shape;
  if (b.dtype != DType::float32 || !b.layout.is_plain() || b.shape.size() != e->args.size())
    return -1;
  std::vector<Expr> want = s.axes;
  Shape shape = o;
  if (b.shape.size() == 5) {
    const Expr& w = b.shape[3];
    want = {s.axes[0], s.axes[1], ir::floordiv(s.axes[2], w), ir::mod(s.axes[2], w), s.axes[3]};
    shape = {o[0], o[1], b.shape[2], w, o[3]};
    const auto hw = ir::simplify_index(b.shape[2] * w).as_int(), pixels = o[2].as_int();
    if (!hw || !pixels || *hw != *pixels) return -1;
  }
  if (b.shape.size() != want.size()) return -1;
  for (size_t d = 0; d < want.size(); ++d) {
    const Expr extent = ir::simplify_index(shape[d]);
    if (!ir::equal(ir::simplify_index(b.shape[d]), extent)) return -1;
    const Expr at = ir::simplify_index(e->args[d]);
    // An axis of extent 1 is 0 (a batch of one image: its index was folded to 0).
    const bool one = extent.as_int() == 1 && at.as_int() == 0;
    if (!one && !ir::equal(at, ir::simplify_index(want[d]))) return -1;
  }
  return e->buffer;
}

// An operand of the map: a float32 constant, or a buffer read at flat offset `channel`.
bool operand(const ir::Task& task, const ir::Stage& s, const Expr& e, const Expr& channel,
             int* buffer, double* k) {
  if (is_float_const(e)) {
    *k = e->fval;
    return true;
  }
  *buffer = load_at(task, s, e, channel);
  return *buffer >= 0;
}

}  // namespace

std::optional<ChannelAffinePlan> match_channel_affine(const ir::Task& task, const ir::Stage& s) {
  if (!s.call_channel_affine || !s.epilogue.defined() || s.epilogue.dtype() != DType::float32 ||
      !s.stores.empty() || s.axes.size() != 4)
    return std::nullopt;
  const ir::Buffer& out = task.buffers.at(static_cast<size_t>(s.out));
  const auto block = out.shape.size() == 4 ? out.shape[3].as_int() : std::nullopt;
  if (out.dtype != DType::float32 || !block) return std::nullopt;
  const Expr channel = ir::simplify_index(s.axes[1] * Expr(*block) + s.axes[3]);
  ChannelAffinePlan p;
  Expr e = s.epilogue;
  // select(channel < C, v, 0): the padding lanes of a partial block.
  if (e.kind() == ExprKind::Select) {
    const Expr& cond = e->args[0];
    const Expr& zero = e->args[2];
    if (!is_binary(cond, BinaryOp::Lt) || !ir::equal(cond->args[0], channel) ||
        !cond->args[1].as_int() || !is_float_const(zero) || zero->fval != 0.0 ||
        std::signbit(zero->fval))
      return std::nullopt;
    p.channels = *cond->args[1].as_int();
    e = e->args[1];
  }
  // The bounds: min(max(v, lo), hi), either alone, or max(min(v, hi), lo) where lo < hi (the
  // same values, NaN and a value at a bound included); relu is max(v, 0).
  auto bound = [](const Expr& m, BinaryOp op, Expr* v) -> std::optional<double> {
    if (op == BinaryOp::Max && is_relu(m)) {
      *v = m->args[0];
      return 0.0;
    }
    if (!is_binary(m, op)) return std::nullopt;
    for (int side : {1, 0}) {
      if (is_float_const(m->args[side]) && !std::isnan(m->args[side]->fval)) {
        *v = m->args[1 - side];
        return m->args[side]->fval;
      }
    }
    return std::nullopt;
  };
  Expr inner;
  if ((p.hi = bound(e, BinaryOp::Min, &inner))) {
    e = inner;
    if ((p.lo = bound(e, BinaryOp::Max, &inner))) e = inner;
  } else if ((p.lo = bound(e, BinaryOp::Max, &inner))) {
    e = inner;
    if ((p.hi = bound(e, BinaryOp::Min, &inner))) {
      if (!(*p.lo < *p.hi)) return std::nullopt;
      e = inner;
    }
  }
  // Acc, Acc * scale, Acc + shift, Acc * scale + shift (either operand order).
  auto product = [&](const Expr& m, ChannelAffinePlan* q) {
    if (m.kind() == ExprKind::Acc) return true;
    if (!is_binary(m, BinaryOp::Mul)) return false;
    for (int side : {1, 0})
      if (m->args[1 - side].kind() == ExprKind::Acc &&
          operand(task, s, m->args[side], channel, &q->scale, &q->scale_k))
        return true;
    return false;
  };
  auto affine = [&](const Expr& m, ChannelAffinePlan* q) {
    if (is_binary(m, BinaryOp::Add)) {
      for (int side : {1, 0}) {
        ChannelAffinePlan t = *q;
        if (product(m->args[1 - side], &t) &&
            operand(task, s, m->args[side], channel, &t.shift, &t.shift_k)) {
          *q = t;
          return true;
        }
      }
      return false;
    }
    return m.dtype() == DType::float32 && product(m, q);
  };
  if (affine(e, &p)) return p;
  // A residual added to the map: a buffer read at the output's element.
  if (!is_binary(e, BinaryOp::Add)) return std::nullopt;
  for (int side : {1, 0}) {
    ChannelAffinePlan t = p;
    t.residual = element_of(task, s, e->args[side]);
    if (t.residual >= 0 && affine(e->args[1 - side], &t)) return t;
  }
  return std::nullopt;
}

std::string ChannelAffinePlan::str(const ir::Task& task) const {
  auto operand = [&](int b, double k) {
    return b >= 0 ? "b" + std::to_string(b) + " (" + task.buffers.at(static_cast<size_t>(b)).name +
                        ")[channel]"
                  : float_literal(k, true);
  };
  std::ostringstream os;
  os << "fma(acc, " << operand(scale, scale_k) << ", " << operand(shift, shift_k) << ")";
  if (residual >= 0)
    os << " + b" << residual << " (" << task.buffers.at(static_cast<size_t>(residual)).name
       << ")[output]";
  if (lo) os << ", then max " << float_literal(*lo, true);
  if (hi) os << ", then min " << float_literal(*hi, true);
  if (channels >= 0) os << ", 0 from channel " << channels;
  return os.str();
}

}  // namespace ember::codegen
