"""Converters for views and copies built on the shape converters of tensors.py and the
gathers of composite_math.py (splits and stacks are in stacks.py, creation functions in
creation.py, diagonals and the scatters into views in diagonals.py): the ``*_copy`` forms
of the views, ``as_strided``, ``unfold``, ``rot90``, pixel and channel shuffles and
``fftshift``.

Views that read elements in a new order (diagonals, ``unfold``, ``as_strided``) are gathers
of positions computed at compile time: the same torch view applied to ``arange`` gives the
flat position of every element read, so the converter and torch agree by construction.
Calls a converter cannot compute exactly raise ``unsupported`` and run in eager PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from ember import EmberError
from ember.torch.context import (
    current_node,
    expected_value,
    sym_size,
)
from ember.torch.converters import composites as cmp
from ember.torch.converters import functions as fn
from ember.torch.converters import tensors as tn
from ember.torch.converters import writes
from ember.torch.converters.common import (
    cast,
    dtype_name,
    fixed_int,
    fixed_shape,
    full,
    is_float_dtype,
    is_tensor,
    no_out,
    norm_dim,
    norm_dims,
    ops,
    py_value,
    rank,
    reshape_dims,
    shape_of,
    size_product,
    size_value,
    sizes_arg,
    static_int,
    static_shape,
    unsupported,
)
from ember.torch.converters.composite_math import (
    int_constant,
    static_size,
    take,
    take_static,
)
from ember.torch.converters.functions import register, register_methods
from ember.torch.shape_guards import sym_dim_free


def result_is_empty(shape: list[Any]) -> bool:
    return any(isinstance(d, int) and d == 0 for d in shape)


def zeros_of(shape: list[Any], dtype: str) -> Any:
    return full(shape, False if dtype == "bool" else 0, dtype)


def inverse_order(order: list[int]) -> list[int]:
    back = [0] * len(order)
    for i, d in enumerate(order):
        back[d] = i
    return back


def permute_dims(x: Any, order: list[int]) -> Any:
    return x if order == list(range(len(order))) else ops.permute(x, order)


# ---- gathers of positions computed by torch -------------------------------------------------
def gather_dims(x: Any, dims: list[int], positions: Callable[[torch.Tensor], torch.Tensor],
                 what: str) -> Any:
    """x with its dimensions `dims` (static sizes) replaced by what `positions` reads: the
    other dimensions in order, then positions(arange over dims).shape. `positions` is the
    torch view applied to the flat positions of those dimensions."""
    sizes = [static_size(x, d, what) for d in dims]
    others = [d for d in range(rank(x)) if d not in dims]
    index = positions(torch.arange(math.prod(sizes), dtype=torch.int64).view(sizes))
    other_shape = [shape_of(x)[d] for d in others]
    out_shape = other_shape + list(index.shape)
    if result_is_empty(out_shape) or math.prod(sizes) == 0:
        return zeros_of(out_shape, dtype_name(x))
    moved = permute_dims(x, others + dims)
    flat = ops.reshape(moved, reshape_dims(other_shape) + [math.prod(sizes)])
    if index.dim() == 0:
        picked = take(flat, len(others), int_constant(index.reshape(1)))
        return ops.reshape(picked, reshape_dims(out_shape))
    return take(flat, len(others), int_constant(index.contiguous()))


# ---- as_strided ------------------------------------------------------------------------------
def _input_meta() -> tuple[Any, Any]:
    node = current_node()
    src = node.args[0] if node is not None and node.args else None
    if src is None and node is not None:
        src = node.kwargs.get("input", node.kwargs.get("self"))
    meta = expected_value(src) if isinstance(src, torch.fx.Node) else None
    return src, meta


def _storage_offset(offset: Any) -> int:
    """as_strided reads the input's storage: the offset into the input's row-major values
    that `offset` means, for an input that is contiguous (Dynamo guards the strides of graph
    inputs). Without an offset torch starts at the input's own offset; an explicit offset
    counts from the start of the storage, known only for a tensor the graph allocated
    itself (not a graph input, whose storage offset is not guarded, nor a view)."""
    src, meta = _input_meta()
    if not isinstance(meta, torch.Tensor) or not meta.is_contiguous():
        raise unsupported("as_strided of a tensor that is not known to be contiguous")
    if offset is None:
        return 0
    k = static_int(offset, "a storage offset")
    if src.op != "call_function" and src.op != "call_method":
        raise unsupported("as_strided with a storage_offset of a graph input (its offset in "
                          "its storage is known only at run time)")
    fresh = (meta._base is None and meta.storage_offset() == 0
             and meta.untyped_storage().nbytes() == meta.numel() * meta.element_size())
    if not fresh:
        raise unsupported("as_strided with a storage_offset of a view")
    return k


def _strided_positions(n: int, size: Any, stride: Any, offset: int) -> torch.Tensor:
    sizes = [static_int(s, "an as_strided size") for s in size]
    strides = [static_int(s, "an as_strided stride") for s in stride]
    try:
        return torch.as_strided(torch.arange(n, dtype=torch.int64), sizes, strides, offset)
    except RuntimeError as e:
        raise unsupported(f"as_strided reading outside the tensor's elements ({e})") from e


def as_strided(input: Any, size: Any, stride: Any, storage_offset: Any = None) -> Any:
    start = _storage_offset(storage_offset)
    n = math.prod(static_shape(input, "as_strided"))
    positions = _strided_positions(n, size, stride, start)
    flat = ops.reshape(input, [n])
    return gather_dims(flat, [0], lambda a: a.flatten()[positions], "as_strided")


def as_strided_copy(input: Any, size: Any, stride: Any, storage_offset: Any = None, *,
                    out: Any = None) -> Any:
    no_out(out)
    return as_strided(input, size, stride, storage_offset)


def as_strided_scatter(input: Any, src: Any, size: Any, stride: Any,
                       storage_offset: Any = None) -> Any:
    """torch writes src into an as_strided view of a clone of input; the clone of a
    contiguous tensor is contiguous from offset 0, so the offset counts from input's start."""
    _, meta = _input_meta()
    if not isinstance(meta, torch.Tensor) or not meta.is_contiguous():
        raise unsupported("as_strided_scatter of a tensor that is not known to be contiguous")
    start = 0 if storage_offset is None else static_int(storage_offset, "a storage offset")
    n = math.prod(fixed_shape(input, "as_strided_scatter"))
    positions = _strided_positions(n, size, stride, start).reshape(-1)
    if positions.unique().numel() != positions.numel():
        raise unsupported("as_strided_scatter into overlapping positions")
    if positions.numel() == 0 or n == 0:
        return input
    joined = ops.concat([ops.reshape(input, [n]),
                         ops.reshape(cast(src, dtype_name(input)), [positions.numel()])], 0)
    index = torch.arange(n, dtype=torch.int64)
    index[positions] = n + torch.arange(positions.numel())
    return ops.reshape(take_static(joined, 0, index.tolist()), shape_of(input))


