"""Converters for operators that ember composes from its basic ones: padding (all modes),
flips, rolls, repeats, transposes read as attributes (``.T``, ``.mT``), row gathers
(``index_select``, ``gather``), the smooth activations (softplus, elu, selu, celu, mish,
logsigmoid), ``logsumexp``, ``var_mean``/``std_mean``, rounded division, instance and RMS
norms, vector norms and the distances built on them, ``einsum`` with one or two operands,
and the common losses (cross entropy, nll, mse, l1, smooth l1, huber).

Numerics follow torch's formulas: softplus with its threshold and log1p, logsigmoid as
``min(x, 0) - log1p(exp(-|x|))``, the elu family with expm1, logsumexp relative to the
(finite) maximum. ember has no log1p, expm1 or floor operators; they are written here with
the classic exact-rounding identities (``log1p(u) = log(1 + u) * u / ((1 + u) - 1)``,
Kahan's ``expm1``, floor from a truncating cast where ``|x| < 2**52``). Gathers are
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

from ember.torch.context import ember_dtype, torch_dtype
from ember.torch.converters import functions as fn
from ember.torch.converters.common import (
    END,
    binary,
    cast,
    common_dtype,
    constant,
    dtype_name,
    full,
    is_const,
    is_float_dtype,
    is_tensor,
    norm_dim,
    norm_dims,
    ops,
    py_value,
    rank,
    shape_of,
    sizes_arg,
    slice_axis,
    static_int,
    static_shape,
    to_float,
    unsupported,
)
from ember.torch.converters.functions import register
from ember.torch.registry import (
    ModuleConverter,
    builtin_registrations,
    register_method,
    register_module,
)


# ---- helpers -------------------------------------------------------------------------------
def _int_constant(values: list[int] | torch.Tensor) -> Any:
    return constant(torch.as_tensor(values, dtype=torch.int64).contiguous())


def _static_size(x: Any, axis: int, what: str) -> int:
    return static_int(x.shape[axis], what)


def _take(x: Any, axis: int, index: Any) -> Any:
    """x indexed along `axis` by the int64 tensor `index` (any rank k): the result has shape
    x.shape[:axis] + index.shape + x.shape[axis + 1:]. One embedding lookup of the rows of x
    with `axis` moved to the front; an index outside [0, size) raises when the graph runs."""
    n = rank(x)
    order = [axis] + [d for d in range(n) if d != axis]
    moved = ops.permute(x, order) if axis != 0 else x
    shape = shape_of(moved)
    rest = shape[1:]
    if all(isinstance(s, int) for s in rest):
        width = math.prod(rest)
    else:
        width = -1
    if width == 0:
        raise unsupported("a gather from a tensor with no elements")
    table = ops.reshape(moved, [shape[0], width])
    rows = ops.embedding(table, cast(index, "int64"))
    k = rank(index)
    rows = ops.reshape(rows, list(index.shape) + rest)
    if axis == 0:
        return rows
    back = list(range(k, k + axis)) + list(range(k)) + list(range(k + axis, k + n - 1))
    return ops.permute(rows, back)


def _take_static(x: Any, axis: int, index: list[int]) -> Any:
    """x at the positions `index` (known at compile time, all in range) along `axis`."""
    if index == list(range(_static_size(x, axis, "a gathered dimension"))):
        return x
    return _take(x, axis, _int_constant(index))


def _log1p_of_nonneg(u: Any) -> Any:
    """log1p(u) for u >= 0 (or inf, nan): log(1 + u) corrected by u / ((1 + u) - 1), which
    makes it accurate to a few ulps where 1 + u rounds (Goldberg's identity)."""
    w = u + 1.0
    ratio = ops.div(u, w - 1.0)
    corrected = ops.mul(ops.log(w), ratio)
    out = ops.where(ops.equal(w, 1.0), u, corrected)
    return ops.where(ops.equal(u, float("inf")), u, out)


def _expm1(x: Any) -> Any:
    """expm1(x) by Kahan's identity: (e - 1) * x / log(e) with e = exp(x), x itself where e
    rounds to 1, and exp(x) - 1 where that is exact enough (|x| > 1, inf, nan)."""
    e = ops.exp(x)
    em1 = e - 1.0
    small = ops.mul(em1, ops.div(x, ops.log(e)))
    out = ops.where(ops.equal(e, 1.0), x, small)
    return ops.where(ops.less_equal(ops.abs(x), 1.0), out, em1)


def _floor(x: Any) -> Any:
    """floor of a float64 tensor: values with |x| >= 2**52 (and inf, nan) are already whole."""
    t = ops.cast(ops.cast(x, "int64"), "float64")
    down = ops.sub(t, ops.cast(ops.greater(t, x), "float64"))
    return ops.where(ops.less(ops.abs(x), float(2**52)), down, x)


def _trunc(x: Any) -> Any:
    """trunc of a float64 tensor (values with |x| >= 2**52, inf and nan are unchanged)."""
    t = ops.cast(ops.cast(x, "int64"), "float64")
    return ops.where(ops.less(ops.abs(x), float(2**52)), t, x)


def _reduce_sizes(x: Any, dims: list[int], what: str) -> int:
    count = 1
    for d in dims:
        count *= _static_size(x, d, what)
    return count


def _nonempty(x: Any, dims: list[int], what: str) -> None:
    for d in dims:
        if x.shape[d] == 0:
            raise unsupported(f"{what} over a dimension of size 0")


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
    widths = [static_int(p, "a pad width") for p in pad]
    if len(widths) % 2:
        raise unsupported("a pad list of odd length")
    if len(widths) // 2 > rank(input):
        raise unsupported(f"{len(widths) // 2} padded dimensions of a rank-{rank(input)} tensor")
    if mode == "constant":
        return _constant_pad(input, widths, value)
    if mode not in ("reflect", "replicate", "circular"):
        raise unsupported(f"pad with mode={mode!r}")
    k = len(widths) // 2
    if not 1 <= k <= 3 or rank(input) not in (k + 1, k + 2):
        raise unsupported(f"{mode} padding of {k} dimensions of a rank-{rank(input)} tensor")
    x = input
    for i in range(k):
        axis = rank(x) - 1 - i
        before, after = widths[2 * i], widths[2 * i + 1]
        n = _static_size(x, axis, f"a {mode}-padded size")
        if before < 0 or after < 0:  # torch crops first, then pads what is left
            n += builtins.min(before, 0) + builtins.min(after, 0)
            if n > 0:
                    x = slice_axis(x, axis, builtins.max(-before, 0), builtins.max(-before, 0) + n)
            before, after = builtins.max(before, 0), builtins.max(after, 0)
        if n <= 0:
            raise unsupported(f"{mode} padding of an empty dimension (or cropping all of one)")
        limit = n - 1 if mode == "reflect" else (n if mode == "circular" else END)
        if builtins.max(before, after) > limit:
            raise unsupported(f"{mode} padding of a dimension of size {n} by ({before}, {after})")
        x = _take_static(x, axis, _pad_index(n, before, after, mode))
    return x


def _constant_pad(input: Any, widths: list[int], value: Any) -> Any:
    dt = dtype_name(input)
    fill = 0 if value is None else py_value(value)
    if dt == "bool":
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
        if before < 0 or after < 0:
            n = _static_size(x, axis, "a negatively padded size")
            if n + builtins.min(before, 0) + builtins.min(after, 0) < 0:
                raise unsupported(f"padding a dimension of size {n} by ({before}, {after})")
            x = slice_axis(x, axis, builtins.max(-before, 0), END if after >= 0 else n + after)
            before, after = builtins.max(before, 0), builtins.max(after, 0)
        pieces = []
        for width in (before, after):
            if width:
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
    x = input
    for axis in sorted(set(axes)):
        n = _static_size(x, axis, "a flipped dimension")
        if n > 1:
            x = _take(x, axis, _int_constant(list(range(n - 1, -1, -1))))
    return x


def fliplr(input: Any) -> Any:
    if rank(input) < 2:
        raise unsupported("fliplr of a tensor of rank < 2")
    return flip(input, [1])


def flipud(input: Any) -> Any:
    if rank(input) < 1:
        raise unsupported("flipud of a 0-d tensor")
    return flip(input, [0])


def roll(input: Any, shifts: Any, dims: Any = None) -> Any:
    shift_list = list(shifts) if isinstance(shifts, (tuple, list)) else [shifts]
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
        n = _static_size(x, axis, "a rolled dimension")
        s = s % n if n else 0
        if s:
            x = ops.concat([slice_axis(x, axis, n - s, n), slice_axis(x, axis, 0, n - s)], axis)
    return x


def repeat(input: Any, *sizes: Any) -> Any:
    reps = [static_int(r, "a repeat count") for r in sizes_arg(sizes)]
    if len(reps) < rank(input):
        raise unsupported("repeat with fewer counts than the tensor has dimensions")
    if any(r < 0 for r in reps):
        raise unsupported("repeat with a negative count")
    shape = [1] * (len(reps) - rank(input)) + static_shape(input, "repeat")
    if 0 in reps or 0 in shape:
        raise unsupported("repeat giving an empty tensor")
    x = ops.reshape(input, [d for s in shape for d in (1, s)])
    x = ops.expand(x, [d for r, s in zip(reps, shape, strict=True) for d in (r, s)])
    return ops.reshape(x, [r * s for r, s in zip(reps, shape, strict=True)])


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
    if rank(input) == 0:
        raise unsupported("index_select of a 0-d tensor")
    idx = ops.reshape(index, [1]) if rank(index) == 0 else index
    if is_const(idx):
        n = _static_size(input, norm_dim(dim, rank(input)), "the indexed dimension")
        values = idx.torch()
        if values.numel() and (values.min() < 0 or values.max() >= n):
            raise unsupported("index_select with an index out of range")
    return _take(input, norm_dim(dim, rank(input)), idx)


def gather(input: Any, dim: Any, index: Any, *, sparse_grad: bool = False,
           out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    if not is_tensor(index) or dtype_name(index) not in ("int64", "int32"):
        raise unsupported("gather with an index that is not an integer tensor")
    n = rank(input)
    if rank(index) != n or n == 0:
        raise unsupported("gather with an index whose rank differs from the input's")
    axis = norm_dim(dim, n)
    in_shape = static_shape(input, "gather")
    idx_shape = static_shape(index, "gather")
    if any(i > s for d, (i, s) in enumerate(zip(idx_shape, in_shape, strict=True)) if d != axis):
        raise unsupported("gather with an index larger than the input off the gathered dim")
    if 0 in idx_shape:
        raise unsupported("gather with an empty index")
    strides = [math.prod(in_shape[d + 1:]) for d in range(n)]
    position = torch.zeros(idx_shape, dtype=torch.int64)
    for d in range(n):
        if d != axis:
            view = [1] * n
            view[d] = idx_shape[d]
            position = position + torch.arange(idx_shape[d]).view(view) * strides[d]
    idx = cast(index, "int64")
    size = in_shape[axis]
    valid = ops.logical_and(ops.greater_equal(idx, 0), ops.less(idx, size))
    flat = ops.add(ops.mul(idx, strides[axis]), constant(position.contiguous()))
    flat = ops.where(valid, flat, -1)  # out of range: the lookup raises, as torch does
    table = ops.reshape(input, [math.prod(in_shape), 1])
    return ops.reshape(ops.embedding(table, flat), idx_shape)


# ---- activations ---------------------------------------------------------------------------
def softplus(input: Any, beta: Any = 1.0, threshold: Any = 20.0) -> Any:
    x = to_float(input)
    beta, threshold = float(py_value(beta)), float(py_value(threshold))
    scaled = x * beta if beta != 1.0 else x
    soft = _log1p_of_nonneg(ops.exp(scaled))
    soft = soft / beta if beta != 1.0 else soft
    return ops.where(ops.greater(scaled, threshold), x, soft)


def logsigmoid(input: Any) -> Any:
    x = to_float(input)
    return ops.minimum(x, 0.0) - _log1p_of_nonneg(ops.exp(ops.neg(ops.abs(x))))


def _elu(x: Any, alpha: float, scale: float, input_scale: float) -> Any:
    """torch's elu kernel: x <= 0 ? expm1(x * input_scale) * (alpha * scale) : x * scale."""
    x = to_float(x)
    t = x * input_scale if input_scale != 1.0 else x
    negative = _expm1(t) * (alpha * scale)
    positive = x * scale if scale != 1.0 else x
    return ops.where(ops.less_equal(x, 0.0), negative, positive)


def elu(input: Any, alpha: Any = 1.0, inplace: bool = False) -> Any:
    return _elu(input, float(py_value(alpha)), 1.0, 1.0)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Any, inplace: bool = False) -> Any:
    return _elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0)


