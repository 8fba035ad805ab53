// Dense linear algebra, each operator one call of a routine of the runtime library
// (ir::StageKind::Call, ember_rt/linalg.h): LU factorization, Cholesky, triangular solves,
// solves from an LU factorization, solves, determinants, the matrix exponential, Householder
// QR (geqrf and applying its reflectors), symmetric eigendecompositions and SVDs.
//
// Matrices are the last two dimensions of float32 or float64 tensors; the leading ones
// are a batch, which every input of one call shares exactly (broadcast them first). Like
// library_ops.cpp, these are anchors that take neither a prologue nor an epilogue. Flags
// (upper, unit diagonal, transpose, whether a singular input is an error) are part of the
// operator's name, so that every variant is its own registered operator.
#include <string>

#include "common.h"
#include "ember/ops/ops.h"
#include "ember/support/error.h"

namespace ember {
namespace opdefs {
namespace {

OpTraits linalg_traits() {
  OpTraits t;
  t.anchor = true;
  t.epilogue = EpilogueRule::None;
  return t;
}

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// A batch of matrices of float32 / float64; square when asked.
void check_matrix(const std::string& op, const TensorType& x, const char* what, bool square) {
  EMBER_CHECK(x.dtype == DType::float32 || x.dtype == DType::float64,
              op << ": " << what << " must be float32 or float64, got " << dtype_name(x.dtype)
                 << "; cast it first");
  EMBER_CHECK(x.rank() >= 2, op << ": " << what << " must have at least two dimensions, got "
                                << shape_str(x.shape));
  EMBER_CHECK(
      !square || same_dim(x.shape[x.rank() - 1], x.shape[x.rank() - 2]),
      op << ": " << what << " must be a batch of square matrices, got " << shape_str(x.shape));
}

// b [..., n, k] with a's batch and rows and dtype.
void check_rhs(const std::string& op, const TensorType& a, const TensorType& b) {
  check_matrix(op, b, "the right-hand side", false);
  check_same_dtype(op, a, b);
  const Shape ba = batch_of(a.shape), bb = batch_of(b.shape);
  bool same = ba.size() == bb.size() && same_dim(a.shape[a.rank() - 2], b.shape[b.rank() - 2]);
  for (size_t i = 0; same && i < ba.size(); ++i) same = same_dim(ba[i], bb[i]);
  EMBER_CHECK(same, op << ": the right-hand side " << shape_str(b.shape) << " must have the batch "
                       << "and rows of the matrices " << shape_str(a.shape)
                       << " (broadcast them first)");
}

TensorType with_shape(const TensorType& t, DType dtype, const Shape& shape) {
  return TensorType{dtype, shape, t.device};
}

// One Call stage of `routine` on every input, writing every output, with params(in).
using ParamsFn = std::function<std::vector<Expr>(const std::vector<TensorType>&)>;
using InferFn = std::function<std::vector<TensorType>(const std::vector<TensorType>&)>;

// The routine's floating-point operations for inputs `in` (ir::Stage::flops); null where
// they depend on the data (the iterative eigen- and singular value solvers, matrix_exp's
// squarings).
using FlopsFn = std::function<Expr(const std::vector<TensorType>&)>;

OpDef call_op(const std::string& name, const std::string& title, const std::string& routine,
              int num_inputs, InferFn infer, ParamsFn params, FlopsFn flops) {
  OpDef d;
  d.name = name;
  d.title = title;
  d.kind = OpKind::Composite;
  d.declared_traits = linalg_traits();
  d.num_inputs = num_inputs;
  d.infer = [name, num_inputs, infer](const std::vector<TensorType>& in, const OpAttrs&) {
    check_arity(name, in, num_inputs);
    common_device(name, in);
    return infer(in);
  };
  d.lower = [name, routine, params, flops](const std::vector<TensorType>& in,
                                           const std::vector<TensorType>& out, const OpAttrs&) {
    ir::Task t;
    t.name = name;
    ir::Stage s;
    s.kind = ir::StageKind::Call;
    s.routine = routine;
    for (size_t i = 0; i < in.size(); ++i)
      s.call_inputs.push_back(
          t.add_buffer("in" + std::to_string(i), in[i].dtype, in[i].shape, ir::BufferRole::Input));
    for (size_t i = 0; i < out.size(); ++i)
      s.call_outputs.push_back(t.add_buffer("out" + std::to_string(i), out[i].dtype, out[i].shape,
                                            ir::BufferRole::Output));
    s.out = s.call_outputs[0];
    s.params = params(in);
    if (flops) s.flops = flops(in);
    t.stages = {s};
    return t;
  };
  return d;
}

Expr rows(const TensorType& x) { return x.shape[x.rank() - 2]; }
Expr cols(const TensorType& x) { return x.shape[x.rank() - 1]; }
Expr batch_numel(const TensorType& x) { return shape_numel_expr(batch_of(x.shape)); }
Expr min_dim(const Expr& m, const Expr& n) { return same_dim(m, n) ? m : ir::min(m, n); }

// Leading-order operation counts of one matrix (a multiply and an add two):
// LU of m x n, k = min(m, n): the sum over the k eliminated columns j of 2 (m - j) (n - j)
// (2 n^3 / 3 square); Householder QR twice that; Cholesky n^3 / 3; a triangular solve n^2
// per right-hand side.
Expr lu_ops(const Expr& m, const Expr& n) {
  const Expr k = min_dim(m, n);
  return Expr(2) * m * n * k - (m + n) * k * k + floordiv(Expr(2) * k * k * k, Expr(3));
}
Expr tri_ops(const Expr& n, const Expr& rhs) { return n * n * rhs; }

OpDef lu_factor_op(bool check) {
  const std::string name = check ? "lu_factor_checked" : "lu_factor";
  return call_op(
      name, check ? "LUFactorChecked" : "LUFactor", "lu_factor", 1,
      [name](const std::vector<TensorType>& in) {
        const TensorType& a = in[0];
        check_matrix(name, a, "the input", false);
        const Expr m = rows(a), n = cols(a);
        const Expr k = same_dim(m, n) ? m : ir::min(m, n);
        Shape piv = batch_of(a.shape);
        piv.push_back(k);
        return std::vector<TensorType>{a, with_shape(a, DType::int32, piv),
                                       with_shape(a, DType::int32, batch_of(a.shape))};
      },
      [check](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0]), cols(in[0]),
                                 Expr(int64_t{check ? 1 : 0})};
      },
      [](const std::vector<TensorType>& in) {
        return batch_numel(in[0]) * lu_ops(rows(in[0]), cols(in[0]));
      });
}

