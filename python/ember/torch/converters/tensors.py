"""Converters for tensor shapes, dtype conversions and tensor creation: views and reshapes,
concatenation and splitting (Python indexing is indexing.py), ``to``/``float``/``type_as``,
``full``/``ones``/``zeros``/``arange``, ``tril``/``triu`` and inference-mode dropout.

Like functions.py, each converter is written once and registered for every torch function
that shares its signature; methods.py and aten.py reuse them for the other forms.
"""

from __future__ import annotations

import builtins
from typing import Any

import torch
import torch.nn.functional as F

import ember
from ember.torch.context import (
    ember_dtype,
    expected_value,
    may_be_negative,
    random_seed,
    sym_size,
    torch_dtype,
)
from ember.torch.converters.common import (
    cast,
    common_dtype,
    constant,
    dtype_name,
    full,
    is_float_dtype,
    is_tensor,
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
    slice_axis,
    static_int,
    unsupported,
)
from ember.torch.converters.functions import register
from ember.torch.converters.indexing import _index_tensor
from ember.torch.shape_guards import sym_dim_free


# ---- shapes ------------------------------------------------------------------------------------
def reshape(input: Any, *shape: Any) -> Any:
    sizes = sizes_arg(shape)
    if sizes and isinstance(sizes[0], torch.dtype):
        raise unsupported("view(dtype) reinterprets memory")
    try:
        return ops.reshape(input, reshape_dims(sizes))
    except ember.EmberError as e:
        if "number of elements must stay the same" not in str(e):
            raise
        return _reshape_as_recorded(input, e)


def _reshape_as_recorded(input: Any, error: Exception) -> Any:
    """A reshape whose element counts ember cannot show equal, although Dynamo's guards
    make them so (a symbolic size that a view pins, ``view(-1, 35)`` of ``[s0, 6, s1 - 1,
    s2 - 1]``): torch traced the node, so its recorded output has the input's element count
    on every call this graph serves. The input is flattened and taken as a run of exactly
    that many elements (an exact slice of the whole), then given torch's shape."""
    meta = expected_value()
    if not isinstance(meta, torch.Tensor) or all(isinstance(d, int) for d in input.shape):
        raise error
    out = [sym_size(d) for d in meta.shape]
    flat = ops.reshape(input, [-1])
    flat = ops.slice(flat, [0], [0], [size_product(out)], None, clamp=False)
    return ops.reshape(flat, out)


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    if rank(input) == 0:
        return ops.reshape(input, [1])
    return ops.flatten(input, start_dim, end_dim)


def unflatten(input: Any, dim: int, sizes: Any) -> Any:
    d = norm_dim(dim, rank(input))
    shape = shape_of(input)
    return reshape(input, *(shape[:d] + list(sizes) + shape[d + 1:]))


def permute(input: Any, *dims: Any) -> Any:
    order = sizes_arg(dims)
    return ops.permute(input, [norm_dim(d, rank(input)) for d in order])


def transpose(input: Any, dim0: int, dim1: int) -> Any:
    return ops.transpose(input, dim0, dim1)


def t(input: Any) -> Any:
    return input if rank(input) < 2 else ops.transpose(input, 0, 1)


def identity(input: Any, *args: Any, **kwargs: Any) -> Any:
    return input


def expand(input: Any, *sizes: Any) -> Any:
    target = [sym_size(d) for d in sizes_arg(sizes)]
    offset = len(target) - rank(input)
    dims = [
        -1 if i >= offset and target[i] == input.shape[i - offset] else d
        for i, d in enumerate(target)
    ]
    return ops.expand(input, dims)


def expand_as(input: Any, other: Any) -> Any:
    return expand(input, list(other.shape))


def squeeze(input: Any, dim: Any = None) -> Any:
    if dim is None:
        return ops.squeeze(input, None)
    # torch: dim=() squeezes nothing, and a 0-d tensor takes dim 0 or -1 and stays 0-d.
    if (isinstance(dim, (tuple, list)) and len(dim) == 0) or rank(input) == 0:
        return input
    dims = [d for d in norm_dims(dim, rank(input)) if input.shape[d] == 1]
    return ops.squeeze(input, dims) if dims else input


def unsqueeze(input: Any, dim: int) -> Any:
    return ops.unsqueeze(input, norm_dim(dim, rank(input) + 1))


