// Symbolic dimensions as polynomials: a canonical form, so that two spellings of the same
// size ("s1 * s0", "(s0 * s1)", "((s0 + 1) - 1) * s1") are one Expr, and the comparison of
// element counts in reshape.
//
// A dimension is a sum of terms coef * atom * atom * ...; atoms are symbols, and
// everything that is not a polynomial (min, max, %, // that does not divide) with its
// arguments in canonical form. Every step is an identity for all values of the symbols: a
// floor division is never taken as exact unless its divisor divides every coefficient
// ((s - 2) // 2 stays an atom, since it is not s / 2 - 1 for an odd s). Terms and atoms are ordered
// by their text, so the result does not depend on the order the expression was built in.
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.h"

namespace ember::opdefs {
namespace {

// A rational coefficient num / den (den > 0, reduced); den > 1 only in a quotient that
// solve_numel then rejects.
struct Coef {
  int64_t num = 0, den = 1;
};

Coef reduce(int64_t n, int64_t d) {
  if (d < 0) n = -n, d = -d;
  const int64_t g = std::gcd(n < 0 ? -n : n, d);
  return g > 1 ? Coef{n / g, d / g} : Coef{n, d};
}

Coef add(Coef a, Coef b) { return reduce(a.num * b.den + b.num * a.den, a.den * b.den); }
Coef mul(Coef a, Coef b) { return reduce(a.num * b.num, a.den * b.den); }

using Key = std::vector<std::string>;  // the sorted texts of a term's atoms

struct Poly {
  std::map<Key, Coef> terms;
  std::map<std::string, Expr> atoms;  // text -> atom

  void add_term(const Key& k, Coef c) {
    Coef& t = terms[k];
    t = add(t, c);
    if (t.num == 0) terms.erase(k);
  }
  std::optional<int64_t> constant() const {
    if (terms.empty()) return 0;
    if (terms.size() == 1 && terms.begin()->first.empty() && terms.begin()->second.den == 1)
      return terms.begin()->second.num;
    return std::nullopt;
  }
};

Poly poly_of(const Expr& e);

Expr expr_of(const Poly& p) {
  Expr out;
  Expr constant(0);
  for (const auto& [key, c] : p.terms) {
    if (key.empty()) {
      constant = Expr(c.num);
      continue;
    }
    Expr term;
    for (const std::string& a : key) term = term.defined() ? term * p.atoms.at(a) : p.atoms.at(a);
    const int64_t mag = c.num < 0 ? -c.num : c.num;
    if (mag != 1) term = Expr(mag) * term;
    if (!out.defined()) {
      out = c.num < 0 ? Expr(0) - term : term;
    } else {
      out = c.num < 0 ? out - term : out + term;
    }
  }
  if (!out.defined()) return constant;
  if (auto c = constant.as_int(); c && *c != 0) return *c < 0 ? out - Expr(-*c) : out + constant;
  return out;
}

Poly atom(const Expr& e) {
  Poly p;
  const std::string k = ir::to_string(e);
  p.atoms[k] = e;
  p.terms[{k}] = Coef{1, 1};
  return p;
}

Poly constant_poly(int64_t v) {
  Poly p;
  if (v != 0) p.terms[{}] = Coef{v, 1};
  return p;
}

Poly combine(const Poly& a, const Poly& b, int64_t sign) {
  Poly out = a;
  out.atoms.insert(b.atoms.begin(), b.atoms.end());
  for (const auto& [k, c] : b.terms) out.add_term(k, mul(c, Coef{sign, 1}));
  return out;
}

Poly multiply(const Poly& a, const Poly& b) {
  Poly out;
  out.atoms = a.atoms;
  out.atoms.insert(b.atoms.begin(), b.atoms.end());
  for (const auto& [ka, ca] : a.terms) {
    for (const auto& [kb, cb] : b.terms) {
      Key k = ka;
      k.insert(k.end(), kb.begin(), kb.end());
      std::sort(k.begin(), k.end());
      out.add_term(k, mul(ca, cb));
    }
  }
  return out;
}

// a // c for a constant c > 0, when c divides every coefficient (then it is exact).
std::optional<Poly> divide(const Poly& a, int64_t c) {
  Poly out;
  out.atoms = a.atoms;
  for (const auto& [k, co] : a.terms) {
    if (co.den != 1 || co.num % c != 0) return std::nullopt;
    out.add_term(k, mul(co, Coef{1, c}));
  }
  return out;
}

Poly poly_of(const Expr& e) {
  if (auto c = e.as_int()) return constant_poly(*c);
  if (e.is_var()) return atom(e);
  if (e.kind() == ir::ExprKind::Unary && e->op == static_cast<uint8_t>(ir::UnaryOp::Neg))
    return combine(Poly{}, poly_of(e->args[0]), -1);
  if (e.kind() != ir::ExprKind::Binary) return atom(e);
  const auto op = static_cast<ir::BinaryOp>(e->op);
  const Poly a = poly_of(e->args[0]);
  const Poly b = poly_of(e->args[1]);
  switch (op) {
    case ir::BinaryOp::Add: return combine(a, b, 1);
    case ir::BinaryOp::Sub: return combine(a, b, -1);
    case ir::BinaryOp::Mul: return multiply(a, b);
    case ir::BinaryOp::FloorDiv:
      if (auto c = b.constant(); c && *c > 0) {
        if (auto q = divide(a, *c)) return *q;
      }
      return atom(ir::floordiv(expr_of(a), expr_of(b)));
    case ir::BinaryOp::Mod: return atom(ir::mod(expr_of(a), expr_of(b)));
    case ir::BinaryOp::Min: return atom(ir::min(expr_of(a), expr_of(b)));
    case ir::BinaryOp::Max: return atom(ir::max(expr_of(a), expr_of(b)));
    default: return atom(e);
  }
}

bool poly_equal(const Poly& a, const Poly& b) {
  if (a.terms.size() != b.terms.size()) return false;
  for (auto ia = a.terms.begin(), ib = b.terms.begin(); ia != a.terms.end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.num != ib->second.num ||
        ia->second.den != ib->second.den)
      return false;
  }
  return true;
}

}  // namespace

