"""Converters for diagonals (``diagonal``, ``diag``, ``diag_embed``, ``diagflat`` and their
``*_copy`` and ``linalg`` forms) and for the scatters into views (``diagonal_scatter``,
``select_scatter``, ``slice_scatter``).

A diagonal of static sizes is a gather of the positions torch's own view reads
(views.gather_dims); of symbolic sizes, its positions are computed in the graph. A scatter
writes its source where the view reads and keeps the input elsewhere. Calls a converter
cannot compute exactly raise ``unsupported`` and run in eager PyTorch.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import torch

from ember.torch.context import sym_size
from ember.torch.converters.common import (
    cast,
    dtype_name,
    is_runtime_scalar,
    is_tensor,
    no_out,
    norm_dim,
    ops,
    py_value,
    rank,
    reshape_dims,
    shape_of,
    size_product,
    size_value,
    static_int,
    unsupported,
    with_shape,
)
from ember.torch.converters.composite_math import (
    int_constant,
    static_size,
    take,
    take_along,
    take_static,
)
from ember.torch.converters.functions import register, register_methods
from ember.torch.converters.views import (
    gather_dims,
    inverse_order,
    permute_dims,
    result_is_empty,
    zeros_of,
)
from ember.torch.shape_guards import sym_dim_free


def _size_expr(value: Callable[..., int], text: str, *sizes: Any) -> int | str:
    """value(*sizes) when the sizes are all ints, else ember's text for the same size
    expression: `text` formatted with them (ember reads it back, min and max included)."""
    if all(isinstance(v, int) for v in sizes):
        return value(*sizes)
    return "(" + text.format(*(f"({v})" for v in sizes)) + ")"


def _diagonal_positions(rows: Any, cols: Any, k: int) -> Any:
    """The flat positions (row * cols + col) of diagonal k of a [rows, cols] block whose
    sizes may be symbolic, computed in the graph; as many as torch's diagonal has."""
    r0, c0 = builtins.max(-k, 0), builtins.max(k, 0)
    length = _size_expr(lambda r, c: builtins.max(builtins.min(r - r0, c - c0), 0),
                        f"max(min({{}} - {r0}, {{}} - {c0}), 0)", rows, cols)
    steps = ops.arange(0, length, 1, "int64")
    stride = size_value(_size_expr(lambda c: c + 1, "{} + 1", cols), "int64")
    start = size_value(_size_expr(lambda c: r0 * c + c0, f"{r0} * {{}} + {c0}", cols), "int64")
    return steps * stride + start


def diagonal(input: Any, offset: Any = 0, dim1: Any = 0, dim2: Any = 1) -> Any:
    n = rank(input)
    d1, d2 = norm_dim(dim1, n), norm_dim(dim2, n)
    if d1 == d2:
        raise unsupported("diagonal with dim1 == dim2")
    k = static_int(offset, "a diagonal offset")
    shape = shape_of(input)
    if isinstance(shape[d1], int) and isinstance(shape[d2], int):
        return gather_dims(input, [d1, d2], lambda a: torch.diagonal(a, k, 0, 1), "a diagonal")
    # Symbolic sizes: the two dimensions flattened, and a gather at positions computed in the
    # graph (the length max(min(rows - max(-k, 0), cols - max(k, 0)), 0), as torch's).
    others = [d for d in range(n) if d not in (d1, d2)]
    other_shape = [shape[d] for d in others]
    moved = permute_dims(input, others + [d1, d2])
    area = size_product([shape[d1], shape[d2]])
    flat = ops.reshape(moved, reshape_dims(other_shape) + [area])
    return take(flat, len(others), _diagonal_positions(shape[d1], shape[d2], k))


def linalg_diagonal(A: Any, *, offset: Any = 0, dim1: Any = -2, dim2: Any = -1) -> Any:
    return diagonal(A, offset, dim1, dim2)


def diagonal_copy(input: Any, offset: Any = 0, dim1: Any = 0, dim2: Any = 1, *,
                  out: Any = None) -> Any:
    no_out(out)
    return diagonal(input, offset, dim1, dim2)


