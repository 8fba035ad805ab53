// The dimensions of a matrix product, for the matmul operator's shape rule and for the
// lowering that builds its Matmul stage.
#pragma once

#include "ember/tensor/tensor.h"

namespace ember {

struct OpDef;

// numpy matmul semantics: a is [..., M, K] (a 1-d a is [K], read as [1, K] with M then
// dropped from the output), b is [..., K, N] (a 1-d b is [K], read as [K, 1] with N
// dropped); the batch dimensions of a and b broadcast to `batch`.
// The output shape is batch + [m unless a_vector] + [n unless b_vector].
struct MatmulDims {
  Shape batch;
  ir::Expr m, n, k;
  bool a_vector = false;
  bool b_vector = false;
};

// Validates the operands (ember::Error naming the shapes and the rule: ranks >= 1, K equal,
// batch dimensions broadcastable) and gives the product's dimensions.
MatmulDims matmul_dims(const TensorType& a, const TensorType& b);

// An operand stored with its last two dimensions swapped (matmul_nt's second, matmul_tn's
// first) as the operand it stands for.
TensorType stored_transposed(const TensorType& b);

// The matrix product that reads its first and second operands as stored (false) or
// transposed in place (true): matmul, matmul_nt, matmul_tn or matmul_tt (OpTraits::
// a_transposed and b_transposed say which one an operator is).
const OpDef& matmul_variant(bool a_transposed, bool b_transposed);

// The output shape for these dimensions.
Shape matmul_output_shape(const MatmulDims& d);

}  // namespace ember
