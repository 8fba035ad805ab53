"""Converters for the orthogonal decompositions of dense linear algebra: Householder QR
(geqrf, ormqr, householder_product, linalg.qr), symmetric eigenvalues, singular values and
what is made of them (pinv, matrix_rank, the nuclear and spectral norms), each on ember's
linear algebra routines (``ember.ops.qr_factor``, ``householder_apply``, ``eigvalsh``,
``svd``, ...: one call of a runtime library routine, computed in double and rounded once).
The rest of linear algebra, and the helpers used here, are in linalg.py.

Eigenvectors and singular vectors are defined only up to sign (LAPACK's choice of sign is
its implementation's), so ``linalg.eigh``, ``linalg.svd`` and ``torch.svd`` run in eager
PyTorch; what does not depend on the signs (eigenvalues, singular values, pinv,
matrix_rank, norms, cond) converts.
"""

from __future__ import annotations

from typing import Any

import torch

from ember.torch.converters.common import (
    cast,
    dtype_name,
    full,
    is_tensor,
    no_out,
    ops,
    py_value,
    rank,
    shape_of,
    unsupported,
)
from ember.torch.converters.composite_math import take
from ember.torch.converters.functions import register
from ember.torch.converters.linalg import _empty, _mT, identity
from ember.torch.registry import builtin_registrations, register_method


# ---- Householder QR ----------------------------------------------------------------------------
def _float_matrices(x: Any, what: str) -> list[Any]:
    dt = dtype_name(x)
    if dt not in ("float32", "float64"):
        raise unsupported(f"{what} of a {dt} tensor")
    if rank(x) < 2:
        raise unsupported(f"{what} of a tensor with fewer than two dimensions")
    return shape_of(x)


def _min_size(m: Any, n: Any) -> Any:
    """min(m, n) as an ember size (an expression when a size is symbolic)."""
    if m == n:
        return m
    if isinstance(m, int) and isinstance(n, int):
        return min(m, n)
    return f"min({m}, {n})"


def _zeros(shape: list[Any], dtype: str) -> Any:
    """An empty result (no element to compute)."""
    return full(shape, 0.0, dtype)


def _rows(x: Any, k: Any) -> Any:
    """The first k rows of the matrices x (k may be symbolic)."""
    if isinstance(k, int):
        return ops.slice(x, [-2], [0], [k])
    return take(x, rank(x) - 2, cast(ops.arange(0, k), "int64"))


def geqrf(A: Any, *, out: Any = None) -> Any:
    no_out(out)
    shape = _float_matrices(A, "geqrf")
    k = _min_size(shape[-2], shape[-1])
    if _empty(A):
        return _zeros(shape, dtype_name(A)), _zeros(shape[:-2] + [k], dtype_name(A))
    a, tau = ops.qr_factor(A)
    return a, tau


def _householder_left(A: Any, tau: Any, C: Any, trans: bool) -> Any:
    """Q C (trans: Q^T C) for Q of geqrf's reflectors A and tau (LAPACK's ormqr)."""
    if dtype_name(tau) != dtype_name(A) or dtype_name(C) != dtype_name(A):
        raise unsupported("Householder reflectors, tau and the matrix of different dtypes")
    sa, st, sc = shape_of(A), shape_of(tau), shape_of(C)
    if st[:-1] != sa[:-2] or sc[:-2] != sa[:-2] or sc[-2] != sa[-2]:
        raise unsupported("Householder reflectors, tau and a matrix of other batches or sizes")
    if _empty(C):
        return _zeros(sc, dtype_name(C))
    if st[-1] == 0:  # Q = I
        return C
    if _empty(A):
        raise unsupported("Householder reflectors of an empty matrix")
    return ops.householder_apply(A, tau, C, trans)


def householder_product(A: Any, tau: Any, *, out: Any = None) -> Any:
    no_out(out)
    shape = _float_matrices(A, "householder_product")
    m, n = shape[-2], shape[-1]
    if _empty(A):
        return _zeros(shape, dtype_name(A))
    return _householder_left(A, tau, identity(m, dtype_name(A), shape[:-2], n), False)


