// Helpers shared by the operator families in src/ops/: broadcasting, dimension
// normalization, row-major index arithmetic, dtype checks, and the compute-type casts.
//
// Every check throws ember::Error with a message that names the operator, what was wrong,
// the rule, and (where there is one) what to do about it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/ir/expr.h"
#include "ember/ops/op_def.h"
#include "ember/tensor/tensor.h"

namespace ember::opdefs {

using ir::Expr;
using Index = std::vector<ir::Expr>;

// ---- shapes ----

// numpy broadcasting of two shapes: dimensions are matched from the end; equal dimensions
// (structurally, for symbols) and dimensions of size 1 broadcast; anything else is an Error.
Shape broadcast_shapes(const std::string& op, const Shape& a, const Shape& b);
// The index into an input of shape `in` for the output index `out_idx` of a broadcast:
// leading output dimensions are dropped, and size-1 input dimensions get index 0.
Index broadcast_index(const Index& out_idx, const Shape& in);

// A dimension in [-rank, rank) as a non-negative one; out of range is an Error naming the
// operator, the dimension and the rank. A 0-d tensor accepts 0 and -1 (like torch).
int64_t normalize_dim(const std::string& op, int64_t dim, int64_t rank);
// normalize_dim on each, sorted; a dimension given twice is an Error.
std::vector<int64_t> normalize_dims(const std::string& op, const std::vector<int64_t>& dims,
                                    int64_t rank);

// "[0, 2, 1]".
std::string vec_str(const std::vector<int64_t>& v);
// true when e is the integer constant v.
bool is_const(const Expr& e, int64_t v);
// true when a and b are known to be the same dimension (equal canonical forms).
bool same_dim(const Expr& a, const Expr& b);

// ---- symbolic dimensions as polynomials (dim_algebra.cpp) ----

// The canonical form of a dimension: sums and products of symbols expanded, like terms
// merged, terms and factors in a fixed order; min, max, % and inexact // stay as atoms.
// Two spellings of the same polynomial give equal Exprs.
Expr canonical_dim(const Expr& d);
Shape canonical_shape(const Shape& s);
// Whether a and b have the same number of elements for every value of the symbols. A floor
// division is not taken as exact ([n] and [n // 2, 2] differ for an odd n): the torch
// backend, whose shapes Dynamo's guards make consistent, reshapes such views as torch
// recorded them instead.
bool same_numel(const Shape& a, const Shape& b);
// The size that makes `known` plus it hold the elements of `in` (reshape's -1) for every
// value of the symbols, when the element count of `known` is a single term and the quotient a
// polynomial with integer coefficients. false otherwise.
bool solve_numel(const Shape& in, const Shape& known, Expr* solved);

// ---- row-major index arithmetic ----

// The row-major strides of a shape, as expressions.
Index row_major_strides(const Shape& shape);
// The flat row-major offset of idx in a tensor of `shape`.
Expr flat_offset(const Index& idx, const Shape& shape);
// The index in a tensor of `shape` of the flat row-major offset `flat` (floordiv / mod).
Index unravel(const Expr& flat, const Shape& shape);
// The index into a tensor of shape `in` holding the same element as out_idx in a reshape
// of it to `out` (same number of elements). Leading and trailing dimensions the two
// shapes share map directly; only the middle goes through a flat offset.
Index reshape_index(const Index& out_idx, const Shape& out, const Shape& in);

// ---- products of dimensions (symbolic reshape) ----

// A product of dimensions as a constant coefficient times a multiset of symbolic factors.
struct Monomial {
  int64_t coef = 1;
  std::vector<Expr> factors;  // sorted by hash
};
Monomial monomial_of(const Shape& dims);
bool monomial_equal(const Monomial& a, const Monomial& b);
// a / b when b divides a exactly (coefficient and factors); false otherwise.
bool monomial_divide(const Monomial& a, const Monomial& b, Expr* quotient);

// ---- inputs, dtypes and devices ----

// Error unless there are exactly n inputs (n < 0: at least one).
void check_arity(const std::string& op, const std::vector<TensorType>& in, int n);

// "add: dtypes differ: float32 vs int32; cast one operand with ember.ops.cast ..."
void check_same_dtype(const std::string& op, const TensorType& a, const TensorType& b);
// Error unless t is a float dtype.
void check_float(const std::string& op, const TensorType& t);
// Error when t is bool (arithmetic operators).
void check_not_bool(const std::string& op, const TensorType& t);
// Error unless every input is on the same device; returns that device.
Device common_device(const std::string& op, const std::vector<TensorType>& inputs);

// The dtype arithmetic happens in: float32 for float16 / bfloat16, else t itself.
DType compute_dtype(DType t);
// e (of dtype `from`) converted to compute_dtype(from).
Expr to_compute(const Expr& e);
// e converted to t when it is not of dtype t already.
Expr cast_to(const Expr& e, DType t);

// ---- convolutions (conv.cpp) ----

// The operator a convolution `op` with algorithm `algo` runs as, and the operator that
// prepares its weight first ("" for none); an unknown algorithm is an Error.
struct ConvAlgoOps {
  std::string op, prepare_weight;
  // Non-plain: the operator reads its input in this layout (converted first) and writes its
  // output in it (converted back): the channel-blocked layout of conv2d_blocked.
  Layout layout;
  int64_t out_channels = 0;  // ConvAttrs::out_channels for the operator (0: not set)
};
// `o`: the weight's output channels.
ConvAlgoOps conv_algo_ops(const std::string& op, const std::string& algo, int64_t o);

// ---- composite tasks ----

// Index variables named prefix0, prefix1, ... (stage axes of composite tasks).
Index make_vars(const std::string& prefix, size_t n);
// A Loader reading input i of an operator from buffer buffers[i] of task t.
Loader buffer_loader(const ir::Task& t, const std::vector<int>& buffers);
// A Call stage of ember_rt::lib::<routine> making `flops` operations (the profile's count).
ir::Stage call_stage(const std::string& routine, std::vector<int> in, std::vector<int> out,
                     std::vector<Expr> params, Expr flops);
// The Reduce stage computing buffer `out` at `axes` as ReduceDef r describes (reduction
// variables named rprefix0, ...; the finalizer becomes the epilogue).
ir::Stage reduce_stage(const ReduceDef& r, int out, const Index& axes, const Loader& load,
                       const std::string& rprefix = "r");

}  // namespace ember::opdefs
