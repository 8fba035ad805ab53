"""Building blocks of the composite converters (composites.py, norms_losses.py): integer
constants and gathers along an axis (``ember.ops.embedding`` lookups, an index out of range
raises when the graph runs).
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
    "check_nonempty", "int_constant", "reduce_sizes", "static_size", "take", "take_along",
    "take_static",
]


def int_constant(values: list[int] | torch.Tensor) -> Any:
    return constant(torch.as_tensor(values, dtype=torch.int64).contiguous())


def static_size(x: Any, axis: int, what: str) -> int:
    return static_int(x.shape[axis], what)


def take_along(x: Any, axis: int, positions: Any) -> Any:
    """x at the 1-d int64 `positions` along `axis` (any sizes, symbolic included): ember's
    gather with the positions broadcast to the result's shape. Unlike take, no permute and
    reshapes around the lookup, whose div/mod index arithmetic nests with every axis that
    a fused kernel gathers along (a 3-axis reflect pad of symbolic sizes generated 70 MB of
    C++)."""
    length = shape_of(positions)[0]
    out = shape_of(x)
    out[axis] = length
    view = [1] * rank(x)
    view[axis] = length
    return ops.gather(x, axis, ops.expand(ops.reshape(positions, view), out))


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


def reduce_sizes(x: Any, dims: list[int], what: str) -> int:
    count = 1
    for d in dims:
        count *= static_size(x, d, what)
    return count


def check_nonempty(x: Any, dims: list[int], what: str) -> None:
    for d in dims:
        if x.shape[d] == 0:
            raise unsupported(f"{what} over a dimension of size 0")


