"""Converters for writes into a tensor, which the prepare phase has made functional (see
inplace.functionalize): ``functional.setitem`` (``x[index] = value``), and the in-place
methods ``fill_``, ``zero_``, ``copy_`` and ``index_put_``, whose result is the updated
tensor.

``x[index] = value`` with a basic index (ints, slices of step 1, None, Ellipsis) is the
concatenation, along each sliced dimension, of the parts of x before and after the region
and the value broadcast into the region; with one boolean mask and a scalar value it is a
``where``. Other indices raise the converter's failure, and the node runs eagerly.
"""

from __future__ import annotations

from typing import Any

import torch

from ember.torch import functional
from ember.torch.converters.common import (
    END,
    cast,
    dtype_name,
    full,
    is_tensor,
    ops,
    py_value,
    rank,
    shape_of,
    unsupported,
    with_shape,
)
from ember.torch.registry import builtin_registrations, register_function, register_method
from ember.torch.shape_guards import sym_dim_free

# A dynamic dimension is at least 2 in a graph Dynamo compiled (sizes 0 and 1 are
# specialized), so bounds of at most this much are in range on a symbolic dimension.
_SAFE_SYMBOLIC_BOUND = 2


def setitem(x: Any, index: Any, value: Any) -> Any:
    items = list(index) if isinstance(index, tuple) else [index]
    if any(is_tensor(i) for i in items):
        if len(items) == 1 and dtype_name(items[0]) == "bool":
            return _masked_set(x, items[0], value)
        raise unsupported("x[index] = value with a tensor index other than one boolean mask")
    if any(isinstance(i, (list, torch.Tensor, bool)) for i in items):
        raise unsupported("x[index] = value with a list or bool index")
    return _basic_set(x, items, value)


def _masked_set(x: Any, mask: Any, value: Any) -> Any:
    n = rank(mask)
    if n > rank(x):
        raise unsupported(f"x[mask] = value with a mask of shape {shape_of(mask)} for a tensor "
                          f"of shape {shape_of(x)}")
    mask = with_shape(mask, shape_of(x)[:n], f"x[mask] = value for a tensor of shape "
                      f"{shape_of(x)} with a mask")
    if is_tensor(value):
        if any(d != 1 for d in value.shape):
            raise unsupported("x[mask] = value with a value of more than one element")
        value = ops.reshape(value, [])
    if n < rank(x):
        mask = ops.unsqueeze(mask, list(range(n, rank(x))))
    return ops.where(mask, cast(value, dtype_name(x)), x)


def _basic_set(x: Any, items: list[Any], value: Any) -> Any:
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > rank(x) or items.count(Ellipsis) > 1:
        raise unsupported(f"{used} indices for a tensor of rank {rank(x)}")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (rank(x) - used)
    else:
        items += [slice(None)] * (rank(x) - used)
    regions: list[tuple[int, Any, Any]] = []  # (axis, start, stop) of each restricted axis
    dropped: list[int] = []  # axes an int index removes from x[index]
    inserted: list[int] = []  # positions of None in x[index]
    axis = position = 0
    for item in items:
        if item is None:
            inserted.append(position)
            position += 1
            continue
        if isinstance(item, slice):
            bounds = _slice_region(x, axis, item)
            position += 1
        else:
            bounds = _int_region(x, axis, item)
            dropped.append(axis)
        if bounds is not None:
            if bounds[0] == bounds[1]:
                return x  # an empty region: nothing is written
            regions.append((axis, *bounds))
        axis += 1
    inner = x
    for a, start, stop in regions:
        inner = _slice(inner, a, start, stop)
    v = _region_value(value, dtype_name(x), inner, position, dropped, inserted)
    return _place(x, regions, v)


def _symbolic(x: Any, axis: int) -> bool:
    return not isinstance(x.shape[axis], int)


def _slice_region(x: Any, axis: int, s: slice) -> tuple[Any, Any] | None:
    """(start, stop) of a slice on an axis, None for the whole axis."""
    step = 1 if s.step is None else py_value(s.step)
    if step != 1:
        raise unsupported("x[index] = value with a slice step other than 1")
    start, stop = s.start, s.stop
    if start is not None:
        start = py_value(start)
    if stop is not None:
        stop = py_value(stop)
    if not _symbolic(x, axis):
        n = x.shape[axis]
        lo = 0 if start is None else int(start)
        hi = n if stop is None else int(stop)
        lo = max(lo + n, 0) if lo < 0 else min(lo, n)
        hi = max(hi + n, 0) if hi < 0 else min(hi, n)
        hi = max(hi, lo)
        return None if (lo, hi) == (0, n) else (lo, hi)
    # A symbolic size n >= 2: only bounds in range, and in order, whatever n is.
    if any(isinstance(b, torch.SymInt) or b is not None and abs(int(b)) > _SAFE_SYMBOLIC_BOUND
           for b in (start, stop)):
        raise unsupported(f"x[{start}:{stop}] = value on a dimension of symbolic size")
    lo = 0 if start is None else int(start)
    hi = END if stop is None else int(stop)
    ordered = hi == END or (lo < 0) == (hi < 0) and lo <= hi or (
        lo >= 0 > hi and lo - hi <= _SAFE_SYMBOLIC_BOUND)
    if not ordered:
        raise unsupported(f"x[{start}:{stop}] = value on a dimension of symbolic size")
    return None if (lo, hi) == (0, END) else (lo, hi)


