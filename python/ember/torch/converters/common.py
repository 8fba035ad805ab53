"""Helpers shared by ember's converters: dtype promotion as torch does it, dims and sizes,
constants built at compile time."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

import ember
from ember._sizes import END, size_product, size_value  # noqa: F401 (used by converters)
from ember.torch.context import (
    ConversionFailure,
    derived_constant,
    ember_dtype,
    item_read,
    runtime_scalar,
    same_size_or_unify,
    specialized_scalar,
    specialized_size,
    sym_size,
    torch_dtype,
    weight_to_ember,
)
from ember.torch.fx_nodes import IN_GRAPH_FILL_BYTES
from ember.torch.shape_guards import guarded_value, sym_dim_free

ops = ember.ops


def unsupported(message: str) -> ConversionFailure:
    """The error a converter raises for a call it cannot convert (the node then runs in eager
    PyTorch, or strict mode reports it)."""
    return ConversionFailure("error", message)


def is_tensor(v: Any) -> bool:
    return isinstance(v, ember.Tensor)


def is_runtime_scalar(v: Any) -> bool:
    """Whether a scalar argument is known only when the graph runs: a 0-d tensor, or a free
    SymInt/SymFloat (Dynamo passes a number that changes between calls as either)."""
    if isinstance(v, ember.Tensor):
        return len(v.shape) == 0
    return isinstance(v, (torch.SymInt, torch.SymFloat)) and sym_dim_free(v)


def is_const(v: Any) -> bool:
    return isinstance(v, ember.Tensor) and not v.is_symbolic


def rank(t: Any) -> int:
    return len(t.shape)


def dtype_name(t: Any) -> str:
    return str(t.dtype)


INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")


def no_out(out: Any) -> None:
    """Converters compute new tensors: an ``out=`` argument (a write into a given tensor)
    runs in eager PyTorch."""
    if out is not None:
        raise unsupported("out= arguments")


def is_float_dtype(name: str) -> bool:
    return name in ("float32", "float16", "bfloat16", "float64")


def norm_dim(dim: Any, n: int) -> int:
    d = int(dim)
    if not -max(n, 1) <= d < max(n, 1):
        raise unsupported(f"dimension {d} is out of range for a tensor of rank {n}")
    return d + n if d < 0 else d


def norm_dims(dim: Any, n: int) -> list[int]:
    """None (all), an int, or a sequence of ints, as sorted non-negative dims."""
    if dim is None:
        return list(range(n))
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return list(range(n))
        return sorted(norm_dim(d, n) for d in dim)
    return [norm_dim(dim, n)]


def py_value(v: Any) -> Any:
    """A SymInt/SymFloat/SymBool as a Python number: its value where it is known at compile
    time (under Dynamo's guards); one known only at run time is fixed to its traced value by
    a guard where the backend may add one (context.specialized_scalar: the graph is
    converted again), else unsupported."""
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        if sym_dim_free(v):
            specialized_scalar(v)  # raises
        known = guarded_value(v)
        if known is not None:
            return known
        return v.node.pytype(v.node.expr)
    return v


def fixed_number(v: Any, what: str) -> Any:
    """A number the converter needs at compile time (a resampling scale it builds tables
    from): a float argument that Dynamo passes as a 0-d tensor and the graph reads with
    .item() is fixed to its traced value by a guard, as a SymFloat is (py_value: one graph
    per value, as with Dynamo's specialize_float); another tensor is unsupported."""
    if is_tensor(v):
        read = item_read(v)
        if read is None:
            raise unsupported(f"{what} known only at run time")
        v = read
    return py_value(v)


# ---- dtypes ------------------------------------------------------------------------------
def _promotion_stand_in(v: Any) -> Any:
    if is_tensor(v):
        return torch.empty(() if rank(v) == 0 else (1,), dtype=torch_dtype(v.dtype))
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) and sym_dim_free(v):
        return {torch.SymInt: 1, torch.SymFloat: 1.0, torch.SymBool: True}[type(v)]
    return py_value(v)


def common_dtype(*values: Any) -> str:
    """The dtype torch computes binary operations in (torch.result_type's rules)."""
    items = [_promotion_stand_in(v) for v in values if v is not None]
    tensors = [x for x in items if isinstance(x, torch.Tensor)]
    if not tensors:
        raise unsupported("an elementwise operation without a tensor operand")
    result = items[0]
    for other in items[1:]:
        dt = torch.result_type(result, other)
        dims = () if all(
            not isinstance(x, torch.Tensor) or x.dim() == 0 for x in (result, other)) else (1,)
        result = torch.empty(dims, dtype=dt)
    if not isinstance(result, torch.Tensor):
        result = tensors[0]
    return ember_dtype(result.dtype)


def cast(v: Any, dtype: str) -> Any:
    """v as an operand of dtype: a tensor converted, a Python number kept (the binding gives
    it the other operand's dtype), a size known only at run time as a 0-d runtime input."""
    if is_tensor(v):
        return v if dtype_name(v) == dtype else ops.cast(v, dtype)
    if isinstance(v, (torch.SymInt, torch.SymFloat)) and sym_dim_free(v):
        return runtime_scalar(v, dtype)
    v = py_value(v)
    if isinstance(v, bool):
        return int(v)
    return v


def binary(fn: Callable[[Any, Any], Any], a: Any, b: Any, dtype: str | None = None) -> Any:
    """fn(a, b) with torch's type promotion; Python numbers stay numbers (the binding gives
    them the tensor's dtype)."""
    if not is_tensor(a) and not is_tensor(b):
        raise unsupported("an elementwise operation on two Python numbers")
    dt = dtype or common_dtype(a, b)
    return fn(cast(a, dt), cast(b, dt))


def to_float(x: Any) -> Any:
    """x itself if it has a float dtype, else x as the default float dtype."""
    if is_float_dtype(dtype_name(x)):
        return x
    return ops.cast(x, ember_dtype(torch.float32))


def float_param(v: Any, dt: str) -> Any:
    """A float parameter (an eps, a momentum) as an operand of dtype dt: a Python float, or,
    for a float that changes between calls (Dynamo passes a 0-d tensor or a SymFloat), an
    ember value known at run time."""
    if is_runtime_scalar(v):
        if not is_float_dtype(dt):
            raise unsupported("a float parameter known only at run time for an integer tensor")
        return cast(v, dt)
    return float(py_value(v))


def scalar_like(value: Any, like: Any) -> Any:
    return ops.scalar(float(py_value(value)), dtype_name(like))


# ---- sizes ---------------------------------------------------------------------------------
def sizes_arg(sizes: Sequence[Any]) -> list[Any]:
    """view(2, 3), view((2, 3)) and view(torch.Size([2, 3])) all as [2, 3]."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, torch.Size)):
        return list(sizes[0])
    return list(sizes)


def reshape_dims(sizes: Sequence[Any]) -> list[int | str]:
    """Sizes for ember.ops.reshape: ints, symbol names and size expressions (text)."""
    return [sym_size(s) for s in sizes]


def shape_of(t: Any) -> list[int | str]:
    """t's shape as ember sizes (ember reads back the expressions it prints)."""
    return list(t.shape)


def static_int(v: Any, what: str) -> int:
    """A size or integer argument that must be known at compile time (else unsupported)."""
    v = py_value(v)
    if isinstance(v, str):
        raise unsupported(f"{what} is the symbolic size {v}; ember needs a constant here")
    return int(v)


def fixed_int(v: Any, what: str) -> int:
    """A size the converter needs at compile time and that is not a batch or sequence length
    in practice (channels, spatial sizes, a divided size): a symbolic one is fixed to its
    traced value by a guard where the backend may add one (specialized_size: the graph is
    converted again, and a call with another value compiles again, as inductor's lowerings
    do for the sizes they need), else unsupported. Sizes that grow with the data (a batch,
    a sequence) use static_int: a graph per value would compile at every step."""
    if isinstance(v, torch.SymInt) and sym_dim_free(v):
        v = sym_size(v)  # a tensor's size (py_value would refuse to fix it as a scalar)
    v = py_value(v)
    if isinstance(v, str):
        return specialized_size(v, what)
    return int(v)


def static_shape(t: Any, what: str = "this operation") -> list[int]:
    """t's shape, which must be static (else unsupported): for converters that compare or
    pass on sizes, where fixing a batch dimension would compile the graph again for every
    batch."""
    dims = list(t.shape)
    if any(not isinstance(d, int) for d in dims):
        raise unsupported(f"{what} needs a static shape, got {dims}")
    return dims


def fixed_shape(t: Any, what: str, axes: Sequence[int] | None = None) -> list[int]:
    """t's sizes (of `axes`, default all) as ints, for converters that build tables or
    constants from them (pooling windows, block_diag's offsets, pdist's pairs): symbolic
    sizes are fixed by guards as in static_int, else unsupported."""
    dims = list(t.shape)
    dims = dims if axes is None else [dims[a] for a in axes]
    if all(isinstance(d, int) for d in dims):
        return dims
    try:
        return [fixed_int(d, f"{what}'s size") for d in dims]
    except ConversionFailure:
        raise unsupported(f"{what} needs static sizes, got {dims}") from None


def specialized(t: Any, what: str, axes: Sequence[int] | None = None) -> Any:
    """t with every symbolic dimension (of `axes`, default all) fixed to the value it has
    in the traced call (each symbol guarded, see context.specialized_size; an exact slice
    of the whole dimension makes ember's shape static): for sizes that are parameters of
    the generated code, such as a convolution's weight and channel count, where a graph per
    value is what a user wants."""
    dims = shape_of(t)
    axes = [a for a in (range(len(dims)) if axes is None else axes)
            if not isinstance(dims[a], int)]
    if not axes:
        return t
    stops = [specialized_size(dims[a], what) for a in axes]
    return ops.slice(t, axes, [0] * len(axes), stops, None, clamp=False)


def with_shape(t: Any, shape: Sequence[int | str], what: str) -> Any:
    """t as an operand of `shape` (ember sizes), where each dimension that differs in its
    spelling is proven equal by Dynamo's guards (an exact slice of the whole dimension
    renames it), or is a symbol of another input with the same traced value, which the
    conversion then spells as the target's (context.same_size_or_unify). Otherwise
    unsupported."""
    dims, want = shape_of(t), list(shape)
    if dims == want:
        return t
    if len(dims) != len(want) or not all(
            same_size_or_unify(a, b) for a, b in zip(dims, want, strict=True)):
        raise unsupported(f"{what} of shape {dims}, not {want}")
    axes = [i for i, (a, b) in enumerate(zip(dims, want, strict=True)) if a != b]
    return ops.slice(t, axes, [0] * len(axes), [want[i] for i in axes], None, clamp=False)


def expand_to(t: Any, shape: Sequence[int | str], what: str) -> Any:
    """t broadcast to `shape` (torch's rules), where a size of t spelled otherwise than the
    target's must be equal to it (with_shape renames it first)."""
    dims, want = shape_of(t), list(shape)
    lead = len(want) - len(dims)
    if lead < 0:
        raise unsupported(f"{what} of shape {dims} broadcast to {want}")
    named = [w if d != 1 and d != w and same_size_or_unify(d, w) else d
             for d, w in zip(dims, want[lead:], strict=True)]
    t = with_shape(t, named, what)
    return t if shape_of(t) == want else ops.expand(t, want)


def broadcast_shape(*tensors: Any) -> list[int | str]:
    """The shape the tensors broadcast to (torch's rules), symbolic sizes included: a size
    of 1 gives way to the others; two other sizes must be equal (the same, proven equal
    by Dynamo's guards, or unified: context.same_size_or_unify)."""
    n = max((rank(t) for t in tensors), default=0)
    out: list[int | str] = []
    for axis in range(n):
        sizes = [shape_of(t)[rank(t) - n + axis] for t in tensors if rank(t) - n + axis >= 0]
        size: int | str = 1
        for s in sizes:
            if s == 1:
                continue
            if size == 1:
                size = s
            elif not same_size_or_unify(size, s):
                raise unsupported(f"broadcasting sizes {size} and {s}")
        out.append(size)
    return out


def broadcast(*tensors: Any) -> list[Any]:
    """Each tensor expanded to the shape they broadcast to (broadcast_shape)."""
    shape = broadcast_shape(*tensors)
    return [t if shape_of(t) == shape else ops.expand(t, shape) for t in tensors]


def pair(v: Any, n: int = 2) -> tuple[int, ...]:
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(int(py_value(v[0])) for _ in range(n))
        return tuple(int(py_value(x)) for x in v)
    return tuple(int(py_value(v)) for _ in range(n))


# ---- constants -----------------------------------------------------------------------------
def constant(tensor: torch.Tensor) -> Any:
    """A torch tensor made at compile time, as an ember constant (shares its memory)."""
    return weight_to_ember(tensor)


def full(shape: Sequence[Any], value: Any, dtype: str) -> Any:
    """A tensor of `shape` filled with `value`: a constant when the shape is static and it
    is smaller than IN_GRAPH_FILL_BYTES (fx_nodes.py), else computed in the graph. A value
    known only at run time (a SymFloat computed from a size) is a 0-d runtime input broadcast
    to the shape."""
    dims = [sym_size(s) for s in shape]
    if is_tensor(value):  # a 0-d tensor known when the graph runs (torch.full(s, x.max()))
        if rank(value) != 0:
            raise unsupported("a fill value that is not a number or a 0-d tensor")
        return ops.expand(ops.reshape(cast(value, dtype), [1] * len(dims)), dims)
    if isinstance(value, (torch.SymInt, torch.SymFloat)) and sym_dim_free(value):
        scalar = ops.reshape(runtime_scalar(value, dtype), [1] * len(dims))
        return ops.expand(scalar, dims)
    value = py_value(value)
    if all(isinstance(d, int) for d in dims) and (
            math.prod(dims) * torch_dtype(dtype).itemsize < IN_GRAPH_FILL_BYTES):
        return constant(torch.full(dims, value, dtype=torch_dtype(dtype)))
    return ops.full(dims, value, dtype, in_graph=True)


def zeros_in_graph(shape: Sequence[Any], dtype: str) -> Any:
    """Zeros of `shape` computed in the graph being traced, never held as a constant (see
    fx_nodes.IN_GRAPH_FILL_BYTES): fused into the kernel that reads them, or an intermediate of the
    workspace."""
    return ops.full(list(shape), 0.0, dtype, in_graph=True)


def transposed_constant(w: Any) -> Any:
    """w with its last two dimensions swapped: computed once at compile time for a constant
    (weights), traced otherwise."""
    if is_const(w):
        return derived_constant(("transpose", id(w)), lambda: constant(w.torch().mT.contiguous()))
    return ops.transpose(w, -2, -1)


def slice_axis(x: Any, axis: int, start: int, stop: int, step: int = 1) -> Any:
    return ops.slice(x, [axis], [start], [stop], [step])


def size_plus(size: Any, k: int) -> Any:
    """size + k for an int or a symbolic size (ember's size-expression text)."""
    if isinstance(size, int):
        return size + k
    if k == 0:
        return size
    return f"({size} + {k})" if k > 0 else f"({size} - {-k})"


def cut(x: Any, axis: int, start: Any, stop: Any) -> Any:
    """x[start:stop] along axis, the bounds ints or size expressions (size_plus) that are in
    range: on a symbolic dimension they are taken as exact, not clamped."""
    if isinstance(start, int) and isinstance(stop, int) and isinstance(x.shape[axis], int):
        return slice_axis(x, axis, start, stop)
    return ops.slice(x, [axis], [start], [stop], [1], clamp=False)
