// matmul: the matrix product with numpy semantics. The fusion lowering turns it into a
// Matmul stage (the GEMM template); `reduce` describes the same product as a generic
// reduction over k, the fallback for dtypes the template does not take.
#include "ember/ops/matmul.h"

#include <string>
#include <utility>

#include "common.h"
#include "ember/support/error.h"

namespace ember {

MatmulDims matmul_dims(const TensorType& a, const TensorType& b) {
  EMBER_CHECK(a.rank() >= 1 && b.rank() >= 1,
              "matmul: both operands need at least one dimension, got "
                  << a.str() << " and " << b.str() << "; multiply by a 0-d tensor with mul");
  MatmulDims d;
  d.a_vector = a.rank() == 1;
  d.b_vector = b.rank() == 1;
  const ir::Expr ka = a.shape.back();
  const ir::Expr kb = d.b_vector ? b.shape[0] : b.shape[b.shape.size() - 2];
  d.m = d.a_vector ? ir::Expr(1) : a.shape[a.shape.size() - 2];
  d.n = d.b_vector ? ir::Expr(1) : b.shape.back();
  EMBER_CHECK(opdefs::same_dim(ka, kb),
              "matmul: shapes " << shape_str(a.shape) << " and " << shape_str(b.shape)
                                << " are not aligned: a has " << ir::to_string(ka)
                                << " columns but b has " << ir::to_string(kb)
                                << " rows; a's last dimension must equal b's "
                                << (d.b_vector ? "only" : "second-to-last") << " dimension");
  d.k = ka;
  const Shape a_batch(a.shape.begin(), a.shape.end() - (d.a_vector ? 1 : 2));
  const Shape b_batch(b.shape.begin(), b.shape.end() - (d.b_vector ? 1 : 2));
  try {
    d.batch = opdefs::broadcast_shapes("matmul", a_batch, b_batch);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the batch dimensions of " + shape_str(a.shape) +
                " and " + shape_str(b.shape) + ")");
  }
  return d;
}

TensorType stored_transposed(const TensorType& b) {
  EMBER_CHECK(b.rank() >= 2, "matmul: an operand read transposed in place is a matrix stored "
                                 << "with its last two dimensions swapped (a Linear layer's "
                                 << "weight [..., N, K]), got " << b.str());
  TensorType t = b;
  std::swap(t.shape[t.shape.size() - 1], t.shape[t.shape.size() - 2]);
  return t;
}

Shape matmul_output_shape(const MatmulDims& d) {
  Shape s = d.batch;
  if (!d.a_vector) s.push_back(d.m);
  if (!d.b_vector) s.push_back(d.n);
  return s;
}

