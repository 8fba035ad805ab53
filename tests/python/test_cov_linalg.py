"""Dense linear algebra through the torch backend (converters/linalg.py) against eager torch:
determinants, inverses, solves, LU, Cholesky, triangular solves; singular inputs of the
raising operators are ember.DataError when the graph runs."""

from __future__ import annotations

import pytest
import torch
from _helpers_torch import check

import ember

torch.manual_seed(0)


def _well(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    n = shape[-1]
    return torch.randn(*shape, dtype=dtype) + n * torch.eye(n, dtype=dtype)


def _spd(*shape: int) -> torch.Tensor:
    a = torch.randn(*shape)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_determinants(dtype: torch.dtype) -> None:
    a = torch.randn(3, 4, 4, dtype=dtype)
    check(lambda x: (torch.linalg.det(x), torch.det(x)), a, tol=1e-4)
    check(lambda x: tuple(torch.linalg.slogdet(x)), a, tol=1e-4)
    check(torch.logdet, a, tol=1e-4)  # negative determinants are NaN
    check(torch.linalg.det, torch.ones(3, 3, dtype=dtype))  # singular: 0
    check(torch.linalg.det, torch.randn(2, 0, 0, dtype=dtype))  # 0 x 0: 1


def test_inverse_and_solves() -> None:
    a, b = _well(2, 4, 4), torch.randn(2, 4, 3)
    check(torch.linalg.inv, a, tol=1e-4)
    check(lambda x: tuple(torch.linalg.inv_ex(x)), torch.ones(3, 3).tril())
    check(torch.linalg.solve, a, b, tol=1e-4)
    check(lambda x, y: torch.linalg.solve(x, y, left=False), a, b.mT, tol=1e-4)
    check(torch.linalg.solve, a, torch.randn(4), tol=1e-4)  # a vector, broadcast batch
    check(lambda x, y: tuple(torch.linalg.solve_ex(x, y)), a[0], torch.randn(5, 4, 2), tol=1e-4)


def test_singular_raises() -> None:
    sing = torch.ones(2, 3, 3)
    for fn in (lambda x: torch.linalg.inv(x), lambda x: torch.linalg.cholesky(x),
               lambda x: torch.linalg.lu_factor(x)[0], lambda x: torch.linalg.solve(x, x)):
        compiled = torch.compile(fn, backend="ember", options={"strict": True})
        with pytest.raises(ember.DataError, match="matrix 0 of the batch"):
            compiled(sing)


def test_lu() -> None:
    for shape in ((4, 4), (2, 3, 5), (2, 5, 3)):
        torch._dynamo.reset()  # static sizes: a tall matrix of symbolic sizes falls back
        a = torch.randn(*shape)
        check(lambda x: tuple(torch.linalg.lu_factor_ex(x)), a, tol=1e-4)
        check(lambda x: tuple(torch.linalg.lu(x)), a, tol=1e-4)
        check(lambda x: tuple(torch.lu_unpack(*torch.linalg.lu_factor(x))), a, tol=1e-4)
    a, b = _well(2, 4, 4), torch.randn(2, 4, 3)
    lu, piv = torch.linalg.lu_factor(a)
    for left in (True, False):
        for adjoint in (True, False):
            rhs = b if left else b.mT
            check(lambda x, p, y, left=left, adjoint=adjoint: torch.linalg.lu_solve(
                x, p, y, left=left, adjoint=adjoint), lu, piv, rhs, tol=1e-4)
    check(torch.lu_solve, b, lu, piv, tol=1e-4)
    # Rank-deficient: the zero pivot is kept, info reports it.
    check(lambda x: tuple(torch.linalg.lu_factor_ex(x)), torch.ones(3, 3))


def test_cholesky() -> None:
    a = _spd(2, 4, 4)
    check(torch.linalg.cholesky, a, tol=1e-4)
    check(lambda x: torch.linalg.cholesky(x, upper=True), a, tol=1e-4)
    check(lambda x: torch.cholesky(x, True), a, tol=1e-4)
    info = torch.compile(lambda x: torch.linalg.cholesky_ex(x).info, backend="ember",
                         options={"strict": True})(-torch.eye(3))
    assert info.item() == 1
    low = torch.linalg.cholesky(a)
    b = torch.randn(4, 2)
    for upper in (False, True):
        f = low.mT if upper else low
        check(lambda y, x, upper=upper: torch.cholesky_solve(y, x, upper), b, f, tol=1e-4)
        check(lambda x, upper=upper: torch.cholesky_inverse(x, upper), f, tol=1e-4)
    # A factor with a zero on its diagonal: torch raises, ember raises DataError.
    bad = low.clone()
    bad[1, 1] = 0.0
    with pytest.raises(RuntimeError):
        torch.cholesky_inverse(bad)
    inverse = torch.compile(lambda x: torch.cholesky_inverse(x), backend="ember",
                            options={"strict": True})
    with torch.no_grad(), pytest.raises(ember.DataError):
        inverse(bad)


def test_triangular() -> None:
    a, b = _well(2, 4, 4), torch.randn(2, 4, 3)
    for upper in (True, False):
        for unit in (True, False):
            check(lambda x, y, upper=upper, unit=unit: torch.linalg.solve_triangular(
                x, y, upper=upper, unitriangular=unit), a, b, tol=1e-4)
            check(lambda x, y, upper=upper, unit=unit: torch.linalg.solve_triangular(
                x, y, upper=upper, left=False, unitriangular=unit), a, b.mT, tol=1e-4)
            for trans in (True, False):
                check(lambda y, x, upper=upper, unit=unit, trans=trans: tuple(
                    torch.triangular_solve(y, x, upper, trans, unit)), b, a[:1], tol=1e-4)


def test_tensor_ops_cond_matrix_exp() -> None:
    torch._dynamo.reset()  # tensorinv / tensorsolve need static sizes
    a = _well(6, 6).reshape(6, 2, 3)
    check(lambda x: torch.linalg.tensorinv(x, ind=1), a, tol=1e-4)
    check(torch.linalg.tensorsolve, a, torch.randn(6), tol=1e-4)
    for p in (1, -1, float("inf"), -float("inf"), "fro"):
        check(lambda x, p=p: torch.linalg.cond(x, p), _well(2, 3, 3), tol=1e-4)
    check(lambda x: torch.linalg.cond(x, 1), torch.ones(3, 3))  # singular: inf
    check(torch.matrix_exp, torch.randn(2, 4, 4, dtype=torch.float64))
