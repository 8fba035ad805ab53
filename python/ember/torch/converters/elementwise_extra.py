"""Converters for elementwise operators and small reductions that ember composes from its
basic ones, each with torch's own formula (so that NaN, inf, 0 and integer inputs give what
eager gives): ``square``, ``deg2rad``, ``sinc``, ``sgn``, ``signbit``, ``lerp``,
``logaddexp``, ``xlogy``, ``logit``, ``isclose``, ``fmax``, ``float_power``, ``round`` with
decimals, ``frexp``, ``ldexp``, ``nansum``, ``count_nonzero``, ``aminmax``, ``mvlgamma``,
``isin``, ``diff``, ``trapezoid``, ``renorm``, ...; and the vector and matrix products that
are not ember operators (``dot``, ``outer``, ``tensordot``, ``kron``, ``trace``, ``cross``,
``matrix_power``, ``vander``, ``cdist``, ``pdist``, ``matrix_norm``, ...).
Calls a converter cannot compute exactly raise ``unsupported`` and run in eager PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import ember_dtype
from ember.torch.converters.common import (
    binary,
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
    shape_of,
    slice_axis,
    static_int,
    static_shape,
    to_float,
    unsupported,
)
from ember.torch.converters.composite_math import int_constant, static_size, take, take_static
from ember.torch.converters.functions import register
from ember.torch.registry import builtin_registrations, register_method

_INT_TYPES = ("int8", "int16", "int32", "int64", "uint8")


def _no_out(out: Any) -> None:
    if out is not None:
        raise unsupported("out= arguments")


def _real_float(x: Any, what: str) -> Any:
    """x as a float tensor (integers and bools as float32), complex refused."""
    if dtype_name(x).startswith("complex"):
        raise unsupported(f"{what} of a complex tensor")
    return to_float(x)


def _float_pair(a: Any, b: Any, what: str) -> tuple[Any, Any]:
    """a and b in their common dtype, float32 for integers (torch's float-op promotion)."""
    dt = common_dtype(a, b)
    if dt.startswith("complex"):
        raise unsupported(f"{what} of complex tensors")
    if not is_float_dtype(dt):
        dt = "float32"
    return cast(a, dt), cast(b, dt)


def _as_tensor(v: Any, like: Any) -> Any:
    """A Python number as a 0-d tensor of like's dtype; a tensor unchanged."""
    return v if is_tensor(v) else ops.scalar(float(py_value(v)), dtype_name(like))


def static_float(v: Any, what: str) -> float:
    """A float parameter ember needs at compile time (Dynamo passes a float that changes
    between calls as a 0-d tensor)."""
    if is_tensor(v):
        raise unsupported(f"{what} known only at run time")
    return float(py_value(v))


def size_plus(size: Any, k: int) -> Any:
    """size + k for an int or a symbolic size (ember's size-expression text)."""
    return size + k if isinstance(size, int) else f"({size} + {k})"


def cut(x: Any, axis: int, start: Any, stop: Any) -> Any:
    """x[start:stop] along axis; on a symbolic dimension the bounds are exact (in range)."""
    if isinstance(start, int) and isinstance(stop, int) and isinstance(x.shape[axis], int):
        return slice_axis(x, axis, start, stop)
    return ops.slice(x, [axis], [start], [stop], [1], clamp=False)


def _bool_full(x: Any, value: bool) -> Any:
    return full(shape_of(x), value, "bool")


# ---- elementwise -----------------------------------------------------------------------------
def square(input: Any, *, out: Any = None) -> Any:
    _no_out(out)
    x = cast(input, "int64") if dtype_name(input) == "bool" else input
    return x * x


def _degrees(factor: float) -> Any:
    def convert(input: Any, *, out: Any = None) -> Any:
        _no_out(out)
        x = _real_float(input, "deg2rad/rad2deg")
        return x * factor

    return convert


deg2rad = _degrees(math.pi / 180.0)
rad2deg = _degrees(180.0 / math.pi)


def sinc(input: Any, *, out: Any = None) -> Any:
    _no_out(out)
    x = _real_float(input, "sinc")
    product = x * math.pi
    return ops.where(ops.equal(x, 0.0), 1.0, ops.sin(product) / product)


def sgn(input: Any, *, out: Any = None) -> Any:
    _no_out(out)
    if dtype_name(input).startswith("complex"):
        raise unsupported("sgn of a complex tensor")
    if dtype_name(input) in ("bool", "uint8"):
        return cast(ops.not_equal(input, 0), dtype_name(input)) if dtype_name(
            input) == "uint8" else input
    return ops.sign(input)


def signbit(input: Any, *, out: Any = None) -> Any:
    _no_out(out)
    dt = dtype_name(input)
    if dt == "bool" or dt == "uint8":
        return _bool_full(input, False)
    if not is_float_dtype(dt):
        return ops.less(input, 0)
    one = ops.copysign(ops.scalar(1.0, dt), input)  # -1 exactly where the sign bit is set
    return ops.less(one, 0.0)


def lerp(input: Any, end: Any, weight: Any, *, out: Any = None) -> Any:
    """torch's formula: start + w * (end - start) for |w| < 0.5, else end - (end - start) *
    (1 - w)."""
    _no_out(out)
    dt = common_dtype(input, end, weight)
    if not is_float_dtype(dt):
        raise unsupported("lerp of non-float tensors")
    a, b = cast(input, dt), cast(end, dt)
    w = cast(weight, dt)
    diff = b - a
    if not is_tensor(w):
        w = float(w)
        return a + diff * w if abs(w) < 0.5 else b - diff * (1.0 - w)
    small = ops.less(ops.abs(w), 0.5)
    return ops.where(small, a + w * diff, b - diff * (1.0 - w))


def _logaddexp(base2: bool) -> Any:
    def convert(input: Any, other: Any, *, out: Any = None) -> Any:
        _no_out(out)
        a, b = _float_pair(input, other, "logaddexp")
        hi, lo = ops.maximum(a, b), ops.minimum(a, b)
        if base2:
            tail = ops.log1p(ops.exp2(lo - hi)) * (1.0 / math.log(2.0))
        else:
            tail = ops.log1p(ops.exp(lo - hi))
        # equal infinities: torch returns that infinity (inf - inf would be NaN)
        same_inf = ops.logical_and(ops.equal(a, b), ops.isinf(a))
        return ops.where(same_inf, a, hi + tail)

    convert.__name__ = convert.__qualname__ = "logaddexp2" if base2 else "logaddexp"
    return convert


logaddexp, logaddexp2 = _logaddexp(False), _logaddexp(True)


def _xlogy(log1p: bool) -> Any:
    def convert(input: Any, other: Any, *, out: Any = None) -> Any:
        _no_out(out)
        if not is_tensor(input) and not is_tensor(other):
            raise unsupported("xlogy of two numbers")
        x, y = _float_pair(input, other, "xlogy")
        x, y = _as_tensor(x, y), _as_tensor(y, x)
        logy = ops.log1p(y) if log1p else ops.log(y)
        value = ops.where(ops.equal(x, 0.0), 0.0, x * logy)
        return ops.where(ops.isnan(y), y, value)

    convert.__name__ = convert.__qualname__ = "xlog1py" if log1p else "xlogy"
    return convert


xlogy, xlog1py = _xlogy(False), _xlogy(True)


def entr(input: Any, *, out: Any = None) -> Any:
    _no_out(out)
    x = _real_float(input, "entr")
    value = ops.where(ops.greater(x, 0.0), ops.neg(x) * ops.log(x), 0.0)
    value = ops.where(ops.less(x, 0.0), float("-inf"), value)
    return ops.where(ops.isnan(x), x, value)


def logit(input: Any, eps: Any = None, *, out: Any = None) -> Any:
    _no_out(out)
    x = _real_float(input, "logit")
    if eps is not None:
        e = float(py_value(eps))
        x = ops.where(ops.less(x, e), e, ops.where(ops.greater(x, 1.0 - e), 1.0 - e, x))
    return ops.log(x / (1.0 - x))


def heaviside(input: Any, values: Any, *, out: Any = None) -> Any:
    _no_out(out)
    if not is_tensor(values) or dtype_name(values) != dtype_name(input):
        raise unsupported("heaviside with values of another dtype")
    dt = dtype_name(input)
    positive = cast(ops.greater(input, 0), dt) if dt != "bool" else input
    return ops.where(ops.equal(input, 0), values, positive)


def isclose(input: Any, other: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: bool = False) -> Any:
    if not is_tensor(input) or not is_tensor(other) or dtype_name(input) != dtype_name(other):
        raise unsupported("isclose of tensors of different dtypes")
    dt = dtype_name(input)
    if is_tensor(rtol) or is_tensor(atol):
        if not is_float_dtype(dt):
            raise unsupported("isclose of integer tensors with tolerances known at run time")
        rtol = cast(rtol, dt) if is_tensor(rtol) else float(py_value(rtol))
        atol = cast(atol, dt) if is_tensor(atol) else ops.scalar(float(py_value(atol)), dt)
    else:
        rtol, atol = float(py_value(rtol)), float(py_value(atol))
    close = ops.equal(input, other)
    if dt == "bool" or (not is_float_dtype(dt) and rtol == 0 and atol == 0):
        return close
    if not is_float_dtype(dt):
        raise unsupported("isclose of integer tensors with a tolerance")
    if equal_nan:
        close = ops.logical_or(close, ops.logical_and(ops.isnan(input), ops.isnan(other)))
    allowed = atol + ops.abs(other * rtol)
    actual = ops.abs(input - other)
    within = ops.logical_and(ops.isfinite(actual), ops.less_equal(actual, allowed))
    return ops.logical_or(close, within)


def _fmax(pairwise: Any) -> Any:
    def convert(input: Any, other: Any, *, out: Any = None) -> Any:
        _no_out(out)
        dt = common_dtype(input, other)
        if dt == "bool":
            raise unsupported("fmax/fmin of boolean tensors")
        a, b = cast(input, dt), cast(other, dt)
        if not is_float_dtype(dt):
            return pairwise(a, b)
        both = pairwise(a, b)
        return ops.where(ops.isnan(a), b, ops.where(ops.isnan(b), a, both))

    return convert


fmax, fmin = _fmax(ops.maximum), _fmax(ops.minimum)


def float_power(input: Any, exponent: Any, *, out: Any = None) -> Any:
    _no_out(out)
    if not is_tensor(input) and not is_tensor(exponent):
        raise unsupported("float_power of two numbers")
    for v in (input, exponent):
        if is_tensor(v) and dtype_name(v).startswith("complex"):
            raise unsupported("float_power of complex tensors")
    a = cast(input, "float64") if is_tensor(input) else float(py_value(input))
    b = cast(exponent, "float64") if is_tensor(exponent) else float(py_value(exponent))
    if not is_tensor(a):
        a = ops.scalar(a, "float64")
    return ops.pow(a, b)


def _is_signed_inf(sign: float) -> Any:
    def convert(input: Any, *, out: Any = None) -> Any:
        _no_out(out)
        if not is_float_dtype(dtype_name(input)):
            if dtype_name(input).startswith("complex"):
                raise unsupported("isposinf/isneginf of a complex tensor")
            return _bool_full(input, False)
        return ops.equal(input, sign * float("inf"))

    return convert


isposinf, isneginf = _is_signed_inf(1.0), _is_signed_inf(-1.0)


def isreal(input: Any) -> Any:
    if dtype_name(input).startswith("complex"):
        raise unsupported("isreal of a complex tensor")
    return _bool_full(input, True)


def angle(input: Any, *, out: Any = None) -> Any:
    _no_out(out)
    x = _real_float(input, "angle")
    zero = ops.scalar(0.0, dtype_name(x))
    value = ops.where(ops.less(x, 0.0), math.pi, zero)
    return ops.where(ops.isnan(x), x, value)


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: Any = None) -> Any:
    _no_out(out)
    dt = common_dtype(input, tensor1, tensor2)
    if dt == "bool" or dt.startswith("complex"):
        raise unsupported(f"addcmul of {dt} tensors")
    a, t1, t2 = cast(input, dt), cast(tensor1, dt), cast(tensor2, dt)
    v = py_value(value)
    if not is_float_dtype(dt) and float(v) != int(v):
        raise unsupported("addcmul of integer tensors with a fractional value")
    return a + (t1 * v) * t2 if v != 1 else a + t1 * t2


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: Any = None) -> Any:
    _no_out(out)
    dt = common_dtype(input, tensor1, tensor2)
    if not is_float_dtype(dt):
        raise unsupported("addcdiv of non-float tensors")
    a, t1, t2 = cast(input, dt), cast(tensor1, dt), cast(tensor2, dt)
    v = float(py_value(value))
    return a + (t1 / t2) * v if v != 1 else a + t1 / t2


