// Shapes (include/ember/ir/shape.h).
#include "ember/ir/shape.h"

#include "ember/ir/simplify.h"
#include "ember/support/error.h"

namespace ember {

bool shape_is_concrete(const Shape& s) {
  for (const auto& d : s) {
    if (!d.as_int().has_value()) return false;
  }
  return true;
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (const auto& d : s) {
    auto v = d.as_int();
    EMBER_ASSERT(v.has_value(), "shape_numel of the symbolic shape " << shape_str(s));
    EMBER_CHECK(!__builtin_mul_overflow(n, *v, &n),
                "the shape " << shape_str(s) << " has more elements than int64 can count");
  }
  return n;
}

size_t shape_nbytes(const Shape& s, DType dtype) {
  int64_t n = shape_numel(s);
  int64_t bytes = 0;
  EMBER_CHECK(n >= 0 && !__builtin_mul_overflow(n, int64_t{dtype_size(dtype)}, &bytes),
              "a " << dtype_name(dtype) << shape_str(s) << " tensor needs more bytes than "
                   << "int64 can count; no machine can hold it");
  return static_cast<size_t>(bytes);
}

ir::Expr shape_numel_expr(const Shape& s) {
  ir::Expr n(int64_t{1});
  for (const auto& d : s) n = n * d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0) out += ", ";
    out += s[i].defined() ? ir::to_string(s[i]) : "?";
  }
  return out + "]";
}

namespace {

// A size with every sum in it, inside floor divisions and remainders too, in the linear
// form of simplify_index: "((s0 + -1) // 2)" and "((s0 - 1) // 2)" become one expression.
ir::Expr canonical_size(const ir::Expr& e) {
  return ir::rewrite(e, [](const ir::Expr& x) {
    return x.kind() == ir::ExprKind::Binary ? ir::simplify_index(x) : ir::Expr();
  });
}

}  // namespace

bool shape_equal(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    // Two spellings of one size ("(s0 + -2)" from torch, "(s0 - 2)" from an operator's
    // inference) are equal.
    if (!ir::equal(a[i], b[i]) && !ir::equal(canonical_size(a[i]), canonical_size(b[i])))
      return false;
  }
  return true;
}

Shape concrete_shape(const std::vector<int64_t>& dims) { return Shape(dims.begin(), dims.end()); }

std::vector<int64_t> shape_values(const Shape& s) {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (const auto& d : s) {
    auto v = d.as_int();
    EMBER_ASSERT(v.has_value(), "shape_values of the symbolic shape " << shape_str(s));
    out.push_back(*v);
  }
  return out;
}

}  // namespace ember
