"""Converters for scatters and binary searches: operators that write at (or find)
data-dependent positions, computed with a routine of ember's runtime library (a Call stage:
``ember.ops.scatter``, ``searchsorted``, ...).

- scatters (in index order, so duplicates resolve as torch's CPU kernels: the last write
  wins, sums add in order): scatter, scatter_add, scatter_reduce, index_add, index_copy,
  index_reduce, index_fill, put, index_put, masked_scatter, max_unpool1d/2d/3d, histc;
- searchsorted / bucketize (a binary search).

An index out of range raises ember.DataError when the graph runs. Calls a converter cannot
compute exactly raise ``unsupported`` and run in eager PyTorch.
"""

from __future__ import annotations

import builtins
from typing import Any

import torch
import torch.nn.functional as F

from ember._sizes import size_product, size_value
from ember.torch.context import sym_size
from ember.torch.converters.common import (
    cast,
    common_dtype,
    dtype_name,
    expand_to,
    full,
    is_tensor,
    no_out,
    norm_dim,
    ops,
    py_value,
    rank,
    shape_of,
    size_plus,
    slice_axis,
    static_int,
    unsupported,
    with_shape,
)
from ember.torch.converters.composite_math import take
from ember.torch.converters.functions import register
from ember.torch.converters.scans_sorts import py_value_or_none, work_dtype
from ember.torch.registry import (
    HIGH,
    builtin_registrations,
    register_function,
    register_method,
)

# ---- scatters ------------------------------------------------------------------------------
_REDUCE = {None: "assign", "add": "sum", "multiply": "prod", "sum": "sum", "prod": "prod",
           "mean": "mean", "amax": "amax", "amin": "amin"}


def _cut(x: Any, shape: list[Any], skip: int) -> Any:
    """x's leading part of `shape` along every axis but `skip` (torch reads a scatter's src
    so); sizes may be symbolic, and torch has checked that they fit."""
    for d, n in enumerate(shape):
        size = x.shape[d]
        if d == skip or size == n:
            continue
        if isinstance(size, int) and isinstance(n, int) and n > size:
            raise unsupported(f"a scatter operand of shape {shape_of(x)} for an index of "
                              f"shape {shape}")
        x = ops.slice(x, [d], [0], [n], [1], clamp=False)
    return x


def _scatter_into(x: Any, axis: int, index: Any, src: Any, reduce: str, include_self: bool,
                  start: int) -> Any:
    """ops.scatter where x is larger than index along some axis but `axis`: the leading part
    is scattered into, the rest kept (concatenated back)."""
    for d in range(start, rank(x)):
        n = index.shape[d]
        if d == axis or x.shape[d] == n:
            continue
        head = ops.slice(x, [d], [0], [n], [1], clamp=False)
        tail = ops.slice(x, [d], [n], [x.shape[d]], [1], clamp=False)
        return ops.concat([_scatter_into(head, axis, index, src, reduce, include_self, d + 1),
                           tail], d)
    return ops.scatter(x, axis, index, src, reduce, include_self)


def _scatter(self: Any, axis: int, index: Any, src: Any, reduce: str,
             include_self: bool = True) -> Any:
    """out = self; out[..., index[..., k, ...], ...] (reduce)= src[..., k, ...] along axis,
    for index and src of one shape, no larger than self's along the other axes."""
    dt = dtype_name(self)
    if dtype_name(index) not in ("int64", "int32"):
        raise unsupported(f"a scatter with a {dtype_name(index)} index")
    work = dt
    if dt in ("float16", "bfloat16"):
        if reduce not in ("assign", "amax", "amin"):
            raise unsupported(f"a {reduce} scatter into a {dt} tensor (torch rounds each step)")
        work = "float32"
    if any(isinstance(n, int) and n == 0 for n in index.shape):
        return self  # nothing is written
    out = _scatter_into(cast(self, work), axis, index, cast(cast(src, dt), work), reduce,
                        include_self, 0)
    return cast(out, dt)