def round_(input: Any, *, decimals: Any = 0, out: Any = None) -> Any:
    """torch's formula: nearbyint(x * 10^d) / 10^d (nearbyint(x / 10^-d) * 10^-d for d < 0),
    10^d in the input's dtype."""
    _no_out(out)
    d = static_int(decimals, "round's decimals")
    dt = dtype_name(input)
    if d == 0:
        return input if not is_float_dtype(dt) else ops.round(input)
    if not is_float_dtype(dt):
        raise unsupported("round of an integer tensor with decimals")
    ten = float(torch.tensor(10.0 ** abs(d), dtype=torch.float64).to(
        torch.float32 if dt != "float64" else torch.float64))
    if d > 0:
        return ops.round(input * ten) / ten
    return ops.round(input / ten) * ten


def frexp(input: Any, *, out: Any = None) -> Any:
    """(mantissa, exponent) with 0.5 <= |mantissa| < 1, computed in float64 (exact for
    float32: every power of two it needs is a normal float64)."""
    _no_out(out)
    dt = dtype_name(input)
    if dt not in ("float32", "float16", "bfloat16"):
        raise unsupported(f"frexp of a {dt} tensor")
    x = cast(input, "float64")
    a = ops.abs(x)
    regular = ops.logical_and(ops.isfinite(x), ops.not_equal(x, 0.0))
    safe = ops.where(regular, a, 1.0)
    e = ops.floor(ops.log2(safe)) + 1.0
    m = a * ops.exp2(ops.neg(e))
    # log2 may round across a power of two: bring m back into [0.5, 1)
    high = ops.greater_equal(m, 1.0)
    e = ops.where(high, e + 1.0, e)
    m = ops.where(high, m * 0.5, m)
    low = ops.less(m, 0.5)
    e = ops.where(low, e - 1.0, e)
    m = ops.where(low, m * 2.0, m)
    mantissa = ops.where(regular, ops.copysign(m, x), x)
    exponent = ops.where(regular, e, 0.0)
    return cast(mantissa, dt), cast(exponent, "int32")


