"""Converters for scans and sorts: operators that ember computes with a routine of its
runtime library (a Call stage: ``ember.ops.cumsum``, ``sort``, ...). Scatters and binary
searches, the other library calls, are in scatters.py.

- scans: cumsum, cumprod (float ones accumulate in double, as torch on the CPU),
  logcumsumexp, cummax / cummin (values and indices; a NaN holds once met),
  cumulative_trapezoid, torch.masked's cumsum / cumprod;
- sorts (stable; NaN above every number): sort, argsort, msort, topk, kthvalue, median,
  nanmedian, quantile, nanquantile.

Integer inputs narrower than int64 and bool are widened to int64 (float16 / bfloat16 to
float32) where that changes no value, and the results narrowed back. Calls a converter
cannot compute exactly raise ``unsupported`` and run in eager PyTorch.
"""

from __future__ import annotations

from typing import Any

import torch

from ember.torch.context import sym_size
from ember.torch.converters.common import (
    INT_DTYPES,
    ConversionFailure,
    cast,
    constant,
    cut,
    dtype_name,
    fixed_number,
    full,
    is_float_dtype,
    is_tensor,
    no_out,
    norm_dim,
    ops,
    py_value,
    rank,
    shape_of,
    size_plus,
    unsupported,
)
from ember.torch.converters.functions import register
from ember.torch.registry import (
    builtin_registrations,
    register_method,
)


def work_dtype(dt: str) -> str:
    """The dtype ember's routines compute a tensor of dtype dt in, without changing a value."""
    if dt in ("float32", "float64"):
        return dt
    if dt in ("float16", "bfloat16"):
        return "float32"
    if dt in INT_DTYPES or dt == "bool":
        return "int64"
    raise unsupported(f"a scan or sort of a {dt} tensor")


def _as_rows(x: Any, dim: Any) -> tuple[Any, int, bool]:
    """x with at least one dimension, the normalized axis, and whether x was 0-d."""
    if rank(x) == 0:
        norm_dim(dim, 0)
        return ops.reshape(x, [1]), 0, True
    return x, norm_dim(dim, rank(x)), False


def _back(y: Any, was_0d: bool, dt: str) -> Any:
    if was_0d:
        y = ops.reshape(y, [])
    return cast(y, dt)


# ---- scans ---------------------------------------------------------------------------------
def _sum_dtype(x: Any, dtype: Any) -> str:
    """torch's result dtype of cumsum / cumprod: dtype= if given, int64 for integers and bool."""
    if dtype is not None:
        from ember.torch.context import ember_dtype

        return ember_dtype(dtype)
    dt = dtype_name(x)
    return "int64" if dt in INT_DTYPES or dt == "bool" else dt


def _scan(fn: Any) -> Any:
    def convert(input: Any, dim: Any, *, dtype: Any = None, out: Any = None) -> Any:
        no_out(out)
        result = _sum_dtype(input, dtype)
        x, axis, was_0d = _as_rows(cast(input, result), dim)
        work = work_dtype(result)
        return _back(fn(cast(x, work), axis), was_0d, result)

    return convert


cumsum = _scan(ops.cumsum)
cumprod = _scan(ops.cumprod)


def logcumsumexp(input: Any, dim: Any, *, out: Any = None) -> Any:
    no_out(out)
    dt = dtype_name(input)
    if not is_float_dtype(dt):
        raise unsupported(f"logcumsumexp of a {dt} tensor")
    x, axis, was_0d = _as_rows(input, dim)
    return _back(ops.logcumsumexp(cast(x, work_dtype(dt)), axis), was_0d, dt)


def _cum_arg(fn: Any) -> Any:
    def convert(input: Any, dim: Any, *, out: Any = None) -> Any:
        no_out(out)
        dt = dtype_name(input)
        x, axis, was_0d = _as_rows(input, dim)
        values, indices = fn(cast(x, work_dtype(dt)), axis)
        return _back(values, was_0d, dt), _back(indices, was_0d, "int64")

    return convert


cummax = _cum_arg(ops.cummax)
cummin = _cum_arg(ops.cummin)