def ormqr(input: Any, tau: Any, other: Any, left: bool = True, transpose: bool = False, *,
          out: Any = None) -> Any:
    no_out(out)
    _float_matrices(input, "ormqr")
    _float_matrices(other, "ormqr")
    if left:
        return _householder_left(input, tau, other, bool(transpose))
    # C Q = (Q^T C^T)^T, C Q^T = (Q C^T)^T
    return _mT(_householder_left(input, tau, _mT(other), not transpose))


def _qr(A: Any, mode: str) -> tuple[Any, Any]:
    if mode not in ("reduced", "complete", "r"):
        raise unsupported(f"linalg.qr with mode={mode!r}")
    shape = _float_matrices(A, "linalg.qr")
    dt, batch = dtype_name(A), shape[:-2]
    m, n = shape[-2], shape[-1]
    k = _min_size(m, n)
    cols = m if mode == "complete" else k
    rows_r = m if mode == "complete" else k
    if _empty(A):
        # No reflector: Q is the identity (where it has elements), R has no element.
        empty_q = any(d == 0 for d in batch) or m == 0 or cols == 0
        q = _zeros(batch + [m, cols], dt) if empty_q else identity(m, dt, batch, cols)
        r = _zeros(batch + [rows_r, n], dt)
    else:
        a, tau = ops.qr_factor(A)
        q = ops.householder_apply(a, tau, identity(m, dt, batch, cols), False)
        r = ops.triu(a if rows_r == m else _rows(a, k))
    if mode == "r":
        q = _zeros([0], dt)
    return q, r


def linalg_qr(A: Any, mode: str = "reduced", *, out: Any = None) -> Any:
    no_out(out)
    return _qr(A, str(mode))


def torch_qr(A: Any, some: bool = True, *, out: Any = None) -> Any:
    no_out(out)
    return _qr(A, "reduced" if some else "complete")


# ---- eigenvalues and singular values -----------------------------------------------------------
def _lower(A: Any, uplo: Any) -> Any:
    """A whose lower triangle holds the triangle torch reads (UPLO)."""
    uplo = str(uplo).upper()
    if uplo not in ("L", "U"):
        raise unsupported(f"UPLO={uplo!r}")
    return A if uplo == "L" else _mT(A)


def _square(A: Any, what: str) -> Any:
    """A, whose matrices torch checked to be square: two symbols for its sizes (which
    Dynamo's guards made equal) become one."""
    shape = shape_of(A)
    m, n = shape[-2], shape[-1]
    if m == n:
        return A
    if isinstance(m, int) and isinstance(n, int):
        raise unsupported(f"{what} of non-square matrices")
    return ops.reshape(A, shape[:-2] + [n, n])


def eigvalsh(A: Any, UPLO: str = "L", *, out: Any = None) -> Any:  # noqa: N803 (torch's name)
    no_out(out)
    shape = _float_matrices(A, "eigvalsh")
    A = _square(A, "eigvalsh")
    if _empty(A):
        return _zeros(shape[:-1], dtype_name(A))
    return ops.eigvalsh(_lower(A, UPLO))


def _svdvals(A: Any) -> Any:
    shape = _float_matrices(A, "svdvals")
    if _empty(A):
        return _zeros(shape[:-2] + [_min_size(shape[-2], shape[-1])], dtype_name(A))
    return ops.svdvals(A)


def svdvals(A: Any, *, driver: Any = None, out: Any = None) -> Any:
    no_out(out)
    return _svdvals(A)


def _tolerance(value: Any, dt: str) -> Any:
    """A tolerance (a number, or a tensor of the batch's shape) as an operand of the
    singular values' [..., 1]."""
    if is_tensor(value):
        return ops.unsqueeze(cast(value, dt), [-1])
    return float(py_value(value))


def _threshold(A: Any, smax: Any, atol: Any, rtol: Any) -> Any:
    """max(atol, rtol * smax) with torch's defaults (linalg.pinv, linalg.matrix_rank): atol
    0; rtol eps * max(m, n), or 0 where an atol > 0 is given."""
    dt = dtype_name(A)
    a = 0.0 if atol is None else _tolerance(atol, dt)
    if rtol is None:
        m, n = shape_of(A)[-2:]
        eps = torch.finfo(getattr(torch, dt)).eps
        if isinstance(m, int) and isinstance(n, int):
            r = eps * max(m, n)
        else:  # eps * max(m, n) known at run time: the (exact) sum of max(m, n) eps
            r = ops.sum(ops.full([n if m == n else f"max({m}, {n})"], eps, dt), [0], True)
        if is_tensor(a):
            r = ops.mul(cast(a <= 0.0, dt), r)
        elif atol is not None and a > 0:
            r = 0.0
    else:
        r = _tolerance(rtol, dt)
    scaled = ops.mul(smax, r) if is_tensor(r) else smax * r
    if is_tensor(a) or a != 0.0:
        return ops.maximum(scaled, a)
    return scaled  # (singular values and magnitudes are >= 0)


