// Index arithmetic: simplification and re-indexing between shapes of the same memory.
#pragma once

#include <string>
#include <vector>

#include "ember/ir/expr.h"
#include "ember/ir/shape.h"

namespace ember::ir {

// Rewrites an integer index expression as a sum of terms with constant coefficients,
// merging equal terms and applying (x // c) * c + x % c == x. The result is equal to the
// input for every value of the variables (indices are non-negative).
Expr simplify_index(const Expr& e);

// q such that e == q * m + lane for every value of the variables, where `lane` (a variable
// assumed to lie in [0, m)) appears in e only as the term +lane and every other coefficient
// and the constant are multiples of m: then e // m == q and e % m == lane. Undefined when e
// does not have that form.
Expr split_lane(const Expr& e, const std::string& lane, int64_t m);

// The index into a contiguous tensor of shape `to` of the element at index `idx` of the
// same memory viewed with shape `from` (same number of elements). Runs of dimensions whose
// products match are mapped group by group, so merging or splitting dimensions gives
// simple expressions ((p // W, p % W) for a split, i * W + j for a merge).
std::vector<Expr> reindex(const std::vector<Expr>& idx, const Shape& from, const Shape& to);

}  // namespace ember::ir
