// ember._C.ops: dense linear algebra (ember/ops/ops.h, src/ops/linalg_ops.cpp).
#include <nanobind/stl/vector.h>

#include "bindings.h"

namespace ember::py {

void bind_linalg_ops(nb::module_& m) {
  m.def(
      "lu_factor",
      [](const Tensor& a, bool check) { return tensors_to_python(ops::lu_factor(a, check)); },
      nb::arg("a"), nb::arg("check") = false,
      "(LU, int32 1-based pivots, int32 info) of LAPACK's getrf on the last two dimensions; "
      "check=True raises ember.DataError at run time for a singular matrix.");
  m.def(
      "cholesky",
      [](const Tensor& a, bool check) { return tensors_to_python(ops::cholesky(a, check)); },
      nb::arg("a"), nb::arg("check") = false,
      "(L lower, int32 info) of the Cholesky factorization (a's lower triangle read); "
      "check=True raises ember.DataError at run time for a matrix not positive-definite.");
  m.def("triangular_solve", &ops::triangular_solve, nb::arg("a"), nb::arg("b"), nb::arg("upper"),
        nb::arg("unit_diagonal") = false, nb::arg("transpose") = false,
        "X with op(A) X = B for a triangular A (op(A) = A^T when transpose).");
  m.def("lu_solve", &ops::lu_solve, nb::arg("lu"), nb::arg("pivots"), nb::arg("b"),
        nb::arg("transpose") = false,
        "X with A X = B (or A^T X = B) from lu_factor's LU and pivots.");
  m.def(
      "solve",
      [](const Tensor& a, const Tensor& b, bool check) {
        return tensors_to_python(ops::solve(a, b, check));
      },
      nb::arg("a"), nb::arg("b"), nb::arg("check") = false,
      "(X, int32 info) with A X = B; check=True raises ember.DataError for a singular A.");
  m.def("det", &ops::det, nb::arg("a"), "Determinants of the last two dimensions.");
  m.def(
      "slogdet", [](const Tensor& a) { return tensors_to_python(ops::slogdet(a)); }, nb::arg("a"),
      "(sign, log|det|) of the last two dimensions.");
  m.def("matrix_exp", &ops::matrix_exp, nb::arg("a"),
        "The matrix exponential (scaling and squaring with a degree-13 Pade approximant).");
  m.def(
      "qr_factor", [](const Tensor& a) { return tensors_to_python(ops::qr_factor(a)); },
      nb::arg("a"), "(reflectors and R, tau) of LAPACK's geqrf on the last two dimensions.");
  m.def("householder_apply", &ops::householder_apply, nb::arg("a"), nb::arg("tau"), nb::arg("c"),
        nb::arg("transpose") = false,
        "Q C (or Q^T C) for Q of geqrf's reflectors and tau (LAPACK's ormqr from the left).");
  m.def(
      "svd", [](const Tensor& a) { return tensors_to_python(ops::svd(a)); }, nb::arg("a"),
      "(S descending, U [..., m, k], Vh [..., k, n]) of the thin SVD (one-sided Jacobi).");
  m.def("svdvals", &ops::svdvals, nb::arg("a"), "The singular values, descending.");
  m.def(
      "eigh", [](const Tensor& a) { return tensors_to_python(ops::eigh(a)); }, nb::arg("a"),
      "(eigenvalues ascending, eigenvectors as columns) of the symmetric matrix whose lower "
      "triangle is a's (cyclic Jacobi).");
  m.def("eigvalsh", &ops::eigvalsh, nb::arg("a"),
        "The eigenvalues (ascending) of the symmetric matrix whose lower triangle is a's.");
}

}  // namespace ember::py