def scatter_rows(self: Any, index: Any, src: Any, reduce: str, include_self: bool = True) -> Any:
    """_scatter along axis 0 (embedding_bag's reduction of rows into their bags)."""
    return _scatter(self, 0, index, src, reduce, include_self)


def _scatter_args(input: Any, dim: Any, index: Any) -> tuple[Any, Any, int, bool]:
    if not is_tensor(index):
        raise unsupported("a scatter index that is not a tensor")
    was_0d = rank(input) == 0
    x = ops.reshape(input, [1]) if was_0d else input
    idx = ops.reshape(index, [1]) if rank(index) == 0 else index
    if rank(idx) != rank(x):
        raise unsupported("a scatter index whose rank differs from the input's")
    return x, idx, norm_dim(dim, rank(x)), was_0d


def _finish(out: Any, was_0d: bool) -> Any:
    return ops.reshape(out, []) if was_0d else out


def _src(src: Any, index: Any) -> Any:
    s = ops.reshape(src, [1]) if rank(src) == 0 else src
    if rank(s) != rank(index):
        raise unsupported("a scatter source whose rank differs from the index's")
    return _cut(s, shape_of(index), -1)


def scatter(input: Any, dim: Any, index: Any, src: Any = None, value: Any = None, *,
            reduce: Any = None, out: Any = None) -> Any:
    no_out(out)
    if reduce not in (None, "add", "multiply"):
        raise unsupported(f"scatter with reduce={reduce!r}")
    x, idx, axis, was_0d = _scatter_args(input, dim, index)
    given = src if src is not None else value
    s = _src(given, idx) if is_tensor(given) else full(shape_of(idx), given, dtype_name(x))
    return _finish(_scatter(x, axis, idx, s, _REDUCE[reduce]), was_0d)


def scatter_add(input: Any, dim: Any, index: Any, src: Any, *, out: Any = None) -> Any:
    return scatter(input, dim, index, src, reduce="add", out=out)


def scatter_reduce(input: Any, dim: Any, index: Any, src: Any, reduce: str, *,
                   include_self: bool = True, out: Any = None) -> Any:
    no_out(out)
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise unsupported(f"scatter_reduce with reduce={reduce!r}")
    x, idx, axis, was_0d = _scatter_args(input, dim, index)
    return _finish(_scatter(x, axis, idx, _src(src, idx), _REDUCE[reduce], bool(include_self)),
                   was_0d)


def _index_along(input: Any, dim: Any, index: Any) -> tuple[Any, int, Any, list[Any], bool]:
    """(input with at least one dim, axis, the index expanded to the source's shape, that
    shape, was_0d) for the index_* family (a 1-d index selects slices along axis)."""
    if not is_tensor(index) or rank(index) > 1:
        raise unsupported("an index_* call whose index is not a 0-d or 1-d tensor")
    was_0d = rank(input) == 0
    x = ops.reshape(input, [1]) if was_0d else input
    axis = norm_dim(dim, rank(x))
    idx = ops.reshape(index, [-1])
    shape = shape_of(x)
    sshape = shape[:axis] + [idx.shape[0]] + shape[axis + 1:]
    view: list[Any] = [1] * len(shape)
    view[axis] = -1
    return x, axis, ops.expand(ops.reshape(idx, view), sshape), sshape, was_0d


def _source(source: Any, sshape: list[Any]) -> Any:
    if rank(source) == 0 and len(sshape) == 1:
        source = ops.reshape(source, [1])
    return with_shape(source, sshape, "an index_* source")


def index_add(input: Any, dim: Any, index: Any, source: Any, *, alpha: Any = 1,
              out: Any = None) -> Any:
    no_out(out)
    x, axis, idx, sshape, was_0d = _index_along(input, dim, index)
    dt = dtype_name(x)
    src = cast(_source(source, sshape), dt)
    a = py_value_or_none(alpha)
    if a != 1:
        scale = cast(alpha, dt) if a is None else a
        src = ops.mul(src, ops.scalar(float(scale), dt) if a is not None else scale)
    return _finish(_scatter(x, axis, idx, src, "sum"), was_0d)


