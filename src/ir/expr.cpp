// Expr construction (with folding), equality, printing and traversal.
#include "ember/ir/expr.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ember/support/error.h"

namespace ember::ir {
namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

ExprNode node(ExprKind kind, DType dtype) {
  ExprNode n;
  n.kind = kind;
  n.dtype = dtype;
  return n;
}

Expr make(ExprNode n) {
  size_t h = mix(static_cast<size_t>(n.kind) * 131 + static_cast<size_t>(n.dtype), n.op);
  h = mix(h, static_cast<size_t>(n.buffer + 7));
  h = mix(h, std::hash<int64_t>{}(n.ival));
  h = mix(h, std::hash<double>{}(n.fval));
  h = mix(h, std::hash<std::string>{}(n.name));
  for (const Expr& a : n.args) h = mix(h, a.hash());
  n.hash = h;
  return Expr(std::make_shared<const ExprNode>(std::move(n)));
}

bool is_int_const(const Expr& e, int64_t v) {
  auto i = e.as_int();
  return i && *i == v;
}

std::optional<double> as_number(const Expr& e) {
  if (!e.is_const()) return std::nullopt;
  return is_float(e.dtype()) ? e->fval : static_cast<double>(e->ival);
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

// Folds a binary op on two integer constants; nullopt when it cannot (division by 0).
std::optional<int64_t> fold_int(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    // Wrapping, as the kernels' integer arithmetic (-fwrapv) and PyTorch's.
    case BinaryOp::Add:
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    case BinaryOp::Sub:
      return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
    case BinaryOp::Mul:
      return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    case BinaryOp::FloorDiv: return b == 0 ? std::nullopt : std::optional(floor_div(a, b));
    case BinaryOp::Mod: return b == 0 ? std::nullopt : std::optional(floor_mod(a, b));
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Eq: return a == b;
    case BinaryOp::Ne: return a != b;
    case BinaryOp::Lt: return a < b;
    case BinaryOp::Le: return a <= b;
    case BinaryOp::Gt: return a > b;
    case BinaryOp::Ge: return a >= b;
    case BinaryOp::And: return (a != 0) && (b != 0);
    case BinaryOp::Or: return (a != 0) || (b != 0);
    default: return std::nullopt;
  }
}

// Algebraic identities on integer index arithmetic.
Expr simplify_int_binary(BinaryOp op, const Expr& a, const Expr& b) {
  switch (op) {
    case BinaryOp::Add:
      if (is_int_const(a, 0)) return b;
      if (is_int_const(b, 0)) return a;
      break;
    case BinaryOp::Sub:
      if (is_int_const(b, 0)) return a;
      if (equal(a, b)) return const_int(0, a.dtype());
      break;
    case BinaryOp::Mul:
      if (is_int_const(a, 1)) return b;
      if (is_int_const(b, 1)) return a;
      if (is_int_const(a, 0) || is_int_const(b, 0)) return const_int(0, a.dtype());
      break;
    case BinaryOp::FloorDiv:
      if (is_int_const(b, 1)) return a;
      if (is_int_const(a, 0)) return a;
      if (equal(a, b)) return const_int(1, a.dtype());
      break;
    case BinaryOp::Mod:
      if (is_int_const(b, 1)) return const_int(0, a.dtype());
      if (is_int_const(a, 0) || equal(a, b)) return const_int(0, a.dtype());
      break;
    default: break;
  }
  return {};
}

}  // namespace

Expr::Expr(int64_t v) : Expr(const_int(v)) {}

std::optional<int64_t> Expr::as_int() const {
  if (!node_ || node_->kind != ExprKind::Const || is_float(node_->dtype)) return std::nullopt;
  return node_->ival;
}

bool equal(const Expr& a, const Expr& b) {
  if (a.get() == b.get()) return true;
  if (!a.defined() || !b.defined()) return false;
  const ExprNode& x = *a.get();
  const ExprNode& y = *b.get();
  if (x.hash != y.hash || x.kind != y.kind || x.dtype != y.dtype || x.op != y.op ||
      x.buffer != y.buffer || x.ival != y.ival || x.name != y.name ||
      x.args.size() != y.args.size())
    return false;
  if (x.fval != y.fval && !(std::isnan(x.fval) && std::isnan(y.fval))) return false;
  for (size_t i = 0; i < x.args.size(); ++i)
    if (!equal(x.args[i], y.args[i])) return false;
  return true;
}

Expr const_int(int64_t v, DType t) {
  ExprNode n = node(ExprKind::Const, t);
  n.ival = t == DType::boolean ? (v != 0) : v;
  return make(std::move(n));
}