def _int_region(x: Any, axis: int, index: Any) -> tuple[Any, Any]:
    if isinstance(index, torch.SymInt) and sym_dim_free(index):
        raise unsupported("x[i] = value with an index known only at run time")
    i = int(py_value(index))
    if not _symbolic(x, axis):
        n = x.shape[axis]
        if not -n <= i < n:
            raise unsupported(f"index {i} is out of range for a dimension of size {n}")
        i = i + n if i < 0 else i
        return i, i + 1
    # torch raises for an index out of range, so these bounds are exact.
    return i, (END if i == -1 else i + 1)


def _slice(x: Any, axis: int, start: Any, stop: Any) -> Any:
    return ops.slice(x, [axis], [start], [stop], [1], clamp=not _symbolic(x, axis))


def _region_value(value: Any, dtype: str, region: Any, indexed_rank: int, dropped: list[int],
                  inserted: list[int]) -> Any:
    """value as torch writes it into x[index]: broadcast to x[index]'s shape, then shaped as
    the region of x (the dims of ints restored, those of None removed)."""
    if not is_tensor(value):
        return full(shape_of(region), value, dtype)
    v = cast(value, dtype)
    while rank(v) > indexed_rank and v.shape[0] == 1:  # torch drops leading 1s
        v = ops.squeeze(v, [0])
    if rank(v) > indexed_rank:
        raise unsupported(f"a value of shape {shape_of(value)} does not fit the region")
    if rank(v) < indexed_rank:
        v = ops.unsqueeze(v, list(range(indexed_rank - rank(v))))
    if inserted:
        if any(v.shape[p] != 1 for p in inserted):
            raise unsupported(f"a value of shape {shape_of(value)} does not fit the region")
        v = ops.squeeze(v, inserted)
    if dropped:
        v = ops.unsqueeze(v, dropped)
    target = shape_of(region)
    dims = [-1 if v.shape[i] == d else d for i, d in enumerate(target)]
    if any(v.shape[i] != 1 for i, d in enumerate(dims) if d != -1):
        raise unsupported(f"a value of shape {shape_of(value)} does not fit the region "
                          f"{target}")
    return v if all(d == -1 for d in dims) else ops.expand(v, dims)


def _place(x: Any, regions: list[tuple[int, Any, Any]], v: Any) -> Any:
    """x with the region (regions, outermost first) replaced by v."""
    if not regions:
        return v
    (axis, start, stop), rest = regions[0], regions[1:]
    middle = _place(_slice(x, axis, start, stop), rest, v)
    parts = []
    if start != 0:
        parts.append(_slice(x, axis, 0, start))
    parts.append(middle)
    end = END if _symbolic(x, axis) else x.shape[axis]
    if stop != end:
        parts.append(_slice(x, axis, stop, END))
    return parts[0] if len(parts) == 1 else ops.concat(parts, axis)


# ---- in-place methods, as the value they leave ------------------------------------------------
def fill_(self: Any, value: Any) -> Any:
    if is_tensor(value):
        return _region_value(value, dtype_name(self), self, rank(self), [], [])
    return full(shape_of(self), value, dtype_name(self))


def zero_(self: Any) -> Any:
    return full(shape_of(self), 0, dtype_name(self))


def copy_(self: Any, src: Any, non_blocking: bool = False) -> Any:
    if not is_tensor(src):
        raise unsupported("copy_ from a non-tensor")
    return _region_value(src, dtype_name(self), self, rank(self), [], [])


def index_put(self: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    if accumulate:
        raise unsupported("index_put with accumulate=True")
    return setitem(self, tuple(indices), values)


def _register_all() -> None:
    with builtin_registrations():
        register_function(functional.setitem)(setitem)
        register_function(torch.index_put)(index_put)
        register_function(torch.index_put_)(index_put)
        register_method("fill_")(fill_)
        register_method("zero_")(zero_)
        register_method("copy_")(copy_)
        register_method("index_put_")(index_put)
        register_method("index_put")(index_put)


_register_all()
