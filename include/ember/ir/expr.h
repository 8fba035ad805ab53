// Scalar expressions: the tensor-program IR's leaves and the language of symbolic shapes.
//
// An Expr is an immutable node shared by pointer, with structural hashing and equality
// (docs/principles.md, principle 5). The same type describes
//   - a dimension of a shape: an int64 constant, a symbol ("n"), or arithmetic of them;
//   - the body of a compute definition: loads from buffers at index expressions, math.
// Constructors fold constants and apply the algebraic identities that keep index
// arithmetic small (x + 0, x * 1, x * 0, c1 + c2, ...).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/ir/dtype.h"
#include "ember/ir/scalar_ops.h"

namespace ember::ir {

enum class ExprKind : uint8_t {
  Const,   // a number of `dtype`
  Var,     // an int64 variable: a loop index or a symbolic dimension
  Load,    // buffer[indices...]
  Unary,   // op(a)
  Binary,  // op(a, b)
  Select,  // cond ? a : b
  Cast,    // (dtype) a
  Acc,     // the accumulated value of the stage an epilogue belongs to
  Random,  // philox_uniform(seed, offset, counter): a float32 uniform in [0, 1) (below)
};

class Expr;

struct ExprNode {
  ExprKind kind = ExprKind::Const;
  DType dtype = DType::float32;
  uint8_t op = 0;           // UnaryOp or BinaryOp
  int buffer = -1;          // Load: index of the buffer in its task
  int64_t ival = 0;         // Const of integer or bool dtype
  double fval = 0.0;        // Const of float dtype
  std::string name;         // Var
  std::vector<Expr> args;   // operands; for Load the indices
  size_t hash = 0;
};

class Expr {
 public:
  Expr() = default;
  Expr(int64_t v);  // NOLINT: an int64 constant, so shapes read naturally: {2, n, 3}
  Expr(int v) : Expr(static_cast<int64_t>(v)) {}  // NOLINT
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  ExprKind kind() const { return node_->kind; }
  DType dtype() const { return node_->dtype; }
  size_t hash() const { return node_ ? node_->hash : 0; }
  // The integer value when this is an integer constant.
  std::optional<int64_t> as_int() const;
  bool is_const() const { return node_ && node_->kind == ExprKind::Const; }
  bool is_var() const { return node_ && node_->kind == ExprKind::Var; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

// Structural equality.
bool equal(const Expr& a, const Expr& b);
struct ExprHash {
  size_t operator()(const Expr& e) const { return e.hash(); }
};
struct ExprEqual {
  bool operator()(const Expr& a, const Expr& b) const { return equal(a, b); }
};

Expr const_int(int64_t v, DType t = DType::int64);
Expr const_float(double v, DType t = DType::float32);
Expr const_bool(bool v);
// A constant of dtype t holding v (rounded for integers).
Expr const_of(double v, DType t);
Expr var(const std::string& name);
Expr load(int buffer, DType t, std::vector<Expr> indices);
Expr unary(UnaryOp op, Expr a);
Expr binary(BinaryOp op, Expr a, Expr b);
Expr select(Expr cond, Expr a, Expr b);
Expr cast(Expr a, DType t);
Expr acc(DType t);
// A float32 drawn uniformly from [0, 1) by Philox-4x32-10 (ember_rt/random.h): the key is
// `seed`, the 128-bit counter is (`counter`, `offset`), each an int64 expression read as
// two 32-bit words. `counter` is the element's index (an index expression of the kernel's
// loops); `seed` and `offset` are the same for every element (loads of a seed tensor).
Expr philox_uniform(Expr seed, Expr offset, Expr counter);

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr floordiv(const Expr& a, const Expr& b);
Expr mod(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);

// Text form, e.g. "(b0[i0, i1] + 1.0f)" or "n * 4".
std::string to_string(const Expr& e);
// Parses an int64 size expression as to_string prints it: integers, symbol names, + - *
// // %, unary -, parentheses, min(a, b) and max(a, b). An ember::Error names what could not
// be read. (Python passes symbolic sizes such as "(s0 * 2)" to shapes this way.)
Expr parse_int_expr(const std::string& text);

// Rewrites bottom-up: f is called on every node after its children were rewritten; return
// an undefined Expr to keep the node.
Expr rewrite(const Expr& e, const std::function<Expr(const Expr&)>& f);
// Replaces variables by name.
Expr substitute(const Expr& e, const std::map<std::string, Expr>& vars);
// Visits every node once per occurrence, parents before children.
void visit(const Expr& e, const std::function<void(const Expr&)>& f);
bool uses_var(const Expr& e, const std::string& name);
// Names of the variables e uses, sorted.
std::vector<std::string> free_vars(const Expr& e);

// Evaluates an integer expression; every variable must be bound (else ember::Error).
int64_t eval_int(const Expr& e, const std::map<std::string, int64_t>& vars);
// If e == c * v + rest with c a constant and rest free of v, returns c (0 when e does not
// use v); std::nullopt when e is not affine in v.
std::optional<int64_t> linear_coefficient(const Expr& e, const std::string& v);

}  // namespace ember::ir
