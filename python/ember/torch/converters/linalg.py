"""Converters for dense linear algebra: determinants, inverses, solves, LU and Cholesky
factorizations, triangular solves, tensorinv / tensorsolve, matrix_exp and linalg.cond, each
on ember's linear algebra routines (``ember.ops.lu_factor``, ``solve``, ``cholesky``, ...:
one call of a runtime library routine, computed in double and rounded once). The orthogonal
decompositions (QR, eigenvalues, singular values and what is made of them) are in
linalg_orthogonal.py, on the helpers of this module.

Where torch raises for a singular (or not positive-definite) input (linalg.inv, solve,
cholesky, lu_factor, tensorinv, tensorsolve), the compiled graph raises ember.DataError when
it runs. Complex, integer and half inputs, empty matrices or batches (except where the
result has no element to compute, or is an identity), symbolic sizes and ``out=`` run in
eager PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ember.torch.context import ember_dtype, expected_value, sym_size
from ember.torch.converters.common import (
    cast,
    constant,
    dtype_name,
    fixed_number,
    fixed_shape,
    full,
    is_tensor,
    no_out,
    ops,
    rank,
    shape_of,
    unsupported,
)
from ember.torch.converters.functions import register
from ember.torch.registry import builtin_registrations, register_method


def _matrices(x: Any, what: str, square: bool = True) -> list[Any]:
    """x's shape (sizes may be symbols), checked to be a non-empty batch of float32 / float64
    matrices."""
    dt = dtype_name(x)
    if dt not in ("float32", "float64"):
        raise unsupported(f"{what} of a {dt} tensor")
    shape = shape_of(x)
    if len(shape) < 2:
        raise unsupported(f"{what} of a tensor with fewer than two dimensions")
    if any(d == 0 for d in shape):
        raise unsupported(f"{what} of an empty tensor")
    if square and shape[-1] != shape[-2]:
        raise unsupported(f"{what} of non-square matrices")
    return shape


def _mT(x: Any) -> Any:
    return ops.transpose(x, -2, -1)


def _expand_batch(x: Any, batch: list[Any]) -> Any:
    shape = shape_of(x)
    want = batch + shape[-2:]
    if shape == want:
        return x
    if len(shape) < len(want):
        x = ops.reshape(x, [1] * (len(want) - len(shape)) + shape)
    return ops.expand(x, want)


def _broadcast_batch(a: list[Any], b: list[Any]) -> list[Any]:
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise unsupported(f"batch dimensions {x} and {y} that may not broadcast")
    return out


def _broadcast(a: Any, b: Any) -> tuple[Any, Any, list[Any]]:
    """a [..., n, n] and b [..., n, k] with one broadcast batch."""
    batch = _broadcast_batch(shape_of(a)[:-2], shape_of(b)[:-2])
    if any(d == 0 for d in batch):
        raise unsupported("an empty batch")
    return _expand_batch(a, batch), _expand_batch(b, batch), batch


def identity(n: Any, dtype: str, batch: list[Any], cols: Any = None) -> Any:
    """The n x cols (n x n) identity, broadcast to batch (sizes may be symbolic)."""
    cols = n if cols is None else cols
    if isinstance(n, int) and isinstance(cols, int):
        eye = constant(torch.eye(n, cols, dtype=getattr(torch, dtype)))
    else:
        eye = ops.reshape(ops.arange(0, n), [n, 1]) == ops.reshape(ops.arange(0, cols), [1, cols])
        eye = cast(eye, dtype)
    return _expand_batch(eye, batch)


def _same_dtype(a: Any, b: Any, what: str) -> None:
    if dtype_name(a) != dtype_name(b):
        raise unsupported(f"{what} of a {dtype_name(a)} and a {dtype_name(b)} tensor")


def _empty(x: Any) -> bool:
    return any(d == 0 for d in shape_of(x))


# ---- determinants ----------------------------------------------------------------------------
def _empty_with_info(A: Any) -> tuple[Any, ...] | None:
    """For empty matrices A, the results of a factorization or solve that reports `info`
    (an int32 per matrix of the batch): every other result is empty, and every info 0 (no
    failure). None when A is not empty."""
    if rank(A) < 2 or not _empty(A) or dtype_name(A) not in ("float32", "float64"):
        return None
    results = []
    for meta in expected_value():
        dims = [sym_size(d) for d in meta.shape]
        no_elements = any(isinstance(d, int) and d == 0 for d in dims)
        if not no_elements and meta.dtype != torch.int32:
            return None
        results.append(full(dims, 0, ember_dtype(meta.dtype)))
    return tuple(results)


def _empty_det(A: Any, value: float) -> Any | None:
    """For an empty A, its determinants (a 0 x 0 matrix's is 1) filled with value."""
    if rank(A) < 2 or not _empty(A) or dtype_name(A) not in ("float32", "float64"):
        return None
    shape = shape_of(A)
    if shape[-1] != shape[-2]:
        raise unsupported("a determinant of non-square matrices")
    return full(shape[:-2], value, dtype_name(A))


def det(A: Any, *, out: Any = None) -> Any:
    no_out(out)
    empty = _empty_det(A, 1.0)
    if empty is not None:
        return empty
    _matrices(A, "det")
    return ops.det(A)


def slogdet(A: Any, *, out: Any = None) -> Any:
    no_out(out)
    empty = _empty_det(A, 1.0)
    if empty is not None:
        return empty, _empty_det(A, 0.0)
    _matrices(A, "slogdet")
    sign, logabs = ops.slogdet(A)
    return sign, logabs


def logdet(A: Any) -> Any:
    empty = _empty_det(A, 0.0)
    if empty is not None:
        return empty
    _matrices(A, "logdet")
    sign, logabs = ops.slogdet(A)
    return ops.where(sign < 0.0, math.nan, logabs)


# ---- inverses and solves ---------------------------------------------------------------------
def _inv(A: Any, check: bool) -> tuple[Any, Any]:
    shape = _matrices(A, "inv")
    x, info = ops.solve(A, identity(shape[-1], dtype_name(A), shape[:-2]), check)
    return x, info


def inv(A: Any, *, out: Any = None) -> Any:
    no_out(out)
    return _inv(A, True)[0]


def inv_ex(A: Any, *, check_errors: bool = False, out: Any = None) -> Any:
    no_out(out)
    empty = _empty_with_info(A)
    if empty is not None:
        return empty
    return _inv(A, bool(check_errors))


def _solve(A: Any, B: Any, left: bool, check: bool) -> tuple[Any, Any]:
    sa = _matrices(A, "solve")
    _same_dtype(A, B, "solve")
    sb = shape_of(B)
    vector = rank(B) == 1 or (rank(B) == rank(A) - 1 and sb == sa[:-1])
    if vector:
        B = ops.unsqueeze(B, [-1])
    _matrices(B, "solve", square=False)
    if not left:
        A = _mT(A)
        if not vector:
            B = _mT(B)
    a, b, batch = _broadcast(A, B)
    x, info = ops.solve(a, b, check)
    if shape_of(A)[:-2] != batch:  # torch's info has A's own batch
        info = ops.lu_factor(A, check)[2]
    if vector:
        x = ops.squeeze(x, [-1])
    elif not left:
        x = _mT(x)
    return x, info


def solve(A: Any, B: Any, *, left: bool = True, out: Any = None) -> Any:
    no_out(out)
    return _solve(A, B, bool(left), True)[0]


def solve_ex(A: Any, B: Any, *, left: bool = True, check_errors: bool = False,
             out: Any = None) -> Any:
    no_out(out)
    empty = _empty_with_info(A)
    if empty is not None:
        return empty
    return _solve(A, B, bool(left), bool(check_errors))


# ---- LU ----------------------------------------------------------------------------------------
def _lu_factor(A: Any, pivot: Any, check: bool) -> list[Any]:
    if not pivot:
        raise unsupported("LU without pivoting")
    _matrices(A, "lu_factor", square=False)
    return list(ops.lu_factor(A, check))


def lu_factor(A: Any, *, pivot: bool = True, out: Any = None) -> Any:
    no_out(out)
    lu, piv, _ = _lu_factor(A, pivot, True)
    return lu, piv


def lu_factor_ex(A: Any, *, pivot: bool = True, check_errors: bool = False,
                 out: Any = None) -> Any:
    no_out(out)
    empty = _empty_with_info(A)
    if empty is not None:
        return empty
    return tuple(_lu_factor(A, pivot, bool(check_errors)))


def torch_lu(A: Any, pivot: bool = True, get_infos: bool = False, out: Any = None) -> Any:
    no_out(out)
    lu, piv, info = _lu_factor(A, pivot, False)
    return (lu, piv, info) if get_infos else (lu, piv)


def _unpack(lu: Any, piv: Any) -> tuple[Any, Any, Any]:
    """P, L, U of A = P L U from getrf's LU [..., m, n] and pivots [..., min(m, n)]."""
    shape = _matrices(lu, "lu_unpack", square=False)
    if dtype_name(piv) not in ("int32", "int64"):
        raise unsupported(f"lu_unpack with {dtype_name(piv)} pivots")
    m, n = shape[-2], shape[-1]
    k = shape_of(piv)[-1]
    known = isinstance(m, int) and isinstance(n, int) and isinstance(k, int)
    if shape_of(piv)[:-1] != shape[:-2] or (known and k != min(m, n)):
        raise unsupported("lu_unpack with pivots of another batch or size")
    batch = shape[:-2]
    dt = dtype_name(lu)
    piv = cast(piv, "int32")
    if m != k:  # rows beyond the last pivot stay in place
        if not (isinstance(m, int) and isinstance(k, int)):
            raise unsupported("lu_unpack of a tall matrix of symbolic sizes")
        rest = constant(torch.arange(k + 1, m + 1, dtype=torch.int32))
        rest = ops.expand(ops.reshape(rest, [1] * len(batch) + [m - k]), batch + [m - k])
        piv = ops.concat([piv, rest], -1)
    eye_m = identity(m, dt, batch)
    # With L = U = I, A = P: solving A^T X = I gives X = P.
    p = ops.lu_solve(eye_m, piv, eye_m, True)
    lower = lu if n == k else ops.slice(lu, [-1], [0], [k])
    lower = ops.add(ops.tril(lower, -1), eye_m if m == k else identity(m, dt, batch, k))
    upper = lu if m == k else ops.slice(lu, [-2], [0], [k])
    return p, lower, ops.triu(upper)


def linalg_lu(A: Any, *, pivot: bool = True, out: Any = None) -> Any:
    no_out(out)
    lu, piv, _ = _lu_factor(A, pivot, False)
    return _unpack(lu, piv)


def lu_unpack(LU_data: Any, LU_pivots: Any, unpack_data: bool = True,
              unpack_pivots: bool = True, *, out: Any = None) -> Any:
    no_out(out)
    if not unpack_data or not unpack_pivots:
        raise unsupported("lu_unpack without unpack_data or unpack_pivots")
    return _unpack(LU_data, LU_pivots)


def _lu_solve(lu: Any, piv: Any, B: Any, left: bool, adjoint: bool) -> Any:
    shape = _matrices(lu, "lu_solve")
    _same_dtype(lu, B, "lu_solve")
    if dtype_name(piv) not in ("int32", "int64"):
        raise unsupported(f"lu_solve with {dtype_name(piv)} pivots")
    if shape_of(piv)[-1:] != shape[-1:]:
        raise unsupported("lu_solve with pivots of another size")
    _matrices(B, "lu_solve", square=False)
    trans = adjoint
    if not left:  # X A = B: A^T X^T = B^T
        B = _mT(B)
        trans = not trans
    piv2 = ops.unsqueeze(piv, [-1])
    lu, b, batch = _broadcast(lu, B)
    piv2 = _expand_batch(piv2, batch)
    x = ops.lu_solve(lu, ops.squeeze(piv2, [-1]), b, trans)
    return x if left else _mT(x)


def linalg_lu_solve(LU: Any, pivots: Any, B: Any, *, left: bool = True, adjoint: bool = False,
                    out: Any = None) -> Any:
    no_out(out)
    return _lu_solve(LU, pivots, B, bool(left), bool(adjoint))


def torch_lu_solve(b: Any, LU_data: Any, LU_pivots: Any, *, out: Any = None) -> Any:
    no_out(out)
    return _lu_solve(LU_data, LU_pivots, b, True, False)


# ---- Cholesky ---------------------------------------------------------------------------------
def _cholesky(A: Any, upper: bool, check: bool) -> tuple[Any, Any]:
    _matrices(A, "cholesky")
    if upper:  # U = L(A^T)^T reads A's upper triangle
        lo, info = ops.cholesky(_mT(A), check)
        return _mT(lo), info
    lo, info = ops.cholesky(A, check)
    return lo, info


def cholesky(A: Any, upper: bool = False, *, out: Any = None) -> Any:
    no_out(out)
    return _cholesky(A, bool(upper), True)[0]


def linalg_cholesky(A: Any, *, upper: bool = False, out: Any = None) -> Any:
    no_out(out)
    return _cholesky(A, bool(upper), True)[0]


def cholesky_ex(A: Any, *, upper: bool = False, check_errors: bool = False,
                out: Any = None) -> Any:
    no_out(out)
    empty = _empty_with_info(A)
    if empty is not None:
        return empty
    return _cholesky(A, bool(upper), bool(check_errors))


def _cholesky_solve(B: Any, L: Any, upper: bool) -> Any:
    if (_empty(B) or _empty(L)) and rank(B) >= 2 and rank(L) >= 2:
        if dtype_name(B) not in ("float32", "float64") or dtype_name(L) != dtype_name(B):
            raise unsupported("cholesky_solve of these dtypes")
        batch = _broadcast_batch(shape_of(B)[:-2], shape_of(L)[:-2])
        return full(batch + shape_of(B)[-2:], 0.0, dtype_name(B))  # no element to compute
    _matrices(L, "cholesky_solve")
    _matrices(B, "cholesky_solve", square=False)
    _same_dtype(B, L, "cholesky_solve")
    f, b, _ = _broadcast(L, B)
    # A = L L^T: L Y = B, L^T X = Y; A = U^T U: U^T Y = B, U X = Y.
    y = ops.triangular_solve(f, b, upper, False, upper)
    return ops.triangular_solve(f, y, upper, False, not upper)


def cholesky_solve(B: Any, L: Any, upper: bool = False, *, out: Any = None) -> Any:
    no_out(out)
    return _cholesky_solve(B, L, bool(upper))


def cholesky_inverse(L: Any, upper: bool = False, *, out: Any = None) -> Any:
    no_out(out)
    if rank(L) >= 2 and _empty(L) and dtype_name(L) in ("float32", "float64"):
        return full(shape_of(L), 0.0, dtype_name(L))  # no element to compute
    _matrices(L, "cholesky_inverse")
    # The inverse of A = L L^T (U^T U) through the checked LU inverse, so that a factor with a
    # zero on its diagonal (A singular) raises ember.DataError when the graph runs, as torch
    # raises, instead of giving inf and NaN.
    lt = ops.transpose(L, -2, -1)
    a = ops.matmul(lt, L) if upper else ops.matmul(L, lt)
    return _inv(a, True)[0]


# ---- triangular solves -------------------------------------------------------------------------
def triangular_solve(b: Any, A: Any, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out: Any = None) -> Any:
    no_out(out)
    _matrices(A, "triangular_solve")
    _matrices(b, "triangular_solve", square=False)
    _same_dtype(A, b, "triangular_solve")
    a, rhs, _ = _broadcast(A, b)
    x = ops.triangular_solve(a, rhs, bool(upper), bool(unitriangular), bool(transpose))
    return x, a


def solve_triangular(A: Any, B: Any, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out: Any = None) -> Any:
    no_out(out)
    _matrices(A, "solve_triangular")
    _matrices(B, "solve_triangular", square=False)
    _same_dtype(A, B, "solve_triangular")
    if left:
        a, b, _ = _broadcast(A, B)
        return ops.triangular_solve(a, b, bool(upper), bool(unitriangular), False)
    a, b, _ = _broadcast(A, _mT(B))  # X A = B: A^T X^T = B^T
    return _mT(ops.triangular_solve(a, b, bool(upper), bool(unitriangular), True))


# ---- tensorinv, tensorsolve --------------------------------------------------------------------
def tensorinv(A: Any, ind: int = 2, *, out: Any = None) -> Any:
    no_out(out)
    shape = fixed_shape(A, "tensorinv")
    ind = int(ind)
    if ind <= 0:
        raise unsupported("tensorinv with ind <= 0")
    rows, cols = math.prod(shape[:ind]), math.prod(shape[ind:])
    if rows != cols or rows == 0:
        raise unsupported("tensorinv of a tensor that is not square as a matrix")
    square = ops.reshape(A, [rows, cols])
    return ops.reshape(_inv(square, True)[0], shape[ind:] + shape[:ind])


def tensorsolve(A: Any, B: Any, dims: Any = None, *, out: Any = None) -> Any:
    no_out(out)
    shape = fixed_shape(A, "tensorsolve")
    if dims is not None:
        moved = [d % len(shape) for d in dims]
        order = [d for d in range(len(shape)) if d not in moved] + moved
        A = ops.permute(A, order)
        shape = [shape[d] for d in order]
    bshape = fixed_shape(B, "tensorsolve")
    result = shape[len(bshape):]
    rows, cols = math.prod(bshape), math.prod(result)
    if rows != cols or rows == 0 or shape[:len(bshape)] != bshape:
        raise unsupported("tensorsolve of shapes that are not a square system")
    _same_dtype(A, B, "tensorsolve")
    x, _ = _solve(ops.reshape(A, [rows, cols]), ops.reshape(B, [rows, 1]), True, True)
    return ops.reshape(x, result)



# ---- matrix_exp, cond --------------------------------------------------------------------------
def matrix_exp(A: Any) -> Any:
    _matrices(A, "matrix_exp")
    if dtype_name(A) != "float64":
        # Eager float32 strays from the exact exponential by more than 1e-4 on matrices of
        # norm ~10 (it accumulates in float32); ember's double result would not match it.
        raise unsupported("matrix_exp of a float32 tensor (eager rounds differently)")
    return ops.matrix_exp(A)


def _matrix_norm(x: Any, p: Any) -> Any:
    if p == "fro":
        return ops.sqrt(ops.sum(ops.mul(x, x), [-2, -1]))
    ax = ops.abs(x)
    if p in (1, -1):
        sums = ops.sum(ax, [-2])
    else:
        sums = ops.sum(ax, [-1])
    return ops.max(sums, [-1]) if p > 0 else ops.min(sums, [-1])


def cond(A: Any, p: Any = None, *, out: Any = None) -> Any:
    no_out(out)
    if is_tensor(p):  # a float Dynamo passes as a graph input (not specialized)
        p = fixed_number(p, "linalg.cond's order")
    if p is None or p in (2, -2):  # the ratio of the extreme singular values
        _matrices(A, "linalg.cond", square=False)
        s = ops.svdvals(A)
        big, small = ops.max(s, [-1]), ops.min(s, [-1])
        return big / small if p != -2 else small / big
    if p not in (1, -1, math.inf, -math.inf, "fro"):
        raise unsupported(f"linalg.cond with p={p!r}")
    _matrices(A, "linalg.cond")
    x, info = _inv(A, False)
    # As torch: a singular matrix (a zero pivot) has an infinite condition number.
    singular = ops.unsqueeze(ops.unsqueeze(info > 0, [-1]), [-1])
    x = ops.where(singular, math.inf, x)
    return ops.mul(_matrix_norm(A, p), _matrix_norm(x, p))


def _registrations() -> None:
    register(det, torch.linalg.det, torch.det)
    register(slogdet, torch.linalg.slogdet, torch.slogdet)
    register(logdet, torch.logdet)
    register(inv, torch.linalg.inv, torch.inverse)
    register(inv_ex, torch.linalg.inv_ex)
    register(solve, torch.linalg.solve)
    register(solve_ex, torch.linalg.solve_ex)
    register(lu_factor, torch.linalg.lu_factor)
    register(lu_factor_ex, torch.linalg.lu_factor_ex)
    register(torch_lu, torch.lu)
    register(linalg_lu, torch.linalg.lu)
    register(lu_unpack, torch.lu_unpack)
    register(linalg_lu_solve, torch.linalg.lu_solve)
    register(torch_lu_solve, torch.lu_solve)
    register(cholesky, torch.cholesky)
    register(linalg_cholesky, torch.linalg.cholesky)
    register(cholesky_ex, torch.linalg.cholesky_ex)
    register(cholesky_solve, torch.cholesky_solve)
    register(cholesky_inverse, torch.cholesky_inverse)
    register(triangular_solve, torch.triangular_solve)
    register(solve_triangular, torch.linalg.solve_triangular)
    register(tensorinv, torch.linalg.tensorinv)
    register(tensorsolve, torch.linalg.tensorsolve)
    register(matrix_exp, torch.matrix_exp, torch.linalg.matrix_exp)
    register(cond, torch.linalg.cond)
    with builtin_registrations():
        for name, converter in (
            ("det", det), ("slogdet", slogdet), ("logdet", logdet), ("inverse", inv),
            ("cholesky", cholesky), ("cholesky_solve", cholesky_solve),
            ("cholesky_inverse", cholesky_inverse), ("lu", torch_lu), ("lu_solve", torch_lu_solve),
            ("triangular_solve", triangular_solve), ("matrix_exp", matrix_exp),
        ):
            register_method(name)(converter)


_registrations()