namespace opdefs {
namespace {

const char* matmul_name(bool ta, bool tb) {
  return ta ? (tb ? "matmul_tt" : "matmul_tn") : (tb ? "matmul_nt" : "matmul");
}

// The operands as the [..., M, K] and [..., K, N] matrices they stand for.
template <bool kTA, bool kTB>
std::pair<TensorType, TensorType> logical_operands(const std::vector<TensorType>& in) {
  return {kTA ? stored_transposed(in.at(0)) : in.at(0),
          kTB ? stored_transposed(in.at(1)) : in.at(1)};
}

template <bool kTA, bool kTB>
std::vector<TensorType> infer_matmul(const std::vector<TensorType>& in, const OpAttrs&) {
  const char* name = matmul_name(kTA, kTB);
  check_arity(name, in, 2);
  const Device device = common_device(name, in);
  check_same_dtype(name, in[0], in[1]);
  check_not_bool(name, in[0]);
  const auto [a, b] = logical_operands<kTA, kTB>(in);
  const MatmulDims d = matmul_dims(a, b);
  return {TensorType{in[0].dtype, matmul_output_shape(d), device}};
}

// sum over k of a[batch..., m, k] * b[batch..., k, n] (a_stored[batch..., k, m] when kTA,
// b_stored[batch..., n, k] when kTB), accumulated in the compute dtype.
template <bool kTA, bool kTB>
ReduceDef reduce_matmul(const std::vector<TensorType>& in, const TensorType& out, const OpAttrs&) {
  const auto [a, b] = logical_operands<kTA, kTB>(in);
  const MatmulDims d = matmul_dims(a, b);
  ReduceDef r;
  r.op = ir::ReduceOp::Sum;
  r.acc_dtype = compute_dtype(a.dtype);
  r.rextents = {d.k};
  const DType acc = r.acc_dtype;
  r.value = [a, b, d, acc](const Index& idx, const Index& ridx, const Loader& load) {
    const size_t nb = d.batch.size();
    const Index batch(idx.begin(), idx.begin() + nb);
    const Expr k = ridx.at(0);
    const Shape a_batch(a.shape.begin(), a.shape.end() - (d.a_vector ? 1 : 2));
    const Shape b_batch(b.shape.begin(), b.shape.end() - (d.b_vector ? 1 : 2));
    Index ai = broadcast_index(batch, a_batch);
    Index bi = broadcast_index(batch, b_batch);
    const Expr m = d.a_vector ? Expr() : idx.at(nb);
    const Expr n = d.b_vector ? Expr() : idx.at(nb + (d.a_vector ? 0 : 1));
    if (kTA) {
      ai.push_back(k);
      ai.push_back(m);
    } else {
      if (!d.a_vector) ai.push_back(m);
      ai.push_back(k);
    }
    if (kTB) {
      bi.push_back(n);
      bi.push_back(k);
    } else {
      bi.push_back(k);
      if (!d.b_vector) bi.push_back(n);
    }
    const Expr x = cast_to(to_compute(load(0, ai)), acc);
    const Expr y = cast_to(to_compute(load(1, bi)), acc);
    return ir::binary(ir::BinaryOp::Mul, x, y);
  };
  if (acc != out.dtype) {
    const DType o = out.dtype;
    r.finalize = [o](const Expr& v) { return cast_to(v, o); };
  }
  return r;
}

template <bool kTA, bool kTB>
OpDef matmul_def(const char* title) {
  OpDef d;
  d.name = matmul_name(kTA, kTB);
  d.title = title;
  d.kind = OpKind::Matmul;
  OpTraits t = default_traits(OpKind::Matmul);
  t.a_transposed = kTA;
  t.b_transposed = kTB;
  d.declared_traits = t;
  d.num_inputs = 2;
  d.infer = infer_matmul<kTA, kTB>;
  d.reduce = reduce_matmul<kTA, kTB>;
  return d;
}

}  // namespace

EMBER_REGISTER_OP { return matmul_def<false, false>("Matmul"); }

// a @ b^T with b stored [..., N, K]: a Linear layer's product with its weight as stored, so
// that a weight shared with another use (an embedding table tied to the output projection)
// is kept once.
EMBER_REGISTER_OP { return matmul_def<false, true>("MatmulNT"); }

// a^T @ b with a stored [..., K, M], and a^T @ b^T: what the rewrite of transposed operands
// (rewrite_patterns, transpose_rule.cpp) makes of a product of permuted operands, such as a
// weight's gradient x^T dy in a backward graph.
EMBER_REGISTER_OP { return matmul_def<true, false>("MatmulTN"); }
EMBER_REGISTER_OP { return matmul_def<true, true>("MatmulTT"); }

}  // namespace opdefs

const OpDef& matmul_variant(bool a_transposed, bool b_transposed) {
  static const OpDef* const variants[2][2] = {
      {&op_def(opdefs::matmul_name(false, false)), &op_def(opdefs::matmul_name(false, true))},
      {&op_def(opdefs::matmul_name(true, false)), &op_def(opdefs::matmul_name(true, true))}};
  return *variants[a_transposed][b_transposed];
}

}  // namespace ember