# ---- unfold, movedim, rot90 --------------------------------------------------------------------
def unfold(input: Any, dimension: Any, size: Any, step: Any) -> Any:
    length, stride = static_int(size, "an unfold size"), static_int(step, "an unfold step")
    if rank(input) == 0:
        if length > 1:
            raise unsupported("unfold of a 0-d tensor with size > 1")
        return ops.reshape(input, [1])
    n = rank(input)
    d = norm_dim(dimension, n)
    size_d = shape_of(input)[d]
    if not isinstance(size_d, int):
        # windows of a symbolic length: positions i * step + j, computed in the graph
        count = f"((({size_d}) - {length}) // {stride} + 1)"
        starts = ops.reshape(ops.arange(0, count, 1, "int64"), [count, 1]) * stride
        index = starts + ops.reshape(ops.arange(0, length, 1, "int64"), [1, length])
        out = take(input, d, index)  # [..., windows, window elements, ...]
        return permute_dims(out, [a for a in range(n + 1) if a != d + 1] + [d + 1])
    out = gather_dims(input, [d], lambda a: a.unfold(0, length, stride), "an unfolded dim")
    # out: the other dimensions, the windows, then the window elements.
    return permute_dims(out, list(range(d)) + [n - 1] + list(range(d, n - 1)) + [n])


def unfold_copy(input: Any, dimension: Any, size: Any, step: Any, *, out: Any = None) -> Any:
    no_out(out)
    return unfold(input, dimension, size, step)


def movedim(input: Any, source: Any, destination: Any) -> Any:
    n = rank(input)
    src = source if isinstance(source, (tuple, list)) else [source]
    dst = destination if isinstance(destination, (tuple, list)) else [destination]
    if len(src) != len(dst):
        raise unsupported("movedim with different numbers of source and destination dims")
    src = [norm_dim(d, n) for d in src]
    dst = [norm_dim(d, n) for d in dst]
    order = [-1] * n
    for s, t in zip(src, dst, strict=True):
        order[t] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [next(rest) if o == -1 else o for o in order]
    return permute_dims(input, order)


