// Reshaping a stage's axes so that it vectorizes (row_split.h).
#include "row_split.h"

#include <map>

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

namespace {

// Whether two extents are the same number (or the same expression).
bool same_extent(const ir::Expr& x, const ir::Expr& y) {
  const auto a = x.as_int(), b = y.as_int();
  return a && b ? *a == *b : ir::equal(x, y);
}

// Whether index x is v + c (sign 1) or c - v (sign -1) for the variable v alone.
bool affine_in(const ir::Expr& x, const ir::Expr& v, int64_t sign, int64_t c) {
  const std::vector<std::string> vars = ir::free_vars(x);
  return vars.size() == 1 && vars[0] == v->name && ir::linear_coefficient(x, v->name) == sign &&
         ir::eval_int(x, {{v->name, 0}}) == c;
}

// How a load reads the stage's last two axes a, b (of extents ea, eb).
enum class PairRead { Neither, InOrder, Reversed, Other };

PairRead pair_read(const ir::Task& task, const ir::Expr& load, const ir::Expr& a, const ir::Expr& b,
                   const ir::Expr& ea, const ir::Expr& eb) {
  const auto& args = load->args;
  const size_t k = args.size();
  bool used = false;
  for (const ir::Expr& x : args) used |= ir::uses_var(x, a->name) || ir::uses_var(x, b->name);
  if (!used) return PairRead::Neither;
  if (k < 2) return PairRead::Other;
  for (size_t d = 0; d + 2 < k; ++d)
    if (ir::uses_var(args[d], a->name) || ir::uses_var(args[d], b->name)) return PairRead::Other;
  const Shape& shape = task.buffers[load->buffer].shape;
  if (shape.size() != k || !same_extent(shape[k - 1], eb)) return PairRead::Other;
  if (affine_in(args[k - 2], a, 1, 0) && affine_in(args[k - 1], b, 1, 0)) return PairRead::InOrder;
  // [E1 - 1 - a, E2 - 1 - b] of the whole buffer's last two dimensions (a flip of both)
  const auto e1 = ea.as_int(), e2 = eb.as_int();
  if (e1 && e2 && same_extent(shape[k - 2], ea) && affine_in(args[k - 2], a, -1, *e1 - 1) &&
      affine_in(args[k - 1], b, -1, *e2 - 1))
    return PairRead::Reversed;
  return PairRead::Other;
}

// One merge of the last two axes (merge_last_axes); false when they cannot be.
bool merge_once(ir::Task* t, ir::Stage* s, int serial) {
  const size_t n = s->axes.size();
  if (n < 2) return false;
  const ir::Expr a = s->axes[n - 2], b = s->axes[n - 1];
  const Shape& out_shape = t->buffers[s->out].shape;
  if (out_shape.size() != n) return false;
  const ir::Expr ea = out_shape[n - 2], eb = out_shape[n - 1];
  // Every buffer read at the pair is read so by each of its loads, in one way.
  std::map<int, PairRead> reads;
  bool ok = true;
  auto check = [&](const ir::Expr& x) {
    if (x.kind() != ir::ExprKind::Load) return;
    const PairRead r = pair_read(*t, x, a, b, ea, eb);
    auto [it, fresh] = reads.emplace(x->buffer, r);
    ok &= r != PairRead::Other && (fresh || it->second == r);
  };
  ir::visit(s->value, check);
  for (const ir::Stage::Store& st : s->stores) ir::visit(st.value, check);
  // The output and the further stores are written at the axes: their buffers too.
  ok &= !reads.count(s->out) || reads[s->out] == PairRead::InOrder;
  for (const ir::Stage::Store& st : s->stores) {
    ok &= t->buffers[st.buffer].shape.size() == n &&
          same_extent(t->buffers[st.buffer].shape[n - 1], eb) &&
          (!reads.count(st.buffer) || reads[st.buffer] == PairRead::InOrder);
  }
  if (!ok) return false;
  const ir::Expr m = ir::var("__m" + std::to_string(serial) + "_" + b->name);
  auto merge_shape = [&](int buf) {
    Shape& shape = t->buffers[buf].shape;
    const ir::Expr merged = shape[shape.size() - 2] * shape.back();
    shape.pop_back();
    shape.back() = merged;
  };
  ir::Task before = *t;
  auto rewrite = [&](const ir::Expr& e) {
    return ir::rewrite(e, [&](const ir::Expr& x) -> ir::Expr {
      if (x.kind() != ir::ExprKind::Load) return {};
      const PairRead r = pair_read(before, x, a, b, ea, eb);
      if (r == PairRead::Neither) return {};
      std::vector<ir::Expr> args(x->args.begin(), x->args.end() - 2);
      args.push_back(r == PairRead::InOrder ? m : ir::Expr(*ea.as_int() * *eb.as_int() - 1) - m);
      return ir::load(x->buffer, x.dtype(), args);
    });
  };
  ir::Stage merged = *s;
  merged.axes.pop_back();
  merged.axes.back() = m;
  merged.value = rewrite(s->value);
  for (ir::Stage::Store& st : merged.stores) st.value = rewrite(st.value);
  // No use of the pair is left outside the loads (an iota's i * E2 + j would be).
  bool left = ir::uses_var(merged.value, a->name) || ir::uses_var(merged.value, b->name);
  for (const ir::Stage::Store& st : merged.stores)
    left |= ir::uses_var(st.value, a->name) || ir::uses_var(st.value, b->name);
  if (left) return false;
  for (const auto& [buf, r] : reads)
    if (r != PairRead::Neither && buf != s->out) merge_shape(buf);
  merge_shape(s->out);
  for (const ir::Stage::Store& st : s->stores)
    if (!reads.count(st.buffer)) merge_shape(st.buffer);  // (else merged as read above)
  *s = merged;
  return true;
}

}  // namespace

int merge_last_axes(const ir::Task& task, const ir::Stage& s, ir::Task* t, ir::Stage* out) {
  *t = task;
  *out = s;
  int merges = 0;
  while (merge_once(t, out, merges)) ++merges;
  return merges;
}

}  // namespace ember::codegen