def cat(tensors: Any, dim: int = 0, *, out: Any = None) -> Any:
    items = [x for x in tensors if not (rank(x) == 1 and x.shape[0] == 0)] or list(tensors)
    dt = common_dtype(*items)
    items = [cast(x, dt) for x in items]
    return ops.concat(items, norm_dim(dim, rank(items[0])))


def stack(tensors: Any, dim: int = 0, *, out: Any = None) -> Any:
    d = norm_dim(dim, rank(tensors[0]) + 1)
    return cat([ops.unsqueeze(x, [d]) for x in tensors], d)


def _split_as_recorded(tensor: Any, d: int) -> tuple:
    """A split of a symbolic dimension into the pieces torch recorded for the node: their
    sizes are size expressions (``(s0 + 2) // 3``, and the rest for the last one) that add
    up to the dimension, so each piece is an exact slice."""
    pieces = expected_value()
    if not isinstance(pieces, (tuple, list)) or not all(
            isinstance(p, torch.Tensor) and p.dim() == rank(tensor) for p in pieces):
        raise unsupported("a split of a symbolic dimension without torch's record of it")
    out, start = [], "0"
    for p in pieces:
        length = sym_size(p.shape[d])
        stop = f"({start} + {length})"
        out.append(ops.slice(tensor, [d], [start if start != "0" else 0], [stop], None,
                             clamp=False))
        start = stop
    return tuple(out)


def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> Any:
    d = norm_dim(dim, rank(tensor))
    sizes = split_size_or_sections if isinstance(split_size_or_sections, (tuple, list)) else [
        split_size_or_sections]
    if isinstance(tensor.shape[d], str) or any(isinstance(v, torch.SymInt) and sym_dim_free(v)
                                               for v in sizes):
        return _split_as_recorded(tensor, d)
    size = static_int(tensor.shape[d], "the split dimension")
    if isinstance(split_size_or_sections, (tuple, list)):
        sections = [static_int(s, "a split section") for s in split_size_or_sections]
    else:
        step = static_int(split_size_or_sections, "the split size")
        sections = [builtins.min(step, size - i) for i in range(0, size, step)] or [0]
    out, start = [], 0
    for n in sections:
        out.append(slice_axis(tensor, d, start, start + n))
        start += n
    return tuple(out)


