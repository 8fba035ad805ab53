"""Dense linear algebra through the torch backend (converters/linalg.py) against eager torch:
determinants, inverses, solves, LU, Cholesky, triangular solves; singular inputs of the
raising operators are ember.DataError when the graph runs."""

from __future__ import annotations

from typing import Any

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


# ---- QR, symmetric eigenvalues, SVD ---------------------------------------------------------
# Odd sizes, square, tall and wide (the routines compute in double, whatever the dtype).
SHAPES = [(1, 1), (2, 2), (3, 3), (7, 7), (17, 17), (33, 33), (7, 3), (3, 7), (33, 17),
          (2, 17)]
E = ember.ops


def _strict(fn: Any) -> Any:
    return torch.compile(fn, backend="ember", dynamic=False, options={"strict": True})


def _run(fn: Any, *args: Any) -> Any:
    torch._dynamo.reset()
    with torch.no_grad():
        return _strict(fn)(*args)


def _close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    torch.testing.assert_close(got, want, atol=tol, rtol=tol, equal_nan=True)


def _eye_like(q: torch.Tensor) -> torch.Tensor:
    return torch.eye(q.shape[-1], dtype=q.dtype).expand(q.shape[:-2] + (q.shape[-1],) * 2)


def _rank_deficient(m: int, n: int, r: int, batch: int = 2) -> torch.Tensor:
    return torch.randn(batch, m, r, dtype=torch.float64) @ torch.randn(batch, r, n,
                                                                       dtype=torch.float64)