def _spectrum(A: Any, hermitian: bool, vectors: bool) -> tuple[Any, ...]:
    """(|values| to threshold, the largest of them [..., 1], and the factors): singular
    values, or the eigenvalues' magnitudes of the symmetric matrix (A's lower triangle)."""
    if hermitian:
        if vectors:
            w, v = ops.eigh(A)
        else:
            w, v = ops.eigvalsh(A), None
        mag = ops.abs(w)
        return mag, ops.max(mag, [-1], True), w, v
    if vectors:
        s, u, vh = ops.svd(A)
    else:
        s, u, vh = ops.svdvals(A), None, None
    return s, ops.max(s, [-1], True), u, vh


def pinv(A: Any, rcond: Any = None, hermitian: bool = False, *, atol: Any = None,
         rtol: Any = None, out: Any = None) -> Any:
    no_out(out)
    if rcond is not None:  # pinv(A, rcond, hermitian): rtol = rcond, atol = 0
        atol, rtol = 0.0, rcond
    shape = _float_matrices(A, "linalg.pinv")
    dt = dtype_name(A)
    if hermitian:
        A = _square(A, "pinv(hermitian=True)")
    if _empty(A):
        return _zeros(shape[:-2] + [shape[-1], shape[-2]], dt)
    mag, big, x, y = _spectrum(A, bool(hermitian), True)
    keep = mag > _threshold(A, big, atol, rtol)
    if hermitian:  # V diag(1/w) V^T
        inv = ops.where(keep, ops.reciprocal(x), 0.0)
        return ops.matmul(ops.mul(y, ops.unsqueeze(inv, [-2])), _mT(y))
    inv = ops.where(keep, ops.reciprocal(mag), 0.0)  # V diag(1/s) U^T
    return ops.matmul(ops.mul(_mT(y), ops.unsqueeze(inv, [-2])), _mT(x))


def pinverse(A: Any, rcond: float = 1e-15) -> Any:
    return pinv(A, atol=0.0, rtol=rcond)


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None, out: Any = None) -> Any:
    no_out(out)
    if tol is not None:  # matrix_rank(A, tol): atol = tol, rtol = 0
        atol, rtol = tol, 0.0
    shape = _float_matrices(A, "linalg.matrix_rank")
    if hermitian:
        A = _square(A, "matrix_rank(hermitian=True)")
    if _empty(A):
        return full(shape[:-2], 0, "int64")
    mag, big, _, _ = _spectrum(A, bool(hermitian), False)
    return ops.sum(cast(mag > _threshold(A, big, atol, rtol), "int64"), [-1])


def spectral_norm(x: Any, ord: Any) -> Any:
    """The matrix norms of singular values over x's last two dimensions: 'nuc' (their sum),
    2 (the largest), -2 (the smallest)."""
    s = _svdvals(x)
    if ord == "nuc":
        return ops.sum(s, [-1])
    if _empty(x):
        raise unsupported(f"the matrix norm ord={ord!r} of an empty matrix")
    return ops.max(s, [-1]) if ord > 0 else ops.min(s, [-1])


def _registrations() -> None:
    register(geqrf, torch.geqrf)
    register(householder_product, torch.linalg.householder_product, torch.orgqr)
    register(ormqr, torch.ormqr)
    register(linalg_qr, torch.linalg.qr)
    register(torch_qr, torch.qr)
    register(eigvalsh, torch.linalg.eigvalsh)
    register(svdvals, torch.linalg.svdvals)
    register(pinv, torch.linalg.pinv)
    register(pinverse, torch.pinverse)
    register(matrix_rank, torch.linalg.matrix_rank)
    with builtin_registrations():
        for name, converter in (
            ("geqrf", geqrf), ("orgqr", householder_product), ("ormqr", ormqr),
            ("qr", torch_qr), ("pinverse", pinverse),
        ):
            register_method(name)(converter)


_registrations()