def chunk(input: Any, chunks: int, dim: int = 0) -> Any:
    d = norm_dim(dim, rank(input))
    if isinstance(input.shape[d], str):
        return _split_as_recorded(input, d)
    size = static_int(input.shape[d], "the chunked dimension")
    step = -(-size // int(chunks))
    return split(input, step, d)


def unbind(input: Any, dim: int = 0) -> Any:
    d = norm_dim(dim, rank(input))
    return tuple(ops.squeeze(p, [d]) for p in split(input, 1, d))


def narrow(input: Any, dim: int, start: Any, length: Any) -> Any:
    d = norm_dim(dim, rank(input))
    if is_tensor(start):
        return _narrow_at(input, d, start, length)
    stop = start + length
    if isinstance(start, int) and start < 0 and isinstance(stop, int) and stop == 0:
        stop = None  # narrow(x, d, -2, 2): the last two
    return _index_tensor(input, tuple([slice(None)] * d + [slice(start, stop)]))


def _narrow_at(input: Any, d: int, start: Any, length: Any) -> Any:
    """narrow from a start known only when the graph runs (a 0-d integer tensor; negative
    counts from the end): a gather of the positions start .. start + length - 1, whose
    range the kernel checks (torch raises for a start out of range too)."""
    if rank(start) != 0 or dtype_name(start) not in ("int64", "int32"):
        raise unsupported("narrow with a start tensor that is not a 0-d integer tensor")
    n = static_int(length, "the length of a narrow with a tensor start")
    size = input.shape[d]
    first = cast(start, "int64")
    first = ops.where(ops.less(first, 0), first + size_value(size, "int64"), first)
    positions = ops.arange(0, n, 1, "int64") + first
    view = [1] * rank(input)
    view[d] = n
    target = shape_of(input)
    target[d] = n
    index = ops.expand(ops.reshape(positions, view), target)
    return ops.gather(input, d, index)


# ---- dtypes and creation --------------------------------------------------------------------
def to(input: Any, *args: Any, **kwargs: Any) -> Any:
    dtype = kwargs.get("dtype")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif is_tensor(a):
            return cast(input, dtype_name(a))
        elif isinstance(a, (str, torch.device)) and torch.device(a).type != "cpu":
            raise unsupported(f"moving a tensor to {a}")
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        raise unsupported(f"moving a tensor to {device}")
    return input if dtype is None else cast(input, ember_dtype(dtype))


def _cast_to(dtype: torch.dtype) -> Any:
    def convert(input: Any, memory_format: Any = None) -> Any:
        return cast(input, ember_dtype(dtype))

    return convert


def type_as(input: Any, other: Any) -> Any:
    return cast(input, dtype_name(other))


def _creation_dtype(dtype: Any, fallback: str | None = None) -> str:
    if dtype is not None:
        return ember_dtype(dtype)
    meta = expected_value()
    if isinstance(meta, torch.Tensor):
        return ember_dtype(meta.dtype)
    return fallback or ember_dtype(torch.float32)


def full_fn(size: Any, fill_value: Any, *, dtype: Any = None, **kwargs: Any) -> Any:
    return full(list(size), fill_value, _creation_dtype(dtype))


def _filled(value: float) -> Any:
    def convert(*size: Any, dtype: Any = None, **kwargs: Any) -> Any:
        return full(sizes_arg(size), value, _creation_dtype(dtype))

    return convert


def _filled_like(value: float | None) -> Any:
    def convert(input: Any, fill_value: Any = None, *, dtype: Any = None, **kwargs: Any):
        v = value if value is not None else fill_value
        return full(shape_of(input), v, _creation_dtype(dtype, dtype_name(input)))

    return convert


def scalar_tensor(s: Any, *, dtype: Any = None, **kwargs: Any) -> Any:
    dt = _creation_dtype(dtype)
    if is_tensor(s) or isinstance(s, (torch.SymInt, torch.SymFloat)) and sym_dim_free(s):
        return ops.reshape(cast(s, dt), [])
    return constant(torch.tensor(py_value(s), dtype=torch_dtype(dt)))


def eye(n: Any, m: Any = None, *, dtype: Any = None, out: Any = None, **kwargs: Any) -> Any:
    """torch.eye whose size is known only at run time (a static one is folded at compile
    time): row index == column index."""
    if out is not None:
        raise unsupported("eye with out=")
    m = n if m is None else m
    for v in (n, m):
        if not isinstance(v, (int, torch.SymInt)):
            raise unsupported(f"eye of the size {v!r}")
    rows, cols = sym_size(n), sym_size(m)
    r = ops.reshape(ops.arange(0, rows, 1, "int64"), [rows, 1])
    c = ops.reshape(ops.arange(0, cols, 1, "int64"), [1, cols])
    return ops.cast(ops.equal(r, c), _creation_dtype(dtype))


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, **kwargs: Any):
    # A static arange has no symbolic argument and is folded at compile time (interpreter);
    # this one has a bound that is a size known at run time.
    if end is None:
        start, end = 0, start
    for v in (start, end, step):
        if not isinstance(v, (int, torch.SymInt)):
            raise unsupported(f"arange with the non-integer argument {v!r} known at run time")
    if may_be_negative(start) or may_be_negative(end):  # ember binds symbols as sizes
        raise unsupported("arange with a bound known only at run time that may be negative")
    stride = static_int(step, "arange's step")
    return ops.arange(sym_size(start), sym_size(end), stride, _creation_dtype(dtype, "int64"))


def _tri(lower: bool) -> Any:
    def convert(input: Any, diagonal: int = 0) -> Any:
        rows, cols = input.shape[-2], input.shape[-1]
        zero = cast(0 if dtype_name(input) != "bool" else False, dtype_name(input))
        if isinstance(diagonal, torch.SymInt) and sym_dim_free(diagonal):
            # An offset known only at run time (it may be negative): the mask col - row <= k
            # (>= k for triu) against k as a 0-d run-time value.
            k = cast(diagonal, "int64")
            row = ops.reshape(ops.arange(0, rows) if isinstance(rows, int)
                              else ops.arange(0, rows, 1, "int64"), [-1, 1])
            col = ops.reshape(ops.arange(0, cols) if isinstance(cols, int)
                              else ops.arange(0, cols, 1, "int64"), [1, -1])
            offset = col - row
            mask = ops.less_equal(offset, k) if lower else ops.greater_equal(offset, k)
            return ops.where(mask, input, zero)
        diagonal = int(py_value(diagonal))
        if isinstance(rows, int) and isinstance(cols, int):
            ones = torch.ones(rows, cols, dtype=torch.bool)
            mask = constant(ones.tril(diagonal) if lower else ones.triu(diagonal))
            return ops.where(mask, input, zero)
        return (ops.tril if lower else ops.triu)(input, diagonal)

    return convert


