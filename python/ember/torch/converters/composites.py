"""Converters for operators that ember composes from its basic ones: padding (all modes),
flips, rolls, repeats, transposes read as attributes (``.T``, ``.mT``), row gathers
(``index_select``, ``gather``), the smooth activations with parameters (softplus with beta
and threshold, elu, celu; their default forms and selu, mish, logsigmoid are ember operators),
``logsumexp``, ``var_mean``/``std_mean``, rounded division.
Norms, distances, ``einsum`` and losses are in norms_losses.py; the shared building
blocks (gathers) in composite_math.py.

Numerics follow torch's formulas: softplus with its threshold and log1p, the elu family with
expm1, logsumexp relative to the (finite) maximum. Gathers are
``ember.ops.embedding`` lookups; an index out of range raises when the graph runs (torch
raises too), never reads another element. Calls a converter cannot compute exactly raise
``unsupported`` and run in eager PyTorch.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ember.torch.context import (
    ember_dtype,
    same_size,
    sym_size,
    torch_dtype,
)
from ember.torch.converters import functions as fn
from ember.torch.converters.common import (
    END,
    binary,
    cast,
    common_dtype,
    constant,
    cut,
    dtype_name,
    fixed_int,
    full,
    is_const,
    is_float_dtype,
    is_runtime_scalar,
    is_tensor,
    norm_dim,
    norm_dims,
    ops,
    py_value,
    rank,
    shape_of,
    size_plus,
    size_product,
    size_value,
    sizes_arg,
    slice_axis,
    static_int,
    to_float,
    unsupported,
)
from ember.torch.converters.composite_math import (
    check_nonempty,
    static_size,
    take,
    take_along,
    take_static,
)
from ember.torch.converters.functions import register, register_methods
from ember.torch.converters.modules import activation_converter
from ember.torch.registry import (
    ModuleConverter,
    builtin_registrations,
    register_module,
)
from ember.torch.shape_guards import sym_dim_free


# ---- padding -------------------------------------------------------------------------------
def _pad_index(n: int, before: int, after: int, mode: str) -> list[int]:
    def source(i: int) -> int:
        if mode == "reflect":
            if i < 0:
                return -i
            return 2 * (n - 1) - i if i >= n else i
        if mode == "replicate":
            return builtins.min(builtins.max(i, 0), n - 1)
        return i % n  # circular

    return [source(i) for i in range(-before, n + after)]


def pad(input: Any, pad: Any, mode: str = "constant", value: Any = None) -> Any:
    return _pad(input, pad, mode, value)


def _pad(input: Any, pad: Any, mode: str, value: Any) -> Any:
    # ember binds a symbol from an argument as a size, which cannot be negative: a width
    # known only at run time that is negative (the comparison is a guard on its sign) is
    # fixed to its traced value by a guard (py_value; the graph is converted again), and
    # the other widths with it, for the static path's cropping
    pad = [py_value(p) if isinstance(p, torch.SymInt) and (
        not sym_dim_free(p) or bool(p < 0)) else p for p in pad]
    if any(isinstance(p, int) and p < 0 for p in pad):
        pad = [py_value(p) for p in pad]
    if mode == "constant" and any(isinstance(p, torch.SymInt) for p in pad):
        # widths known at run time (a guard keeps each one's sign)
        widths = [p if isinstance(p, torch.SymInt) else static_int(p, "a pad width")
                  for p in pad]
        return _constant_pad(input, widths, value)
    if len(pad) % 2:
        raise unsupported("a pad list of odd length")
    if len(pad) // 2 > rank(input):
        raise unsupported(f"{len(pad) // 2} padded dimensions of a rank-{rank(input)} tensor")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise unsupported(f"pad with mode={mode!r}")
    k = len(pad) // 2
    if mode != "constant" and (not 1 <= k <= 3 or rank(input) not in (k + 1, k + 2)):
        raise unsupported(f"{mode} padding of {k} dimensions of a rank-{rank(input)} tensor")
    if mode != "constant" and (any(isinstance(p, torch.SymInt) for p in pad) or any(
            not isinstance(s, int) for s in shape_of(input)[rank(input) - k:])):
        return _pad_by_index(input, pad, mode)
    widths = [static_int(p, "a pad width") for p in pad]
    if mode == "constant":
        return _constant_pad(input, widths, value)
    out_shape = shape_of(input)
    for i in range(k):
        if isinstance(out_shape[rank(input) - 1 - i], int):
            out_shape[rank(input) - 1 - i] += widths[2 * i] + widths[2 * i + 1]
    if all(isinstance(s, int) and s >= 0 for s in out_shape) and math.prod(out_shape) == 0:
        if any(static_size(input, rank(input) - 1 - i, "a padded size") == 0 for i in range(k)):
            raise unsupported(f"{mode} padding of an empty dimension")
        return constant(torch.zeros(out_shape, dtype=torch_dtype(dtype_name(input))))
    x = input
    for i in range(k):
        axis = rank(x) - 1 - i
        before, after = widths[2 * i], widths[2 * i + 1]
        n = static_size(x, axis, f"a {mode}-padded size")
        # replicate reads clamp(i, 0, n - 1) for i in [-before, n + after) whatever the signs;
        # the other modes crop first, then pad what is left
        if (before < 0 or after < 0) and mode != "replicate":
            n += builtins.min(before, 0) + builtins.min(after, 0)
            if n > 0:
                    x = slice_axis(x, axis, builtins.max(-before, 0), builtins.max(-before, 0) + n)
            before, after = builtins.max(before, 0), builtins.max(after, 0)
        if n <= 0:
            raise unsupported(f"{mode} padding of an empty dimension (or cropping all of one)")
        limit = n - 1 if mode == "reflect" else (n if mode == "circular" else END)
        if builtins.max(before, after) > limit:
            raise unsupported(f"{mode} padding of a dimension of size {n} by ({before}, {after})")
        x = take_static(x, axis, _pad_index(n, before, after, mode))
    return x


def _pad_by_index(input: Any, pad: Any, mode: str) -> Any:
    """reflect, replicate or circular padding where a width or a padded size is known only
    at run time: each padded axis gathers its source positions, computed in the graph from
    the output position i (counted from the input's first element): clamp(i, 0, n - 1),
    n - 1 - |n - 1 - |i||, or i mod n. torch has checked the widths against the sizes (a
    reflected width below n, a circular one at most n)."""
    x = input
    for i in range(len(pad) // 2):
        axis = rank(x) - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if mode == "circular" and not isinstance(before, torch.SymInt) and not isinstance(
                after, torch.SymInt):
            x, before, after = _crop(x, axis, before, after)  # torch crops, then wraps
        n = shape_of(x)[axis]
        b, a = sym_size(before), sym_size(after)
        length = f"(({n}) + ({b}) + ({a}))"
        if all(isinstance(v, int) for v in (n, b, a)):
            length = n + b + a  # type: ignore[operator]
        pos = ops.arange(0, length, 1, "int64")
        pos = pos - size_value(b, "int64") if b != 0 else pos
        count = size_value(n, "int64")
        last = count - 1
        if mode == "replicate":
            src = ops.minimum(ops.maximum(pos, 0), last)
        elif mode == "reflect":
            src = last - ops.abs(last - ops.abs(pos))
        else:
            src = ops.remainder(pos, count)
        x = take_along(x, axis, src)
    return x


def _crop(x: Any, axis: int, before: int, after: int) -> tuple[Any, int, int]:
    """x without the elements that negative pad widths remove from the start and the end of
    axis (of a symbolic size too: torch has checked that some are left), and the widths
    left to pad (the positive ones)."""
    if before >= 0 and after >= 0:
        return x, before, after
    n = shape_of(x)[axis]
    if isinstance(n, int) and n + builtins.min(before, 0) + builtins.min(after, 0) < 0:
        raise unsupported(f"padding a dimension of size {n} by ({before}, {after})")
    x = cut(x, axis, builtins.max(-before, 0), size_plus(n, builtins.min(after, 0)))
    return x, builtins.max(before, 0), builtins.max(after, 0)


def constant_pad_nd(input: Any, pad: Any, value: Any = 0) -> Any:
    return _pad(input, pad, "constant", value)


def _constant_pad(input: Any, widths: list[int], value: Any) -> Any:
    dt = dtype_name(input)
    fill = 0 if value is None or is_runtime_scalar(value) else py_value(value)
    if is_runtime_scalar(value):
        fill = cast(value, dt)  # a fill known when the graph runs
    elif dt == "bool":
        fill = bool(fill)
    elif not is_float_dtype(dt):
        if float(fill) != int(fill):
            raise unsupported(f"padding an integer tensor with {fill}")
        fill = int(fill)
    else:
        fill = float(fill)
    x = input
    for i in range(0, len(widths), 2):
        axis = rank(x) - 1 - i // 2
        before, after = widths[i], widths[i + 1]
        if isinstance(before, torch.SymInt) or isinstance(after, torch.SymInt):
            # a width known at run time, not negative (_pad)
            before, after = sym_size(before), sym_size(after)
        else:
            x, before, after = _crop(x, axis, before, after)
        pieces = []
        for width in (before, after):
            if width != 0:
                shape = shape_of(x)
                shape[axis] = width
                pieces.append(full(shape, fill, dt))  # a constant when the shape is static
            else:
                pieces.append(None)
        parts = [p for p in (pieces[0], x, pieces[1]) if p is not None]
        x = ops.concat(parts, axis) if len(parts) > 1 else x
    return x


# ---- flips, rolls, repeats, transposes -----------------------------------------------------
def flip(input: Any, *args: Any, **kwargs: Any) -> Any:
    if set(kwargs) - {"dims"} or (args and kwargs):
        raise unsupported(f"flip with the arguments {sorted(kwargs)}")
    listed = sizes_arg(args) if args else list(kwargs.get("dims", ()))
    axes = norm_dims(listed, rank(input)) if listed else []
    return ops.flip(input, axes) if axes else input


def fliplr(input: Any) -> Any:
    if rank(input) < 2:
        raise unsupported("fliplr of a tensor of rank < 2")
    return flip(input, [1])


def flipud(input: Any) -> Any:
    if rank(input) < 1:
        raise unsupported("flipud of a 0-d tensor")
    return flip(input, [0])


def _roll_gathered(x: Any, axis: int, shift: Any) -> Any:
    """x rolled by `shift` along axis, for a symbolic size or a shift known at run time:
    out[i] = x[(i - shift) mod n], one gather (take_along: no reshapes around it whose index
    arithmetic would nest in a fused kernel)."""
    n = size_value(x.shape[axis], "int64")
    positions = ops.arange(0, x.shape[axis], 1, "int64")
    return take_along(x, axis, ops.remainder(ops.sub(positions, cast(shift, "int64")), n))


def roll(input: Any, shifts: Any, dims: Any = None) -> Any:
    shift_list = list(shifts) if isinstance(shifts, (tuple, list)) else [shifts]
    if any(is_runtime_scalar(s) for s in shift_list) or any(
            not isinstance(d, int) for d in shape_of(input)):
        if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
            if len(shift_list) != 1:
                raise unsupported("roll with several shifts and no dims")
            flat = ops.reshape(input, [-1])
            return ops.reshape(_roll_gathered(flat, 0, shift_list[0]), shape_of(input))
        dim_list = list(dims) if isinstance(dims, (tuple, list)) else [dims]
        if len(dim_list) != len(shift_list):
            raise unsupported("roll with different numbers of shifts and dims")
        x = input
        for s, d in zip(shift_list, dim_list, strict=True):
            x = _roll_gathered(x, norm_dim(d, rank(x)), s)
        return x
    shift_list = [static_int(s, "a roll shift") for s in shift_list]
    if dims is None or (isinstance(dims, (tuple, list)) and len(dims) == 0):
        if len(shift_list) != 1:
            raise unsupported("roll with several shifts and no dims")
        flat = ops.reshape(input, [-1]) if rank(input) != 1 else input
        rolled = roll(flat, shift_list, [0])
        return ops.reshape(rolled, shape_of(input)) if rank(input) != 1 else rolled
    dim_list = list(dims) if isinstance(dims, (tuple, list)) else [dims]
    if len(dim_list) != len(shift_list):
        raise unsupported("roll with different numbers of shifts and dims")
    x = input
    for s, d in zip(shift_list, dim_list, strict=True):
        axis = norm_dim(d, rank(x))
        n = static_size(x, axis, "a rolled dimension")
        s = s % n if n else 0
        if s:
            x = ops.concat([slice_axis(x, axis, n - s, n), slice_axis(x, axis, 0, n - s)], axis)
    return x


def repeat(input: Any, *sizes: Any) -> Any:
    """Each dimension tiled: x viewed as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1,
    ...] and flattened to [r0 * s0, ...]. Sizes and counts may be symbolic (a count Dynamo
    made a SymInt is a symbol of the graph)."""
    reps = [sym_size(r) for r in sizes_arg(sizes)]
    if len(reps) < rank(input):
        raise unsupported("repeat with fewer counts than the tensor has dimensions")
    if any(isinstance(r, int) and r < 0 for r in reps):
        raise unsupported("repeat with a negative count")
    shape = [1] * (len(reps) - rank(input)) + shape_of(input)
    if 0 in reps or 0 in shape:
        raise unsupported("repeat giving an empty tensor")
    x = ops.reshape(input, [d for s in shape for d in (1, s)])
    x = ops.expand(x, [d for r, s in zip(reps, shape, strict=True) for d in (r, s)])
    return ops.reshape(x, [size_product([r, s]) for r, s in zip(reps, shape, strict=True)])


def repeat_interleave(input: Any, repeats: Any = None, dim: Any = None, *,
                      output_size: Any = None) -> Any:
    """Each element (each slice along dim) repeated `repeats` times in place: a constant
    count (an int, or a tensor known at compile time); a count tensor known only at run
    time gives a size that depends on data (eager)."""
    if repeats is None or not is_tensor(input):
        raise unsupported("repeat_interleave(repeats) (the indices of a repeat count tensor)")
    x = input
    if dim is None:
        x = ops.reshape(x, [-1])
        axis = 0
    else:
        axis = norm_dim(dim, rank(x))
    if is_tensor(repeats):
        if not is_const(repeats):
            raise unsupported("repeat_interleave with repeats known only at run time")
        counts = [int(c) for c in repeats.torch().reshape(-1).tolist()]
    else:
        counts = [static_int(repeats, "a repeat count")]
    n = static_size(x, axis, "the repeated dimension")
    if len(counts) == 1:
        counts = counts * n
    if len(counts) != n or any(c < 0 for c in counts):
        raise unsupported(f"repeat_interleave with {len(counts)} counts for a dimension of {n}")
    positions = [i for i, c in enumerate(counts) for _ in range(c)]
    if not positions:
        raise unsupported("repeat_interleave giving an empty tensor")
    return take_static(x, axis, positions)


def tile(input: Any, dims: Any) -> Any:
    reps = list(sizes_arg([dims]))
    reps = [1] * (rank(input) - len(reps)) + reps
    return repeat(input, reps)


def _real(x: Any, what: str) -> Any:
    if dtype_name(x).startswith("complex"):
        raise unsupported(f"{what} of a complex tensor")
    return x


def attribute(obj: Any, name: str, *default: Any) -> Any:
    """builtins.getattr on a tensor: the transposes .T, .mT, .H, .mH (real tensors)."""
    if not is_tensor(obj) or default:
        raise unsupported(f"getattr({type(obj).__name__}, {name!r})")
    n = rank(obj)
    if name in ("T", "H"):
        if name == "H" and n not in (0, 2):
            raise unsupported(".H of a tensor of rank other than 0 or 2")
        return _real(obj, name) if n < 2 else ops.permute(obj, list(range(n - 1, -1, -1)))
    if name in ("mT", "mH"):
        if n < 2:
            raise unsupported(f".{name} of a tensor of rank < 2")
        return ops.transpose(_real(obj, name), -2, -1)
    raise unsupported(f"the tensor attribute {name!r}")


# ---- gathers -------------------------------------------------------------------------------
def index_select(input: Any, dim: Any, index: Any, *, out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    if not is_tensor(index) or dtype_name(index) not in ("int64", "int32"):
        raise unsupported("index_select with an index that is not an integer tensor")
    if rank(index) > 1:
        raise unsupported("index_select with an index of rank > 1")
    if rank(input) == 0:  # a 0-d tensor indexed as a 1-element one, the result 0-d
        picked = index_select(ops.reshape(input, [1]), 0, ops.reshape(index, [1]))
        return ops.reshape(picked, [])
    idx = ops.reshape(index, [1]) if rank(index) == 0 else index
    n = shape_of(input)[norm_dim(dim, rank(input))]
    if is_const(idx) and isinstance(n, int):  # (else take raises at run time)
        values = idx.torch()
        if values.numel() and (values.min() < 0 or values.max() >= n):
            raise unsupported("index_select with an index out of range")
    return take(input, norm_dim(dim, rank(input)), idx)


def gather(input: Any, dim: Any, index: Any, *, sparse_grad: bool = False,
           out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    if not is_tensor(index) or dtype_name(index) not in ("int64", "int32"):
        raise unsupported("gather with an index that is not an integer tensor")
    if rank(input) == 0 or rank(index) == 0:
        # torch takes a 0-d input or index as one of one element; the result has the
        # index's shape
        if max(rank(input), rank(index)) > 1:
            raise unsupported("gather with an index whose rank differs from the input's")
        flat = [ops.reshape(t, [1]) if rank(t) == 0 else t for t in (input, index)]
        y = gather(flat[0], dim, flat[1])
        return ops.reshape(y, []) if rank(index) == 0 else y
    n = rank(input)
    if rank(index) != n:
        raise unsupported("gather with an index whose rank differs from the input's")
    if any(isinstance(d, int) and d == 0 for d in index.shape):
        raise unsupported("gather with an empty index")
    axis = norm_dim(dim, n)
    for d, (i, s) in enumerate(zip(index.shape, input.shape, strict=True)):
        if d == axis or i == s:
            continue
        if not (isinstance(i, int) and isinstance(s, int)):
            if same_size(i, s):
                continue
            # torch checks i <= s only when its kernel runs: fixed by guards to compare them
            i, s = fixed_int(i, "a gather index's size"), fixed_int(s, "a gathered size")
        if i > s:
            raise unsupported(f"gather with an index of size {i} in dimension {d} where the "
                              f"input has {s}")
    return ops.gather(input, axis, index)


# ---- activations ---------------------------------------------------------------------------
def softplus(input: Any, beta: Any = 1.0, threshold: Any = 20.0) -> Any:
    x = to_float(input)
    beta, threshold = float(py_value(beta)), float(py_value(threshold))
    if beta == 1.0 and threshold == 20.0:
        return ops.softplus(x)
    scaled = x * beta if beta != 1.0 else x
    soft = ops.log1p(ops.exp(scaled))
    soft = soft / beta if beta != 1.0 else soft
    return ops.where(ops.greater(scaled, threshold), x, soft)


def logsigmoid(input: Any) -> Any:
    return ops.logsigmoid(to_float(input))


def elu(input: Any, alpha: Any = 1.0, inplace: bool = False) -> Any:
    return ops.elu(to_float(input), float(py_value(alpha)))


def selu(input: Any, inplace: bool = False) -> Any:
    return ops.selu(to_float(input))


def celu(input: Any, alpha: Any = 1.0, inplace: bool = False) -> Any:
    a = float(py_value(alpha))
    if a == 0:
        raise unsupported("celu with alpha=0")
    return ops.celu(to_float(input), a)


def mish(input: Any, inplace: bool = False) -> Any:
    return ops.mish(to_float(input))


def softmin(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Any:
    if dim is None:
        raise unsupported("softmin without dim")
    x = cast(input, ember_dtype(dtype)) if dtype is not None else to_float(input)
    if rank(x) == 0:  # one element: softmax of [-x], as torch computes it
        return ops.reshape(ops.softmax(ops.reshape(ops.neg(x), [1]), 0), [])
    return ops.softmax(ops.neg(x), norm_dim(dim, rank(x)))


# ---- reductions ----------------------------------------------------------------------------
def logsumexp(input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    x = to_float(input)
    if rank(x) == 0:
        return x
    dims = norm_dims(dim, rank(x))
    check_nonempty(x, dims, "logsumexp")
    m = ops.max(x, dims, True)
    m = ops.where(ops.equal(ops.abs(m), float("inf")), 0.0, m)
    total = ops.log(ops.sum(ops.exp(x - m), dims, True)) + m
    return total if keepdim else ops.squeeze(total, dims)


def var_mean(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> Any:
    if isinstance(dim, bool):
        if unbiased is not None:
            raise unsupported("var_mean with both a positional unbiased and unbiased=")
        dim, unbiased = None, dim
    v = fn.var(input, dim, unbiased, keepdim, correction=correction)
    x = to_float(input)
    return v, ops.mean(x, norm_dims(dim, rank(x)), keepdim)


def std_mean(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> Any:
    v, m = var_mean(input, dim, unbiased, keepdim, correction=correction)
    return ops.sqrt(v), m


def _negative(v: Any, dt: str) -> Any:
    return ops.less(cast(v, dt), 0) if is_tensor(v) else py_value(v) < 0


def _xor(a: Any, b: Any) -> Any:
    if isinstance(a, bool) and isinstance(b, bool):
        return a != b
    if isinstance(a, bool):
        a, b = b, a
    if isinstance(b, bool):
        return ops.logical_not(a) if b else a
    return ops.not_equal(a, b)


def rounded_div(input: Any, other: Any, rounding_mode: str) -> Any:
    """torch.div with rounding_mode 'trunc' or 'floor'."""
    dt = common_dtype(input, other)
    if dt == "bool":
        raise unsupported("rounded division of boolean tensors")
    if not is_float_dtype(dt):
        q = binary(ops.floor_divide, input, other, dtype=dt)
        if rounding_mode == "floor":
            return q
        # trunc is floor plus one where the remainder is nonzero and the signs differ
        r = binary(ops.remainder, input, other, dtype=dt)
        signs_differ = _xor(_negative(input, dt), _negative(other, dt))
        if signs_differ is False:
            return q
        adjust = ops.not_equal(r, 0)
        if signs_differ is not True:
            adjust = ops.logical_and(adjust, signs_differ)
        return ops.add(q, ops.cast(adjust, dt))
    if rounding_mode == "trunc":
        q = binary(ops.div, input, other, dtype=dt)
        if dt == "float64":
            return ops.trunc(q)
        return ops.cast(ops.trunc(ops.cast(q, "float64")), dt)
    if dt == "float64":
        raise unsupported("floor division of float64 tensors (torch's fmod-based rounding)")
    # The quotient of two float32 (or narrower) values in float64 is close enough to the
    # exact quotient that its floor is the exact floor (torch's result).
    q = ops.floor(binary(ops.div, input, other, dtype="float64"))
    if is_tensor(other) or math.isinf(float(py_value(other))):
        # torch's fmod-based rounding: a finite nonzero value over an infinity of the other
        # sign is -1 (the quotient's floor would be -0)
        a, b = cast(input, "float64"), cast(other, "float64")
        a = a if is_tensor(a) else ops.scalar(float(a), "float64")
        opposite = ops.logical_and(ops.isinf(b), ops.logical_and(
            ops.logical_and(ops.isfinite(a), ops.not_equal(a, 0.0)),
            ops.not_equal(ops.less(a, 0.0), ops.less(b, 0.0))))
        q = ops.where(opposite, -1.0, q)
    return ops.cast(q, dt)


# ---- registration --------------------------------------------------------------------------
_METHODS = {
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "repeat": repeat,
    "tile": tile, "index_select": index_select, "gather": gather, "logsumexp": logsumexp,
    "repeat_interleave": repeat_interleave,
}


class SoftminConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        return softmin(input, self.module.dim)


def _register_all() -> None:
    register(pad, F.pad, torch._C._nn.pad)
    register(flip, torch.flip)
    register(fliplr, torch.fliplr)
    register(flipud, torch.flipud)
    register(roll, torch.roll)
    register(tile, torch.tile)
    register(repeat_interleave, torch.repeat_interleave)
    register(constant_pad_nd, torch.constant_pad_nd)
    register(attribute, builtins.getattr)
    register(index_select, torch.index_select)
    register(gather, torch.gather)
    register(softplus, F.softplus, torch._C._nn.softplus)
    register(logsigmoid, F.logsigmoid, torch._C._nn.log_sigmoid)
    register(elu, F.elu)
    register(selu, F.selu, torch.selu)
    register(celu, F.celu, torch.celu)
    register(mish, F.mish)
    register(softmin, F.softmin)
    register(logsumexp, torch.logsumexp, torch.special.logsumexp)
    register(var_mean, torch.var_mean)
    register(std_mean, torch.std_mean)
    register_methods(_METHODS)
    with builtin_registrations():
        for module_class, converter in (
            (nn.Softplus, activation_converter(softplus, "beta", "threshold")),
            (nn.ELU, activation_converter(elu, "alpha")), (nn.SELU, activation_converter(selu)),
            (nn.CELU, activation_converter(celu, "alpha")), (nn.Mish, activation_converter(mish)),
            (nn.LogSigmoid, activation_converter(logsigmoid)), (nn.Softmin, SoftminConverter),
        ):
            register_module(module_class)(converter)


_register_all()