def ldexp(input: Any, other: Any, *, out: Any = None) -> Any:
    """input * 2 ** other (torch: mul(input, pow(2.0, other)))."""
    _no_out(out)
    if not is_tensor(other):
        raise unsupported("ldexp with a number exponent")
    if dtype_name(other).startswith("complex") or dtype_name(input).startswith("complex"):
        raise unsupported("ldexp of complex tensors")
    power_dt = dtype_name(other) if is_float_dtype(dtype_name(other)) else "float32"
    power = ops.exp2(cast(other, power_dt))
    return binary(ops.mul, input, power)


# ---- reductions ------------------------------------------------------------------------------
def nansum(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None,
           out: Any = None) -> Any:
    _no_out(out)
    x = cast(input, ember_dtype(dtype)) if dtype is not None else input
    if is_float_dtype(dtype_name(x)):
        x = ops.where(ops.isnan(x), 0.0, x)
    elif dtype is None and dtype_name(x) in ("bool", "int8", "int16", "int32", "uint8"):
        x = cast(x, "int64")
    elif dtype_name(x).startswith("complex"):
        raise unsupported("nansum of a complex tensor")
    return ops.sum(x, norm_dims(dim, rank(x)), keepdim)


def nanmean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None,
            out: Any = None) -> Any:
    _no_out(out)
    x = cast(input, ember_dtype(dtype)) if dtype is not None else input
    if not is_float_dtype(dtype_name(x)):
        raise unsupported("nanmean of a non-float tensor")
    dims = norm_dims(dim, rank(x))
    present = ops.logical_not(ops.isnan(x))
    total = ops.sum(ops.where(present, x, 0.0), dims, keepdim)
    return total / ops.sum(cast(present, dtype_name(x)), dims, keepdim)