def index_copy(input: Any, dim: Any, index: Any, source: Any, *, out: Any = None) -> Any:
    no_out(out)
    x, axis, idx, sshape, was_0d = _index_along(input, dim, index)
    return _finish(_scatter(x, axis, idx, _source(source, sshape), "assign"), was_0d)


def index_reduce(input: Any, dim: Any, index: Any, source: Any, reduce: str, *,
                 include_self: bool = True, out: Any = None) -> Any:
    no_out(out)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise unsupported(f"index_reduce with reduce={reduce!r}")
    x, axis, idx, sshape, was_0d = _index_along(input, dim, index)
    return _finish(_scatter(x, axis, idx, _source(source, sshape), reduce, bool(include_self)),
                   was_0d)


def index_fill(input: Any, dim: Any, index: Any, value: Any) -> Any:
    x, axis, idx, sshape, was_0d = _index_along(input, dim, index)
    dt = dtype_name(x)
    if is_tensor(value):
        if rank(value) != 0:
            raise unsupported("index_fill with a value tensor that is not 0-d")
        src = ops.expand(ops.reshape(cast(value, dt), [1] * len(sshape)), sshape)
    else:
        src = full(sshape, value, dt)
    return _finish(_scatter(x, axis, idx, src, "assign"), was_0d)


def _size(x: Any, d: int) -> Any:
    """x.shape[d] as a number, or as a 0-d int64 tensor when it is symbolic."""
    n = x.shape[d]
    if isinstance(n, int):
        return n
    return ops.sum(full([n], 1, "int64"))


def _wrapped(index: Any, n: Any) -> Any:
    """index with negative entries counted from the end of n; entries still out of range
    stay so (the scatter reports them)."""
    i = cast(index, "int64")
    size = ops.scalar(float(n), "int64") if isinstance(n, int) else n
    return ops.where(ops.less(i, ops.scalar(0.0, "int64")), ops.add(i, size), i)


def _rows(x: Any, k: int) -> Any:
    """x as [prod(shape[:k]), prod(shape[k:])] (k >= 1; a 0-d x as [1, 1])."""
    if rank(x) == 0:
        return ops.reshape(x, [1, 1])
    flat = ops.flatten(x, 0, k - 1)
    return ops.flatten(flat, 1, -1) if rank(flat) > 1 else ops.unsqueeze(flat, [1])