def rot90(input: Any, k: Any = 1, dims: Any = (0, 1)) -> Any:
    if len(dims) != 2 or rank(input) < 2:
        raise unsupported("rot90 needs two dims of a tensor of rank >= 2")
    d0, d1 = norm_dim(dims[0], rank(input)), norm_dim(dims[1], rank(input))
    if d0 == d1:
        raise unsupported("rot90 with equal dims")
    turns = static_int(k, "rot90's k") % 4
    if turns == 1:
        return ops.transpose(cmp.flip(input, [d1]), d0, d1)
    if turns == 2:
        return cmp.flip(input, [d0, d1])
    if turns == 3:
        return ops.transpose(cmp.flip(input, [d0]), d0, d1)
    return input


# ---- copies of views ---------------------------------------------------------------------------
def _copy_of(view: Callable[..., Any]) -> Callable[..., Any]:
    def convert(input: Any, *args: Any, out: Any = None, **kwargs: Any) -> Any:
        no_out(out)
        return view(input, *args, **kwargs)

    convert.__qualname__ = f"{view.__name__}_copy"
    return convert


def alias(input: Any) -> Any:
    return input


def expand_copy(input: Any, size: Any, *, implicit: bool = False, out: Any = None) -> Any:
    no_out(out)
    return tn.expand(input, size)


def view_copy(input: Any, size: Any, *, out: Any = None) -> Any:
    no_out(out)
    if any(isinstance(v, torch.dtype) for v in sizes_arg([size])):
        raise unsupported("view(dtype) reinterprets memory")
    return _reshape(input, sizes_arg([size]))


def squeeze_copy(input: Any, dim: Any = None, *, out: Any = None) -> Any:
    no_out(out)
    return tn.squeeze(input, dim)


def real_values(input: Any, *args: Any, **kwargs: Any) -> Any:
    """conj, conj_physical, resolve_conj, resolve_neg, real, positive: the tensor itself for
    real dtypes (torch rejects positive of a bool tensor)."""
    if dtype_name(input).startswith("complex"):
        raise unsupported("a complex tensor")
    no_out(kwargs.get("out"))
    return input