OpDef cholesky_op(bool check) {
  const std::string name = check ? "cholesky_checked" : "cholesky";
  return call_op(
      name, check ? "CholeskyChecked" : "Cholesky", "cholesky", 1,
      [name](const std::vector<TensorType>& in) {
        check_matrix(name, in[0], "the input", true);
        return std::vector<TensorType>{in[0],
                                       with_shape(in[0], DType::int32, batch_of(in[0].shape))};
      },
      [check](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0]), Expr(int64_t{check ? 1 : 0})};
      },
      [](const std::vector<TensorType>& in) {
        const Expr n = rows(in[0]);
        return batch_numel(in[0]) * floordiv(n * n * n, Expr(3));
      });
}

std::string tri_name(bool upper, bool unit, bool trans) {
  return std::string("triangular_solve") + (upper ? "_upper" : "_lower") + (unit ? "_unit" : "") +
         (trans ? "_trans" : "");
}

OpDef triangular_solve_op(bool upper, bool unit, bool trans) {
  const std::string name = tri_name(upper, unit, trans);
  return call_op(
      name, "TriangularSolve", "triangular_solve", 2,
      [name](const std::vector<TensorType>& in) {
        check_matrix(name, in[0], "the matrix", true);
        check_rhs(name, in[0], in[1]);
        return std::vector<TensorType>{in[1]};
      },
      [upper, unit, trans](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]),   rows(in[0]),         cols(in[1]),
                                 Expr(int64_t{upper}), Expr(int64_t{unit}), Expr(int64_t{trans})};
      },
      [](const std::vector<TensorType>& in) {
        return batch_numel(in[0]) * tri_ops(rows(in[0]), cols(in[1]));
      });
}