def diag_embed(input: Any, offset: Any = 0, dim1: Any = -2, dim2: Any = -1) -> Any:
    """torch.diagonal(result, offset, dim1, dim2) is input; every other element is zero."""
    if rank(input) == 0:
        raise unsupported("diag_embed of a 0-d tensor")
    r = rank(input) + 1
    d1, d2 = norm_dim(dim1, r), norm_dim(dim2, r)
    if d1 == d2:
        raise unsupported("diag_embed with dim1 == dim2")
    k = static_int(offset, "a diagonal offset")
    length = shape_of(input)[-1]
    other_shape = shape_of(input)[:-1]
    if isinstance(length, int):
        side = length + builtins.abs(k)
        table = torch.full((side, side), length, dtype=torch.int64)
        torch.diagonal(table, k).copy_(torch.arange(length))
        index = int_constant(table)
    else:  # symbolic: (i, j) reads element i - max(-k, 0) where j - i == k, else the zero
        side = f"(({length}) + {builtins.abs(k)})"
        steps = ops.arange(0, side, 1, "int64")
        i = ops.reshape(steps, reshape_dims([side, 1]))
        j = ops.reshape(steps, reshape_dims([1, side]))
        index = ops.where(ops.equal(j - i, k), i - builtins.max(-k, 0),
                          size_value(length, "int64"))
    if length == 0 or result_is_empty(other_shape):
        grid = zeros_of(other_shape + [side, side], dtype_name(input))
    else:
        padded = ops.concat([input, zeros_of(other_shape + [1], dtype_name(input))], r - 2)
        grid = take(padded, r - 2, index)
    # grid: the other dimensions, then dim1's, then dim2's; placed at dim1 and dim2.
    rest = iter(range(r - 2))
    order = [r - 2 if p == d1 else r - 1 if p == d2 else next(rest) for p in range(r)]
    return permute_dims(grid, order)


def diag(input: Any, diagonal: Any = 0, *, out: Any = None) -> Any:
    no_out(out)
    if rank(input) == 1:
        return diag_embed(input, diagonal, 0, 1)
    if rank(input) == 2:
        return globals()["diagonal"](input, diagonal, 0, 1)
    raise unsupported(f"diag of a tensor of rank {rank(input)}")


def diagflat(input: Any, offset: Any = 0) -> Any:
    return diag_embed(ops.reshape(input, [-1]), offset, 0, 1)


def diagonal_scatter(input: Any, src: Any, offset: Any = 0, dim1: Any = 0,
                     dim2: Any = 1) -> Any:
    n = rank(input)
    d1, d2 = norm_dim(dim1, n), norm_dim(dim2, n)
    if d1 == d2:
        raise unsupported("diagonal_scatter with dim1 == dim2")
    k = static_int(offset, "a diagonal offset")
    rows, cols = shape_of(input)[d1], shape_of(input)[d2]
    if not (isinstance(rows, int) and isinstance(cols, int)):
        return _diagonal_scatter_symbolic(input, src, k, d1, d2)
    base = torch.arange(rows * cols, dtype=torch.int64).view(rows, cols)
    picked = torch.diagonal(base, k).reshape(-1)
    if picked.numel() == 0 or result_is_empty(shape_of(input)):
        return input
    others = [d for d in range(n) if d != d1 and d != d2]
    order = others + [d1, d2]
    other_shape = [shape_of(input)[d] for d in others]
    flat = ops.reshape(permute_dims(input, order), reshape_dims(other_shape) + [rows * cols])
    source = _diagonal_source(src, input, other_shape, picked.numel())
    joined = ops.concat([flat, source], n - 2)
    index = torch.arange(rows * cols, dtype=torch.int64)
    index[picked] = rows * cols + torch.arange(picked.numel())
    out = take_static(joined, n - 2, index.tolist())
    out = ops.reshape(out, reshape_dims(other_shape) + [rows, cols])
    return permute_dims(out, inverse_order(order))


def _diagonal_source(src: Any, input: Any, other_shape: list[Any], length: Any = None) -> Any:
    """src [*other dims, diagonal] with the input's dtype and the input's spelling of the
    other dims and of the diagonal's length where it is given (torch's check guards them
    equal)."""
    if rank(src) != len(other_shape) + 1:
        raise unsupported("diagonal_scatter with a source of the wrong rank")
    source = cast(src, dtype_name(input))
    last = shape_of(source)[-1:] if length is None else [length]
    return with_shape(source, reshape_dims(other_shape) + last, "a diagonal_scatter source")


def _diagonal_scatter_symbolic(input: Any, src: Any, k: int, d1: int, d2: int) -> Any:
    """diagonal_scatter over symbolic sizes: the two dimensions flattened and joined with
    src; position p (row p // cols, column p % cols) reads src[row - max(-k, 0)] when
    column - row == k, else itself."""
    n = rank(input)
    others = [d for d in range(n) if d != d1 and d != d2]
    order = others + [d1, d2]
    shape = shape_of(input)
    rows, cols = shape[d1], shape[d2]
    other_shape = [shape[d] for d in others]
    area = size_product([rows, cols])
    flat = ops.reshape(permute_dims(input, order), reshape_dims(other_shape) + [area])
    joined = ops.concat([flat, _diagonal_source(src, input, other_shape)], n - 2)
    p = ops.arange(0, area, 1, "int64")
    width = size_value(cols, "int64")
    row, col = ops.floor_divide(p, width), ops.remainder(p, width)
    index = ops.where(ops.equal(col - row, k),
                      row - builtins.max(-k, 0) + size_value(area, "int64"), p)
    out = ops.reshape(take(joined, n - 2, index), reshape_dims(other_shape + [rows, cols]))
    return permute_dims(out, inverse_order(order))