Expr const_float(double v, DType t) {
  EMBER_ASSERT(is_float(t), "const_float of a non-float dtype");
  ExprNode n = node(ExprKind::Const, t);
  n.fval = v;
  return make(std::move(n));
}

Expr const_bool(bool v) { return const_int(v ? 1 : 0, DType::boolean); }

Expr const_of(double v, DType t) {
  if (is_float(t)) return const_float(v, t);
  if (t == DType::boolean) return const_bool(v != 0.0);
  return const_int(static_cast<int64_t>(v), t);
}

Expr var(const std::string& name) {
  ExprNode n = node(ExprKind::Var, DType::int64);
  n.name = name;
  return make(std::move(n));
}

Expr load(int buffer, DType t, std::vector<Expr> indices) {
  ExprNode n = node(ExprKind::Load, t);
  n.buffer = buffer;
  n.args = std::move(indices);
  return make(std::move(n));
}

Expr unary(UnaryOp op, Expr a) {
  DType t = returns_bool(op) ? DType::boolean : a.dtype();
  if (auto v = as_number(a); v && is_float(a.dtype())) {
    double x = *v;
    switch (op) {
      case UnaryOp::Neg: return const_float(-x, t);
      case UnaryOp::Abs: return const_float(std::fabs(x), t);
      default: break;
    }
  }
  if (op == UnaryOp::Neg && a.as_int()) return const_int(-*a.as_int(), t);
  ExprNode n = node(ExprKind::Unary, t);
  n.op = static_cast<uint8_t>(op);
  n.args = {std::move(a)};
  return make(std::move(n));
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  EMBER_ASSERT(a.dtype() == b.dtype(), "binary " << binary_name(op) << " on "
                                                  << dtype_name(a.dtype()) << " and "
                                                  << dtype_name(b.dtype()));
  // On bool, the bitwise operators are the logical ones, which the vector code has for lane
  // masks (torch writes hardtanh's backward mask as (x <= lo) | (x >= hi)).
  if (a.dtype() == DType::boolean) {
    if (op == BinaryOp::BitAnd) op = BinaryOp::And;
    if (op == BinaryOp::BitOr) op = BinaryOp::Or;
    if (op == BinaryOp::BitXor) op = BinaryOp::Xor;
  }
  DType t = returns_bool(op) ? DType::boolean : a.dtype();
  if (!is_float(a.dtype())) {
    if (auto x = a.as_int(), y = b.as_int(); x && y) {
      if (auto r = fold_int(op, *x, *y)) return const_int(*r, t);
    }
    if (Expr s = simplify_int_binary(op, a, b); s.defined()) return s;
  } else if (auto x = as_number(a), y = as_number(b); x && y) {
    switch (op) {
      case BinaryOp::Add: return const_float(*x + *y, t);
      case BinaryOp::Sub: return const_float(*x - *y, t);
      case BinaryOp::Mul: return const_float(*x * *y, t);
      default: break;
    }
  }
  ExprNode n = node(ExprKind::Binary, t);
  n.op = static_cast<uint8_t>(op);
  n.args = {std::move(a), std::move(b)};
  return make(std::move(n));
}

Expr select(Expr cond, Expr a, Expr b) {
  EMBER_ASSERT(cond.dtype() == DType::boolean, "select condition must be bool");
  EMBER_ASSERT(a.dtype() == b.dtype(), "select branches of different dtypes");
  if (auto c = cond.as_int()) return *c ? a : b;
  ExprNode n = node(ExprKind::Select, a.dtype());
  n.args = {std::move(cond), std::move(a), std::move(b)};
  return make(std::move(n));
}

Expr cast(Expr a, DType t) {
  if (a.dtype() == t) return a;
  if (a.is_const()) {
    double v = is_float(a.dtype()) ? a->fval : static_cast<double>(a->ival);
    if (is_float(t) || std::isfinite(v)) return const_of(is_float(t) ? v : std::trunc(v), t);
  }
  ExprNode n = node(ExprKind::Cast, t);
  n.args = {std::move(a)};
  return make(std::move(n));
}

Expr acc(DType t) { return make(node(ExprKind::Acc, t)); }

Expr philox_uniform(Expr seed, Expr offset, Expr counter) {
  for (const Expr* e : {&seed, &offset, &counter})
    EMBER_ASSERT(e->dtype() == DType::int64, "philox_uniform of a " << dtype_name(e->dtype()));
  ExprNode n = node(ExprKind::Random, DType::float32);
  n.args = {std::move(seed), std::move(offset), std::move(counter)};
  return make(std::move(n));
}

