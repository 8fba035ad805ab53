// Splitting a stage's flat last axis into (row, column) so that the column
// vectorizes.
#include "row_split.h"

namespace ember::codegen {

namespace {

// c when x is lane // c or lane % c for a constant c > 1, else 0.
int64_t divides_lane(const ir::Expr& x, const std::string& lane) {
  if (x.kind() != ir::ExprKind::Binary || !x->args[0].is_var() || x->args[0]->name != lane)
    return 0;
  auto op = static_cast<ir::BinaryOp>(x->op);
  auto c = x->args[1].as_int();
  return (op == ir::BinaryOp::FloorDiv || op == ir::BinaryOp::Mod) && c && *c > 1 ? *c : 0;
}

}  // namespace

bool split_row(const ir::Task& task, const ir::Stage& s, ir::Task* t, ir::Stage* out) {
  const Shape& shape = task.buffers[s.out].shape;
  if (shape.empty() || !s.stores.empty()) return false;  // one index stores every output
  const auto e = shape.back().as_int();
  const std::string lane = s.axes.back()->name;
  auto divides_lane = [&](const ir::Expr& x) { return codegen::divides_lane(x, lane); };
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

bool split_phases(const ir::Task& task, const ir::Stage& s, int64_t phases,
                  std::vector<ir::Stage>* out) {
  const Shape& shape = task.buffers[s.out].shape;
  if (shape.empty() || phases < 2) return false;
  const auto e = shape.back().as_int();
  if (!e || *e % phases != 0) return false;
  const std::string lane = s.axes.back()->name;
  bool read = false;
  auto find = [&](const ir::Expr& x) { read |= divides_lane(x, lane) == phases; };
  ir::visit(s.value, find);
  for (const ir::Stage::Store& st : s.stores) ir::visit(st.value, find);
  if (!read) return false;
  const ir::Expr q = ir::var(lane + "_q");
  out->clear();
  for (int64_t r = 0; r < phases; ++r) {
    auto phase = [&](const ir::Expr& value) {
      ir::Expr v = ir::rewrite(value, [&](const ir::Expr& x) -> ir::Expr {
        if (divides_lane(x, lane) != phases) return {};
        return static_cast<ir::BinaryOp>(x->op) == ir::BinaryOp::FloorDiv
                   ? q
                   : ir::const_int(r, x.dtype());
      });
      return ir::substitute(v, {{lane, q * ir::Expr(phases) + ir::Expr(r)}});
    };
    ir::Stage ps = s;
    ps.axes.back() = q;
    ps.value = phase(s.value);
    for (ir::Stage::Store& st : ps.stores) st.value = phase(st.value);
    out->push_back(ps);
  }
  return true;
}

}  // namespace ember::codegen