def count_nonzero(input: Any, dim: Any = None) -> Any:
    if dtype_name(input).startswith("complex"):
        raise unsupported("count_nonzero of a complex tensor")
    nonzero = cast(ops.not_equal(input, 0) if dtype_name(input) != "bool" else input, "int64")
    return ops.sum(nonzero, norm_dims(dim, rank(input)), False)


def aminmax(input: Any, *, dim: Any = None, keepdim: bool = False, out: Any = None) -> Any:
    _no_out(out)
    if dtype_name(input) == "bool":
        raise unsupported("aminmax of a boolean tensor")
    n = rank(input)
    dims = norm_dims(dim, n) if dim is not None and n else list(range(n))
    for d in dims:
        if input.shape[d] == 0:
            raise unsupported("aminmax over a dimension of size 0")
    lo, hi = ops.min(input, dims, keepdim), ops.max(input, dims, keepdim)
    return lo, hi


def mvlgamma(input: Any, p: Any, *, out: Any = None) -> Any:
    _no_out(out)
    p = static_int(p, "mvlgamma's p")
    if p < 1:
        raise unsupported("mvlgamma with p < 1")
    x = _real_float(input, "mvlgamma")
    offsets = torch.arange(-p * 0.5 + 0.5, 0.5, 0.5, dtype=torch.float64)
    args = ops.unsqueeze(x, [rank(x)]) + constant(offsets.to(torch.float32 if dtype_name(
        x) != "float64" else torch.float64).contiguous())
    total = ops.sum(ops.lgamma(args), [rank(x)], False)
    return total + p * (p - 1) * math.log(math.pi) / 4.0


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Any:
    if not is_tensor(elements) or not is_tensor(test_elements):
        raise unsupported("isin with a number")
    dt = common_dtype(elements, test_elements)
    if dt.startswith("complex"):
        raise unsupported("isin of complex tensors")
    if 0 in shape_of(test_elements):
        return _bool_full(elements, invert)
    tests = ops.reshape(cast(test_elements, dt), [-1])
    x = ops.unsqueeze(cast(elements, dt), [rank(elements)])
    found = ops.greater(ops.sum(cast(ops.equal(x, tests), "int32"), [rank(elements)], False), 0)
    return ops.logical_not(found) if invert else found


def diff(input: Any, n: Any = 1, dim: Any = -1, prepend: Any = None, append: Any = None,
         *, out: Any = None) -> Any:
    _no_out(out)
    if rank(input) == 0:
        raise unsupported("diff of a 0-d tensor")
    axis = norm_dim(dim, rank(input))
    parts = [p for p in (prepend, input, append) if p is not None]
    if any(not is_tensor(p) for p in parts):
        raise unsupported("diff with a number prepended or appended")
    dt = common_dtype(*parts)
    x = ops.concat([cast(p, dt) for p in parts], axis) if len(parts) > 1 else input
    n = static_int(n, "diff's n")
    if n == 0:
        return input  # torch ignores prepend and append then
    if n > 1 and not isinstance(x.shape[axis], int):
        raise unsupported("diff with n > 1 along a symbolic dimension (it may empty it)")
    for _ in range(n):
        size = x.shape[axis]
        if size == 0:
            break
        hi, lo = cut(x, axis, 1, size), cut(x, axis, 0, size_plus(size, -1))
        x = ops.logical_xor(hi, lo) if dt == "bool" else hi - lo
    return x


def _trapezoid(y: Any, x: Any, dx: Any, dim: Any) -> Any:
    if is_tensor(y) and not is_float_dtype(dtype_name(y)):
        y = to_float(y) if x is None or not is_tensor(x) else y
    axis = norm_dim(dim, rank(y))
    size = y.shape[axis]
    last = size_plus(size, -1)
    if x is None or not is_tensor(x):
        step = 1.0 if x is None and dx is None else static_float(
            dx if x is None else x, "trapezoid's spacing")
        if size == 0:
            return ops.sum(y, [axis], False)
        ends = cut(y, axis, 0, 1) + cut(y, axis, last, size)
        total = ops.sum(y, [axis], False) - ops.squeeze(ends, [axis]) * 0.5
        return total * step
    if size == 0:
        dt = common_dtype(y, x)
        return cast(ops.sum(y, [axis], False), dt if is_float_dtype(dt) else "float32")
    if rank(x) == 1:
        if x.shape[0] != size:
            raise unsupported("trapezoid with x of another length")
        spacing = cut(x, 0, 1, size) - cut(x, 0, 0, last)
        view = [1] * rank(y)
        view[axis] = last
        spacing = ops.reshape(spacing, view)
    else:
        xa = norm_dim(dim, rank(x))
        sx = x.shape[xa]
        spacing = cut(x, xa, 1, sx) - cut(x, xa, 0, size_plus(sx, -1))
    pairs = cut(y, axis, 1, size) + cut(y, axis, 0, last)
    prod = binary(ops.mul, spacing, pairs)
    prod = to_float(prod)
    return ops.sum(prod, [rank(prod) - rank(y) + axis], False) / 2.0