def put(input: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    if not is_tensor(index) or not is_tensor(source):
        raise unsupported("put with an index or source that is not a tensor")
    flat = ops.reshape(input, [-1])
    idx = ops.reshape(_wrapped(index, _size(flat, 0)), [-1])
    src = ops.reshape(source, [-1])
    if src.shape[0] != idx.shape[0]:
        raise unsupported("put with a source whose size differs from the index's")
    out = _scatter(flat, 0, idx, src, "sum" if accumulate else "assign")
    return ops.reshape(out, shape_of(input))


def index_put(input: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    if not isinstance(indices, (list, tuple)) or not indices:
        raise unsupported("index_put without a list of index tensors")
    if any(not is_tensor(i) or dtype_name(i) not in ("int64", "int32") for i in indices):
        raise unsupported("index_put with an index that is not an integer tensor (a mask, None)")
    k = len(indices)
    if k > rank(input):
        raise unsupported("index_put with more indices than dimensions")
    # one linear index over the first k dimensions (broadcast together); an entry out of
    # range in any of them becomes -1, which the scatter reports
    linear: Any = None
    valid: Any = None
    for d, i in enumerate(indices):
        n = _size(input, d)
        w = _wrapped(i, n)
        bound = ops.scalar(float(n), "int64") if isinstance(n, int) else n
        ok = ops.logical_and(ops.greater_equal(w, ops.scalar(0.0, "int64")), ops.less(w, bound))
        valid = ok if valid is None else ops.logical_and(valid, ok)
        linear = w if linear is None else ops.add(ops.mul(linear, bound), w)
    linear = ops.where(valid, linear, ops.scalar(-1.0, "int64"))
    bshape = shape_of(linear)
    rest = shape_of(input)[k:]
    dt = dtype_name(input)
    v = cast(values, dt) if is_tensor(values) else full([], values, dt)
    v = _rows(expand_to(v, bshape + rest, "index_put's values"), builtins.max(len(bshape), 1))
    flat = _rows(input, k)
    idx = ops.expand(ops.reshape(linear, [-1, 1]), [-1, flat.shape[1]])
    if v.shape[0] != idx.shape[0] or v.shape[1] != idx.shape[1]:
        v = ops.reshape(v, shape_of(idx))
    out = _scatter(flat, 0, idx, v, "sum" if accumulate else "assign")
    return ops.reshape(out, shape_of(input))


def unsafe_masked_index_put_accumulate(x: Any, mask: Any, indices: Any, values: Any) -> Any:
    """torch's decomposition: each index clamped into [-size, size), the values where the
    mask is false replaced by 0, then index_put with accumulate=True."""
    if any(i is None for i in indices) or not indices:
        raise unsupported("_unsafe_masked_index_put_accumulate with a None index")
    clamped = []
    for d, i in enumerate(indices):
        n = _size(x, d)
        size = ops.scalar(float(n), "int64") if isinstance(n, int) else n
        hi = ops.sub(size, ops.scalar(1.0, "int64"))
        clamped.append(ops.maximum(ops.minimum(cast(i, "int64"), hi), ops.neg(size)))
    dt = dtype_name(x)
    v = ops.where(cast(mask, "bool"), cast(values, dt), ops.scalar(0.0, dt))
    return index_put(x, clamped, v, True)


def masked_scatter(input: Any, mask: Any, source: Any) -> Any:
    if not is_tensor(mask) or not is_tensor(source):
        raise unsupported("masked_scatter with a mask or source that is not a tensor")
    dt = dtype_name(input)
    m = cast(mask, "bool")
    x = ops.where(m, input, input)  # input broadcast to its common shape with the mask
    shape = shape_of(x)
    m = ops.reshape(ops.expand(m, shape), [-1])
    src = ops.reshape(source, [-1])
    if src.shape[0] == 0:
        raise unsupported("masked_scatter from an empty source")
    if any(isinstance(n, int) and n == 0 for n in shape):
        return x
    pos = ops.sub(ops.cumsum(ops.cast(m, "int64"), 0), ops.scalar(1.0, "int64"))
    picked = take(src, 0, ops.where(m, pos, ops.scalar(0.0, "int64")))
    return ops.reshape(ops.where(m, cast(picked, dt), ops.reshape(x, [-1])), shape)


def _unpooled(size: Any, k: int, s: int, p: int) -> Any:
    if isinstance(size, int):
        return (size - 1) * s - 2 * p + k
    return f"((({size}) - 1) * {s} + {k - 2 * p})"


def _max_unpool(k: int) -> Any:
    def convert(input: Any, indices: Any, kernel_size: Any, stride: Any = None,
                padding: Any = 0, output_size: Any = None) -> Any:
        from ember.torch.converters.common import pair

        shape = shape_of(input)
        if len(shape) not in (k + 1, k + 2):
            raise unsupported(f"max_unpool{k}d of a rank-{len(shape)} tensor")
        ks = pair(kernel_size, k)
        st = pair(stride if stride is not None else kernel_size, k)
        pd = pair(padding, k)
        spatial = shape[-k:]
        if output_size is None:
            out_sp = [_unpooled(spatial[d], ks[d], st[d], pd[d]) for d in range(k)]
        else:
            out_sp = [sym_size(s) for s in list(output_size)[-k:]]
        lead = shape[:-k]
        dt = dtype_name(input)
        src = _rows(input, len(lead))
        idx = _rows(cast(indices, "int64"), len(lead))
        zeros = _rows(full(lead + out_sp, 0, dt), len(lead))
        out = _scatter(zeros, 1, idx, src, "assign")
        return ops.reshape(out, lead + out_sp)

    return convert


max_unpool1d, max_unpool2d, max_unpool3d = _max_unpool(1), _max_unpool(2), _max_unpool(3)


def histc(input: Any, bins: Any = 100, min: Any = 0, max: Any = 0, *, out: Any = None) -> Any:
    no_out(out)
    dt = dtype_name(input)
    if dt not in ("float32", "float64"):
        raise unsupported(f"histc of a {dt} tensor")
    bins = static_int(bins, "histc's bins")
    flat = ops.reshape(input, [-1])
    if flat.shape[0] == 0:  # no counts (torch raises for bounds in the wrong order)
        lo, hi = py_value_or_none(min), py_value_or_none(max)
        if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)) or lo > hi:
            raise unsupported("histc of an empty tensor with bounds known at run time or "
                              "in the wrong order")
        return full([bins], 0.0, dt)

    def bound(v: Any) -> Any:
        return cast(v, dt) if not isinstance(py_value_or_none(v), (int, float)) else \
            ops.scalar(float(py_value(v)), dt)

    lo, hi = bound(min), bound(max)
    # min == max: the data's range; still equal: widened by 1 on each side (torch)
    same = ops.equal(lo, hi)
    lo = ops.where(same, ops.min(flat), lo)
    hi = ops.where(same, ops.max(flat), hi)
    flat_range = ops.equal(lo, hi)
    lo = ops.where(flat_range, ops.sub(lo, ops.scalar(1.0, dt)), lo)
    hi = ops.where(flat_range, ops.add(hi, ops.scalar(1.0, dt)), hi)
    # torch: (x - min) * bins / (max - min) truncated, the last edge in the last bin; values
    # outside [min, max] and NaN are not counted: they go to an extra bin cut off after
    pos = ops.div(ops.mul(ops.sub(flat, lo), ops.scalar(float(bins), dt)), ops.sub(hi, lo))
    b = ops.minimum(ops.cast(ops.trunc(pos), "int64"), ops.scalar(float(bins - 1), "int64"))
    inside = ops.logical_and(ops.greater_equal(flat, lo), ops.less_equal(flat, hi))
    b = ops.where(inside, b, ops.scalar(float(bins), "int64"))
    counts = _scatter(full([bins + 1], 0, dt), 0, b, full(shape_of(b), 1, dt), "sum")
    return slice_axis(counts, 0, 0, bins)