# ---- shuffles, shifts --------------------------------------------------------------------------
def pixel_shuffle(input: Any, upscale_factor: Any) -> Any:
    r = static_int(upscale_factor, "an upscale factor")
    if rank(input) < 3:
        raise unsupported("pixel_shuffle of a tensor of rank < 3")
    shape = shape_of(input)
    lead, (c, h, w) = shape[:-3], shape[-3:]
    c = fixed_int(c, "pixel_shuffle's channels")  # (the batch and spatial sizes may be
    if c % (r * r):  # symbolic)
        raise unsupported("pixel_shuffle of channels not divisible by upscale_factor**2")
    k = len(lead)
    x = ops.reshape(input, reshape_dims(lead + [c // (r * r), r, r, h, w]))
    x = ops.permute(x, list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2])
    return ops.reshape(x, reshape_dims(lead + [c // (r * r), size_product([h, r]),
                                               size_product([w, r])]))


def pixel_unshuffle(input: Any, downscale_factor: Any) -> Any:
    r = static_int(downscale_factor, "a downscale factor")
    if rank(input) < 3:
        raise unsupported("pixel_unshuffle of a tensor of rank < 3")
    shape = shape_of(input)
    # the divided sizes are fixed by guards where symbolic (torch checks divisibility)
    lead = shape[:-3]
    c, h, w = (fixed_int(d, "a pixel_unshuffle size") for d in shape[-3:])
    if h % r or w % r:
        raise unsupported("pixel_unshuffle of sizes not divisible by downscale_factor")
    k = len(lead)
    x = ops.reshape(input, reshape_dims(lead + [c, h // r, r, w // r, r]))
    x = ops.permute(x, list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3])
    return ops.reshape(x, reshape_dims(lead + [c * r * r, h // r, w // r]))


def channel_shuffle(input: Any, groups: Any) -> Any:
    g = static_int(groups, "a number of groups")
    if rank(input) < 3:
        raise unsupported("channel_shuffle of a tensor of rank < 3")
    shape = shape_of(input)
    c = fixed_int(input.shape[1], "the shuffled channels")
    if g <= 0 or c % g:
        raise unsupported("channel_shuffle of channels not divisible by groups")
    x = ops.reshape(input, reshape_dims([shape[0], g, c // g] + shape[2:]))
    return ops.reshape(ops.transpose(x, 1, 2), reshape_dims(shape))


def _fftshift(inverse: bool) -> Callable[..., Any]:
    def convert(input: Any, dim: Any = None) -> Any:
        dims = norm_dims(dim, rank(input)) if dim is not None else list(range(rank(input)))
        if not dims:
            return input
        shifts = []
        for d in dims:
            n = input.shape[d]
            if isinstance(n, int):
                shifts.append(-(n // 2) if inverse else n // 2)
            else:  # symbolic: the shift is a value known when the graph runs
                half = size_value(f"({n} // 2)", "int64")
                shifts.append(ops.neg(half) if inverse else half)
        return cmp.roll(input, shifts, dims)

    convert.__qualname__ = "ifftshift" if inverse else "fftshift"
    return convert


# ---- values ------------------------------------------------------------------------------------
def _fill_value(value: Any, dtype: str) -> Any:
    v = py_value(value)
    if dtype == "bool":
        return bool(v)
    if not is_float_dtype(dtype):
        if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
            raise unsupported(f"filling an integer tensor with {v}")
        return int(v)
    return float(v)


def fill(input: Any, value: Any) -> Any:
    if is_tensor(value):
        return writes.fill_(input, value)
    return full(shape_of(input), _fill_value(value, dtype_name(input)), dtype_name(input))


def sum_to_size(self: Any, *size: Any) -> Any:
    target = sizes_arg(size)
    shape = shape_of(self)
    lead = len(shape) - len(target)
    if lead < 0:
        raise unsupported("sum_to_size to more dimensions than the tensor has")
    dims = list(range(lead))
    for i, t in enumerate(target):
        if isinstance(t, torch.SymInt) and sym_dim_free(t):
            if sym_size(t) != shape[lead + i]:  # it may be 1 when the graph runs
                raise unsupported(f"sum_to_size to the size {t} known only at run time")
        elif int(t) == 1 and shape[lead + i] != 1:
            dims.append(lead + i)
    if not dims:
        return self
    if result_is_empty(shape):
        raise unsupported("sum_to_size of an empty tensor")
    return _reshape(fn.sum_(self, dims, True), target)


def _reshape(x: Any, sizes: list[Any]) -> Any:
    """x reshaped to sizes (as the reshape converter does it: as torch recorded the node when
    ember cannot prove that a symbolic element count stays the same), or a clean fallback."""
    try:
        return tn.reshape(x, *sizes)
    except EmberError as e:
        raise unsupported(f"a reshape ember cannot check: {e}") from e


def reshape_as(self: Any, other: Any) -> Any:
    return _reshape(self, shape_of(other))


def ravel(input: Any) -> Any:
    return ops.reshape(input, [-1]) if rank(input) != 1 else input


def radd(self: Any, other: Any) -> Any:
    return fn.add(other, self)


def rmul(self: Any, other: Any) -> Any:
    return fn.mul(other, self)


# ---- registration ------------------------------------------------------------------------------
_METHODS: dict[str, Callable[..., Any]] = {
    "as_strided": as_strided,
    "as_strided_scatter": as_strided_scatter, "unfold": unfold, "movedim": movedim,
    "moveaxis": movedim, "rot90": rot90, "conj": real_values, "conj_physical": real_values,
    "resolve_conj": real_values, "resolve_neg": real_values, "positive": real_values,
    "fill": fill, "sum_to_size": sum_to_size,
    "reshape_as": reshape_as, "view_as": reshape_as, "ravel": ravel,
    "swapdims": tn.transpose,
    "__radd__": radd, "__rmul__": rmul,
}


def _register_all() -> None:
    register(as_strided, torch.as_strided)
    register(as_strided_copy, torch.as_strided_copy)
    register(as_strided_scatter, torch.as_strided_scatter)
    register(unfold_copy, torch.unfold_copy)
    register(movedim, torch.movedim, torch.moveaxis)
    register(rot90, torch.rot90)
    register(_copy_of(alias), torch.alias_copy)
    register(expand_copy, torch.expand_copy)
    register(view_copy, torch.view_copy)
    register(squeeze_copy, torch.squeeze_copy)
    register(_copy_of(tn.narrow), torch.narrow_copy)
    register(_copy_of(tn.permute), torch.permute_copy)
    register(_copy_of(tn.t), torch.t_copy)
    register(_copy_of(tn.transpose), torch.transpose_copy)
    register(_copy_of(tn.unsqueeze), torch.unsqueeze_copy)
    register(_copy_of(tn.unbind), torch.unbind_copy)
    register(tn.transpose, torch.swapdims)
    register(real_values, torch.conj, torch.conj_physical, torch.resolve_conj,
             torch.resolve_neg, torch.real, torch.positive)
    register(pixel_shuffle, F.pixel_shuffle, torch.pixel_shuffle)
    register(pixel_unshuffle, F.pixel_unshuffle, torch.pixel_unshuffle)
    register(channel_shuffle, F.channel_shuffle, torch.channel_shuffle,
             torch.native_channel_shuffle)
    register(_fftshift(False), torch.fft.fftshift)
    register(_fftshift(True), torch.fft.ifftshift)
    register(fill, torch.fill)
    register(writes.zero_, torch.zero_)
    register(ravel, torch.ravel)
    register_methods(_METHODS)


_register_all()