def trapezoid(y: Any, x: Any = None, *, dx: Any = None, dim: Any = -1) -> Any:
    return _trapezoid(y, x, dx, dim)


def trapz(y: Any, x: Any = None, *, dx: Any = None, dim: Any = -1) -> Any:
    return _trapezoid(y, x, dx, dim)


def renorm(input: Any, p: Any, dim: Any, maxnorm: Any, *, out: Any = None) -> Any:
    _no_out(out)
    from ember.torch.converters.norms_losses import _norm

    if not is_float_dtype(dtype_name(input)):
        raise unsupported("renorm of a non-float tensor")
    axis = norm_dim(dim, rank(input))
    others = [d for d in range(rank(input)) if d != axis]
    m = cast(maxnorm, dtype_name(input))  # a number, or a 0-d tensor known at run time
    norm = _norm(input, static_float(p, "renorm's p"), others, True)
    factor = ops.where(ops.greater(norm, m), m / (norm + 1e-7), ops.scalar(1.0, dtype_name(
        input)))
    return input * factor


# ---- products --------------------------------------------------------------------------------
def _product_dtype(*xs: Any) -> str:
    dt = common_dtype(*xs)
    if dt == "bool" or dt.startswith("complex"):
        raise unsupported(f"a product of {dt} tensors")
    return dt


def _sum_of_products(a: Any, b: Any, dims: list[int]) -> Any:
    return ops.sum(a * b, dims, False)


def dot(input: Any, tensor: Any, *, out: Any = None) -> Any:
    _no_out(out)
    if rank(input) != 1 or rank(tensor) != 1 or dtype_name(input) != dtype_name(tensor):
        raise unsupported("dot of tensors that are not 1-d of one dtype")
    _product_dtype(input, tensor)
    return _sum_of_products(input, tensor, [0])


def mv(input: Any, vec: Any, *, out: Any = None) -> Any:
    _no_out(out)
    if rank(input) != 2 or rank(vec) != 1 or dtype_name(input) != dtype_name(vec):
        raise unsupported("mv of tensors that are not 2-d and 1-d of one dtype")
    if not is_float_dtype(_product_dtype(input, vec)):
        return _sum_of_products(input, ops.unsqueeze(vec, [0]), [1])
    return ops.matmul(input, vec)


def _beta_alpha(product: Any, input: Any, beta: Any, alpha: Any) -> Any:
    dt = dtype_name(product)
    if not is_float_dtype(dt):
        beta, alpha = py_value(beta), py_value(alpha)
    # a float Dynamo passes as a 0-d tensor, a size known only at run time as a 0-d input
    beta, alpha = cast(beta, dt), cast(alpha, dt)
    if is_tensor(beta) or is_tensor(alpha):
        if not is_float_dtype(dt):
            raise unsupported("an integer product with beta or alpha known only at run time")
        a = alpha if is_tensor(alpha) else float(alpha)
        b = beta if is_tensor(beta) else ops.scalar(float(beta), dt)
        scaled = ops.where(ops.equal(b, 0.0), ops.scalar(0.0, dt), cast(input, dt) * b)
        return product * a + scaled
    if not is_float_dtype(dt) and (float(beta) != int(beta) or float(alpha) != int(alpha)):
        raise unsupported("an integer product with a fractional beta or alpha")
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # torch ignores input (NaN in it included)
        shape = _broadcast(product, input)
        return product if static_shape(product) == shape else ops.expand(product, shape)
    term = cast(input, dt) if beta == 1 else cast(input, dt) * beta
    return product + term


def _broadcast(product: Any, input: Any) -> list[Any]:
    a, b = static_shape(product, "a product"), static_shape(input, "a product")
    return list(torch.broadcast_shapes(tuple(a), tuple(b)))


def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1,
          out: Any = None) -> Any:
    _no_out(out)
    return _beta_alpha(mv(mat, vec), input, beta, alpha)


def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1,
         out: Any = None) -> Any:
    _no_out(out)
    if dtype_name(vec1) == "bool":
        raise unsupported("addr of boolean tensors")
    return _beta_alpha(outer(vec1, vec2), input, beta, alpha)


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1,
           out: Any = None) -> Any:
    _no_out(out)
    if rank(batch1) != 3 or rank(batch2) != 3:
        raise unsupported("addbmm of tensors that are not 3-d")
    if not is_float_dtype(_product_dtype(batch1, batch2)):
        raise unsupported("addbmm of integer tensors")
    if static_size(batch1, 0, "addbmm's batch") == 0:
        raise unsupported("addbmm of an empty batch")
    product = ops.sum(ops.matmul(batch1, batch2), [0], False)
    return _beta_alpha(product, input, beta, alpha)


def outer(input: Any, vec2: Any, *, out: Any = None) -> Any:
    _no_out(out)
    if rank(input) != 1 or rank(vec2) != 1:
        raise unsupported("outer of tensors that are not 1-d")
    return binary(ops.mul, ops.unsqueeze(input, [1]), ops.unsqueeze(vec2, [0]))


def inner(input: Any, other: Any, *, out: Any = None) -> Any:
    _no_out(out)
    if rank(input) == 0 or rank(other) == 0:
        return binary(ops.mul, input, other)
    return tensordot(input, other, ([rank(input) - 1], [rank(other) - 1]))