def _shifted(x: Any, axis: int, start: int) -> Any:
    """x[start : start + n - 1] along axis (n its size >= 1, possibly symbolic)."""
    return cut(x, axis, start, size_plus(x.shape[axis], start - 1))


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: int = -1) -> Any:
    if rank(y) == 0:
        raise unsupported("cumulative_trapezoid of a 0-d tensor")
    axis = norm_dim(dim, rank(y))
    if y.shape[axis] == 0:
        raise unsupported("cumulative_trapezoid along an empty dimension")
    yf = y if is_float_dtype(dtype_name(y)) else ops.cast(y, "float32")
    dt = dtype_name(yf)
    total = ops.add(_shifted(yf, axis, 1), _shifted(yf, axis, 0))
    if is_tensor(x):
        xf = cast(x, dt) if is_float_dtype(dtype_name(x)) else ops.cast(x, dt)
        if rank(xf) == 1:
            shape: list[Any] = [1] * rank(yf)
            shape[axis] = -1
            xf = ops.reshape(xf, shape)
            xa = axis
        else:
            xa = norm_dim(dim, rank(xf))
        step = ops.sub(_shifted(xf, xa, 1), _shifted(xf, xa, 0))
        area = ops.mul(ops.div(step, ops.scalar(2.0, dt)), total)
    elif is_tensor(dx):  # a spacing known only at run time
        area = ops.mul(total, ops.div(cast(dx, dt), ops.scalar(2.0, dt)))
    else:
        h = 1.0 if dx is None else float(py_value(dx))
        area = ops.mul(total, h / 2.0)
    return ops.cumsum(cast(area, dt), axis)


def _part(x: Any, axis: int, start: int, end: int) -> Any:
    """x[start : n + end] along axis (end <= 0; n its size, possibly symbolic)."""
    return cut(x, axis, start, size_plus(x.shape[axis], end))


def _gradient_along(f: Any, axis: int, h: Any, edge_order: int) -> Any:
    """torch.gradient along one axis: central differences inside, one-sided ones of
    edge_order at the ends; h a number (uniform spacing) or the coordinates (1-d)."""
    f0, f1 = (ops.slice(f, [axis], [i], [i + 1], [1], clamp=False) for i in range(2))
    g1, g2 = _from_end(f, axis, 2), _from_end(f, axis, 1)
    if edge_order == 2:  # (a dimension of 3 at least)
        f2, g0 = ops.slice(f, [axis], [2], [3], [1], clamp=False), _from_end(f, axis, 3)
    if not is_tensor(h):  # uniform: (f[i+1] - f[i-1]) / 2h
        center = (_part(f, axis, 2, 0) - _part(f, axis, 0, -2)) * (0.5 / h)
        if edge_order == 1:
            lo, hi = (f1 - f0) * (1.0 / h), (g2 - g1) * (1.0 / h)
        else:
            lo = (f0 * -1.5 + f1 * 2.0 - f2 * 0.5) * (1.0 / h)
            hi = (g0 * 0.5 - g1 * 2.0 + g2 * 1.5) * (1.0 / h)
        return ops.concat([lo, center, hi], axis)
    shape = [1] * rank(f)
    shape[axis] = -1
    x = ops.reshape(cast(h, dtype_name(f)), shape)
    dx = _part(x, axis, 1, 0) - _part(x, axis, 0, -1)  # coordinate differences
    dx1, dx2 = _part(dx, axis, 0, -1), _part(dx, axis, 1, 0)
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    center = a * _part(f, axis, 0, -2) + b * _part(f, axis, 1, -1) + c * _part(f, axis, 2, 0)
    if edge_order == 1:
        lo = (f1 - f0) / ops.slice(dx, [axis], [0], [1], [1], clamp=False)
        hi = (g2 - g1) / _from_end(dx, axis, 1)
    else:
        d1, d2 = (ops.slice(dx, [axis], [i], [i + 1], [1], clamp=False) for i in (0, 1))
        lo = (-(2.0 * d1 + d2) / (d1 * (d1 + d2)) * f0 + (d1 + d2) / (d1 * d2) * f1
              - d1 / (d2 * (d1 + d2)) * f2)
        d1, d2 = _from_end(dx, axis, 2), _from_end(dx, axis, 1)
        hi = (d2 / (d1 * (d1 + d2)) * g0 - (d2 + d1) / (d1 * d2) * g1
              + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * g2)
    return ops.concat([lo, center, hi], axis)