def celu(input: Any, alpha: Any = 1.0, inplace: bool = False) -> Any:
    a = float(py_value(alpha))
    if a == 0:
        raise unsupported("celu with alpha=0")
    return _elu(input, a, 1.0, 1.0 / a)


def mish(input: Any, inplace: bool = False) -> Any:
    x = to_float(input)
    return x * ops.tanh(_log1p_of_nonneg(ops.exp(x)))


def softmin(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Any:
    if dim is None:
        raise unsupported("softmin without dim")
    x = cast(input, ember_dtype(dtype)) if dtype is not None else to_float(input)
    return ops.softmax(ops.neg(x), norm_dim(dim, rank(x)))


# ---- reductions ----------------------------------------------------------------------------
def logsumexp(input: Any, dim: Any = None, keepdim: bool = False, *, out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    x = to_float(input)
    if rank(x) == 0:
        return x
    dims = norm_dims(dim, rank(x))
    _nonempty(x, dims, "logsumexp")
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
            return _trunc(q)
        return ops.cast(_trunc(ops.cast(q, "float64")), dt)
    if dt == "float64":
        raise unsupported("floor division of float64 tensors (torch's fmod-based rounding)")
    # The quotient of two float32 (or narrower) values in float64 is close enough to the
    # exact quotient that its floor is the exact floor (torch's result).
    q = binary(ops.div, input, other, dtype="float64")
    return ops.cast(_floor(q), dt)


# ---- normalization -------------------------------------------------------------------------
def instance_norm(input: Any, running_mean: Any = None, running_var: Any = None,
                  weight: Any = None, bias: Any = None, use_input_stats: bool = True,
                  momentum: Any = 0.1, eps: Any = 1e-5) -> Any:
    if not use_input_stats:
        from ember.torch.converters import nn_functions as nn_fn

        return nn_fn.batch_norm(input, running_mean, running_var, weight, bias, False,
                                momentum, eps)
    if running_mean is not None or running_var is not None:
        raise unsupported("instance_norm that updates running statistics")
    if rank(input) < 3:
        raise unsupported("instance_norm of a tensor of rank < 3")
    x = to_float(input)
    dims = list(range(2, rank(x)))
    centered = x - ops.mean(x, dims, True)
    var = ops.mean(centered * centered, dims, True)
    y = centered * ops.rsqrt(var + float(py_value(eps)))
    channel_shape = [shape_of(x)[1]] + [1] * (rank(x) - 2)
    if weight is not None:
        y = y * ops.reshape(weight, channel_shape)
    if bias is not None:
        y = y + ops.reshape(bias, channel_shape)
    return y


def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: Any = None) -> Any:
    dt = dtype_name(input)
    if not is_float_dtype(dt):
        raise unsupported("rms_norm of a non-float tensor")
    n = len(normalized_shape)
    dims = list(range(rank(input) - n, rank(input)))
    compute = "float64" if dt == "float64" else "float32"
    x = cast(input, compute)
    # torch's default eps is that of the dtype it computes in (float32 for half types)
    e = torch.finfo(torch_dtype(compute)).eps if eps is None else float(py_value(eps))
    y = x * ops.rsqrt(ops.mean(x * x, dims, True) + e)
    y = cast(y, dt)
    return y if weight is None else y * weight


def _norm(x: Any, p: Any, dims: list[int], keepdim: bool) -> Any:
    """The vector p-norm of a float tensor over dims (torch.linalg.vector_norm)."""
    if isinstance(p, str):
        if p != "fro":
            raise unsupported(f"the {p!r} norm")
        p = 2.0
    p = float(py_value(p))
    if p == float("inf") or p == float("-inf"):
        _nonempty(x, dims, "an inf-norm")
        reduce = ops.max if p > 0 else ops.min
        return reduce(ops.abs(x), dims, keepdim)
    if p == 0:
        return ops.sum(ops.cast(ops.not_equal(x, 0.0), dtype_name(x)), dims, keepdim)
    if p == 1:
        return ops.sum(ops.abs(x), dims, keepdim)
    if p == 2:
        return ops.sqrt(ops.sum(x * x, dims, keepdim))
    if p != p or p < 0:
        raise unsupported(f"the vector norm of order {p}")
    return ops.pow(ops.sum(ops.pow(ops.abs(x), p), dims, keepdim), 1.0 / p)


def _norm_input(input: Any, dtype: Any) -> Any:
    if dtype is not None:
        return cast(input, ember_dtype(dtype))
    if not is_float_dtype(dtype_name(input)):
        raise unsupported("the norm of a non-float tensor")
    return input


def vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    x = _norm_input(x, dtype)
    return _norm(x, ord, norm_dims(dim, rank(x)), keepdim)


def norm(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
         dtype: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    x = _norm_input(input, dtype)
    if p is None:
        p = 2.0
    if isinstance(p, str) and p != "fro":
        raise unsupported(f"torch.norm with p={p!r}")
    return _norm(x, p, norm_dims(dim, rank(x)), keepdim)


def linalg_norm(input: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
                out: Any = None, dtype: Any = None) -> Any:
    vector = (isinstance(dim, int) or (isinstance(dim, (tuple, list)) and len(dim) == 1)
              or (dim is None and (ord is None or rank(input) == 1)))
    if not vector and ord not in (None, "fro"):
        raise unsupported(f"the matrix norm ord={ord!r}")
    return vector_norm(input, 2 if ord in (None, "fro") else ord, dim, keepdim, dtype=dtype,
                       out=out)


def normalize(input: Any, p: Any = 2.0, dim: Any = 1, eps: Any = 1e-12, out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    x = _norm_input(input, None)
    denom = ops.maximum(_norm(x, p, [norm_dim(dim, rank(x))], True), float(py_value(eps)))
    return x / denom


def pairwise_distance(x1: Any, x2: Any, p: Any = 2.0, eps: Any = 1e-6,
                      keepdim: bool = False) -> Any:
    dt = common_dtype(x1, x2)
    if not is_float_dtype(dt):
        raise unsupported("pairwise_distance of non-float tensors")
    n = builtins.max(rank(x1), rank(x2))
    if n == 0:
        raise unsupported("pairwise_distance of 0-d tensors")
    diff = binary(ops.sub, x1, x2, dtype=dt) + float(py_value(eps))
    if rank(diff) == 1 and n == 1:
        return _norm(diff, p, [0], keepdim)
    return _norm(diff, p, [rank(diff) - 1], keepdim)


def cosine_similarity(x1: Any, x2: Any, dim: Any = 1, eps: Any = 1e-8) -> Any:
    dt = common_dtype(x1, x2)
    if not is_float_dtype(dt):
        raise unsupported("cosine_similarity of non-float tensors")
    a, b = cast(x1, dt), cast(x2, dt)
    n = builtins.max(rank(a), rank(b))
    d = norm_dim(dim, n)
    e = float(py_value(eps))
    shape = torch.broadcast_shapes(tuple(static_shape(a, "cosine_similarity")),
                                   tuple(static_shape(b, "cosine_similarity")))
    a = ops.expand(a, list(shape)) if tuple(a.shape) != tuple(shape) else a
    b = ops.expand(b, list(shape)) if tuple(b.shape) != tuple(shape) else b
    na = ops.maximum(_norm(a, 2.0, [d], True), e)
    nb = ops.maximum(_norm(b, 2.0, [d], True), e)
    return ops.sum((a / na) * (b / nb), [d], False)


# ---- einsum --------------------------------------------------------------------------------
def _einsum_terms(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise unsupported(f"einsum {equation!r} with {len(ranks)} operands")
    # "..." becomes upper-case letters that name the broadcast dims, right-aligned
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
    width = 0
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            width = builtins.max(width, r - (len(t) - 3))
    dots = "".join(spare[:width])
    out_terms = []
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            k = r - (len(t) - 3)
            t = t.replace("...", dots[width - k:] if k else "")
        if len(t) != r or not t.isalpha():
            raise unsupported(f"einsum term {t!r} for an operand of rank {r}")
        out_terms.append(t)
    if arrow:
        rhs = rhs.replace("...", dots)
    else:
        counts = {c: "".join(out_terms).count(c) for c in "".join(out_terms)}
        rhs = dots + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in dots))
    if not rhs.isalpha() and rhs:
        raise unsupported(f"einsum output {rhs!r}")
    return out_terms, rhs


def einsum(equation: Any, *operands: Any) -> Any:
    if not isinstance(equation, str):
        raise unsupported("einsum in the sublist format")
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    if not 1 <= len(operands) <= 2 or not all(is_tensor(o) for o in operands):
        raise unsupported("einsum with more than two operands")
    terms, out = _einsum_terms(equation, [rank(o) for o in operands])
    if any(len(set(t)) != len(t) for t in terms) or len(set(out)) != len(out):
        raise unsupported("einsum with a repeated index in one term (diagonals)")
    if any(c not in "".join(terms) for c in out):
        raise unsupported(f"einsum output {out!r} names an index no operand has")
    size: dict[str, int] = {}
    for t, o in zip(terms, operands, strict=True):
        for c, s in zip(t, static_shape(o, "einsum"), strict=True):
            if size.setdefault(c, s) != s:
                raise unsupported("einsum with broadcast (size-1) dimensions")
    dt = common_dtype(*operands)
    xs = [cast(o, dt) for o in operands]

    if len(xs) == 1:
        x, t = xs[0], terms[0]
        gone = [i for i, c in enumerate(t) if c not in out]
        if gone:
            x = ops.sum(x, gone, False)
            t = "".join(c for c in t if c in out)
        order = [t.index(c) for c in out]
        return ops.permute(x, order) if order != list(range(len(order))) else x
    (a, b), (ta, tb) = xs, terms
    ga = [i for i, c in enumerate(ta) if c not in out and c not in tb]
    if ga:
        a, ta = ops.sum(a, ga, False), "".join(c for c in ta if c in out or c in tb)
    gb = [i for i, c in enumerate(tb) if c not in out and c not in ta]
    if gb:
        b, tb = ops.sum(b, gb, False), "".join(c for c in tb if c in out or c in ta)
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]

    def prod(cs: list[str]) -> int:
        return math.prod(size[c] for c in cs)

    a = ops.permute(a, [ta.index(c) for c in batch + left + contract])
    b = ops.permute(b, [tb.index(c) for c in batch + contract + right])
    a = ops.reshape(a, [prod(batch), prod(left), prod(contract)])
    b = ops.reshape(b, [prod(batch), prod(contract), prod(right)])
    y = ops.matmul(a, b)
    got = batch + left + right
    y = ops.reshape(y, [size[c] for c in got])
    order = [got.index(c) for c in out]
    return ops.permute(y, order) if order != list(range(len(order))) else y


# ---- losses --------------------------------------------------------------------------------
def _reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        raise unsupported("the deprecated size_average/reduce arguments")
    if reduction not in ("mean", "sum", "none"):
        raise unsupported(f"reduction={reduction!r}")
    return reduction


def _reduce_loss(loss: Any, reduction: str) -> Any:
    if reduction == "none":
        return loss
    all_dims = list(range(rank(loss)))
    if reduction == "sum":
        return ops.sum(loss, all_dims, False)
    return ops.mean(loss, all_dims, False)


def _pointwise_loss(kind: str) -> Any:
    def convert(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                reduction: str = "mean", **kw: Any) -> Any:
        how = _reduction(size_average, reduce, reduction)
        dt = common_dtype(input, target)
        if not is_float_dtype(dt):
            raise unsupported(f"{kind} loss of non-float tensors")
        if kw.get("weight") is not None:
            raise unsupported(f"{kind} loss with weight")
        d = binary(ops.sub, input, target, dtype=dt)
        if kind == "mse":
            loss = d * d
        elif kind == "l1":
            loss = ops.abs(d)
        else:
            ad = ops.abs(d)
            beta = float(py_value(kw.get("beta", kw.get("delta", 1.0))))
            if kind == "smooth_l1" and beta == 0:
                loss = ad
            elif beta <= 0:
                raise unsupported(f"{kind} loss with a non-positive parameter {beta}")
            elif kind == "smooth_l1":
                loss = ops.where(ops.less(ad, beta), (d * d * 0.5) / beta, ad - 0.5 * beta)
            else:  # huber
                loss = ops.where(ops.less(ad, beta), d * d * 0.5, (ad - 0.5 * beta) * beta)
        return _reduce_loss(loss, how)

    convert.__name__ = convert.__qualname__ = f"{kind}_loss"
    return convert


def mse_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Any = None) -> Any:
    return _pointwise_loss("mse")(input, target, size_average, reduce, reduction, weight=weight)