def tensordot(a: Any, b: Any, dims: Any = 2, out: Any = None) -> Any:
    _no_out(out)
    if is_tensor(dims):
        raise unsupported("tensordot with dims as a tensor")
    dt = _product_dtype(a, b)
    if dtype_name(a) != dtype_name(b):
        raise unsupported("tensordot of tensors of different dtypes")
    if isinstance(dims, (tuple, list)):
        da = [norm_dim(d, rank(a)) for d in (dims[0] if isinstance(dims[0], (tuple, list))
                                             else [dims[0]])]
        db = [norm_dim(d, rank(b)) for d in (dims[1] if isinstance(dims[1], (tuple, list))
                                             else [dims[1]])]
    else:
        k = static_int(dims, "tensordot's dims")
        da, db = list(range(rank(a) - k, rank(a))), list(range(k))
    sa, sb = static_shape(a, "tensordot"), static_shape(b, "tensordot")
    if [sa[d] for d in da] != [sb[d] for d in db]:
        raise unsupported("tensordot with contracted sizes that differ")
    free_a = [d for d in range(rank(a)) if d not in da]
    free_b = [d for d in range(rank(b)) if d not in db]
    k = math.prod(sa[d] for d in da)
    m, n = math.prod(sa[d] for d in free_a), math.prod(sb[d] for d in free_b)
    left = ops.reshape(ops.permute(a, free_a + da), [m, k])
    right = ops.reshape(ops.permute(b, db + free_b), [k, n])
    if is_float_dtype(dt):
        if k == 0:
            raise unsupported("tensordot contracting an empty dimension")
        y = ops.matmul(left, right)
    else:
        y = ops.sum(ops.unsqueeze(left, [2]) * ops.unsqueeze(right, [0]), [1], False)
    return ops.reshape(y, [sa[d] for d in free_a] + [sb[d] for d in free_b])


def kron(input: Any, other: Any, *, out: Any = None) -> Any:
    _no_out(out)
    n = max(rank(input), rank(other))
    sa = [1] * (n - rank(input)) + static_shape(input, "kron")
    sb = [1] * (n - rank(other)) + static_shape(other, "kron")
    a = ops.reshape(input, [d for s in sa for d in (s, 1)])
    b = ops.reshape(other, [d for s in sb for d in (1, s)])
    return ops.reshape(binary(ops.mul, a, b), [x * y for x, y in zip(sa, sb, strict=True)])


def trace(input: Any) -> Any:
    if rank(input) != 2:
        raise unsupported("trace of a tensor that is not 2-d")
    rows, cols = static_shape(input, "trace")
    x = cast(input, "int64") if dtype_name(input) in ("bool", "int8", "int16", "int32",
                                                      "uint8") else input
    if min(rows, cols) == 0:
        return ops.sum(x, [0, 1], False)
    flat = ops.reshape(x, [rows * cols])
    return ops.sum(take_static(flat, 0, [i * (cols + 1) for i in range(min(rows, cols))]), [0],
                   False)


def _cross(a: Any, b: Any, axis: int) -> Any:
    dt = common_dtype(a, b)
    a, b = cast(a, dt), cast(b, dt)
    if shape_of(a) != shape_of(b):
        shape = list(torch.broadcast_shapes(tuple(static_shape(a, "cross")),
                                            tuple(static_shape(b, "cross"))))
        a = ops.expand(a, shape) if static_shape(a) != shape else a
        b = ops.expand(b, shape) if static_shape(b) != shape else b

    def part(x: Any, i: int) -> Any:
        return take_static(x, axis, [i])

    def comp(i: int, j: int) -> Any:
        return part(a, i) * part(b, j) - part(a, j) * part(b, i)

    return ops.concat([comp(1, 2), comp(2, 0), comp(0, 1)], axis)


def cross(input: Any, other: Any, dim: Any = None, *, out: Any = None) -> Any:
    _no_out(out)
    if rank(input) != rank(other):
        raise unsupported("cross of tensors of different ranks")
    if dim is None:
        shape = shape_of(input)
        if any(not isinstance(s, int) for s in shape):
            raise unsupported("cross without dim of a tensor with symbolic sizes")
        found = [d for d, s in enumerate(shape) if s == 3]
        if not found:
            raise unsupported("cross without a dimension of size 3")
        axis = found[0]
    else:
        axis = norm_dim(dim, rank(input))
    return _cross(input, other, axis)


def linalg_cross(input: Any, other: Any, *, dim: Any = -1, out: Any = None) -> Any:
    _no_out(out)
    n = max(rank(input), rank(other))
    axis = norm_dim(dim, n)
    if static_size(input, norm_dim(dim, rank(input)), "cross") != 3 or static_size(
            other, norm_dim(dim, rank(other)), "cross") != 3:
        raise unsupported("cross along a dimension whose size is not 3")
    return _cross(input, other, axis)


def vecdot(x: Any, y: Any, *, dim: Any = -1, out: Any = None) -> Any:
    _no_out(out)
    _product_dtype(x, y)
    if dtype_name(x) != dtype_name(y):
        raise unsupported("vecdot of tensors of different dtypes")
    product = x * y
    return ops.sum(product, [norm_dim(dim, rank(product))], False)