Expr operator+(const Expr& a, const Expr& b) { return binary(BinaryOp::Add, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return binary(BinaryOp::Sub, a, b); }
Expr operator*(const Expr& a, const Expr& b) { return binary(BinaryOp::Mul, a, b); }
Expr floordiv(const Expr& a, const Expr& b) { return binary(BinaryOp::FloorDiv, a, b); }
Expr mod(const Expr& a, const Expr& b) { return binary(BinaryOp::Mod, a, b); }
Expr max(const Expr& a, const Expr& b) { return binary(BinaryOp::Max, a, b); }
Expr min(const Expr& a, const Expr& b) { return binary(BinaryOp::Min, a, b); }

namespace {

const char* infix(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return " + ";
    case BinaryOp::Sub: return " - ";
    case BinaryOp::Mul: return " * ";
    case BinaryOp::Div: return " / ";
    case BinaryOp::FloorDiv: return " // ";
    case BinaryOp::Mod: return " % ";
    case BinaryOp::Eq: return " == ";
    case BinaryOp::Ne: return " != ";
    case BinaryOp::Lt: return " < ";
    case BinaryOp::Le: return " <= ";
    case BinaryOp::Gt: return " > ";
    case BinaryOp::Ge: return " >= ";
    case BinaryOp::And: return " && ";
    case BinaryOp::Or: return " || ";
    default: return nullptr;
  }
}

void print(std::ostream& os, const Expr& e) {
  const ExprNode& n = *e.get();
  switch (n.kind) {
    case ExprKind::Const:
      if (is_float(n.dtype)) {
        std::ostringstream s;
        s.precision(9);
        s << n.fval;
        std::string txt = s.str();
        if (txt.find_first_of(".ein") == std::string::npos) txt += ".0";
        os << txt;
        if (n.dtype != DType::float32) os << ":" << dtype_name(n.dtype);
      } else if (n.dtype == DType::boolean) {
        os << (n.ival ? "true" : "false");
      } else {
        os << n.ival;
        if (n.dtype != DType::int64) os << ":" << dtype_name(n.dtype);
      }
      return;
    case ExprKind::Var: os << n.name; return;
    case ExprKind::Acc: os << "acc"; return;
    case ExprKind::Random:
      os << "philox_uniform(";
      for (size_t i = 0; i < n.args.size(); ++i) {
        if (i) os << ", ";
        print(os, n.args[i]);
      }
      os << ")";
      return;
    case ExprKind::Load:
      os << "b" << n.buffer << "[";
      for (size_t i = 0; i < n.args.size(); ++i) {
        if (i) os << ", ";
        print(os, n.args[i]);
      }
      os << "]";
      return;
    case ExprKind::Unary:
      os << unary_name(static_cast<UnaryOp>(n.op)) << "(";
      print(os, n.args[0]);
      os << ")";
      return;
    case ExprKind::Binary: {
      auto op = static_cast<BinaryOp>(n.op);
      if (const char* s = infix(op)) {
        os << "(";
        print(os, n.args[0]);
        os << s;
        print(os, n.args[1]);
        os << ")";
      } else {
        os << binary_name(op) << "(";
        print(os, n.args[0]);
        os << ", ";
        print(os, n.args[1]);
        os << ")";
      }
      return;
    }
    case ExprKind::Select:
      os << "select(";
      print(os, n.args[0]);
      os << ", ";
      print(os, n.args[1]);
      os << ", ";
      print(os, n.args[2]);
      os << ")";
      return;
    case ExprKind::Cast:
      os << dtype_name(n.dtype) << "(";
      print(os, n.args[0]);
      os << ")";
      return;
  }
}

Expr rebuild(const Expr& e, std::vector<Expr> args) {
  const ExprNode& n = *e.get();
  switch (n.kind) {
    case ExprKind::Load: return load(n.buffer, n.dtype, std::move(args));
    case ExprKind::Unary: return unary(static_cast<UnaryOp>(n.op), args[0]);
    case ExprKind::Binary: return binary(static_cast<BinaryOp>(n.op), args[0], args[1]);
    case ExprKind::Select: return select(args[0], args[1], args[2]);
    case ExprKind::Cast: return cast(args[0], n.dtype);
    case ExprKind::Random: return philox_uniform(args[0], args[1], args[2]);
    default: return e;
  }
}

}  // namespace

std::string to_string(const Expr& e) {
  if (!e.defined()) return "<undefined>";
  std::ostringstream os;
  print(os, e);
  return os.str();
}