# ---- binary search -------------------------------------------------------------------------
def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: Any = None, sorter: Any = None,
                 out: Any = None) -> Any:
    no_out(out)
    if side is not None:
        if right and side == "left":
            raise unsupported("searchsorted with right=True and side='left'")
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:  # positions in seq read in sorter's order
        if not is_tensor(sorter) or rank(seq) == 0:
            raise unsupported("searchsorted with a sorter that is not a tensor")
        seq = ops.gather(seq, rank(seq) - 1, sorter)
    if rank(seq) == 0:
        raise unsupported("searchsorted in a 0-d sequence")
    dt = common_dtype(seq, input)  # torch compares in the promoted dtype
    if is_tensor(input):
        values = input
    else:
        if rank(seq) != 1:
            raise unsupported("searchsorted of a number in a sequence of several rows")
        values = full([], input, dt)
    work = work_dtype(dt)
    was_0d = rank(values) == 0
    v = ops.reshape(values, [1]) if was_0d and rank(seq) > 1 else values
    pos = ops.searchsorted(cast(seq, work), cast(v, work), bool(right))
    if was_0d and rank(seq) > 1:
        pos = ops.reshape(pos, [])
    return cast(pos, "int32" if out_int32 else "int64")


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False,
              out: Any = None) -> Any:
    no_out(out)
    if rank(boundaries) != 1:
        raise unsupported("bucketize with boundaries that are not 1-d")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _integer_indices(node: Any, settings: Any) -> bool:
    """index_put with integer index tensors only (writes.py converts a boolean mask)."""
    args = list(node.args)
    indices = node.kwargs.get("indices", args[1] if len(args) > 1 else None)
    if not isinstance(indices, (list, tuple)) or not indices:
        return False
    for i in indices:
        meta = i.meta if isinstance(i, torch.fx.Node) else {}
        v = meta.get("example_value", meta.get("val"))
        if not isinstance(v, torch.Tensor) or v.dtype not in (torch.int64, torch.int32):
            return False
    return True