def multi_dot(tensors: Any, *, out: Any = None) -> Any:
    _no_out(out)
    xs = list(tensors)
    if len(xs) < 2:
        raise unsupported("multi_dot of fewer than two tensors")
    if len({dtype_name(x) for x in xs}) != 1 or not is_float_dtype(dtype_name(xs[0])):
        raise unsupported("multi_dot of non-float tensors or of different dtypes")
    first_vec, last_vec = rank(xs[0]) == 1, rank(xs[-1]) == 1
    if first_vec:
        xs[0] = ops.unsqueeze(xs[0], [0])
    if last_vec:
        xs[-1] = ops.unsqueeze(xs[-1], [1])
    if any(rank(x) != 2 for x in xs):
        raise unsupported("multi_dot of tensors that are not matrices")
    for x in xs:
        if 0 in static_shape(x, "multi_dot"):
            raise unsupported("multi_dot of empty matrices")
    y = xs[0]
    for x in xs[1:]:
        y = ops.matmul(y, x)
    if first_vec and last_vec:
        return ops.reshape(y, [])
    if first_vec:
        return ops.squeeze(y, [0])
    if last_vec:
        return ops.squeeze(y, [1])
    return y


def matrix_power(input: Any, n: Any, *, out: Any = None) -> Any:
    _no_out(out)
    n = static_int(n, "matrix_power's n")
    if n < 0:
        raise unsupported("matrix_power with a negative power (an inverse)")
    shape = shape_of(input)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise unsupported("matrix_power of a non-square tensor")
    dt = dtype_name(input)
    if n == 0:
        shape = static_shape(input, "matrix_power with n=0")
        eye = torch.eye(shape[-1], dtype=torch.float64).expand(shape).contiguous()
        return cast(constant(eye), dt)
    if 0 in shape:
        return input
    if not is_float_dtype(dt):
        raise unsupported("matrix_power of an integer tensor")
    result, base = None, input
    while n:
        if n & 1:
            result = base if result is None else ops.matmul(result, base)
        n >>= 1
        if n:
            base = ops.matmul(base, base)
    return result


def vander(x: Any, N: Any = None) -> Any:
    if rank(x) < 1:
        raise unsupported("vander of a 0-d tensor")
    size = static_size(x, rank(x) - 1, "vander's input")
    n = size if N is None else static_int(N, "vander's N")
    dt = dtype_name(x)
    if dt == "bool" or dt.startswith("complex"):
        raise unsupported(f"vander of a {dt} tensor")
    if dt in ("int8", "int16", "int32", "uint8"):
        x, dt = cast(x, "int64"), "int64"
    col = ops.unsqueeze(x, [rank(x)])
    if n <= 0:
        shape = shape_of(x) + [0]
        return full(shape, 0, dt)
    columns = [full(shape_of(col), 1, dt)]
    for _ in range(n - 1):
        columns.append(columns[-1] * col)
    return ops.concat(columns, rank(x)) if n > 1 else columns[0]


def _p_norm_last(d: Any, p: float, keepdim: bool = False) -> Any:
    from ember.torch.converters.norms_losses import _norm

    return _norm(d, p, [rank(d) - 1], keepdim)


def cdist(x1: Any, x2: Any, p: Any = 2.0, compute_mode: Any = None) -> Any:
    """The direct form: the p-norm of every difference x1[i] - x2[j]."""
    if not is_float_dtype(dtype_name(x1)) or dtype_name(x1) != dtype_name(x2):
        raise unsupported("cdist of non-float tensors or of different dtypes")
    if rank(x1) < 2 or rank(x2) < 2:
        raise unsupported("cdist of tensors of rank < 2")
    p = static_float(p, "cdist's p")
    if p < 0 or p != p:
        raise unsupported(f"cdist with p={p}")
    s1 = shape_of(x1)
    if s1[-1] == 0 and p == float("inf"):
        raise unsupported("cdist of zero-length vectors with p=inf")
    diff = ops.unsqueeze(x1, [rank(x1) - 1]) - ops.unsqueeze(x2, [rank(x2) - 2])
    if s1[-1] == 0:
        return ops.sum(diff, [rank(diff) - 1], False)
    return _p_norm_last(diff, p)


def dist(input: Any, other: Any, p: Any = 2) -> Any:
    from ember.torch.converters.norms_losses import _norm

    dt = common_dtype(input, other)
    if not is_float_dtype(dt):
        raise unsupported("dist of non-float tensors")
    d = binary(ops.sub, input, other, dtype=dt)
    if rank(d) == 0:
        d = ops.reshape(d, [1])
    p = static_float(p, "dist's p")
    if 0 in shape_of(d) and p in (float("inf"), float("-inf")):
        raise unsupported("the inf-norm of an empty tensor")
    return _norm(d, p, list(range(rank(d))), False)


def pdist(input: Any, p: Any = 2) -> Any:
    if rank(input) != 2 or not is_float_dtype(dtype_name(input)):
        raise unsupported("pdist of a tensor that is not a 2-d float tensor")
    n, m = static_shape(input, "pdist")
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    p = static_float(p, "pdist's p")
    if not pairs:
        return full([0], 0.0, dtype_name(input))
    if m == 0:
        return full([len(pairs)], 0.0, dtype_name(input))
    left = take(input, 0, int_constant([i for i, _ in pairs]))
    right = take(input, 0, int_constant([j for _, j in pairs]))
    return _p_norm_last(left - right, p)