def _qr_all(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    out = list(torch.geqrf(x))
    for mode in ("reduced", "complete", "r"):
        out += list(torch.linalg.qr(x, mode=mode))
    return (*out, torch.qr(x, some=False)[0])


def _reflectors_all(a: torch.Tensor, tau: torch.Tensor, c: torch.Tensor) -> tuple[Any, ...]:
    out = [torch.ormqr(a, tau, y, left, trans) for left, y in ((True, c), (False, c.mT))
           for trans in (True, False)]
    if a.shape[-2] >= a.shape[-1]:
        k = a.shape[-1]
        out += [torch.linalg.householder_product(a, tau[..., :kk]) for kk in (0, k // 2, k)]
    return tuple(out)


@pytest.mark.parametrize("m,n", SHAPES)
def test_qr_family(m: int, n: int) -> None:
    a = torch.randn(2, m, n, dtype=torch.float64)
    # geqrf follows LAPACK's conventions (beta = -sign(alpha) |x|): equal to torch's in double.
    got, want = _run(_qr_all, a), _qr_all(a)
    for g, w in zip(got, want, strict=True):
        _close(g, w, 1e-10)
    for q, r in (got[2:4], got[4:6]):  # reduced, complete
        _close(q @ r, a, 1e-10)
        _close(q.mT @ q, _eye_like(q), 1e-10)
    # Q from the reflectors (k <= n <= m), and Q / Q^T applied from either side.
    ea, etau = want[:2]
    c = torch.randn(2, m, 5, dtype=torch.float64)
    for g, w in zip(_run(_reflectors_all, ea, etau, c), _reflectors_all(ea, etau, c),
                    strict=True):
        _close(g, w, 1e-10)
    # float32 in and out, computed in double: within float32 rounding of the float64 result.
    q32, r32 = _run(torch.linalg.qr, a.float())
    _close(q32.double() @ r32.double(), a, 1e-5 * max(1, min(m, n)))


def test_qr_empty_and_nan() -> None:
    for shape in ((0, 0), (3, 0), (0, 3), (0, 4, 2)):
        a = torch.randn(*shape)
        for mode in ("reduced", "complete"):
            got = _run(lambda x, mode=mode: torch.linalg.qr(x, mode=mode), a)
            want = torch.linalg.qr(a, mode=mode)
            for g, w in zip(got, want, strict=True):
                _close(g, w, 0.0)
        g, t = _run(torch.geqrf, a)
        assert g.shape == a.shape and t.shape == torch.geqrf(a)[1].shape
    a = torch.randn(4, 3)
    a[1, 1] = float("nan")
    q, r = _run(torch.linalg.qr, a)
    assert torch.isnan(q).any() and torch.isnan(r).any()


@pytest.mark.parametrize("n", [1, 2, 3, 7, 17, 33])
def test_symmetric_eigenvalues(n: int) -> None:
    a = torch.randn(3, n, n, dtype=torch.float64)
    for uplo in ("L", "U"):
        got = _run(lambda x, uplo=uplo: torch.linalg.eigvalsh(x, UPLO=uplo), a)
        _close(got, torch.linalg.eigvalsh(a, UPLO=uplo), 1e-10)
    # The eigenvectors (ember.ops.eigh): residual, orthonormality, ascending order.
    sym = a.tril() + a.tril(-1).mT
    w, v = (t.torch() for t in E.eigh(ember.from_torch(a)))
    _close(sym @ v, v * w.unsqueeze(-2), 1e-10 * max(1, n))
    _close(v.mT @ v, _eye_like(v), 1e-12 * max(1, n))
    assert bool((w[..., 1:] >= w[..., :-1]).all())
    # float32: within float32 rounding of the float64 eigenvalues.
    got32 = _run(torch.linalg.eigvalsh, a.float())
    _close(got32.double(), torch.linalg.eigvalsh(a), 1e-5 * max(1, n))
    # A rank-deficient (singular) matrix and repeated eigenvalues.
    low = _rank_deficient(n, n, max(n // 2, 1))
    low = low + low.mT
    _close(_run(torch.linalg.eigvalsh, low), torch.linalg.eigvalsh(low), 1e-9 * max(1, n))
    eye = torch.eye(n, dtype=torch.float64).repeat(2, 1, 1)
    _close(_run(torch.linalg.eigvalsh, eye), torch.ones(2, n, dtype=torch.float64), 0.0)


def _spectral_all(b: torch.Tensor, low: torch.Tensor) -> tuple[torch.Tensor, ...]:
    out = [torch.linalg.pinv(b), torch.pinverse(b), torch.linalg.pinv(low),
           torch.linalg.matrix_rank(low)]
    out += [torch.linalg.matrix_norm(b, o) for o in ("nuc", 2, -2)]
    return (*out, *(torch.linalg.cond(b, p) for p in (None, 2, -2)))


@pytest.mark.parametrize("m,n", SHAPES)
def test_singular_values(m: int, n: int) -> None:
    a = torch.randn(2, 3, m, n, dtype=torch.float64)
    _close(_run(torch.linalg.svdvals, a), torch.linalg.svdvals(a), 1e-10)
    # The thin SVD (ember.ops.svd): reconstruction, orthonormal columns, descending values.
    for x in (a, _rank_deficient(m, n, max(min(m, n) // 2, 1))):
        s, u, vh = (t.torch() for t in E.svd(ember.from_torch(x)))
        k = min(m, n)
        assert s.shape == x.shape[:-2] + (k,) and u.shape == x.shape[:-1] + (k,)
        assert vh.shape == x.shape[:-2] + (k, n)
        _close((u * s.unsqueeze(-2)) @ vh, x, 1e-10 * max(m, n))
        _close(u.mT @ u, _eye_like(u.mT @ u), 1e-10 * max(m, n))
        _close(vh @ vh.mT, _eye_like(vh @ vh.mT), 1e-10 * max(m, n))
        assert bool((s[..., 1:] <= s[..., :-1]).all())
        _close(s, torch.linalg.svdvals(x), 1e-9 * max(m, n))
    # Everything made of singular values.
    b, low = a[0], _rank_deficient(m, n, max(min(m, n) // 2, 1))
    for g, w in zip(_run(_spectral_all, b, low), _spectral_all(b, low), strict=True):
        _close(g, w, 1e-7 if w.dtype.is_floating_point else 0.0)
    # float32 in and out.
    got32 = _run(torch.linalg.svdvals, a.float())
    _close(got32.double(), torch.linalg.svdvals(a), 1e-5 * max(m, n))


def test_spectral_options() -> None:
    a = torch.randn(2, 5, 5, dtype=torch.float64)
    for kw in ({"atol": 1.0}, {"rtol": 0.3}, {"atol": 0.5, "rtol": 0.1}, {"hermitian": True},
               {"hermitian": True, "atol": 1.0}):
        _close(_run(lambda x, kw=kw: torch.linalg.matrix_rank(x, **kw), a),
               torch.linalg.matrix_rank(a, **kw), 0.0)
        _close(_run(lambda x, kw=kw: torch.linalg.pinv(x, **kw), a),
               torch.linalg.pinv(a, **kw), 1e-8)
    tol = torch.tensor([0.5, 2.0], dtype=torch.float64)
    _close(_run(lambda x, t: torch.linalg.matrix_rank(x, atol=t), a, tol),
           torch.linalg.matrix_rank(a, atol=tol), 0.0)
    _close(_run(lambda x, t: torch.linalg.pinv(x, rtol=t), a, tol),
           torch.linalg.pinv(a, rtol=tol), 1e-8)
    x = torch.randn(3, 4, 5)
    for fn in (lambda y: torch.norm(y[0], p="nuc"), lambda y: torch.norm(y, p="nuc", dim=(0, 2)),
               lambda y: torch.linalg.norm(y, ord=2, dim=(2, 0), keepdim=True),
               lambda y: torch.linalg.norm(y[1], ord=-2)):
        _close(_run(fn, x), fn(x), 1e-4)
    # Empty matrices: no singular value (nuclear norm 0, rank 0, an empty pinv).
    for shape in ((0, 3), (3, 0), (2, 0, 0)):
        e = torch.randn(*shape)
        for fn in (torch.linalg.svdvals, torch.linalg.pinv, torch.linalg.matrix_rank,
                   lambda y: torch.linalg.matrix_norm(y, "nuc")):
            _close(_run(fn, e), fn(e), 0.0)
    # NaN gives NaN (ember) where LAPACK may report a failure instead.
    nan = torch.randn(4, 3)
    nan[0, 0] = float("nan")
    assert torch.isnan(_run(torch.linalg.svdvals, nan)).all()
    assert torch.isnan(_run(torch.linalg.eigvalsh, nan[:3])).all()


def test_symbolic_sizes() -> None:
    """One graph for several sizes (dynamic=True): min(m, n), the default tolerance eps *
    max(m, n) and a square matrix of two symbols (torch checked them equal) at run time."""
    def fn(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        q, r = torch.linalg.qr(x)
        return (q, r, torch.linalg.pinv(x), torch.linalg.matrix_rank(x), torch.linalg.svdvals(x),
                torch.linalg.pinv(y, hermitian=True), torch.linalg.eigvalsh(y))

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="ember", dynamic=True, options={"strict": True})
    # Well-conditioned inputs of a generator of the test's own: a pseudo-inverse's float32
    # error grows with the condition number, and the module's random state depends on the
    # tests that ran before this one on the same worker (an unlucky y had 4e-4).
    gen = torch.Generator().manual_seed(7)
    for m, n in ((5, 3), (4, 6), (7, 2)):
        x = torch.randn(2, m, n, generator=gen) + 3 * torch.eye(m, n)
        a = torch.randn(2, n, n, generator=gen)
        y = a @ a.mT / n + torch.eye(n)  # symmetric, eigenvalues >= 1
        with torch.no_grad():
            got, want = compiled(x, y), fn(x, y)
        for g, w in zip(got, want, strict=True):
            _close(g, w, 1e-4 if w.dtype.is_floating_point else 0.0)
