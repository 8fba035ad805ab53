// ember's operators as functions on tensors (the C++ face of ember.ops).
//
// With concrete inputs an operator runs at once (imperative): ember builds a one-node
// graph, compiles it (cached by the operator, its attributes and input types) and runs it.
// With any symbolic input it records a trace and returns a symbolic tensor.
// Shape or dtype mismatches are ember::Error naming the operator, the shapes and the rule.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ember/ir/scalar_ops.h"
#include "ember/ops/attrs.h"
#include "ember/ops/op_def.h"
#include "ember/ops/trace.h"
#include "ember/tensor/tensor.h"

namespace ember::ops {

// Applies a registered operator (the generic entry every function below uses).
std::vector<Tensor> apply(const std::string& op, const std::vector<Tensor>& inputs,
                          const OpAttrs& attrs = NoAttrs{});
// The same, for a registered operator already in hand (a pass holding a node's OpDef);
// traces keep its address.
std::vector<Tensor> apply(const OpDef& def, const std::vector<Tensor>& inputs,
                          const OpAttrs& attrs = NoAttrs{});

// Runs `def` at once on concrete inputs, whose output types it inferred (`outputs`): as a
// one-node graph, compiled on first use and kept per operator, attributes and input types.
// apply() calls it; the compiler defines it (src/compile/imperative.cpp).
std::vector<Tensor> run_compiled(const OpDef& def, const OpAttrs& attrs,
                                 const std::vector<Tensor>& inputs,
                                 const std::vector<TensorType>& outputs);

// Forgets the compiled one-node graphs imperative calls keep (by operator, attributes and
// input types); the next call finds its kernel in the kernel cache again.
void clear_imperative_cache();

// A 0-d constant tensor of `dtype` holding `value` (Python scalars in expressions).
Tensor scalar(double value, DType dtype);

// Elementwise unary and binary operators: one function per row of the scalar operator
// tables (ember/ir/scalar_ops.h), named by its `fn` column, e.g. ops::sin(x),
// ops::atan2(a, b), ops::bitwise_and(a, b). Binary operators broadcast (numpy) and take two
// tensors of the same dtype (the logical ones take any dtypes, read as != 0).
#define EMBER_OPS_DECLARE_UNARY(Enum, name, fn, ...) Tensor fn(const Tensor& x);
#define EMBER_OPS_DECLARE_BINARY(Enum, name, fn, ...) Tensor fn(const Tensor& a, const Tensor& b);
EMBER_UNARY_OPS(EMBER_OPS_DECLARE_UNARY)
EMBER_BINARY_OPS(EMBER_OPS_DECLARE_BINARY)
#undef EMBER_OPS_DECLARE_UNARY
#undef EMBER_OPS_DECLARE_BINARY
// The same, by table row.
Tensor unary(ir::UnaryOp op, const Tensor& x);
Tensor binary(ir::BinaryOp op, const Tensor& a, const Tensor& b);

// GELU, exact (erf) or with the tanh approximation.
Tensor gelu(const Tensor& x, bool approximate_tanh);
// NaN, +inf and -inf replaced by the given values; by default 0, the dtype's largest and its
// lowest finite value (torch.nan_to_num).
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
// ELU: x above 0, alpha * (exp(x) - 1) below.
Tensor elu(const Tensor& x, double alpha = 1.0);
// CELU: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
Tensor celu(const Tensor& x, double alpha = 1.0);

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor cast(const Tensor& x, DType dtype);

// Reductions over `dims` (negative dims count from the end; empty means all dims).
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);  // int64 indices
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t axis = -1);

// Matrix product with numpy's matmul semantics (1-d operands, broadcast batch dims).
Tensor matmul(const Tensor& a, const Tensor& b);
// a @ b^T with b stored [..., N, K] (a Linear layer's weight as stored), read in place.
Tensor matmul_nt(const Tensor& a, const Tensor& b);

// Transforms. One dimension of `shape` in reshape may be -1.
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);
// The elements of each dimension in `dims` in reverse order (torch.flip); dims may be negative.
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& dims = {});  // empty: all size-1
Tensor unsqueeze(const Tensor& x, const std::vector<int64_t>& dims);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0);
// Python-style slicing per axis; stops are clamped; steps >= 1.
Tensor slice(const Tensor& x, const std::vector<int64_t>& axes, const std::vector<int64_t>& starts,
             const std::vector<int64_t>& stops, const std::vector<int64_t>& steps = {});
// Slicing with bounds that may be size expressions ("n - 1"), which the caller guarantees
// in range: 0 <= start <= stop <= size (negative constants count from the end). The length
// is then exactly (stop - start) / step rounded up, with no clamping (SliceAttrs::clamp).
Tensor slice_exact(const Tensor& x, const std::vector<int64_t>& axes, const Shape& starts,
                   const Shape& stops, const std::vector<int64_t>& steps = {});