OpDef lu_solve_op(bool trans) {
  const std::string name = trans ? "lu_solve_trans" : "lu_solve";
  return call_op(
      name, trans ? "LUSolveTrans" : "LUSolve", "lu_solve", 3,
      [name](const std::vector<TensorType>& in) {
        const TensorType &lu = in[0], &piv = in[1];
        check_matrix(name, lu, "the LU factorization", true);
        EMBER_CHECK(piv.dtype == DType::int32 || piv.dtype == DType::int64,
                    name << ": the pivots must be int32 or int64, got " << dtype_name(piv.dtype));
        Shape want = batch_of(lu.shape);
        want.push_back(rows(lu));
        EMBER_CHECK(shape_equal(piv.shape, want), name << ": the pivots " << shape_str(piv.shape)
                                                       << " must have shape " << shape_str(want));
        check_rhs(name, lu, in[2]);
        return std::vector<TensorType>{in[2]};
      },
      [trans](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0]), cols(in[2]),
                                 Expr(int64_t{trans})};
      },
      [](const std::vector<TensorType>& in) {  // two triangular solves
        return batch_numel(in[0]) * Expr(2) * tri_ops(rows(in[0]), cols(in[2]));
      });
}

OpDef solve_op(bool check) {
  const std::string name = check ? "solve_checked" : "solve";
  return call_op(
      name, check ? "SolveChecked" : "Solve", "solve", 2,
      [name](const std::vector<TensorType>& in) {
        check_matrix(name, in[0], "the matrix", true);
        check_rhs(name, in[0], in[1]);
        return std::vector<TensorType>{in[1],
                                       with_shape(in[0], DType::int32, batch_of(in[0].shape))};
      },
      [check](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0]), cols(in[1]),
                                 Expr(int64_t{check ? 1 : 0})};
      },
      [](const std::vector<TensorType>& in) {  // LU, then two triangular solves
        const Expr n = rows(in[0]);
        return batch_numel(in[0]) * (lu_ops(n, n) + Expr(2) * tri_ops(n, cols(in[1])));
      });
}

// det, slogdet, matrix_exp: one square input.
OpDef square_op(const std::string& name, const std::string& title, int outputs, bool batch_out) {
  return call_op(
      name, title, name, 1,
      [name, outputs, batch_out](const std::vector<TensorType>& in) {
        check_matrix(name, in[0], "the input", true);
        const TensorType out =
            batch_out ? with_shape(in[0], in[0].dtype, batch_of(in[0].shape)) : in[0];
        return std::vector<TensorType>(static_cast<size_t>(outputs), out);
      },
      [](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0])};
      },
      name == "matrix_exp" ? FlopsFn() : [](const std::vector<TensorType>& in) {  // LU
        return batch_numel(in[0]) * lu_ops(rows(in[0]), rows(in[0]));
      });
}

Shape batch_with(const TensorType& x, std::initializer_list<Expr> dims) {
  Shape s = batch_of(x.shape);
  s.insert(s.end(), dims.begin(), dims.end());
  return s;
}

// geqrf: [reflectors and R, tau [..., min(m, n)]].
OpDef qr_factor_op() {
  const std::string name = "qr_factor";
  return call_op(
      name, "QRFactor", "qr_factor", 1,
      [name](const std::vector<TensorType>& in) {
        check_matrix(name, in[0], "the input", false);
        const TensorType& a = in[0];
        return std::vector<TensorType>{
            a, with_shape(a, a.dtype, batch_with(a, {min_dim(rows(a), cols(a))}))};
      },
      [](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0]), cols(in[0])};
      },
      [](const std::vector<TensorType>& in) {
        return batch_numel(in[0]) * Expr(2) * lu_ops(rows(in[0]), cols(in[0]));
      });
}

