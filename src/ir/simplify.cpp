// Linear-form simplification of index expressions, and re-indexing between views.
#include "ember/ir/simplify.h"

#include <map>
#include <unordered_map>

#include "ember/support/error.h"

namespace ember::ir {

namespace {

// sum_k coeff_k * term_k + constant, with terms keyed structurally.
struct LinearForm {
  std::vector<std::pair<Expr, int64_t>> terms;
  int64_t constant = 0;

  void add(const Expr& term, int64_t coeff) {
    if (coeff == 0) return;
    for (auto& [t, c] : terms) {
      if (equal(t, term)) {
        c += coeff;
        return;
      }
    }
    terms.push_back({term, coeff});
  }
};

bool is_op(const Expr& e, BinaryOp op) {
  return e.kind() == ExprKind::Binary && static_cast<BinaryOp>(e->op) == op;
}

void collect(const Expr& e, int64_t scale, LinearForm& f) {
  if (auto v = e.as_int()) {
    f.constant += scale * *v;
    return;
  }
  if (is_op(e, BinaryOp::Add)) {
    collect(e->args[0], scale, f);
    collect(e->args[1], scale, f);
    return;
  }
  if (is_op(e, BinaryOp::Sub)) {
    collect(e->args[0], scale, f);
    collect(e->args[1], -scale, f);
    return;
  }
  if (is_op(e, BinaryOp::Mul)) {
    if (auto c = e->args[1].as_int()) return collect(e->args[0], scale * *c, f);
    if (auto c = e->args[0].as_int()) return collect(e->args[1], scale * *c, f);
  }
  f.add(e, scale);
}

// (x // c) * (k * c) + (x % c) * k  ->  x * k, repeatedly.
bool merge_div_mod(LinearForm& f) {
  for (size_t i = 0; i < f.terms.size(); ++i) {
    const auto& [mt, mk] = f.terms[i];
    if (!is_op(mt, BinaryOp::Mod)) continue;
    auto c = mt->args[1].as_int();
    if (!c || *c <= 0) continue;
    for (size_t j = 0; j < f.terms.size(); ++j) {
      const auto& [dt, dk] = f.terms[j];
      if (!is_op(dt, BinaryOp::FloorDiv) || !equal(dt->args[0], mt->args[0])) continue;
      auto c2 = dt->args[1].as_int();
      if (!c2 || *c2 != *c || dk != mk * *c) continue;
      Expr x = mt->args[0];
      int64_t k = mk;
      f.terms.erase(f.terms.begin() + std::max(i, j));
      f.terms.erase(f.terms.begin() + std::min(i, j));
      LinearForm inner;
      collect(x, k, inner);
      for (auto& [t, co] : inner.terms) f.add(t, co);
      f.constant += inner.constant;
      return true;
    }
  }
  return false;
}

}  // namespace

Expr simplify_index(const Expr& e) {
  if (!e.defined() || e.dtype() != DType::int64) return e;
  LinearForm f;
  collect(e, 1, f);
  while (merge_div_mod(f)) {
  }
  Expr out;
  for (const auto& [t, c] : f.terms) {
    if (c == 0) continue;
    Expr term = c == 1 ? t : t * Expr(c);
    out = out.defined() ? out + term : term;
  }
  if (!out.defined()) return Expr(f.constant);
  return f.constant ? out + Expr(f.constant) : out;
}

Expr split_lane(const Expr& e, const std::string& lane, int64_t m) {
  if (!e.defined() || e.dtype() != DType::int64 || m <= 0) return {};
  LinearForm f;
  collect(e, 1, f);
  while (merge_div_mod(f)) {
  }
  if (f.constant % m != 0) return {};
  bool found = false;
  Expr q;
  for (const auto& [t, c] : f.terms) {
    if (c == 0) continue;
    if (t.kind() == ExprKind::Var && t->name == lane) {
      if (c != 1 || found) return {};
      found = true;
      continue;
    }
    if (c % m != 0) return {};
    bool uses_lane = false;
    visit(t, [&](const Expr& x) { uses_lane |= x.kind() == ExprKind::Var && x->name == lane; });
    if (uses_lane) return {};
    Expr term = c == m ? t : t * Expr(c / m);
    q = q.defined() ? q + term : term;
  }
  if (!found) return {};
  if (!q.defined()) return Expr(f.constant / m);
  return f.constant ? q + Expr(f.constant / m) : q;
}

std::vector<Expr> reindex(const std::vector<Expr>& idx, const Shape& from, const Shape& to) {
  EMBER_ASSERT(idx.size() == from.size(), "reindex: index rank");
  if (shape_equal(from, to)) return idx;
  std::vector<Expr> out(to.size());
  size_t i = 0, j = 0;
  // Walk both shapes, grouping dimensions until the products agree.
  while (i < from.size() || j < to.size()) {
    // Size-1 dimensions carry no index: skip them on both sides.
    if (j < to.size() && to[j].as_int() == 1) {
      out[j++] = Expr(0);
      continue;
    }
    if (i < from.size() && from[i].as_int() == 1) {
      ++i;
      continue;
    }
    size_t i0 = i, j0 = j;
    Expr pf = 1, pt = 1;
    if (i < from.size()) pf = from[i++];
    if (j < to.size()) pt = to[j++];
    while (!equal(simplify_index(pf), simplify_index(pt))) {
      auto a = pf.as_int(), b = pt.as_int();
      if (!a || !b) break;  // symbolic and different: give up on grouping
      if (*a < *b && i < from.size()) {
        pf = pf * from[i++];
      } else if (j < to.size()) {
        pt = pt * to[j++];
      } else if (i < from.size()) {
        pf = pf * from[i++];
      } else {
        break;
      }
    }
    if (!equal(simplify_index(pf), simplify_index(pt))) {
      // No grouping: go through the flat offset.
      Expr flat = 0;
      for (size_t d = 0; d < from.size(); ++d) flat = flat * from[d] + idx[d];
      for (size_t d = to.size(); d-- > 0;) {
        out[d] = simplify_index(d == 0 ? flat : mod(flat, to[d]));
        flat = floordiv(flat, to[d]);
      }
      return out;
    }
    // from[i0..i) and to[j0..j) cover the same elements.
    Expr flat = 0;
    for (size_t d = i0; d < i; ++d) flat = flat * from[d] + idx[d];
    for (size_t d = j; d-- > j0;) {
      out[d] = simplify_index(d == j0 ? flat : mod(flat, to[d]));
      flat = floordiv(flat, to[d]);
    }
  }
  return out;
}

}  // namespace ember::ir