def l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean") -> Any:
    return _pointwise_loss("l1")(input, target, size_average, reduce, reduction)


def smooth_l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Any:
    return _pointwise_loss("smooth_l1")(input, target, size_average, reduce, reduction,
                                        beta=beta)


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0,
               weight: Any = None) -> Any:
    return _pointwise_loss("huber")(input, target, None, None, reduction, delta=delta,
                                    weight=weight)


def nll_loss(input: Any, target: Any, weight: Any = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    if not is_tensor(target) or dtype_name(target) not in ("int64", "int32", "uint8"):
        raise unsupported("nll_loss with targets that are not class indices")
    x = input
    if not is_float_dtype(dtype_name(x)):
        raise unsupported("nll_loss of a non-float input")
    if rank(x) == 1:
        if rank(target) != 0:
            raise unsupported("nll_loss of a 1-d input with a target that is not 0-d")
        x, target = ops.unsqueeze(x, [0]), ops.reshape(target, [1])
    if rank(x) < 2 or rank(target) != rank(x) - 1:
        raise unsupported("nll_loss with mismatched input and target ranks")
    shape = static_shape(x, "nll_loss")
    c = shape[1]
    if static_shape(target, "nll_loss") != shape[:1] + shape[2:]:
        raise unsupported("nll_loss with a target whose shape does not match the input")
    t = cast(target, "int64")
    ignored = ops.equal(t, int(ignore_index))
    safe = ops.where(ignored, 0, t)  # ignored targets pick class 0, then count as 0
    picked = ops.squeeze(gather(x, 1, ops.unsqueeze(safe, [1])), [1])
    if weight is not None:
        table = ops.reshape(cast(weight, dtype_name(x)), [c, 1])
        w = ops.where(ignored, 0.0, ops.reshape(ops.embedding(table, safe), shape[:1] + shape[2:]))
    else:
        w = ops.cast(ops.logical_not(ignored), dtype_name(x))
    loss = ops.neg(picked) * w
    if how == "none":
        return loss if rank(input) != 1 else ops.reshape(loss, [])
    dims = list(range(rank(loss)))
    total = ops.sum(loss, dims, False)
    if how == "sum":
        return total
    return total / ops.sum(w, dims, False)


def cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Any:
    if float(py_value(label_smoothing)) != 0.0:
        raise unsupported("cross_entropy with label_smoothing")
    if is_tensor(target) and is_float_dtype(dtype_name(target)):
        raise unsupported("cross_entropy with class-probability targets")
    x = to_float(input)
    logp = fn.log_softmax(x, 0 if rank(x) == 1 else 1)
    return nll_loss(logp, target, weight, size_average, ignore_index, reduce, reduction)


# ---- registration --------------------------------------------------------------------------
_METHODS = {
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "repeat": repeat,
    "tile": tile, "index_select": index_select, "gather": gather, "logsumexp": logsumexp,
    "norm": norm,
}


def _activation(function: Any, *attrs: str) -> type[ModuleConverter]:
    class Activation(ModuleConverter):
        def __call__(self, input: Any) -> Any:
            return function(input, *(getattr(self.module, a) for a in attrs))

    Activation.__name__ = Activation.__qualname__ = f"{function.__name__}_module"
    return Activation


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
    register(instance_norm, F.instance_norm)
    register(rms_norm, F.rms_norm, torch.rms_norm)
    register(norm, torch.norm, torch.functional.norm)
    register(vector_norm, torch.linalg.vector_norm, torch._C._linalg.linalg_vector_norm)
    register(linalg_norm, torch.linalg.norm, torch._C._linalg.linalg_norm)
    register(normalize, F.normalize)
    register(pairwise_distance, F.pairwise_distance, torch.pairwise_distance)
    register(cosine_similarity, F.cosine_similarity, torch.cosine_similarity)
    register(einsum, torch.einsum, torch.functional.einsum)
    register(mse_loss, F.mse_loss)
    register(l1_loss, F.l1_loss)
    register(smooth_l1_loss, F.smooth_l1_loss)
    register(huber_loss, F.huber_loss)
    register(nll_loss, F.nll_loss)
    register(cross_entropy, F.cross_entropy)
    with builtin_registrations():
        for name, converter in _METHODS.items():
            if hasattr(torch.Tensor, name):
                register_method(name)(converter)
        for module_class, converter in (
            (nn.Softplus, _activation(softplus, "beta", "threshold")),
            (nn.ELU, _activation(elu, "alpha")), (nn.SELU, _activation(selu)),
            (nn.CELU, _activation(celu, "alpha")), (nn.Mish, _activation(mish)),
            (nn.LogSigmoid, _activation(logsigmoid)), (nn.Softmin, SoftminConverter),
        ):
            register_module(module_class)(converter)


_register_all()