Expr rewrite(const Expr& e, const std::function<Expr(const Expr&)>& f) {
  std::unordered_map<const ExprNode*, Expr> memo;
  std::function<Expr(const Expr&)> go = [&](const Expr& x) -> Expr {
    if (auto it = memo.find(x.get()); it != memo.end()) return it->second;
    Expr cur = x;
    if (!x->args.empty()) {
      std::vector<Expr> args;
      args.reserve(x->args.size());
      bool changed = false;
      for (const Expr& a : x->args) {
        args.push_back(go(a));
        changed |= args.back().get() != a.get();
      }
      if (changed) cur = rebuild(x, std::move(args));
    }
    Expr r = f(cur);
    Expr out = r.defined() ? r : cur;
    memo.emplace(x.get(), out);
    return out;
  };
  return go(e);
}

Expr substitute(const Expr& e, const std::map<std::string, Expr>& vars) {
  if (vars.empty()) return e;
  return rewrite(e, [&](const Expr& x) -> Expr {
    if (x.kind() == ExprKind::Var) {
      if (auto it = vars.find(x->name); it != vars.end()) return it->second;
    }
    return {};
  });
}

void visit(const Expr& e, const std::function<void(const Expr&)>& f) {
  f(e);
  for (const Expr& a : e->args) visit(a, f);
}

bool uses_var(const Expr& e, const std::string& name) {
  bool found = false;
  visit(e, [&](const Expr& x) { found |= x.kind() == ExprKind::Var && x->name == name; });
  return found;
}

std::vector<std::string> free_vars(const Expr& e) {
  std::set<std::string> names;
  visit(e, [&](const Expr& x) {
    if (x.kind() == ExprKind::Var) names.insert(x->name);
  });
  return {names.begin(), names.end()};
}

int64_t eval_int(const Expr& e, const std::map<std::string, int64_t>& vars) {
  const ExprNode& n = *e.get();
  switch (n.kind) {
    case ExprKind::Const:
      EMBER_ASSERT(!is_float(n.dtype), "eval_int of a float constant");
      return n.ival;
    case ExprKind::Var: {
      auto it = vars.find(n.name);
      EMBER_CHECK(it != vars.end(), "the value of symbol '" << n.name << "' is not known");
      return it->second;
    }
    case ExprKind::Binary: {
      int64_t a = eval_int(n.args[0], vars), b = eval_int(n.args[1], vars);
      const auto op = static_cast<BinaryOp>(n.op);
      int64_t exact = 0;
      const bool overflow = (op == BinaryOp::Add && __builtin_add_overflow(a, b, &exact)) ||
                            (op == BinaryOp::Sub && __builtin_sub_overflow(a, b, &exact)) ||
                            (op == BinaryOp::Mul && __builtin_mul_overflow(a, b, &exact));
      EMBER_CHECK(!overflow, "the size " << to_string(e) << " overflows int64 (" << a << " "
                                         << (op == BinaryOp::Add   ? "+"
                                             : op == BinaryOp::Sub ? "-"
                                                                   : "*")
                                         << " " << b << "); no tensor can be that large");
      auto r = fold_int(op, a, b);
      EMBER_CHECK(r.has_value(), "cannot evaluate " << to_string(e) << " (division by zero)");
      return *r;
    }
    case ExprKind::Unary:
      if (static_cast<UnaryOp>(n.op) == UnaryOp::Neg) return -eval_int(n.args[0], vars);
      break;
    case ExprKind::Select:
      return eval_int(n.args[0], vars) ? eval_int(n.args[1], vars) : eval_int(n.args[2], vars);
    case ExprKind::Cast: return eval_int(n.args[0], vars);
    default: break;
  }
  throw InternalError("eval_int: not an integer expression: " + to_string(e));
}

std::optional<int64_t> linear_coefficient(const Expr& e, const std::string& v) {
  if (!uses_var(e, v)) return 0;
  const ExprNode& n = *e.get();
  if (n.kind == ExprKind::Var) return 1;
  if (n.kind == ExprKind::Cast) return linear_coefficient(n.args[0], v);
  if (n.kind != ExprKind::Binary) return std::nullopt;
  auto op = static_cast<BinaryOp>(n.op);
  auto ca = linear_coefficient(n.args[0], v);
  auto cb = linear_coefficient(n.args[1], v);
  if (!ca || !cb) return std::nullopt;
  switch (op) {
    case BinaryOp::Add: return *ca + *cb;
    case BinaryOp::Sub: return *ca - *cb;
    case BinaryOp::Mul: {
      // c * v * k: one side must be free of v and constant.
      if (*ca == 0) {
        auto k = n.args[0].as_int();
        if (!k) return std::nullopt;
        return *k * *cb;
      }
      if (*cb == 0) {
        auto k = n.args[1].as_int();
        if (!k) return std::nullopt;
        return *k * *ca;
      }
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

}  // namespace ember::ir