tril, triu = _tri(True), _tri(False)


def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
    p = float(py_value(p))
    if not training or p == 0:
        return input
    return dropout_train(input, p)[0]


def dropout_train(input: Any, p: float) -> tuple[Any, Any]:
    """Training-mode dropout as ATen's native_dropout computes it: (input * mask * scale,
    mask), the mask True where an element is kept (with probability 1 - p) and scale
    1 / (1 - p) (0 for p = 1). The mask is drawn by ember's random_uniform (u >= p, u
    uniform in [0, 1) with 24 bits) from a seed input drawn from torch's generator on every
    call: torch.manual_seed makes runs repeatable, but the mask is not the one eager
    PyTorch draws for the same seed."""
    if not 0 <= p <= 1:
        raise unsupported(f"dropout with probability {p} outside [0, 1]")
    if not is_float_dtype(dtype_name(input)):
        raise unsupported(f"dropout of a {dtype_name(input)} tensor")
    seed, shape, dt = random_seed(), shape_of(input), dtype_name(input)

    def draw() -> Any:
        return ops.random_uniform(seed, shape) >= p

    # The output draws the mask again (the same numbers: same seed, same elements) instead
    # of reading the mask tensor: a kernel loading bool data does not vectorize, and this
    # way the output stays one vectorized loop with its producers and consumers. Where the
    # mask is not used (no backward), its node is dead code.
    one = ops.where(draw(), ops.scalar(1.0, dt), ops.scalar(0.0, dt))
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * one * scale, draw()


def _feature_dropout(input: Any, p: float = 0.5, training: bool = True,
                     inplace: bool = False) -> Any:
    """dropout1d/2d/3d and the alpha dropouts: the identity outside training."""
    if training and float(py_value(p)) > 0:
        raise unsupported("channel-wise or alpha dropout in training mode")
    return input


def size(input: Any, dim: Any = None) -> Any:
    shape = tuple(input.shape)
    return shape if dim is None else shape[norm_dim(dim, len(shape))]


def _register_all() -> None:
    register(reshape, torch.reshape)
    register(flatten, torch.flatten)
    register(unflatten, torch.unflatten)
    register(permute, torch.permute)
    register(transpose, torch.transpose, torch.swapaxes)
    register(t, torch.t)
    register(identity, torch.clone, torch.detach)
    register(squeeze, torch.squeeze)
    register(unsqueeze, torch.unsqueeze)
    register(cat, torch.cat, torch.concat, torch.concatenate)
    register(stack, torch.stack)
    register(split, torch.split)
    register(chunk, torch.chunk)
    register(unbind, torch.unbind)
    register(narrow, torch.narrow)
    register(full_fn, torch.full)
    register(_filled(1.0), torch.ones)
    register(_filled(0.0), torch.zeros, torch.empty)
    register(_filled_like(1.0), torch.ones_like)
    register(_filled_like(0.0), torch.zeros_like, torch.empty_like)
    register(_filled_like(None), torch.full_like)
    register(arange, torch.arange)
    register(eye, torch.eye)
    register(scalar_tensor, torch.scalar_tensor)
    register(tril, torch.tril)
    register(triu, torch.triu)
    register(dropout, F.dropout, torch.dropout)
    register(_feature_dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout,
             F.feature_alpha_dropout)
    register(to, torch.Tensor.to)
    register(type_as, torch.Tensor.type_as)


_register_all()

# Shared with methods.py, modules.py and aten.py.
CAST_METHODS = {
    "float": torch.float32, "half": torch.float16, "double": torch.float64,
    "bfloat16": torch.bfloat16, "int": torch.int32, "long": torch.int64,
    "bool": torch.bool, "short": torch.int16, "char": torch.int8, "byte": torch.uint8,
}
cast_methods = {name: _cast_to(dt) for name, dt in CAST_METHODS.items()}
filled = {"ones": _filled(1.0), "zeros": _filled(0.0)}
filled_like = {"ones": _filled_like(1.0), "zeros": _filled_like(0.0), "full": _filled_like(None)}
