"""Gathers, padding, triangles and scans: Gather, GatherElements, Pad, Trilu, CumSum."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember._sizes import END, size_product, size_value
from ember.onnx.errors import unsupported
from ember.onnx.ops_shape import _axis, _full, take
from ember.onnx.registry import NotFoldable, converter, folder
from ember.onnx.values import dtype_of, is_symbolic_array, shape_of, simplify

ops = ember.ops


# ---- gathers ---------------------------------------------------------------------------------
def _wrapped(index: Any, size: Any) -> Any:
    """Negative indices counted from the end (ONNX allows them in Gather)."""
    return ops.where(ops.less(index, 0), ops.add(index, size_value(size, dtype_of(index))), index)


@converter("Gather")
def _gather(ctx: Any, xs: list[Any]) -> list[Any]:
    data, index = xs
    shape = shape_of(data)
    axis = _axis(int(ctx.attr("axis", 0)), len(shape))
    if isinstance(index, np.ndarray) and not is_symbolic_array(index):
        x = ctx.tensor(data)
        n = shape[axis]
        flat = [int(i) for i in index.reshape(-1)]
        if isinstance(n, int):
            flat = [i + n if i < 0 else i for i in flat]
        elif any(i < 0 for i in flat):
            raise unsupported("a negative Gather index into a symbolic dimension")
        if index.ndim == 0:
            return [ops.squeeze(ops.slice(x, [axis], [flat[0]], [flat[0] + 1], [1]), [axis])]
        picked = take(x, axis, flat)
        out = shape[:axis] + list(index.shape) + shape[axis + 1:]
        return [ops.reshape(picked, out)]
    x, idx = ctx.tensor(data), ctx.tensor(index)
    if dtype_of(idx) not in ("int32", "int64"):
        raise unsupported(f"Gather indices of dtype {dtype_of(idx)}")
    idx = _wrapped(idx, shape[axis])
    rest = [d for i, d in enumerate(shape) if i != axis]
    order = [axis] + [i for i in range(len(shape)) if i != axis]
    front = ops.permute(x, order) if axis else x
    table = ops.reshape(front, [shape[axis], size_product(rest)])
    rows = ops.embedding(table, idx)  # [*index, prod(rest)]
    q = len(shape_of(idx))
    out = ops.reshape(rows, shape_of(idx) + rest)
    if axis:
        perm = list(range(q, q + axis)) + list(range(q)) + list(range(q + axis, q + len(rest)))
        out = ops.permute(out, perm)
    return [out]


@folder("Gather")
def _fold_gather(ctx: Any, xs: list[Any]) -> list[Any]:
    data, index = xs
    if is_symbolic_array(index):
        raise NotFoldable("symbolic Gather indices")
    axis = _axis(int(ctx.attr("axis", 0)), data.ndim)
    return [simplify(np.take(data, index.astype(np.int64), axis=axis))]


@converter("GatherElements")
def _gather_elements(ctx: Any, xs: list[Any]) -> list[Any]:
    x, idx = ctx.tensor(xs[0]), ctx.tensor(xs[1])
    axis = _axis(int(ctx.attr("axis", 0)), len(shape_of(x)))
    return [ops.gather(x, axis, _wrapped(idx, shape_of(x)[axis]))]


# ---- padding ---------------------------------------------------------------------------------
@converter("Pad")
def _pad(ctx: Any, xs: list[Any]) -> list[Any]:
    mode = ctx.attr("mode", "constant")
    x = ctx.tensor(xs[0])
    shape = shape_of(x)
    pads = ctx.ints(xs[1], "Pad's pads")
    value: Any = 0
    if len(xs) > 2 and xs[2] is not None:
        value = _scalar(xs[2], "Pad's value")
    axes = (ctx.ints(xs[3], "Pad's axes") if len(xs) > 3 and xs[3] is not None
            else list(range(len(shape))))
    axes = [_axis(a, len(shape)) for a in axes]
    k = len(axes)
    for j, axis in enumerate(axes):
        before, after = pads[j], pads[j + k]
        if mode == "constant":
            x = _pad_constant(x, axis, before, after, value)
        elif mode in ("edge", "reflect", "wrap"):
            n = shape_of(x)[axis]
            if not isinstance(n, int):
                raise unsupported(f"{mode} Pad of a symbolic dimension")
            x = take(x, axis, [_pad_source(i, n, mode) for i in range(-before, n + after)])
        else:
            raise unsupported(f"Pad mode {mode!r}")
    return [x]


def _pad_source(i: int, n: int, mode: str) -> int:
    if mode == "edge":
        return min(max(i, 0), n - 1)
    if mode == "wrap":
        return i % n
    period = 2 * (n - 1) or 1
    i = abs(i) % period
    return period - i if i >= n else i


def _scalar(v: Any, what: str) -> Any:
    if not isinstance(v, np.ndarray) or is_symbolic_array(v):
        raise unsupported(f"{what} must be known when the model is imported")
    return v.reshape(-1)[0].item() if v.size else 0


def _pad_constant(x: Any, axis: int, before: int, after: int, value: Any) -> Any:
    if before < 0 or after < 0:
        x = ops.slice(x, [axis], [max(-before, 0)], [after if after < 0 else END], [1])
        before, after = max(before, 0), max(after, 0)
    parts = []
    for width in (before, after):
        shape = shape_of(x)
        shape[axis] = width
        parts.append(_full(shape, value, dtype_of(x)) if width else None)
    joined = [p for p in (parts[0], x, parts[1]) if p is not None]
    return ops.concat(joined, axis) if len(joined) > 1 else x


# ---- triangles and scans ---------------------------------------------------------------------
@converter("Trilu")
def _trilu(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    k = ctx.ints(xs[1], "Trilu's k")[0] if len(xs) > 1 and xs[1] is not None else 0
    return [ops.triu(x, k) if ctx.attr("upper", 1) else ops.tril(x, k)]


@converter("CumSum")
def _cumsum(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    axis = _axis(ctx.ints(xs[1], "CumSum's axis")[0], len(shape_of(x)))
    reverse = bool(ctx.attr("reverse", 0))
    if reverse:
        n = shape_of(x)[axis]
        if not isinstance(n, int):
            raise unsupported("a reverse CumSum along a symbolic dimension")
        x = take(x, axis, list(range(n - 1, -1, -1)))
    y = ops.cumsum(x, axis)
    if ctx.attr("exclusive", 0):  # shifted by one: 0, y[0], ..., y[n - 2]
        head = shape_of(y)
        head[axis] = 1
        y = ops.concat([_full(head, 0, dtype_of(y)), ops.slice(y, [axis], [0], [-1], [1])], axis)
    if reverse:
        y = take(y, axis, list(range(shape_of(y)[axis] - 1, -1, -1)))
    return [y]
