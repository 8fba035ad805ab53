// Shapes: one integer expression per dimension, so a dimension is a constant or a symbol
// ("n"), in the expression language kernels use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/ir/dtype.h"
#include "ember/ir/expr.h"

namespace ember {

// A shape: one integer expression per dimension. A dimension is a constant or a symbol.
using Shape = std::vector<ir::Expr>;

bool shape_is_concrete(const Shape& s);
// Product of the dimensions; every dimension must be constant (else ember::InternalError).
// A product past int64 is an ember::Error.
int64_t shape_numel(const Shape& s);
// Bytes of a tensor of that shape and dtype; an ember::Error when they overflow.
size_t shape_nbytes(const Shape& s, DType dtype);
// Product of the dimensions as an expression.
ir::Expr shape_numel_expr(const Shape& s);
// "[2, 3]" or "[n, 768]".
std::string shape_str(const Shape& s);
// Whether two shapes have the same sizes, symbolic ones compared with their sums in the
// linear form of ir::simplify_index: "(n - 2)" and "(n + -2)" are one size, and so are
// "((n - 1) // 2)" and "((n + -1) // 2)".
bool shape_equal(const Shape& a, const Shape& b);
Shape concrete_shape(const std::vector<int64_t>& dims);
// Values of a concrete shape (ember::InternalError if a dimension is symbolic).
std::vector<int64_t> shape_values(const Shape& s);

}  // namespace ember
