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

#include "ember/graph/flow_graph.h"

namespace ember::ops {

// Applies a registered operator (the generic entry every function below uses).
std::vector<Tensor> apply(const std::string& op, const std::vector<Tensor>& inputs,
                          const OpAttrs& attrs = NoAttrs{});
// The same, for a registered operator already in hand (a pass holding a node's OpDef);
// traces keep its address.
std::vector<Tensor> apply(const OpDef& def, const std::vector<Tensor>& inputs,
                          const OpAttrs& attrs = NoAttrs{});

// Forgets the compiled one-node graphs imperative calls keep (by operator, attributes and
// input types); the next call finds its kernel in the kernel cache again.
void clear_imperative_cache();

// A 0-d constant tensor of `dtype` holding `value` (Python scalars in expressions).
Tensor scalar(double value, DType dtype);

// Elementwise unary.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, bool approximate_tanh = false);
Tensor silu(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor logical_not(const Tensor& x);

// Elementwise binary, numpy broadcasting. Both inputs must have the same dtype.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division; integers give float32
Tensor pow(const Tensor& a, const Tensor& b);
// Integers only, Python semantics; a zero divisor raises ember::DataError when it runs.
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
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

// Transforms. One dimension of `shape` in reshape may be -1.
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);
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

}  // namespace ember::ops
