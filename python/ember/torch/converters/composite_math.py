"""Building blocks of the composite converters (composites.py, norms_losses.py): integer
constants, gathers along an axis (``ember.ops.embedding`` lookups, an index out of range
raises when the graph runs), and the functions ember has no operator for, written with
exact-rounding identities: ``log1p`` for u >= 0 (Goldberg), ``expm1`` (Kahan), floor and
trunc of float64 from a truncating cast where ``|x| < 2**52``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ember.torch.converters.common import (
    cast,
    constant,
    ops,
    rank,
    shape_of,
    static_int,
    unsupported,
)

__all__ = [
    "check_nonempty", "expm1", "floor_float64", "int_constant", "log1p_of_nonneg",
    "reduce_sizes", "static_size", "take", "take_static", "trunc_float64",
]


def int_constant(values: list[int] | torch.Tensor) -> Any:
    return constant(torch.as_tensor(values, dtype=torch.int64).contiguous())


def static_size(x: Any, axis: int, what: str) -> int:
    return static_int(x.shape[axis], what)


def take(x: Any, axis: int, index: Any) -> Any:
    """x indexed along `axis` by the int64 tensor `index` (any rank k): the result has shape
    x.shape[:axis] + index.shape + x.shape[axis + 1:]. One embedding lookup of the rows of x
    with `axis` moved to the front; an index outside [0, size) raises when the graph runs."""
    n = rank(x)
    order = [axis] + [d for d in range(n) if d != axis]
    moved = ops.permute(x, order) if axis != 0 else x
    shape = shape_of(moved)
    rest = shape[1:]
    if all(isinstance(s, int) for s in rest):
        width = math.prod(rest)
    else:
        width = -1
    if width == 0:
        raise unsupported("a gather from a tensor with no elements")
    table = ops.reshape(moved, [shape[0], width])
    rows = ops.embedding(table, cast(index, "int64"))
    k = rank(index)
    rows = ops.reshape(rows, list(index.shape) + rest)
    if axis == 0:
        return rows
    back = list(range(k, k + axis)) + list(range(k)) + list(range(k + axis, k + n - 1))
    return ops.permute(rows, back)


def take_static(x: Any, axis: int, index: list[int]) -> Any:
    """x at the positions `index` (known at compile time, all in range) along `axis`."""
    if index == list(range(static_size(x, axis, "a gathered dimension"))):
        return x
    return take(x, axis, int_constant(index))


def log1p_of_nonneg(u: Any) -> Any:
    """log1p(u) for u >= 0 (or inf, nan): log(1 + u) corrected by u / ((1 + u) - 1), which
    makes it accurate to a few ulps where 1 + u rounds (Goldberg's identity)."""
    w = u + 1.0
    ratio = ops.div(u, w - 1.0)
    corrected = ops.mul(ops.log(w), ratio)
    out = ops.where(ops.equal(w, 1.0), u, corrected)
    return ops.where(ops.equal(u, float("inf")), u, out)


def expm1(x: Any) -> Any:
    """expm1(x) by Kahan's identity: (e - 1) * x / log(e) with e = exp(x), x itself where e
    rounds to 1, and exp(x) - 1 where that is exact enough (|x| > 1, inf, nan)."""
    e = ops.exp(x)
    em1 = e - 1.0
    small = ops.mul(em1, ops.div(x, ops.log(e)))
    out = ops.where(ops.equal(e, 1.0), x, small)
    return ops.where(ops.less_equal(ops.abs(x), 1.0), out, em1)


def floor_float64(x: Any) -> Any:
    """floor of a float64 tensor: values with |x| >= 2**52 (and inf, nan) are already whole."""
    t = ops.cast(ops.cast(x, "int64"), "float64")
    down = ops.sub(t, ops.cast(ops.greater(t, x), "float64"))
    return ops.where(ops.less(ops.abs(x), float(2**52)), down, x)


def trunc_float64(x: Any) -> Any:
    """trunc of a float64 tensor (values with |x| >= 2**52, inf and nan are unchanged)."""
    t = ops.cast(ops.cast(x, "int64"), "float64")
    return ops.where(ops.less(ops.abs(x), float(2**52)), t, x)


def reduce_sizes(x: Any, dims: list[int], what: str) -> int:
    count = 1
    for d in dims:
        count *= static_size(x, d, what)
    return count


def check_nonempty(x: Any, dims: list[int], what: str) -> None:
    for d in dims:
        if x.shape[d] == 0:
            raise unsupported(f"{what} over a dimension of size 0")