Tensor expand(const Tensor& x, const Shape& shape);  // -1 keeps a dimension
// x in another layout (ember/ir/layout.h): the same values, stored otherwise. Only inside a
// traced graph (a tensor with memory is always plain); a graph's outputs must be converted
// back to plain.
Tensor to_layout(const Tensor& x, const Layout& layout);
// out[.., i, ..] = x[.., index[.., i, ..], ..] along axis (torch.gather); index values are
// checked when the kernel runs (ember::DataError).
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);

// Scans, sorts and scatters: one call of a runtime library routine each
// (src/ops/library_ops.cpp). Scans along `axis` keep the input's dtype (float32, float64,
// int32, int64; float sums and products accumulate in double); cummax / cummin and sort
// return values and int64 positions. Sorts are stable and put NaN above every number.
Tensor cumsum(const Tensor& x, int64_t axis);
Tensor cumprod(const Tensor& x, int64_t axis);
Tensor logcumsumexp(const Tensor& x, int64_t axis);  // float32 / float64
std::vector<Tensor> cummax(const Tensor& x, int64_t axis);
std::vector<Tensor> cummin(const Tensor& x, int64_t axis);
std::vector<Tensor> sort(const Tensor& x, int64_t axis, bool descending = false);
// The int64 positions at which values would be inserted into the rows of `sorted` (its last
// dimension; sorted is 1-d, or has values' leading dimensions) to keep them sorted: before
// equal elements (right=false) or after them, with torch's comparisons (a NaN value goes
// after every element).
Tensor searchsorted(const Tensor& sorted, const Tensor& values, bool right = false);
// self with src scattered into it along `axis`: for each position of index (int64 / int32,
// src's shape; self's too but along axis), out[..., index[..., k, ...], ...] (reduce)=
// src[..., k, ...], in order of k; an index outside [0, self.shape[axis]) is ember::DataError
// when it runs. reduce: assign (the last write wins), sum, prod, amax, amin, mean;
// include_self=false leaves self's value out of the reduction where anything is scattered.
Tensor scatter(const Tensor& self, int64_t axis, const Tensor& index, const Tensor& src,
               const std::string& reduce, bool include_self = true);

// Dense linear algebra on batches of matrices (the last two dimensions; float32 / float64,
// computed in double and rounded once): one call of a runtime library routine each
// (src/ops/linalg_ops.cpp; ember_rt/linalg.h, QR / SVD / eigh in
// ember_rt/linalg_orthogonal.h). Every input of one call has the same batch
// dimensions. check=true makes a singular (or, for cholesky, not positive-definite) matrix
// an ember::DataError when the graph runs; otherwise info reports it as torch's *_ex do.
// lu_factor: [LU, pivots (int32, 1-based, LAPACK's getrf), info (int32)].
std::vector<Tensor> lu_factor(const Tensor& a, bool check = false);
// cholesky: [L (lower, zeros above; a's lower triangle read), info (int32)].
std::vector<Tensor> cholesky(const Tensor& a, bool check = false);
// X with op(A) X = B, A triangular (only its upper / lower triangle read; unit_diagonal:
// its diagonal taken as ones), op(A) = A^T when transpose.
Tensor triangular_solve(const Tensor& a, const Tensor& b, bool upper, bool unit_diagonal = false,
                        bool transpose = false);
// X with A X = B (transpose: A^T X = B) from lu_factor's LU and pivots; a pivot outside
// [1, n] is ember::DataError when it runs.
Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool transpose = false);
// [X, info (int32)] with A X = B.
std::vector<Tensor> solve(const Tensor& a, const Tensor& b, bool check = false);
Tensor det(const Tensor& a);
std::vector<Tensor> slogdet(const Tensor& a);  // [sign, log|det|]
Tensor matrix_exp(const Tensor& a);            // scaling and squaring, Pade 13
// qr_factor: [reflectors and R, tau] as LAPACK's geqrf (A = H_0 ... H_{k-1} R, k = min(m, n)).
std::vector<Tensor> qr_factor(const Tensor& a);
// Q C (transpose: Q^T C) for Q = H_0 ... H_{k-1} of geqrf's reflectors a [..., m, n] and tau
// [..., k] (k <= min(m, n)), c [..., m, p]: LAPACK's ormqr from the left; orgqr is Q times the
// first columns of the identity.
Tensor householder_apply(const Tensor& a, const Tensor& tau, const Tensor& c,
                         bool transpose = false);
// svd: [S (descending), U [..., m, k], Vh [..., k, n]], k = min(m, n) (one-sided Jacobi);
// svdvals: S. A matrix with a NaN or an infinity gives NaN.
std::vector<Tensor> svd(const Tensor& a);
Tensor svdvals(const Tensor& a);
// eigh: [eigenvalues (ascending), eigenvectors (columns)] of the symmetric matrix whose lower
// triangle is a's (cyclic Jacobi); eigvalsh: the eigenvalues.
std::vector<Tensor> eigh(const Tensor& a);
Tensor eigvalsh(const Tensor& a);

}  // namespace ember::ops
