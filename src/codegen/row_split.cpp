// Splitting a stage's flat last axis into (row, column) so that the column
// vectorizes.
#include "row_split.h"

namespace ember::codegen {

bool split_row(const ir::Task& task, const ir::Stage& s, ir::Task* t, ir::Stage* out) {
  const Shape& shape = task.buffers[s.out].shape;
  if (shape.empty() || !s.stores.empty()) return false;  // one index stores every output
  const auto e = shape.back().as_int();
  const std::string lane = s.axes.back()->name;
  auto divides_lane = [&](const ir::Expr& x) -> int64_t {
    if (x.kind() != ir::ExprKind::Binary || !x->args[0].is_var() || x->args[0]->name != lane)
      return 0;
    auto op = static_cast<ir::BinaryOp>(x->op);
    auto c = x->args[1].as_int();
    return (op == ir::BinaryOp::FloorDiv || op == ir::BinaryOp::Mod) && c && *c > 1 ? *c : 0;
  };
  int64_t w = 0;
  ir::visit(s.value, [&](const ir::Expr& x) {
    if (!w) w = divides_lane(x);
  });
  if (!e || w == 0 || *e % w != 0 || *e == w) return false;
  const ir::Expr q = ir::var(lane + "_q"), r = ir::var(lane + "_r");
  ir::Expr v = ir::rewrite(s.value, [&](const ir::Expr& x) -> ir::Expr {
    if (divides_lane(x) != w) return {};
    return static_cast<ir::BinaryOp>(x->op) == ir::BinaryOp::FloorDiv ? q : r;
  });
  v = ir::substitute(v, {{lane, q * ir::Expr(w) + r}});
  *t = task;
  Shape split(shape.begin(), shape.end() - 1);
  split.push_back(ir::Expr(*e / w));
  split.push_back(ir::Expr(w));
  t->buffers[s.out].shape = split;
  *out = s;
  out->axes.back() = q;
  out->axes.push_back(r);
  out->value = v;
  return true;
}

}  // namespace ember::codegen