// Q C (trans: Q^T C) for Q of geqrf's reflectors a [..., m, na] and tau [..., k].
OpDef householder_apply_op(bool trans) {
  const std::string name = trans ? "householder_apply_trans" : "householder_apply";
  return call_op(
      name, trans ? "HouseholderApplyTrans" : "HouseholderApply", "householder_apply", 3,
      [name](const std::vector<TensorType>& in) {
        const TensorType &a = in[0], &tau = in[1];
        check_matrix(name, a, "the reflectors", false);
        check_same_dtype(name, a, tau);
        const Shape ba = batch_of(a.shape);
        bool same = tau.rank() == a.rank() - 1;
        for (size_t i = 0; same && i < ba.size(); ++i) same = same_dim(ba[i], tau.shape[i]);
        EMBER_CHECK(same, name << ": tau " << shape_str(tau.shape) << " must have the batch of "
                               << "the reflectors " << shape_str(a.shape));
        check_rhs(name, a, in[2]);
        return std::vector<TensorType>{in[2]};
      },
      [trans](const std::vector<TensorType>& in) {
        const TensorType& tau = in[1];
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0]),
                                 cols(in[0]),        tau.shape[tau.rank() - 1],
                                 cols(in[2]),        Expr(int64_t{trans ? 1 : 0})};
      },
      [](const std::vector<TensorType>& in) {
        // Reflector j (length m - j) on each column of C: 4 (m - j) operations.
        const TensorType& tau = in[1];
        const Expr m = rows(in[0]), k = tau.shape[tau.rank() - 1], c = cols(in[2]);
        return batch_numel(in[0]) * (Expr(4) * c * m * k - Expr(2) * c * k * k);
      });
}

// svd: [S [..., k] descending, U [..., m, k], Vh [..., k, n]]; svdvals: [S].
OpDef svd_op(bool vectors) {
  const std::string name = vectors ? "svd" : "svdvals";
  return call_op(
      name, vectors ? "SVD" : "SVDVals", name, 1,
      [name, vectors](const std::vector<TensorType>& in) {
        const TensorType& a = in[0];
        check_matrix(name, a, "the input", false);
        const Expr m = rows(a), n = cols(a), k = min_dim(m, n);
        std::vector<TensorType> out{with_shape(a, a.dtype, batch_with(a, {k}))};
        if (vectors) {
          out.push_back(with_shape(a, a.dtype, batch_with(a, {m, k})));
          out.push_back(with_shape(a, a.dtype, batch_with(a, {k, n})));
        }
        return out;
      },
      [](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0]), cols(in[0])};
      },
      nullptr);
}

// eigh: [eigenvalues [..., n] ascending, eigenvectors [..., n, n] (columns)]; eigvalsh: the
// eigenvalues. The lower triangle is read.
OpDef eigh_op(bool vectors) {
  const std::string name = vectors ? "eigh" : "eigvalsh";
  return call_op(
      name, vectors ? "EigH" : "EigValsH", name, 1,
      [name, vectors](const std::vector<TensorType>& in) {
        check_matrix(name, in[0], "the input", true);
        std::vector<TensorType> out{
            with_shape(in[0], in[0].dtype, batch_with(in[0], {rows(in[0])}))};
        if (vectors) out.push_back(in[0]);
        return out;
      },
      [](const std::vector<TensorType>& in) {
        return std::vector<Expr>{batch_numel(in[0]), rows(in[0])};
      },
      nullptr);
}

}  // namespace