def select_scatter(input: Any, src: Any, dim: Any, index: Any) -> Any:
    d = norm_dim(dim, rank(input))
    if not isinstance(input.shape[d], int) or is_runtime_scalar(index):
        # a symbolic size or index: src where the position along d is index, input elsewhere
        n = size_value(input.shape[d], "int64")
        i = cast(index, "int64") if is_runtime_scalar(index) else static_int(index, "an index")
        i = ops.where(ops.less(i, 0), ops.add(i, n), i) if is_tensor(i) else (
            ops.add(n, i) if i < 0 else i)
        at = ops.equal(ops.arange(0, input.shape[d], 1, "int64"), i)
        at = ops.reshape(at, [-1 if k == d else 1 for k in range(rank(input))])
        return ops.where(at, ops.unsqueeze(cast(src, dtype_name(input)), [d]), input)
    size = static_size(input, d, "a scattered dimension")
    i = static_int(index, "a select_scatter index")
    if not -size <= i < size:
        raise unsupported(f"select_scatter index {i} out of range for size {size}")
    i = i + size if i < 0 else i
    return slice_scatter(input, ops.unsqueeze(cast(src, dtype_name(input)), [d]), d, i, i + 1)


def slice_scatter(input: Any, src: Any, dim: Any = 0, start: Any = None, end: Any = None,
                  step: Any = 1) -> Any:
    d = norm_dim(dim, rank(input))
    stride = static_int(step, "a slice step")
    if stride <= 0:
        raise unsupported("slice_scatter with a step < 1")
    if not isinstance(input.shape[d], int) or any(
            isinstance(v, torch.SymInt) for v in (start, end)):
        return _slice_scatter_at_run_time(input, src, d, start, end, stride)
    size = static_size(input, d, "a scattered dimension")
    bounds = [None if v is None else static_int(v, "a slice bound") for v in (start, end)]
    picked = list(range(size))[slice(bounds[0], bounds[1], stride)]
    if not picked or result_is_empty(shape_of(input)):
        return input
    joined = ops.concat([input, cast(src, dtype_name(input))], d)
    index = list(range(size))
    for j, p in enumerate(picked):
        index[p] = size + j
    return take_static(joined, d, index)


def _slice_scatter_at_run_time(input: Any, src: Any, d: int, start: Any, end: Any,
                               step: int) -> Any:
    """slice_scatter where the scattered size or a bound is known only at run time (a
    KV cache written at a position that grows): the positions p along d with
    start <= p < end and (p - start) % step == 0 take src[(p - start) // step], the others
    keep input. The bounds are clamped to [0, n] as torch's slicing does, a negative one
    counted from the end."""
    src = cast(src, dtype_name(input))
    if shape_of(src)[d] == 0:
        return input
    want = shape_of(input)
    want[d] = shape_of(src)[d]
    src = with_shape(src, want, "a slice_scatter source")  # spelled as input's sizes
    n = size_value(input.shape[d], "int64")

    def bound(v: Any, default: Any) -> Any:
        if v is None:
            return default
        if isinstance(v, torch.SymInt) and sym_dim_free(v) and not bool(v < 0):
            # a run-time bound (bool() guards its sign: ember binds non-negative sizes)
            return size_value(sym_size(v), "int64")
        v = int(py_value(v))  # a negative one is fixed by a guard, as pad widths are
        if v < 0:
            return ops.maximum(n + v, 0) if is_tensor(n) else max(n + v, 0)
        return ops.minimum(n, v) if is_tensor(n) else min(n, v)

    s, e = bound(start, 0), bound(end, n)
    p = ops.arange(0, input.shape[d], 1, "int64")
    rel = p - s
    inside = ops.logical_and(ops.greater_equal(rel, 0), ops.less(p, e))
    if step > 1:
        inside = ops.logical_and(inside, ops.equal(ops.remainder(rel, step), 0))
    last = size_value(shape_of(src)[d], "int64") - 1
    j = ops.minimum(ops.maximum(ops.floor_divide(rel, step) if step > 1 else rel, 0), last)
    picked = take_along(src, d, j)
    at = ops.reshape(inside, [-1 if k == d else 1 for k in range(rank(input))])
    return ops.where(at, picked, input)


# ---- registration ------------------------------------------------------------------------------
_METHODS: dict[str, Callable[..., Any]] = {
    "diagonal": diagonal, "diag": diag, "diag_embed": diag_embed, "diagflat": diagflat,
    "diagonal_scatter": diagonal_scatter, "select_scatter": select_scatter,
    "slice_scatter": slice_scatter,
}


def _register_all() -> None:
    register(diagonal, torch.diagonal)
    register(linalg_diagonal, torch.linalg.diagonal)
    register(diagonal_copy, torch.diagonal_copy)
    register(diag, torch.diag)
    register(diag_embed, torch.diag_embed)
    register(diagflat, torch.diagflat)
    register(diagonal_scatter, torch.diagonal_scatter)
    register(select_scatter, torch.select_scatter)
    register(slice_scatter, torch.slice_scatter)
    register_methods(_METHODS)


_register_all()
