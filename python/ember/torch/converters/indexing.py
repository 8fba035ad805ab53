"""Converters for Python indexing of tensors: ``x[...]`` (``operator.getitem``) with
integers, slices (symbolic bounds included), ``None``, ``...``, boolean masks and integer
index tensors, and ``select``; ``narrow`` in tensors.py slices through the same path.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import torch

from ember.torch.context import (
    current_node,
    expected_value,
    may_be_negative,
    sym_size,
)
from ember.torch.converters.common import (
    END,
    cast,
    constant,
    dtype_name,
    is_tensor,
    norm_dim,
    ops,
    py_value,
    rank,
    shape_of,
    size_product,
    size_value,
    static_int,
    unsupported,
)
from ember.torch.converters.functions import register
from ember.torch.shape_guards import sym_dim_free


def select(input: Any, dim: int, index: Any) -> Any:
    d = norm_dim(dim, rank(input))
    return _index_tensor(input, tuple([slice(None)] * d + [index]))


def getitem(obj: Any, index: Any) -> Any:
    if isinstance(obj, (tuple, list)):
        return obj[index]
    if not is_tensor(obj):
        raise unsupported(f"indexing a {type(obj).__name__}")
    return _index_tensor(obj, index)


def _index_tensor(x: Any, index: Any) -> Any:
    """x[index] for ints, slices, None and Ellipsis: one ember slice, then squeeze and
    unsqueeze. Bounds on constant dimensions clamp like Python; a symbolic dimension or
    bound gives exact bounds, checked against the shape torch computed."""
    items = list(index) if isinstance(index, tuple) else [index]
    if any(is_tensor(i) or isinstance(i, (list, torch.Tensor)) for i in items):
        return _advanced_index(x, items)
    bounds = [b for i in items for b in ((i.start, i.stop, i.step) if isinstance(i, slice)
                                         else (i,))]
    for b in bounds:
        if may_be_negative(b):
            # ember binds symbols as sizes, never negative: fixed to its traced value by a
            # guard (the graph is converted again), or a ConversionFailure (eager)
            py_value(b)
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > rank(x):
        raise unsupported(f"{used} indices for a tensor of rank {rank(x)}")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (rank(x) - used)
    else:
        items += [slice(None)] * (rank(x) - used)
    sizes = _torch_sizes()
    axes, starts, stops, steps, drop, insert = [], [], [], [], [], []
    exact = False
    axis = out_axis = 0
    for item in items:
        if item is None:
            insert.append(out_axis)
            out_axis += 1
            continue
        if isinstance(item, slice):
            if item != slice(None):
                b = _slice_bounds(x, axis, item, sizes, out_axis)
                axes.append(axis), starts.append(b[0]), stops.append(b[1]), steps.append(b[2])
                exact = exact or b[3]
            axis += 1
            out_axis += 1
            continue
        start, stop, is_exact = _index_bounds(x, axis, item)
        axes.append(axis), starts.append(start), stops.append(stop), steps.append(1)
        exact = exact or is_exact
        drop.append(axis)
        axis += 1
    if not axes:
        y = x
    elif exact:
        y = ops.slice(x, axes, starts, stops, steps, clamp=False)
    else:
        y = ops.slice(x, axes, starts, stops, steps)
    if drop:
        y = ops.squeeze(y, drop)
    if insert:
        y = ops.unsqueeze(y, insert)
    return y


def _advanced_index(x: Any, items: list[Any]) -> Any:
    """x[i, j, ...] with integer index tensors (and ints, full slices, Ellipsis), as torch
    indexes: ints select first; the index tensors broadcast to one shape B; indexed dims next
    to each other are replaced by B where they stand, indexed dims apart put B first. One
    gather along the indexed dims flattened, at the row-major position of each index tuple;
    an index out of range (after negative ones count from the end) raises ember.DataError
    when the graph runs, never reads another element."""
    items = [constant(torch.tensor(i)) if isinstance(i, (list, torch.Tensor)) else i
             for i in items]
    dots = [k for k, i in enumerate(items) if i is Ellipsis]  # identity: tensors compare
    if len(dots) > 1:
        raise unsupported("an index with two Ellipses")
    if dots:
        items[dots[0]:dots[0] + 1] = [slice(None)] * (rank(x) - len(items) + 1)
    items += [slice(None)] * (rank(x) - len(items))
    if len(items) != rank(x):
        raise unsupported(f"{len(items)} indices for a tensor of rank {rank(x)}")
    for item in items:
        if is_tensor(item):
            if dtype_name(item) == "bool":
                raise unsupported("indexing with a boolean mask among other indices")
            if dtype_name(item) not in ("int64", "int32", "int16", "int8", "uint8"):
                raise unsupported(f"indexing with a {dtype_name(item)} tensor")
        elif not (isinstance(item, int) or (isinstance(item, slice) and item == slice(None))):
            raise unsupported(f"advanced indexing mixed with {item!r} (only full slices)")
    # torch selects at integer indices first (they are not advanced indices there).
    if any(not is_tensor(i) and isinstance(i, int) for i in items):
        x = _index_tensor(x, tuple(slice(None) if is_tensor(i) else i for i in items))
        items = [i for i in items if is_tensor(i) or not isinstance(i, int)]
    picks = {axis: cast(item, "int64") for axis, item in enumerate(items) if is_tensor(item)}
    adv = sorted(picks)
    rest = [a for a in range(rank(x)) if a not in picks]
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    order = (list(range(adv[0])) + adv + [a for a in rest if a > adv[0]]) if adjacent \
        else adv + rest
    y = ops.permute(x, order) if order != list(range(rank(x))) else x
    shape = shape_of(x)
    first, last = order.index(adv[0]), order.index(adv[-1])
    pre = [shape[a] for a in order[:first]]
    post = [shape[a] for a in order[last + 1:]]
    # The row-major position within the indexed dims, -1 where an index is out of range.
    position: Any = None
    valid: Any = None
    for axis in adv:
        n = size_value(shape[axis], "int64")
        i = picks[axis]
        i = ops.where(ops.less(i, 0), i + n, i)
        ok = ops.logical_and(ops.greater_equal(i, 0), ops.less(i, n))
        valid = ok if valid is None else ops.logical_and(valid, ok)
        position = i if position is None else position * n + i
    position = ops.where(valid, position, -1)
    b_shape = shape_of(position)
    flat = ops.reshape(position, [1, -1, 1])
    rows, cols = size_product(pre), size_product(post)
    merged = ops.reshape(y, [rows, size_product([shape[a] for a in adv]), cols])
    index = ops.expand(flat, [rows, size_product(b_shape), cols])
    out = ops.gather(merged, 1, index)
    return ops.reshape(out, pre + b_shape + post)


def unsafe_masked_index(x: Any, mask: Any, indices: Any, fill: Any) -> Any:
    """torch._unsafe_masked_index: x[indices] where mask is true, else fill; an index under
    a false mask may be out of range, so every index is clamped into its dimension first
    (torch's decomposition)."""
    if not is_tensor(mask) or dtype_name(mask) != "bool":
        raise unsupported("_unsafe_masked_index with a mask that is not a bool tensor")
    if 0 in shape_of(x):
        raise unsupported("_unsafe_masked_index of an empty tensor")
    items: list[Any] = []
    for axis, index in enumerate(indices):
        if index is None:
            items.append(slice(None))
            continue
        if not is_tensor(index):
            raise unsupported("_unsafe_masked_index with an index that is not a tensor")
        last = size_value(shape_of(x)[axis], "int64")
        last = last - 1 if isinstance(last, int) else ops.sub(last, 1)
        i = cast(index, "int64")
        items.append(ops.minimum(ops.maximum(i, 0), last) if is_tensor(last)
                     else ops.clamp(i, 0, last))
    picked = _advanced_index(x, items)
    if is_tensor(fill):
        fill = cast(fill, dtype_name(x))
    return ops.where(mask, picked, fill if is_tensor(fill) else float(py_value(fill)))


def _torch_sizes() -> tuple[list[Any] | None, list[Any] | None]:
    """The sizes torch recorded for the indexed tensor (the node's first argument) and for
    the result, for checking symbolic slices."""
    node = current_node()
    src = node.args[0] if node is not None and node.args else None
    meta_in = expected_value(src) if isinstance(src, torch.fx.Node) else None
    meta_out = expected_value(node) if node is not None else None
    return (list(meta_in.shape) if isinstance(meta_in, torch.Tensor) else None,
            list(meta_out.shape) if isinstance(meta_out, torch.Tensor) else None)


def _is_static(v: Any) -> bool:
    return v is None or isinstance(v, int) or (
        isinstance(v, torch.SymInt) and not sym_dim_free(v))


def _slice_bounds(x: Any, axis: int, s: slice, sizes: tuple, out_axis: int) -> tuple:
    """(start, stop, step, exact) for ember.ops.slice."""
    step = 1 if s.step is None else static_int(s.step, "a slice step")
    if step <= 0:
        raise unsupported("slices with a negative step")
    if isinstance(x.shape[axis], int) and _is_static(s.start) and _is_static(s.stop):
        start = 0 if s.start is None else static_int(s.start, "a slice start")
        stop = END if s.stop is None else static_int(s.stop, "a slice stop")
        n = x.shape[axis]
        start = builtins.max(start + n, 0) if start < 0 else builtins.min(start, n)
        stop = builtins.max(stop + n, 0) if stop < 0 else builtins.min(stop, n)
        return start, builtins.max(stop, start), step, False
    # A symbolic dimension or bound: exact bounds (ember does not clamp them), valid when
    # they give the length torch computed (Dynamo's guards keep it so for later calls).
    start = 0 if s.start is None else s.start
    stop = END if s.stop is None or (isinstance(s.stop, int) and s.stop >= END) else s.stop
    stop = _check_length(axis, start, stop, step, sizes, out_axis)
    return sym_size(start), sym_size(stop), step, True


def _index_bounds(x: Any, axis: int, index: Any) -> tuple[Any, Any, bool]:
    """(start, stop, exact) of the one element an integer index selects."""
    i = static_int(index, "an index")
    if isinstance(x.shape[axis], int):
        n = x.shape[axis]
        if not -n <= i < n:
            raise unsupported(f"index {i} is out of range for a dimension of size {n}")
        i = i + n if i < 0 else i
        return i, i + 1, False
    # A symbolic dimension: torch raises for an index out of range, so the bounds are exact.
    return i, (END if i == -1 else i + 1), True


def _as_sympy(v: Any) -> Any:
    import sympy

    if isinstance(v, torch.SymInt):
        return v.node.expr
    return sympy.Integer(int(v))


def _check_length(axis: int, start: Any, stop: Any, step: int, sizes: tuple,
                  out_axis: int) -> Any:
    """The stop that gives the length torch computed: `stop` itself, or the end of the
    dimension when torch clamped the stop to it (Dynamo guarded that stop >= size, as for
    ``x[:, 2:4]`` of a dimension of size s <= 4)."""
    import sympy

    meta_in, meta_out = sizes
    if meta_in is None or meta_out is None or out_axis >= len(meta_out):
        raise unsupported("a slice of a symbolic size without torch's shapes to check it")
    n = _as_sympy(meta_in[axis])

    def position(v: Any) -> Any:
        if isinstance(v, int) and v >= END:
            return n
        e = _as_sympy(v)
        return n + e if e.is_number and e < 0 else e

    def length(stop: Any) -> Any:
        span = position(stop) - position(start)
        if step == 1:
            return span
        # torch's own spelling of a rounded-up division, so that sympy compares them
        from torch.utils._sympy.functions import FloorDiv

        return FloorDiv(span + step - 1, step)

    want = _as_sympy(meta_out[out_axis])
    for candidate in (stop, END):
        if sympy.simplify(want - length(candidate)) == 0:
            return candidate
    raise unsupported(
        f"the slice [{start}:{stop}:{step}] of a dimension of size {n}: torch's length is "
        f"{meta_out[out_axis]}, and ember slices symbolic sizes only with bounds in range")


def _register_all() -> None:
    register(select, torch.select)
    register(getitem, operator.getitem)
    register(unsafe_masked_index, torch._unsafe_masked_index)


_register_all()