def nonzero_static(input: Any, *, size: Any, fill_value: Any = -1) -> Any:
    """torch.nonzero_static: the coordinates [size, rank] of the first `size` nonzero
    elements in row-major order, the rows past the last one filled with fill_value. The k-th
    nonzero element is where the running count of nonzero elements first reaches k + 1 (a
    binary search of the count). Sizes may be symbolic."""
    shape = shape_of(input)
    size = sym_size(size) if isinstance(size, torch.SymInt) else static_int(
        size, "nonzero_static's size")
    fill = int(py_value(fill_value))
    if not shape or (isinstance(size, int) and size == 0) or any(
            isinstance(d, int) and d == 0 for d in shape):
        # no rows, no columns (a 0-d input), or no element: every row is fill
        return full([size, len(shape)], fill, "int64")
    n = size_product(shape)
    nonzero = ops.cast(ops.not_equal(ops.reshape(input, [-1]), 0), "int64")
    count = ops.cumsum(nonzero, 0)
    # the position of the k-th nonzero, k = 1..size (n past the last one)
    pos = ops.searchsorted(count, ops.arange(1, size_plus(size, 1), 1, "int64"))
    coords = []
    for k, d in enumerate(shape):
        stride = size_value(size_product(shape[k + 1:]), "int64")
        coords.append(ops.unsqueeze(ops.remainder(ops.floor_divide(pos, stride),
                                                  size_value(d, "int64")), [1]))
    out = ops.concat(coords, 1) if len(coords) > 1 else coords[0]
    found = ops.less(pos, size_value(n, "int64"))
    return ops.where(ops.unsqueeze(found, [1]), out, float(fill))


def _registrations() -> None:
    register(nonzero_static, torch.nonzero_static)
    register(scatter, torch.scatter)
    register(scatter_add, torch.scatter_add)
    register(scatter_reduce, torch.scatter_reduce)
    register(index_add, torch.index_add)
    register(index_copy, torch.index_copy)
    register(index_reduce, torch.index_reduce)
    register(index_fill, torch.index_fill)
    register(put, torch.put)
    register(unsafe_masked_index_put_accumulate, torch._unsafe_masked_index_put_accumulate)
    register(masked_scatter, torch.masked_scatter)
    register(max_unpool1d, F.max_unpool1d)
    register(max_unpool2d, F.max_unpool2d)
    register(max_unpool3d, F.max_unpool3d)
    register(histc, torch.histc)
    register(searchsorted, torch.searchsorted)
    register(bucketize, torch.bucketize)
    with builtin_registrations():
        for name, converter in (
            ("scatter", scatter), ("scatter_add", scatter_add),
            ("scatter_reduce", scatter_reduce), ("index_add", index_add),
            ("index_copy", index_copy), ("index_reduce", index_reduce),
            ("index_fill", index_fill), ("put", put),
            ("masked_scatter", masked_scatter), ("histc", histc),
        ):
            register_method(name)(converter)
        for target in (torch.index_put, torch.index_put_):
            register_function(target, priority=HIGH,
                              capability_validator=_integer_indices)(index_put)
        for name in ("index_put", "index_put_"):
            register_method(name, priority=HIGH,
                            capability_validator=_integer_indices)(index_put)


_registrations()
