"""Shape and data-movement ONNX operators: Shape, Size, Reshape, Flatten, Transpose, Concat,
Split, Slice, Squeeze, Unsqueeze, Expand, Tile, Constant, ConstantOfShape, Range, Identity,
Dropout.

Each has a converter (ember ops on tensors) and, where shape subgraphs use it, a numpy fold
that also computes on object arrays of symbolic sizes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember._sizes import END, size_product
from ember.onnx.errors import unsupported
from ember.onnx.registry import NotFoldable, converter, folder
from ember.onnx.values import (
    Dim,
    dtype_of,
    ember_dtype,
    is_symbolic_array,
    numpy_dtype,
    shape_array,
    shape_of,
    simplify,
    sizes,
)

ops = ember.ops


def _axis(a: int, n: int) -> int:
    if not -max(n, 1) <= a < max(n, 1):
        raise unsupported(f"axis {a} is out of range for rank {n}")
    return a + n if a < 0 else a


def take(x: Any, axis: int, index: list[int]) -> Any:
    """x at static positions along axis (x[..., index, ...]) by one gather."""
    shape = shape_of(x)
    idx_shape = [1] * len(shape)
    idx_shape[axis] = len(index)
    idx = ember.asarray(np.array(index, dtype=np.int64).reshape(idx_shape))
    out_shape = list(shape)
    out_shape[axis] = len(index)
    return ops.gather(x, axis, ops.expand(idx, out_shape))


# ---- shapes as values --------------------------------------------------------------------------
def _shape_slice(ctx: Any, a: np.ndarray) -> list[Any]:
    n = len(a)
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    start = min(max(start + n if start < 0 else start, 0), n)
    stop = n if end is None else min(max(int(end) + n if int(end) < 0 else int(end), 0), n)
    return [simplify(a[start:stop])]


@converter("Shape")
def _shape(ctx: Any, xs: list[Any]) -> list[Any]:
    return _shape_slice(ctx, shape_array(xs[0]))


@folder("Shape")
def _fold_shape(ctx: Any, xs: list[Any]) -> list[Any]:
    return _shape_slice(ctx, np.array(xs[0].shape, dtype=np.int64))


@converter("Size")
def _size(ctx: Any, xs: list[Any]) -> list[Any]:
    n = size_product(shape_of(xs[0]))
    if isinstance(n, int):
        return [np.array(n, dtype=np.int64)]
    out = np.empty((), dtype=object)
    out[()] = Dim(n)
    return [out]


folder("Size")(_size)


# ---- reshapes ----------------------------------------------------------------------------------
def _reshape_dims(ctx: Any, x: Any, target: Any) -> list[Any]:
    dims: list[Any] = sizes(target) if isinstance(target, np.ndarray) else []
    if not isinstance(target, np.ndarray):
        raise unsupported("Reshape to a shape computed at run time")
    allowzero = int(ctx.attr("allowzero", 0))
    in_shape = shape_of(x)
    out = []
    for i, d in enumerate(dims):
        if d == 0 and not allowzero:
            if i >= len(in_shape):
                raise unsupported(f"Reshape copies dimension {i} of a rank-{len(in_shape)} input")
            out.append(in_shape[i])
        else:
            out.append(d)
    return out


@converter("Reshape")
def _reshape(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    return [ops.reshape(x, _reshape_dims(ctx, x, xs[1]))]


@folder("Reshape")
def _fold_reshape(ctx: Any, xs: list[Any]) -> list[Any]:
    dims = _reshape_dims(ctx, xs[0], xs[1])
    if any(isinstance(d, str) for d in dims):
        raise NotFoldable("a symbolic shape")
    return [np.reshape(xs[0], dims)]


@converter("Flatten")
def _flatten(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    shape = shape_of(x)
    axis = int(ctx.attr("axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    return [ops.reshape(x, [size_product(shape[:axis]), size_product(shape[axis:])])]


@converter("Transpose")
def _transpose(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    perm = ctx.attr("perm") or list(range(len(shape_of(x)) - 1, -1, -1))
    return [ops.permute(x, [int(p) for p in perm])]


@folder("Transpose")
def _fold_transpose(ctx: Any, xs: list[Any]) -> list[Any]:
    return [np.transpose(xs[0], ctx.attr("perm"))]


def _axes_arg(ctx: Any, xs: list[Any], what: str) -> list[int] | None:
    if len(xs) > 1 and xs[1] is not None:
        return ctx.ints(xs[1], f"{what}'s axes")
    return None


@converter("Squeeze")
def _squeeze(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    axes = _axes_arg(ctx, xs, "Squeeze")
    if axes is None:
        shape = shape_of(x)
        if any(not isinstance(d, int) for d in shape):
            raise unsupported("Squeeze without axes of a tensor with symbolic sizes")
        axes = [i for i, d in enumerate(shape) if d == 1]
    return [ops.squeeze(x, axes)]


@folder("Squeeze")
def _fold_squeeze(ctx: Any, xs: list[Any]) -> list[Any]:
    axes = _axes_arg(ctx, xs, "Squeeze")
    return [np.squeeze(xs[0], None if axes is None else tuple(axes))]


@converter("Unsqueeze")
def _unsqueeze(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    axes = _axes_arg(ctx, xs, "Unsqueeze") or []
    n = len(shape_of(x)) + len(axes)
    return [ops.reshape(x, _unsqueezed_shape(shape_of(x), [_axis(a, n) for a in axes]))]


def _unsqueezed_shape(shape: list[Any], axes: list[int]) -> list[Any]:
    it = iter(shape)
    return [1 if i in axes else next(it) for i in range(len(shape) + len(axes))]


@folder("Unsqueeze")
def _fold_unsqueeze(ctx: Any, xs: list[Any]) -> list[Any]:
    x = xs[0]
    axes = _axes_arg(ctx, xs, "Unsqueeze") or []
    n = x.ndim + len(axes)
    return [x.reshape(_unsqueezed_shape(list(x.shape), [_axis(a, n) for a in axes]))]


# ---- joins and splits --------------------------------------------------------------------------
@converter("Concat")
def _concat(ctx: Any, xs: list[Any]) -> list[Any]:
    ts = [ctx.tensor(x) for x in xs if x is not None]
    return [ops.concat(ts, int(ctx.attr("axis")))]


@folder("Concat")
def _fold_concat(ctx: Any, xs: list[Any]) -> list[Any]:
    parts = [x for x in xs if x is not None]
    if any(is_symbolic_array(p) for p in parts):
        parts = [p.astype(object) for p in parts]
    return [simplify(np.concatenate(parts, axis=int(ctx.attr("axis"))))]


def _split_sizes(ctx: Any, xs: list[Any], total: Any) -> list[Any]:
    if len(xs) > 1 and xs[1] is not None:
        return ctx.ints(xs[1], "Split's sizes")
    n = int(ctx.attr("num_outputs", len(ctx.node.output)))
    if "split" in ctx.attrs:
        return [int(s) for s in ctx.attr("split")]
    if not isinstance(total, int):
        if n == 1:
            return [total]
        raise unsupported("an even Split of a symbolic dimension")
    chunk = -(-total // n)
    return [min(chunk, total - chunk * i) for i in range(n)]


@converter("Split")
def _split(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    axis = _axis(int(ctx.attr("axis", 0)), len(shape_of(x)))
    parts, start = [], 0
    for s in _split_sizes(ctx, xs, shape_of(x)[axis]):
        if isinstance(s, str):
            return [x]
        parts.append(ops.slice(x, [axis], [start], [start + s], [1]))
        start += s
    return parts


@folder("Split")
def _fold_split(ctx: Any, xs: list[Any]) -> list[Any]:
    x = xs[0]
    axis = _axis(int(ctx.attr("axis", 0)), x.ndim)
    bounds = np.cumsum(_split_sizes(ctx, xs, x.shape[axis]))[:-1]
    return [simplify(p) for p in np.split(x, bounds, axis=axis)]


def _slice_args(ctx: Any, xs: list[Any], shape: list[Any]) -> list[tuple[int, Any, Any, int]]:
    starts = sizes(xs[1]) if isinstance(xs[1], np.ndarray) else None
    ends = sizes(xs[2]) if isinstance(xs[2], np.ndarray) else None
    if starts is None or ends is None:
        raise unsupported("Slice bounds computed at run time")
    n = len(starts)
    axes = ctx.ints(xs[3], "Slice's axes") if len(xs) > 3 and xs[3] is not None else list(
        range(n))
    steps = ctx.ints(xs[4], "Slice's steps") if len(xs) > 4 and xs[4] is not None else [1] * n
    return [(_axis(a, len(shape)), s, e, st)
            for a, s, e, st in zip(axes, starts, ends, steps, strict=True)]


def _clamped(v: Any, hi: int = END) -> Any:
    if isinstance(v, int):
        return max(min(v, hi), -hi)
    return v


@converter("Slice")
def _slice(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    shape = shape_of(x)
    for axis, start, stop, step in _slice_args(ctx, xs, shape):
        if step == 0:
            raise unsupported("Slice with a step of 0")
        if isinstance(start, str) or isinstance(stop, str):
            raise unsupported("Slice bounds that are symbolic sizes")
        if step > 0:
            x = ops.slice(x, [axis], [_clamped(start)], [_clamped(stop)], [step])
            continue
        n = shape[axis]
        if not isinstance(n, int):
            raise unsupported("a negative-step Slice of a symbolic dimension")
        x = take(x, axis, list(range(n))[slice(start, stop, step)])
    return [x]


@folder("Slice")
def _fold_slice(ctx: Any, xs: list[Any]) -> list[Any]:
    x = xs[0]
    index: list[Any] = [slice(None)] * x.ndim
    for axis, start, stop, step in _slice_args(ctx, xs, list(x.shape)):
        if isinstance(start, str) or isinstance(stop, str):
            raise NotFoldable("symbolic Slice bounds")
        index[axis] = slice(start, stop, step)
    return [simplify(x[tuple(index)])]


# ---- broadcasts and repeats ------------------------------------------------------------------
def _expanded_shape(shape: list[Any], target: list[Any]) -> list[Any]:
    n = max(len(shape), len(target))
    a = [1] * (n - len(shape)) + list(shape)
    b = [1] * (n - len(target)) + list(target)
    return [x if y == 1 or (isinstance(x, int) and x != 1) else y
            for x, y in zip(a, b, strict=True)]


@converter("Expand")
def _expand(ctx: Any, xs: list[Any]) -> list[Any]:
    if not isinstance(xs[1], np.ndarray):
        raise unsupported("Expand to a shape computed at run time")
    x = ctx.tensor(xs[0])
    out = _expanded_shape(shape_of(x), sizes(xs[1]))
    if len(out) > len(shape_of(x)):
        x = ops.reshape(x, [1] * (len(out) - len(shape_of(x))) + shape_of(x))
    return [ops.expand(x, out)]


@folder("Expand")
def _fold_expand(ctx: Any, xs: list[Any]) -> list[Any]:
    out = _expanded_shape(list(xs[0].shape), sizes(xs[1]))
    if any(isinstance(d, str) for d in out):
        raise NotFoldable("a symbolic shape")
    return [np.broadcast_to(xs[0], out).copy()]


@converter("Tile")
def _tile(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    for axis, r in enumerate(ctx.ints(xs[1], "Tile's repeats")):
        if r != 1:
            x = ops.concat([x] * r, axis) if r > 0 else ops.slice(x, [axis], [0], [0], [1])
    return [x]


@folder("Tile")
def _fold_tile(ctx: Any, xs: list[Any]) -> list[Any]:
    return [simplify(np.tile(xs[0], ctx.ints(xs[1], "Tile's repeats")))]


def _full(shape: list[Any], value: Any, dtype: str) -> Any:
    if all(isinstance(d, int) for d in shape):
        return ember.asarray(np.full(shape, value, dtype=numpy_dtype(dtype)))
    return ops.full(shape, value, dtype)


# ---- constants -------------------------------------------------------------------------------
@converter("Constant")
def _constant(ctx: Any, xs: list[Any]) -> list[Any]:
    from onnx import numpy_helper

    a = ctx.attrs
    if "value" in a:
        return [numpy_helper.to_array(a["value"])]
    for key, dt in (("value_float", np.float32), ("value_floats", np.float32),
                    ("value_int", np.int64), ("value_ints", np.int64)):
        if key in a:
            return [np.array(a[key], dtype=dt)]
    raise unsupported(f"Constant with {sorted(a)}")


folder("Constant")(_constant)


def _fill(ctx: Any) -> tuple[Any, str]:
    from onnx import numpy_helper

    v = ctx.attr("value")
    if v is None:
        return 0.0, "float32"
    arr = numpy_helper.to_array(v)
    return arr.reshape(-1)[0].item(), ember_dtype(v.data_type, "ConstantOfShape's value")


@converter("ConstantOfShape")
def _constant_of_shape(ctx: Any, xs: list[Any]) -> list[Any]:
    if not isinstance(xs[0], np.ndarray):
        raise unsupported("ConstantOfShape of a shape computed at run time")
    value, dt = _fill(ctx)
    return [ops.full(sizes(xs[0]), value, dt)]


@folder("ConstantOfShape")
def _fold_constant_of_shape(ctx: Any, xs: list[Any]) -> list[Any]:
    if is_symbolic_array(xs[0]):
        raise NotFoldable("a symbolic shape")
    value, dt = _fill(ctx)
    return [np.full(sizes(xs[0]), value, dtype=numpy_dtype(dt))]


@converter("Range")
def _range(ctx: Any, xs: list[Any]) -> list[Any]:
    start, limit, delta = (_scalar_size(v) for v in xs)
    dt = dtype_of(xs[0])
    if not isinstance(delta, int) or not isinstance(start, (int, str)):
        raise unsupported("Range with a non-integer symbolic bound")
    return [ops.arange(start, limit, delta, dt)]


def _scalar_size(v: Any) -> Any:
    if not isinstance(v, np.ndarray):
        raise unsupported("Range bounds computed at run time")
    item = v.reshape(-1)[0]
    return item.expr if isinstance(item, Dim) else item.item()


@folder("Range")
def _fold_range(ctx: Any, xs: list[Any]) -> list[Any]:
    if any(is_symbolic_array(v) for v in xs):
        raise NotFoldable("a symbolic bound")
    start, limit, delta = (v.reshape(-1)[0] for v in xs)
    return [np.arange(start, limit, delta).astype(xs[0].dtype)]


@converter("Identity")
def _identity(ctx: Any, xs: list[Any]) -> list[Any]:
    return [xs[0]]


folder("Identity")(_identity)


@converter("Dropout")
def _dropout(ctx: Any, xs: list[Any]) -> list[Any]:
    if len(xs) > 2 and xs[2] is not None:
        training = np.asarray(xs[2]) if isinstance(xs[2], np.ndarray) else None
        if training is None or bool(training.reshape(-1)[0]):
            raise unsupported("Dropout in training mode")
    x = xs[0]
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        return [x, _full(shape_of(x), True, "bool")]
    return [x]