Expr canonical_dim(const Expr& d) {
  if (!d.defined() || d.as_int() || d.is_var() || is_float(d.dtype())) return d;
  return expr_of(poly_of(d));
}

Shape canonical_shape(const Shape& s) {
  Shape out;
  out.reserve(s.size());
  for (const Expr& d : s) out.push_back(canonical_dim(d));
  return out;
}

namespace {

// Removes the dimensions the two shapes share (canonical forms compared; constants stay).
void cancel_common(const Shape& a, const Shape& b, std::vector<Expr>* ra, std::vector<Expr>* rb) {
  for (const Expr& d : a) ra->push_back(canonical_dim(d));
  for (const Expr& d : b) {
    const Expr k = canonical_dim(d);
    auto it = k.as_int() ? ra->end() : std::find_if(ra->begin(), ra->end(), [&](const Expr& x) {
      return ir::equal(x, k);
    });
    if (it != ra->end()) {
      ra->erase(it);
    } else {
      rb->push_back(k);
    }
  }
}

}  // namespace

bool same_numel(const Shape& a, const Shape& b) {
  std::vector<Expr> ra, rb;
  cancel_common(a, b, &ra, &rb);
  Expr na(1), nb(1);
  for (const Expr& d : ra) na = na * d;
  for (const Expr& d : rb) nb = nb * d;
  return poly_equal(poly_of(na), poly_of(nb));
}

bool solve_numel(const Shape& in, const Shape& known, Expr* solved) {
  // Equal dimensions cancel first, so that a known size that is not a single term
  // ((s + 1) // 2, s - 1) divides out when the input has it as a dimension.
  std::vector<Expr> rest_in, rest_known;
  cancel_common(in, known, &rest_in, &rest_known);
  Expr ni(1), nk(1);
  for (const Expr& d : rest_in) ni = ni * d;
  for (const Expr& d : rest_known) nk = nk * d;
  const Poly pk = poly_of(nk);
  // Only a single term (a product of atoms times a number) can be divided out.
  if (pk.terms.size() != 1) return false;
  const auto& [kkey, kcoef] = *pk.terms.begin();
  if (kcoef.num == 0) return false;
  const Poly pi = poly_of(ni);
  Poly q;
  q.atoms = pi.atoms;
  int64_t den = 1;
  for (const auto& [key, c] : pi.terms) {
    Key rest = key;
    for (const std::string& a : kkey) {
      auto it = std::find(rest.begin(), rest.end(), a);
      if (it == rest.end()) return false;
      rest.erase(it);
    }
    const Coef qc = mul(c, Coef{kcoef.den, kcoef.num});
    q.add_term(rest, qc);
    den = std::lcm(den, qc.den);
  }
  // A fraction would be a guess that a division is exact: no solution.
  if (den != 1) return false;
  *solved = expr_of(q);
  return true;
}

}  // namespace ember::opdefs