def matrix_norm(A: Any, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Any:
    _no_out(out)
    x = cast(A, ember_dtype(dtype)) if dtype is not None else A
    if not is_float_dtype(dtype_name(x)):
        raise unsupported("matrix_norm of a non-float tensor")
    if rank(x) < 2:
        raise unsupported("matrix_norm of a tensor of rank < 2")
    d0, d1 = (norm_dim(d, rank(x)) for d in dim)
    if ord == "fro":
        return ops.sqrt(ops.sum(x * x, sorted([d0, d1]), keepdim))
    if isinstance(ord, str):
        raise unsupported(f"the matrix norm ord={ord!r} (it needs singular values)")
    o = float(py_value(ord))
    if o in (1.0, -1.0):
        summed, across = d0, d1  # the largest (smallest) column sum
    elif o in (float("inf"), float("-inf")):
        summed, across = d1, d0  # the largest (smallest) row sum
    else:
        raise unsupported(f"the matrix norm ord={ord!r} (it needs singular values)")
    if static_size(x, across, "matrix_norm") == 0:
        raise unsupported("a matrix norm over an empty dimension")
    sums = ops.sum(ops.abs(x), [summed], True)
    reduce = ops.max if o > 0 else ops.min
    y = reduce(sums, [across], True)
    return y if keepdim else ops.squeeze(y, sorted([d0, d1]))


# ---- registration --------------------------------------------------------------------------
_FUNCTIONS: list[tuple[Any, tuple[Any, ...]]] = [
    (square, (torch.square,)),
    (deg2rad, (torch.deg2rad,)),
    (rad2deg, (torch.rad2deg,)),
    (sinc, (torch.sinc, torch.special.sinc)),
    (sgn, (torch.sgn,)),
    (signbit, (torch.signbit,)),
    (lerp, (torch.lerp,)),
    (logaddexp, (torch.logaddexp,)),
    (logaddexp2, (torch.logaddexp2,)),
    (xlogy, (torch.xlogy, torch.special.xlogy)),
    (xlog1py, (torch.special.xlog1py,)),
    (entr, (torch.special.entr,)),
    (logit, (torch.logit, torch.special.logit)),
    (heaviside, (torch.heaviside,)),
    (isclose, (torch.isclose,)),
    (fmax, (torch.fmax,)),
    (fmin, (torch.fmin,)),
    (float_power, (torch.float_power,)),
    (isposinf, (torch.isposinf,)),
    (isneginf, (torch.isneginf,)),
    (isreal, (torch.isreal,)),
    (angle, (torch.angle,)),
    (addcmul, (torch.addcmul,)),
    (addcdiv, (torch.addcdiv,)),
    (round_, (torch.round, torch.special.round)),
    (frexp, (torch.frexp,)),
    (ldexp, (torch.ldexp,)),
    (nansum, (torch.nansum,)),
    (nanmean, (torch.nanmean,)),
    (count_nonzero, (torch.count_nonzero,)),
    (aminmax, (torch.aminmax,)),
    (mvlgamma, (torch.mvlgamma, torch.special.multigammaln)),
    (isin, (torch.isin,)),
    (diff, (torch.diff,)),
    (trapezoid, (torch.trapezoid,)),
    (trapz, (torch.trapz,)),
    (renorm, (torch.renorm,)),
    (dot, (torch.dot, torch.vdot)),
    (mv, (torch.mv,)),
    (addmv, (torch.addmv,)),
    (addr, (torch.addr,)),
    (addbmm, (torch.addbmm,)),
    (outer, (torch.outer, torch.ger)),
    (inner, (torch.inner,)),
    (tensordot, (torch.tensordot, torch.functional.tensordot)),
    (kron, (torch.kron,)),
    (trace, (torch.trace,)),
    (cross, (torch.cross,)),
    (linalg_cross, (torch.linalg.cross,)),
    (vecdot, (torch.linalg.vecdot,)),
    (multi_dot, (torch.linalg.multi_dot,)),
    (matrix_power, (torch.linalg.matrix_power, torch.matrix_power)),
    (vander, (torch.linalg.vander,)),
    (cdist, (torch.cdist, torch.functional.cdist)),
    (dist, (torch.dist,)),
    (pdist, (F.pdist,)),
    (matrix_norm, (torch.linalg.matrix_norm,)),
]

_METHODS = {
    "square": square, "deg2rad": deg2rad, "rad2deg": rad2deg, "sinc": sinc, "sgn": sgn,
    "signbit": signbit, "lerp": lerp, "logaddexp": logaddexp, "logaddexp2": logaddexp2,
    "xlogy": xlogy, "logit": logit, "heaviside": heaviside, "isclose": isclose, "fmax": fmax,
    "fmin": fmin, "float_power": float_power, "isposinf": isposinf, "isneginf": isneginf,
    "addcmul": addcmul, "addcdiv": addcdiv, "round": round_, "frexp": frexp, "ldexp": ldexp,
    "nansum": nansum, "nanmean": nanmean, "count_nonzero": count_nonzero, "aminmax": aminmax,
    "mvlgamma": mvlgamma, "isin": isin, "diff": diff, "renorm": renorm, "dot": dot,
    "vdot": dot, "mv": mv, "addmv": addmv, "addr": addr, "addbmm": addbmm, "outer": outer,
    "inner": inner, "kron": kron, "trace": trace, "cross": cross, "matrix_power": matrix_power,
    "dist": dist,
}


def _register_all() -> None:
    for converter, targets in _FUNCTIONS:
        register(converter, *targets)
    with builtin_registrations():
        for name, converter in _METHODS.items():
            if hasattr(torch.Tensor, name):
                register_method(name)(converter)


_register_all()
