"""Converters for splits, stacks and grids: ``split_with_sizes``, ``tensor_split``, the
``h/v/dsplit`` and ``h/v/d/column_stack`` families, ``_chunk_cat``, ``atleast_*d``,
``broadcast_to`` / ``broadcast_tensors``, ``meshgrid``, ``cartesian_prod`` and
``block_diag``, built on the shape converters of tensors.py (splits are slices, stacks are
concatenations). Calls a converter cannot compute exactly raise ``unsupported`` and run in
eager PyTorch.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import torch

from ember.torch.context import expected_value
from ember.torch.converters import tensors as tn
from ember.torch.converters.common import (
    cast,
    common_dtype,
    fixed_shape,
    full,
    is_tensor,
    no_out,
    norm_dim,
    ops,
    rank,
    reshape_dims,
    shape_of,
    slice_axis,
    static_int,
    unsupported,
)
from ember.torch.converters.composite_math import static_size
from ember.torch.converters.functions import register, register_tables


def _zeros(shape: list[Any], dtype: str) -> Any:
    return full(shape, False if dtype == "bool" else 0, dtype)


# ---- splits ------------------------------------------------------------------------------------
def split_with_sizes(input: Any, split_sizes: Any, dim: Any = 0) -> Any:
    return tn.split(input, list(split_sizes), dim)


def split_with_sizes_copy(input: Any, split_sizes: Any, dim: Any = 0, *,
                          out: Any = None) -> Any:
    no_out(out)
    return split_with_sizes(input, split_sizes, dim)


def tensor_split(input: Any, indices_or_sections: Any, dim: Any = 0) -> Any:
    d = norm_dim(dim, rank(input))
    if isinstance(input.shape[d], str) and not is_tensor(indices_or_sections):
        return tn._split_as_recorded(input, d)  # the pieces torch recorded (sizes in symbols)
    size = static_size(input, d, "a split dimension")
    if isinstance(indices_or_sections, (tuple, list)):
        cuts = [static_int(i, "a split index") for i in indices_or_sections]
    else:
        parts = static_int(indices_or_sections, "a number of sections")
        if parts <= 0:
            raise unsupported("tensor_split into fewer than one section")
        small, extra = divmod(size, parts)
        cuts, at = [], 0
        for i in range(parts - 1):
            at += small + (1 if i < extra else 0)
            cuts.append(at)
    out, start = [], 0
    for stop in cuts + [size]:
        lo = builtins.min(builtins.max(start + size if start < 0 else start, 0), size)
        hi = builtins.min(builtins.max(stop + size if stop < 0 else stop, 0), size)
        out.append(slice_axis(input, d, lo, builtins.max(hi, lo)))
        start = stop
    return tuple(out)


def _directional_split(axis: Callable[[int], int], name: str) -> Callable[..., Any]:
    def convert(input: Any, indices_or_sections: Any) -> Any:
        d = axis(rank(input))
        if d < 0 or d >= rank(input):
            raise unsupported(f"{name} of a tensor of rank {rank(input)}")
        if not isinstance(indices_or_sections, (tuple, list)) and isinstance(
                input.shape[d], int):
            parts = static_int(indices_or_sections, "a number of sections")
            if parts <= 0 or static_size(input, d, "a split dimension") % parts:
                raise unsupported(f"{name} into sections that do not divide the dimension")
        return tensor_split(input, indices_or_sections, d)

    convert.__qualname__ = name
    return convert


hsplit = _directional_split(lambda n: 1 if n >= 2 else (0 if n == 1 else -1), "hsplit")
vsplit = _directional_split(lambda n: 0 if n >= 2 else -1, "vsplit")
dsplit = _directional_split(lambda n: 2 if n >= 3 else -1, "dsplit")


def chunk_cat(tensors: Any, dim: Any, num_chunks: Any) -> Any:
    """Each tensor padded with zeros along dim to a multiple of num_chunks, viewed as
    [*leading, num_chunks, -1], and the views concatenated along the last dimension."""
    chunks = static_int(num_chunks, "a number of chunks")
    items = list(tensors)
    if not items or chunks < 1:
        raise unsupported("_chunk_cat of no tensors or into no chunks")
    d = norm_dim(dim, rank(items[0]))
    dt = common_dtype(*items)
    parts = []
    for t in items:
        shape = fixed_shape(t, "_chunk_cat")
        if d >= len(shape):
            raise unsupported("_chunk_cat with a dim beyond a tensor's rank")
        x = cast(t, dt)
        size = shape[d]
        step = -(-size // chunks)
        if step * chunks != size:
            pad_shape = list(shape)
            pad_shape[d] = step * chunks - size
            x = ops.concat([x, _zeros(pad_shape, dt)], d) if size else _zeros(
                shape[:d] + [step * chunks] + shape[d + 1:], dt)
        width = step * math.prod(shape[d + 1:])
        if width == 0:
            continue
        parts.append(ops.reshape(x, shape[:d] + [chunks, width]))
    if not parts:
        raise unsupported("_chunk_cat of tensors with no elements")
    return parts[0] if len(parts) == 1 else ops.concat(parts, d + 1)


# ---- stacks and grids --------------------------------------------------------------------------
def _atleast(n: int) -> Callable[..., Any]:
    def one(x: Any) -> Any:
        r = rank(x)
        if r >= n:
            return x
        shape = shape_of(x)
        if n == 3 and r == 2:
            return ops.reshape(x, reshape_dims(shape + [1]))
        if n == 3 and r == 1:
            return ops.reshape(x, reshape_dims([1] + shape + [1]))
        return ops.reshape(x, reshape_dims([1] * (n - r) + shape))

    def convert(*tensors: Any) -> Any:
        if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
            return tuple(one(t) for t in tensors[0])
        if len(tensors) == 1:
            return one(tensors[0])
        return tuple(one(t) for t in tensors)

    convert.__qualname__ = f"atleast_{n}d"
    convert.one = one  # type: ignore[attr-defined]
    return convert


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


def hstack(tensors: Any, *, out: Any = None) -> Any:
    no_out(out)
    items = [atleast_1d.one(t) for t in tensors]  # type: ignore[attr-defined]
    return tn.cat(items, 0 if rank(items[0]) == 1 else 1)


def vstack(tensors: Any, *, out: Any = None) -> Any:
    no_out(out)
    return tn.cat([atleast_2d.one(t) for t in tensors], 0)  # type: ignore[attr-defined]


def dstack(tensors: Any, *, out: Any = None) -> Any:
    no_out(out)
    return tn.cat([atleast_3d.one(t) for t in tensors], 2)  # type: ignore[attr-defined]


def column_stack(tensors: Any, *, out: Any = None) -> Any:
    no_out(out)
    items = [ops.reshape(t, reshape_dims(shape_of(t)[:1] + [1]) if rank(t) else [1, 1])
             if rank(t) <= 1 else t for t in tensors]
    return tn.cat(items, 1)


def broadcast_to(input: Any, size: Any) -> Any:
    return tn.expand(input, list(size))


def broadcast_tensors(*tensors: Any) -> Any:
    meta = expected_value()
    if not isinstance(meta, (tuple, list)) or not meta:
        raise unsupported("broadcast_tensors without torch's result shapes")
    target = list(meta[0].shape)
    return tuple(tn.expand(t, target) for t in tensors)


def meshgrid(*tensors: Any, indexing: str | None = None) -> Any:
    items = list(tensors[0]) if len(tensors) == 1 and isinstance(
        tensors[0], (tuple, list)) else list(tensors)
    if indexing not in (None, "ij", "xy"):
        raise unsupported(f"meshgrid with indexing={indexing!r}")
    if any(rank(t) > 1 for t in items) or not items:
        raise unsupported("meshgrid of tensors of rank > 1")
    sizes = [shape_of(t)[0] if rank(t) else 1 for t in items]
    axes = list(range(len(items)))
    if indexing == "xy" and len(items) >= 2:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(items)
    for i, a in enumerate(axes):
        shape[a] = sizes[i]
    grids = []
    for i, t in enumerate(items):
        view = [1] * len(items)
        view[axes[i]] = sizes[i]
        grids.append(tn.expand(ops.reshape(t, reshape_dims(view)), shape))
    return tuple(grids)


def cartesian_prod(*tensors: Any) -> Any:
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return tn.stack([ops.reshape(g, [-1]) for g in grids], 1)


def block_diag(*tensors: Any) -> Any:
    if not tensors:
        raise unsupported("block_diag of no tensors")
    dt = common_dtype(*tensors)
    blocks = []
    for t in tensors:
        if rank(t) > 2:
            raise unsupported("block_diag of a tensor of rank > 2")
        shape = fixed_shape(t, "block_diag")
        shape = [1, 1] if not shape else ([1] + shape if len(shape) == 1 else shape)
        blocks.append((cast(ops.reshape(t, shape), dt), shape))
    total_cols = builtins.sum(s[1] for _, s in blocks)
    rows, at = [], 0
    for block, (r, c) in blocks:
        if r == 0:
            at += c
            continue
        parts = [p for p in (_zeros([r, at], dt) if at else None,
                             block if c else None,
                             _zeros([r, total_cols - at - c], dt)
                             if total_cols - at - c else None) if p is not None]
        rows.append(parts[0] if len(parts) == 1 else ops.concat(parts, 1))
        at += c
    total_rows = builtins.sum(s[0] for _, s in blocks)
    if not rows or total_cols == 0:
        return _zeros([total_rows, total_cols], dt)
    return rows[0] if len(rows) == 1 else ops.concat(rows, 0)


_METHODS: dict[str, Callable[..., Any]] = {
    "split_with_sizes": split_with_sizes, "unsafe_split": tn.split, "unsafe_chunk": tn.chunk,
    "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "broadcast_to": broadcast_to,
}


def _register_all() -> None:
    register(split_with_sizes, torch.split_with_sizes)
    register(split_with_sizes_copy, torch.split_with_sizes_copy)
    register(tn.split, torch.unsafe_split)
    register(tn.chunk, torch.unsafe_chunk)
    register(tensor_split, torch.tensor_split)
    register(hsplit, torch.hsplit)
    register(vsplit, torch.vsplit)
    register(dsplit, torch.dsplit)
    register(chunk_cat, torch._chunk_cat)
    register(atleast_1d, torch.atleast_1d)
    register(atleast_2d, torch.atleast_2d)
    register(atleast_3d, torch.atleast_3d)
    register(hstack, torch.hstack)
    register(vstack, torch.vstack, torch.row_stack)
    register(dstack, torch.dstack)
    register(column_stack, torch.column_stack)
    register(broadcast_to, torch.broadcast_to)
    register(broadcast_tensors, torch.broadcast_tensors)
    register(meshgrid, torch.meshgrid)
    register(cartesian_prod, torch.cartesian_prod)
    register(block_diag, torch.block_diag)
    register_tables((), _METHODS)


_register_all()
