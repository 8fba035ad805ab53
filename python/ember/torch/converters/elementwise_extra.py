"""Converters for elementwise operators and small reductions that ember composes from its
basic ones, each with torch's own formula (so that NaN, inf, 0 and integer inputs give what
eager gives): ``square``, ``deg2rad``, ``sinc``, ``sgn``, ``signbit``, ``lerp``,
``logaddexp``, ``xlogy``, ``logit``, ``isclose``, ``fmax``, ``float_power``, ``round`` with
decimals, ``frexp``, ``ldexp``, ``nansum``, ``count_nonzero``, ``aminmax``, ``mvlgamma``,
``isin``, ``diff``, ``trapezoid``, ``renorm``, ... (the products are in products_extra.py).
Calls a converter cannot compute exactly raise ``unsupported`` and run in eager PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ember.torch.context import ember_dtype
from ember.torch.converters.common import (
    binary,
    cast,
    common_dtype,
    constant,
    cut,
    dtype_name,
    fixed_int,
    fixed_number,
    full,
    is_float_dtype,
    is_tensor,
    no_out,
    norm_dim,
    norm_dims,
    ops,
    py_value,
    rank,
    shape_of,
    size_plus,
    static_int,
    to_float,
    unsupported,
)
from ember.torch.converters.functions import register_tables


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
    between calls as a 0-d tensor, which is fixed by a guard: fixed_number)."""
    return float(fixed_number(v, what))


def _bool_full(x: Any, value: bool) -> Any:
    return full(shape_of(x), value, "bool")


# ---- elementwise -----------------------------------------------------------------------------
def square(input: Any, *, out: Any = None) -> Any:
    no_out(out)
    x = cast(input, "int64") if dtype_name(input) == "bool" else input
    return x * x


def _degrees(factor: float) -> Any:
    def convert(input: Any, *, out: Any = None) -> Any:
        no_out(out)
        x = _real_float(input, "deg2rad/rad2deg")
        return x * factor

    return convert


deg2rad = _degrees(math.pi / 180.0)
rad2deg = _degrees(180.0 / math.pi)


def sinc(input: Any, *, out: Any = None) -> Any:
    no_out(out)
    x = _real_float(input, "sinc")
    product = x * math.pi
    return ops.where(ops.equal(x, 0.0), 1.0, ops.sin(product) / product)


def sgn(input: Any, *, out: Any = None) -> Any:
    no_out(out)
    if dtype_name(input).startswith("complex"):
        raise unsupported("sgn of a complex tensor")
    if dtype_name(input) in ("bool", "uint8"):
        return cast(ops.not_equal(input, 0), dtype_name(input)) if dtype_name(
            input) == "uint8" else input
    return ops.sign(input)


def signbit(input: Any, *, out: Any = None) -> Any:
    no_out(out)
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
    no_out(out)
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
        no_out(out)
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
        no_out(out)
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
    no_out(out)
    x = _real_float(input, "entr")
    value = ops.where(ops.greater(x, 0.0), ops.neg(x) * ops.log(x), 0.0)
    value = ops.where(ops.less(x, 0.0), float("-inf"), value)
    return ops.where(ops.isnan(x), x, value)


def logit(input: Any, eps: Any = None, *, out: Any = None) -> Any:
    no_out(out)
    x = _real_float(input, "logit")
    if eps is not None:
        e = float(py_value(eps))
        x = ops.where(ops.less(x, e), e, ops.where(ops.greater(x, 1.0 - e), 1.0 - e, x))
    return ops.log(x / (1.0 - x))


def heaviside(input: Any, values: Any, *, out: Any = None) -> Any:
    no_out(out)
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
        no_out(out)
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
    no_out(out)
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
        no_out(out)
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
    no_out(out)
    x = _real_float(input, "angle")
    zero = ops.scalar(0.0, dtype_name(x))
    value = ops.where(ops.less(x, 0.0), math.pi, zero)
    return ops.where(ops.isnan(x), x, value)


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: Any = None) -> Any:
    no_out(out)
    dt = common_dtype(input, tensor1, tensor2)
    if dt == "bool" or dt.startswith("complex"):
        raise unsupported(f"addcmul of {dt} tensors")
    a, t1, t2 = cast(input, dt), cast(tensor1, dt), cast(tensor2, dt)
    v = py_value(value)
    if not is_float_dtype(dt) and float(v) != int(v):
        raise unsupported("addcmul of integer tensors with a fractional value")
    return a + (t1 * v) * t2 if v != 1 else a + t1 * t2


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1, out: Any = None) -> Any:
    no_out(out)
    dt = common_dtype(input, tensor1, tensor2)
    if not is_float_dtype(dt):
        raise unsupported("addcdiv of non-float tensors")
    a, t1, t2 = cast(input, dt), cast(tensor1, dt), cast(tensor2, dt)
    v = float(py_value(value))
    return a + (t1 / t2) * v if v != 1 else a + t1 / t2


def round_(input: Any, *, decimals: Any = 0, out: Any = None) -> Any:
    """torch's formula: nearbyint(x * 10^d) / 10^d (nearbyint(x / 10^-d) * 10^-d for d < 0),
    10^d in the input's dtype."""
    no_out(out)
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
    no_out(out)
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
    no_out(out)
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
    no_out(out)
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
    no_out(out)
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
    no_out(out)
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
    no_out(out)
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
    no_out(out)
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
    if n > 1 and not isinstance(x.shape[axis], int):  # n differences may empty it: fixed
        fixed_int(x.shape[axis], "a size diff takes n > 1 differences along")  # by guards
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
        step = 1.0 if x is None and dx is None else dx if x is None else x
        if not is_tensor(step):  # else a float Dynamo passes as a 0-d graph input
            step = float(py_value(step))
        if size == 0:
            return ops.sum(y, [axis], False)
        ends = cut(y, axis, 0, 1) + cut(y, axis, last, size)
        total = ops.sum(y, [axis], False) - ops.squeeze(ends, [axis]) * 0.5
        return total * (cast(step, dtype_name(total)) if is_tensor(step) else step)
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
    no_out(out)
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
]

_METHODS = {
    "square": square, "deg2rad": deg2rad, "rad2deg": rad2deg, "sinc": sinc, "sgn": sgn,
    "signbit": signbit, "lerp": lerp, "logaddexp": logaddexp, "logaddexp2": logaddexp2,
    "xlogy": xlogy, "logit": logit, "heaviside": heaviside, "isclose": isclose, "fmax": fmax,
    "fmin": fmin, "float_power": float_power, "isposinf": isposinf, "isneginf": isneginf,
    "addcmul": addcmul, "addcdiv": addcdiv, "round": round_, "frexp": frexp, "ldexp": ldexp,
    "nansum": nansum, "nanmean": nanmean, "count_nonzero": count_nonzero, "aminmax": aminmax,
    "mvlgamma": mvlgamma, "isin": isin, "diff": diff, "renorm": renorm,
}


register_tables(_FUNCTIONS, _METHODS)
