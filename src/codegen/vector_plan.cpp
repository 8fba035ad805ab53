// Vector planning of one expression (plan_vector): which loads are contiguous, broadcast,
// strided or gathered along the lane, and what vector mode can print; the rest of the kernel
// plan is in kernel_plan.cpp.
#include <algorithm>
#include <functional>

#include "ember/codegen/kernel_plan.h"
#include "ember/ir/simplify.h"
#include "expr_emitter.h"
#include "kernel_writer.h"
#include "task_loads.h"

namespace ember::codegen {

using ir::BinaryOp;
using ir::Expr;
using ir::ExprKind;
using ir::Task;
using ir::UnaryOp;

bool has_load(const Expr& e) {
  bool found = false;
  ir::visit(e, [&](const Expr& x) { found |= x.kind() == ExprKind::Load; });
  return found;
}

// The buffer's flat offset at the load's indices.
Expr load_offset(const Task& task, const Expr& load) {
  NameScope none;
  return ExprEmitter(task, none).offset(load->buffer, load->args);
}

// "b0 (x)[i, j]"
std::string load_text(const Task& task, const Expr& load) {
  std::string s =
      "b" + std::to_string(load->buffer) + " (" + task.buffers.at(load->buffer).name + ")[";
  for (size_t i = 0; i < load->args.size(); ++i)
    s += (i ? ", " : "") + ir::to_string(load->args[i]);
  return s + "]";
}

// ember_rt::philox::kMaxLaneStride: the widest counter stride philox_uniform_lanes takes.
constexpr int64_t kMaxRandomLaneStride = int64_t{1} << 27;

bool is_lane_range(const Expr& cond, const std::string& lane) {
  if (cond.kind() != ExprKind::Binary || cond.dtype() != DType::boolean) return false;
  auto op = static_cast<BinaryOp>(cond->op);
  if (op == BinaryOp::And)
    return is_lane_range(cond->args[0], lane) && is_lane_range(cond->args[1], lane);
  if (op != BinaryOp::Lt && op != BinaryOp::Le && op != BinaryOp::Gt && op != BinaryOp::Ge)
    return false;
  for (const Expr& side : cond->args)
    if (is_float(side.dtype()) || side.dtype() == DType::boolean || has_load(side)) return false;
  return ir::linear_coefficient(ir::simplify_index(cond->args[0] - cond->args[1]), lane)
      .has_value();
}

bool is_whole_vector_select(const Expr& e, const std::string& lane) {
  if (e.kind() != ExprKind::Select || !has_load(e->args[2])) return false;
  const Expr& cond = e->args[0];
  if (!is_lane_range(cond, lane)) return false;
  bool uses_lane = false;
  ir::visit(cond,
            [&](const Expr& x) { uses_lane |= x.kind() == ExprKind::Var && x->name == lane; });
  return !uses_lane;
}

VectorPlan plan_vector(const Task& task, const Expr& e, const std::string& lane, bool strided) {
  VectorPlan plan;
  plan.lane = lane;
  plan.ok = true;
  auto fail = [&](const std::string& why) {
    if (plan.ok) plan.why_not = why;
    plan.ok = false;
  };
  auto type_of = [](DType t) { return std::string(dtype_name(t)); };
  auto record = [&](const Expr& x, bool widened, bool guarded) {
    LoadPlan lp;
    lp.load = x;
    lp.guarded = guarded;
    lp.widened = widened && is_low_precision(task.buffers.at(x->buffer).dtype);
    for (const Expr& i : x->args) lp.data_index |= has_load(i);
    auto c = ir::linear_coefficient(load_offset(task, x), lane);
    lp.access = !c        ? Access::Gathered
                : *c == 0 ? Access::Broadcast
                : *c == 1 ? Access::Contiguous
                          : Access::Strided;
    lp.stride = c.value_or(0);
    plan.loads.push_back(lp);
    return lp;
  };
  // widened: the operand of a widening cast; guarded: under a lane range. Every node is
  // visited (every load recorded); the first failure is the reason.
  std::function<void(const Expr&, bool, bool)> check = [&](const Expr& x, bool widened,
                                                           bool guarded) {
    DType t = x.dtype();
    switch (x.kind()) {
      case ExprKind::Const:
        if (t != DType::float32 && t != DType::boolean) fail("a constant of " + type_of(t));
        return;
      case ExprKind::Var:
        if (x->name == lane) fail("the vector axis " + lane + " is used as a value");
        if (t == DType::boolean) fail("a boolean variable");
        return;
      case ExprKind::Acc:
        if (t != DType::float32) fail("an accumulator of " + type_of(t));
        return;
      case ExprKind::Load: {
        const ir::Buffer& buf = task.buffers.at(x->buffer);
        const LoadPlan lp = record(x, widened, guarded);  // a copy: record() appends
        // Loads in its indices are read as scalars (an index per vector, or per lane).
        for (const Expr& i : x->args)
          ir::visit(i, [&](const Expr& z) {
            if (z.kind() == ExprKind::Load) record(z, false, guarded);
          });
        const std::string what = "the load of " + load_text(task, x);
        // bool loads are lane masks (vm::load), contiguous or broadcast only.
        if (!(buf.dtype == DType::float32 || buf.dtype == DType::boolean || lp.widened)) {
          fail(what + " reads " + type_of(buf.dtype));
          return;
        }
        // Guarded (masked) loads exist for float32 only, strided ones for float32 and bool.
        const int64_t c = lp.stride;
        const bool affine = lp.access != Access::Gathered;
        const bool plain = affine && (c == 0 || (c == 1 && !guarded));
        const bool special =
            affine &&
            ((buf.dtype == DType::float32 && ((c == 1 && guarded) || (c > 1 && strided))) ||
             (buf.dtype == DType::boolean && c > 1 && strided && !guarded));
        if (!plain && !special)
          fail(what + " is " + access_name(lp.access) +
               (affine && c != 1 ? " (stride " + std::to_string(c) + ")" : "") + " along " + lane);
        return;
      }
      case ExprKind::Random: {
        // The seed and offset are scalars (their loads read one element for every lane);
        // the counter runs along the lane with a constant stride.
        for (size_t i = 0; i < 2; ++i) {
          if (ir::uses_var(x->args[i], lane)) fail("a random seed that varies along " + lane);
          ir::visit(x->args[i], [&](const Expr& z) {
            if (z.kind() == ExprKind::Load) record(z, false, guarded);
          });
        }
        auto stride = ir::linear_coefficient(ir::simplify_index(x->args[2]), lane);
        if (!stride || *stride < 0 || *stride > kMaxRandomLaneStride)
          fail("a random counter that is not affine along " + lane + " with a stride in [0, 2^27]");
        return;
      }
      case ExprKind::Cast: {
        // float16/bfloat16 loads widened to float32; bool lane masks to 0/1 floats and back.
        const Expr& a = x->args[0];
        bool widen =
            t == DType::float32 && a.kind() == ExprKind::Load && is_low_precision(a.dtype());
        const bool mask = (t == DType::float32 && a.dtype() == DType::boolean) ||
                          (t == DType::boolean && a.dtype() == DType::float32);
        if (!widen && !mask) fail("a cast from " + type_of(a.dtype()) + " to " + type_of(t));
        check(a, widen, guarded);
        return;
      }
      case ExprKind::Unary: {
        // Float operators take and give float32 vectors; predicates (isnan) give lane masks.
        const DType in = x->args[0].dtype();
        if (static_cast<UnaryOp>(x->op) == UnaryOp::Not ? in != DType::boolean
                                                        : in != DType::float32)
          fail(std::string(ir::unary_name(static_cast<UnaryOp>(x->op))) + " of " + type_of(in));
      } break;
      case ExprKind::Binary: {
        auto op = static_cast<BinaryOp>(x->op);
        DType in = x->args[0].dtype();
        const bool logical = op == BinaryOp::And || op == BinaryOp::Or || op == BinaryOp::Xor;
        if (logical ? in != DType::boolean : in != DType::float32)
          fail(std::string(ir::binary_name(op)) + " of " + type_of(in));
        break;
      }
      case ExprKind::Select: {
        if (is_whole_vector_select(x, lane)) {
          // One branch per vector, computed whole: both may load.
          if (t != DType::float32) fail("a select of " + type_of(t));
          check(x->args[1], false, guarded);
          check(x->args[2], false, guarded);
          return;
        }
        if (is_lane_range(x->args[0], lane)) {
          // A condition on indices: its branch is computed on the lanes where it holds (the
          // other branch must not load: it would read those lanes too).
          if (t != DType::float32) fail("a select of " + type_of(t));
          if (has_load(x->args[2])) fail("a lane range whose other branch loads");
          check(x->args[1], false, true);
          check(x->args[2], false, guarded);
          return;
        }
        // Any other condition on indices guards its branches' loads (concat): they may be
        // out of bounds when not taken, so they must not be loaded as whole vectors.
        if (t != DType::float32) fail("a select of " + type_of(t));
        if (!has_load(x->args[0]) && (has_load(x->args[1]) || has_load(x->args[2])))
          fail("a condition on indices guards loads (concatenation)");
        break;
      }
    }
    for (const Expr& a : x->args) check(a, false, guarded);
  };
  check(e, false, false);
  if (plan.ok)
    for (const LoadPlan& lp : plan.loads) plan.max_stride = std::max(plan.max_stride, lp.stride);
  return plan;
}

}  // namespace ember::codegen