EMBER_REGISTER_OP { return lu_factor_op(false); }
EMBER_REGISTER_OP { return lu_factor_op(true); }
EMBER_REGISTER_OP { return cholesky_op(false); }
EMBER_REGISTER_OP { return cholesky_op(true); }
EMBER_REGISTER_OP { return lu_solve_op(false); }
EMBER_REGISTER_OP { return lu_solve_op(true); }
EMBER_REGISTER_OP { return solve_op(false); }
EMBER_REGISTER_OP { return solve_op(true); }
EMBER_REGISTER_OP { return square_op("det", "Det", 1, true); }
EMBER_REGISTER_OP { return square_op("slogdet", "SLogDet", 2, true); }
EMBER_REGISTER_OP { return square_op("matrix_exp", "MatrixExp", 1, false); }
EMBER_REGISTER_OP { return triangular_solve_op(false, false, false); }
EMBER_REGISTER_OP { return triangular_solve_op(false, false, true); }
EMBER_REGISTER_OP { return triangular_solve_op(false, true, false); }
EMBER_REGISTER_OP { return triangular_solve_op(false, true, true); }
EMBER_REGISTER_OP { return triangular_solve_op(true, false, false); }
EMBER_REGISTER_OP { return triangular_solve_op(true, false, true); }
EMBER_REGISTER_OP { return triangular_solve_op(true, true, false); }
EMBER_REGISTER_OP { return triangular_solve_op(true, true, true); }
EMBER_REGISTER_OP { return qr_factor_op(); }
EMBER_REGISTER_OP { return householder_apply_op(false); }
EMBER_REGISTER_OP { return householder_apply_op(true); }
EMBER_REGISTER_OP { return svd_op(true); }
EMBER_REGISTER_OP { return svd_op(false); }
EMBER_REGISTER_OP { return eigh_op(true); }
EMBER_REGISTER_OP { return eigh_op(false); }

}  // namespace opdefs

namespace ops {

std::vector<Tensor> lu_factor(const Tensor& a, bool check) {
  return apply(check ? "lu_factor_checked" : "lu_factor", {a}, NoAttrs{});
}
std::vector<Tensor> cholesky(const Tensor& a, bool check) {
  return apply(check ? "cholesky_checked" : "cholesky", {a}, NoAttrs{});
}
Tensor triangular_solve(const Tensor& a, const Tensor& b, bool upper, bool unit_diagonal,
                        bool transpose) {
  return apply(opdefs::tri_name(upper, unit_diagonal, transpose), {a, b}, NoAttrs{}).at(0);
}
Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool transpose) {
  return apply(transpose ? "lu_solve_trans" : "lu_solve", {lu, pivots, b}, NoAttrs{}).at(0);
}
std::vector<Tensor> solve(const Tensor& a, const Tensor& b, bool check) {
  return apply(check ? "solve_checked" : "solve", {a, b}, NoAttrs{});
}
Tensor det(const Tensor& a) { return apply("det", {a}, NoAttrs{}).at(0); }
std::vector<Tensor> slogdet(const Tensor& a) { return apply("slogdet", {a}, NoAttrs{}); }
Tensor matrix_exp(const Tensor& a) { return apply("matrix_exp", {a}, NoAttrs{}).at(0); }
std::vector<Tensor> qr_factor(const Tensor& a) { return apply("qr_factor", {a}, NoAttrs{}); }
Tensor householder_apply(const Tensor& a, const Tensor& tau, const Tensor& c, bool transpose) {
  return apply(transpose ? "householder_apply_trans" : "householder_apply", {a, tau, c}, NoAttrs{})
      .at(0);
}
std::vector<Tensor> svd(const Tensor& a) { return apply("svd", {a}, NoAttrs{}); }
Tensor svdvals(const Tensor& a) { return apply("svdvals", {a}, NoAttrs{}).at(0); }
std::vector<Tensor> eigh(const Tensor& a) { return apply("eigh", {a}, NoAttrs{}); }
Tensor eigvalsh(const Tensor& a) { return apply("eigvalsh", {a}, NoAttrs{}).at(0); }

}  // namespace ops
}  // namespace ember
