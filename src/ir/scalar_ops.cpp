// The scalar operator tables of ember/ir/scalar_ops.h, as arrays indexed by the enumerators.
#include "ember/ir/scalar_ops.h"

#include <iterator>

namespace ember::ir {
namespace {

#define EMBER_UNARY_ROW(Enum, name, fn, Title, cost, domain, doc) \
  UnaryOpInfo{UnaryOp::Enum, #name, #fn, #Title, OpCost::cost, UnaryDomain::domain, doc},
#define EMBER_BINARY_ROW(Enum, name, fn, Title, cost, kind, doc) \
  BinaryOpInfo{BinaryOp::Enum, #name, #fn, #Title, OpCost::cost, BinaryKind::kind, doc},
constexpr UnaryOpInfo kUnary[] = {EMBER_UNARY_OPS(EMBER_UNARY_ROW)};
constexpr BinaryOpInfo kBinary[] = {EMBER_BINARY_OPS(EMBER_BINARY_ROW)};
#undef EMBER_UNARY_ROW
#undef EMBER_BINARY_ROW

// The rows are in enumerator order (both come from the same list).
constexpr bool in_order() {
  for (size_t i = 0; i < std::size(kUnary); ++i)
    if (static_cast<size_t>(kUnary[i].op) != i) return false;
  for (size_t i = 0; i < std::size(kBinary); ++i)
    if (static_cast<size_t>(kBinary[i].op) != i) return false;
  return true;
}
static_assert(in_order());

}  // namespace

const UnaryOpInfo& info(UnaryOp op) { return kUnary[static_cast<size_t>(op)]; }
const BinaryOpInfo& info(BinaryOp op) { return kBinary[static_cast<size_t>(op)]; }
const UnaryOpInfo* unary_ops_begin() { return std::begin(kUnary); }
const UnaryOpInfo* unary_ops_end() { return std::end(kUnary); }
const BinaryOpInfo* binary_ops_begin() { return std::begin(kBinary); }
const BinaryOpInfo* binary_ops_end() { return std::end(kBinary); }

bool returns_bool(UnaryOp op) {
  const UnaryDomain d = info(op).domain;
  return d == UnaryDomain::Predicate || d == UnaryDomain::Logical;
}

bool returns_bool(BinaryOp op) {
  const BinaryKind k = info(op).kind;
  return k == BinaryKind::Compare || k == BinaryKind::Logical;
}

bool is_comparison(BinaryOp op) { return info(op).kind == BinaryKind::Compare; }

}  // namespace ember::ir