def _from_end(x: Any, axis: int, k: int) -> Any:
    """x[n - k : n - k + 1] along axis (the k-th element from the end, kept as a dim)."""
    n = x.shape[axis]
    return cut(x, axis, size_plus(n, -k), size_plus(n, 1 - k))


def gradient(input: Any, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> Any:
    """torch.gradient: one tensor per dim (every dim by default); spacing a number, one per
    dim, or each dim's coordinates (1-d tensors)."""
    order = int(py_value(edge_order))
    if order not in (1, 2):
        raise unsupported(f"gradient with edge_order={order}")
    n = rank(input)
    dims = list(range(n)) if dim is None else [
        norm_dim(d, n) for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
    if spacing is None:
        spacing = 1.0
    steps = list(spacing) if isinstance(spacing, (tuple, list)) else [spacing] * len(dims)
    if len(steps) != len(dims):  # (torch raises)
        raise unsupported("gradient with a spacing list of another length than dim")
    f = input if is_float_dtype(dtype_name(input)) else ops.cast(input, "float32")
    out = []
    for axis, h in zip(dims, steps, strict=True):
        size = f.shape[axis]
        if isinstance(size, int) and size < order + 1:
            raise unsupported(f"gradient along a dimension of size {size} (torch raises)")
        if is_tensor(h) and rank(h) == 0:  # a float Dynamo passes as a 0-d input
            h = fixed_number(h, "gradient's spacing")
        step = h if is_tensor(h) else float(py_value(h))
        out.append(_gradient_along(f, axis, step, order))
    return tuple(out)


def _masked_input(input: Any, mask: Any, fill: float) -> Any:
    if mask is None:
        return input
    if not is_tensor(mask):
        raise unsupported("a torch.masked mask that is not a tensor")
    m = cast(mask, "bool")
    return ops.where(m, input, ops.scalar(fill, dtype_name(input)))


def _masked_scan(fill: float, fn: Any) -> Any:
    def convert(input: Any, dim: Any, *, dtype: Any = None, mask: Any = None) -> Any:
        from ember.torch.context import ember_dtype

        dt = dtype_name(input) if dtype is None else ember_dtype(dtype)
        x = _masked_input(input, mask, fill)
        x, axis, was_0d = _as_rows(cast(x, dt), dim)
        return _back(fn(cast(x, work_dtype(dt)), axis), was_0d, dt)

    return convert


masked_cumsum = _masked_scan(0.0, ops.cumsum)
masked_cumprod = _masked_scan(1.0, ops.cumprod)


# ---- sorts ---------------------------------------------------------------------------------
def _sorted(input: Any, dim: Any, descending: bool) -> tuple[Any, Any, int, bool, str]:
    """(values in the work dtype, indices, axis, was_0d, input dtype)."""
    dt = dtype_name(input)
    x, axis, was_0d = _as_rows(input, dim)
    values, indices = ops.sort(cast(x, work_dtype(dt)), axis, bool(py_value(descending)))
    return values, indices, axis, was_0d, dt


def sort(input: Any, dim: Any = -1, descending: Any = False, stable: Any = None, *,
         out: Any = None) -> Any:
    no_out(out)
    values, indices, _, was_0d, dt = _sorted(input, dim, descending)
    return _back(values, was_0d, dt), _back(indices, was_0d, "int64")


def argsort(input: Any, dim: Any = -1, descending: Any = False, stable: Any = False) -> Any:
    _, indices, _, was_0d, _ = _sorted(input, dim, descending)
    return _back(indices, was_0d, "int64")


def msort(input: Any, *, out: Any = None) -> Any:
    no_out(out)
    values, _, _, was_0d, dt = _sorted(input, 0, False)
    return _back(values, was_0d, dt)


def topk(input: Any, k: Any, dim: Any = -1, largest: Any = True, sorted: Any = True, *,
         out: Any = None) -> Any:
    no_out(out)
    if not py_value(sorted):
        raise unsupported("topk with sorted=False (torch's order is unspecified)")
    values, indices, axis, was_0d, dt = _sorted(input, dim, bool(py_value(largest)))
    stop = sym_size(k)
    if not was_0d:
        values = ops.slice(values, [axis], [0], [stop], [1], clamp=False)
        indices = ops.slice(indices, [axis], [0], [stop], [1], clamp=False)
    elif py_value(k) not in (0, 1):  # torch gives the 0-d tensor itself for k = 0 and 1
        raise unsupported("topk of a 0-d tensor with k > 1")  # (torch raises)
    return _back(values, was_0d, dt), _back(indices, was_0d, "int64")


def _at(values: Any, indices: Any, axis: int, k: Any, keepdim: bool) -> tuple[Any, Any]:
    """values and indices at position k (an int64 tensor broadcastable to values' shape with
    1 at axis) along axis."""
    shape = shape_of(values)
    shape[axis] = 1
    k = ops.expand(ops.reshape(k, [1] * len(shape)) if rank(k) == 0 else k, shape)
    v, i = ops.gather(values, axis, k), ops.gather(indices, axis, k)
    if not keepdim:
        v, i = ops.squeeze(v, [axis]), ops.squeeze(i, [axis])
    return v, i


def kthvalue(input: Any, k: Any, dim: Any = -1, keepdim: bool = False, *,
             out: Any = None) -> Any:
    no_out(out)
    values, indices, axis, was_0d, dt = _sorted(input, dim, False)
    kv = py_value_or_none(k)
    if isinstance(kv, int):
        n = values.shape[axis]
        if kv < 1 or (isinstance(n, int) and kv > n):
            raise unsupported(f"kthvalue with k={kv} of a dimension of size {n}")
        kk = full([], kv - 1, "int64")
    else:  # a k known at run time: one out of range raises when the graph runs
        kk = ops.sub(cast(k, "int64"), ops.scalar(1.0, "int64"))
    v, i = _at(values, indices, axis, kk, bool(keepdim) or was_0d)
    return _back(v, was_0d, dt), _back(i, was_0d, "int64")


def py_value_or_none(v: Any) -> Any:
    """v's value when known at compile time, else None."""
    try:
        return py_value(v)
    except ConversionFailure:
        return None


def _counts(values: Any, axis: int) -> tuple[Any, Any]:
    """(numbers, NaNs) in each row of values along axis, int64, kept as a dim of size 1."""
    number = ops.cast(ops.equal(values, values), "int64")
    valid = ops.sum(number, [axis], True)
    nans = ops.sum(ops.sub(ops.scalar(1.0, "int64"), number), [axis], True)
    return valid, nans


def _nonempty(x: Any, axis: int, what: str) -> None:
    if x.shape[axis] == 0:
        raise unsupported(f"{what} along an empty dimension")


def _median(ignore_nan: bool) -> Any:
    def convert(input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None) -> Any:
        no_out(out)
        dt = dtype_name(input)
        if dim is None:
            v, _ = convert(ops.reshape(input, [-1]), 0, False)
            return v
        values, indices, axis, was_0d, _ = _sorted(input, dim, False)
        _nonempty(values, axis, "median")
        valid, nans = _counts(values, axis)
        lower = ops.floor_divide(ops.sub(valid, ops.scalar(1.0, "int64")),
                                 ops.scalar(2.0, "int64"))
        if ignore_nan:  # the lower median of the numbers; all NaN: the first NaN
            k = ops.maximum(lower, ops.scalar(0.0, "int64"))
        else:  # any NaN: the first NaN, at position `valid` once sorted
            k = ops.where(ops.greater(nans, ops.scalar(0.0, "int64")), valid, lower)
        v, i = _at(values, indices, axis, k, bool(keepdim) or was_0d)
        return _back(v, was_0d, dt), _back(i, was_0d, "int64")

    return convert


median = _median(False)
nanmedian = _median(True)


def _quantile(ignore_nan: bool) -> Any:
    def convert(input: Any, q: Any, dim: Any = None, keepdim: bool = False, *,
                interpolation: str = "linear", out: Any = None) -> Any:
        no_out(out)
        dt = dtype_name(input)
        if dt not in ("float32", "float64"):
            raise unsupported(f"quantile of a {dt} tensor")
        if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
            raise unsupported(f"quantile with interpolation={interpolation!r}")
        if is_tensor(q):
            if rank(q) > 1:
                raise unsupported("quantile with a q of more than one dimension")
            q_vector = rank(q) == 1
            qs = ops.reshape(cast(q, dt), [-1])
        else:
            qv = py_value(q)
            q_vector = isinstance(qv, (list, tuple))
            qt = torch.tensor(qv if q_vector else [qv], dtype=torch.float64)
            if bool(((qt < 0) | (qt > 1)).any()):
                raise unsupported("quantile with q outside [0, 1]")
            qs = constant(qt.to(torch.float32 if dt == "float32" else torch.float64))
        if dim is None:
            x, axis = ops.reshape(input, [-1]), 0
        else:
            x = ops.reshape(input, [1]) if rank(input) == 0 else input
            axis = norm_dim(dim, rank(x))
        _nonempty(x, axis, "quantile")
        values, _ = ops.sort(x, axis)
        valid, nans = _counts(values, axis)
        view = [1] * rank(values)
        view[axis] = -1
        ranks = ops.mul(ops.reshape(qs, view), ops.cast(ops.sub(valid, ops.scalar(1.0, "int64")),
                                                         dt))
        if ignore_nan:  # all NaN: rank 0, a NaN
            ranks = ops.maximum(ranks, ops.scalar(0.0, dt))
        else:  # a row with NaN: the first NaN
            ranks = ops.where(ops.greater(nans, ops.scalar(0.0, "int64")), ops.cast(valid, dt),
                              ranks)
        if interpolation == "lower":
            ranks = ops.floor(ranks)
        elif interpolation == "higher":
            ranks = ops.ceil(ranks)
        elif interpolation == "nearest":
            ranks = ops.round(ranks)
        vb = ops.gather(values, axis, ops.cast(ops.floor(ranks), "int64"))
        va = ops.gather(values, axis, ops.cast(ops.ceil(ranks), "int64"))
        if interpolation == "midpoint":
            weights: Any = ops.scalar(0.5, dt)
        else:
            weights = ops.sub(ranks, ops.floor(ranks))
        diff = ops.sub(va, vb)
        lerp = ops.where(ops.less(weights, ops.scalar(0.5, dt)),
                         ops.add(vb, ops.mul(weights, diff)),
                         ops.sub(va, ops.mul(diff, ops.sub(ops.scalar(1.0, dt), weights))))
        # the quantiles along axis go first: [nq, reduced dims...]
        order = [axis] + [d for d in range(rank(lerp)) if d != axis]
        result = ops.permute(lerp, order) if axis != 0 else lerp
        if rank(input) == 0:
            result = ops.reshape(result, [-1])
        elif dim is None:
            if keepdim:
                result = ops.reshape(result, [-1] + [1] * rank(input))
        elif keepdim:
            result = ops.unsqueeze(result, [axis + 1])
        if not q_vector:
            result = ops.squeeze(result, [0])
        return result

    return convert


quantile = _quantile(False)
nanquantile = _quantile(True)


def _registrations() -> None:
    register(cumsum, torch.cumsum)
    register(cumprod, torch.cumprod)
    register(logcumsumexp, torch.logcumsumexp)
    register(cummax, torch.cummax)
    register(cummin, torch.cummin)
    register(cumulative_trapezoid, torch.cumulative_trapezoid)
    register(gradient, torch.gradient)
    register(masked_cumsum, torch.masked._ops.cumsum)
    register(masked_cumprod, torch.masked._ops.cumprod)
    register(sort, torch.sort)
    register(argsort, torch.argsort)
    register(msort, torch.msort)
    register(topk, torch.topk)
    register(kthvalue, torch.kthvalue)
    register(median, torch.median)
    register(nanmedian, torch.nanmedian)
    register(quantile, torch.quantile)
    register(nanquantile, torch.nanquantile)
    with builtin_registrations():
        for name, converter in (
            ("cumsum", cumsum), ("cumprod", cumprod), ("logcumsumexp", logcumsumexp),
            ("cummax", cummax), ("cummin", cummin), ("sort", sort), ("argsort", argsort),
            ("msort", msort), ("topk", topk), ("kthvalue", kthvalue), ("median", median),
            ("nanmedian", nanmedian), ("quantile", quantile), ("nanquantile", nanquantile),
        ):
            register_method(name)(converter)


_registrations()
