"""Converters for torch functions and Python operators: elementwise math, reductions and
matrix products (shapes, indexing, dtypes and creation are in tensors.py).

Each converter is written once, with the signature of its most general torch form, and
registered for every function that shares it; methods.py, modules.py and aten.py register
the same functions for the Tensor-method, nn.Module and ATen forms.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import ember_dtype
from ember.torch.converters.common import (
    binary,
    cast,
    common_dtype,
    dtype_name,
    has_op,
    is_tensor,
    norm_dim,
    norm_dims,
    ops,
    py_value,
    rank,
    static_int,
    to_float,
    transposed_constant,
    unsupported,
)
from ember.torch.registry import builtin_registrations, register_function


def register(fn: Any, *targets: Any) -> Any:
    with builtin_registrations():
        for target in targets:
            register_function(target)(fn)
    return fn


# ---- elementwise -------------------------------------------------------------------------
def relu(input: Any, inplace: bool = False) -> Any:
    return ops.relu(input)


def clamp(input: Any, min: Any = None, max: Any = None) -> Any:
    if min is None and max is None:
        raise unsupported("clamp without min and max")
    if not is_tensor(min) and not is_tensor(max):
        lo = None if min is None else float(py_value(min))
        hi = None if max is None else float(py_value(max))
        return ops.clamp(input, lo, hi)
    out = input
    if min is not None:
        out = binary(ops.maximum, out, min)
    if max is not None:
        out = binary(ops.minimum, out, max)
    return out


def clamp_min(input: Any, min: Any) -> Any:
    return clamp(input, min, None)


def clamp_max(input: Any, max: Any) -> Any:
    return clamp(input, None, max)


def hardtanh(input: Any, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    if py_value(min_val) == 0 and py_value(max_val) == 6:
        return relu6(input)
    return clamp(input, min_val, max_val)


def relu6(input: Any, inplace: bool = False) -> Any:
    return ops.relu6(input)


def hardsigmoid(input: Any, inplace: bool = False) -> Any:
    return ops.hardsigmoid(input)


def hardswish(input: Any, inplace: bool = False) -> Any:
    return ops.hardswish(input)


def gelu(input: Any, approximate: str = "none") -> Any:
    if approximate not in ("none", "tanh"):
        raise unsupported(f"gelu with approximate={approximate!r}")
    return ops.gelu(input, approximate)


def silu(input: Any, inplace: bool = False) -> Any:
    return ops.silu(input)


def leaky_relu(input: Any, negative_slope: float = 0.01, inplace: bool = False) -> Any:
    return ops.where(input > 0.0, input, input * float(negative_slope))


def _unary(name: str) -> Any:
    fn = getattr(ops, name)

    def convert(input: Any) -> Any:
        return fn(to_float(input) if name not in ("abs", "neg") else input)

    convert.__name__ = convert.__qualname__ = name
    return convert


sigmoid, tanh, exp, log, sqrt, rsqrt, erf = (
    _unary(n) for n in ("sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "erf")
)
abs_, neg = _unary("abs"), _unary("neg")


def _sin_cos(input: Any, want_sin: bool) -> Any:
    """sin or cos from ember's arithmetic, until ember has the operators: the argument is
    reduced by multiples of pi/2 in float64 (x - k*pi/2, |r| <= pi/4) and the Taylor series
    of sin and cos to degree 17/18 are evaluated there (error under 1e-16), the quadrant
    k mod 4 picking the sign and function. Results agree with torch to float32 rounding for
    |x| up to about 1e8 (the reduction's error grows as |x| * 2e-16); |x| >= 2**62, inf and
    nan give nan. Tensors made from arange(seq) (rotary embeddings) are what needs it: with
    constant inputs, torch computes the table at compile time (folding)."""
    name = "sin" if want_sin else "cos"
    x = to_float(input)
    if has_op(name):
        return getattr(ops, name)(x)
    x64 = ops.cast(x, "float64")
    y = ops.add(ops.mul(x64, 2.0 / math.pi), 0.5)
    trunc = ops.cast(ops.cast(y, "int64"), "float64")
    k = ops.sub(trunc, ops.cast(ops.greater(trunc, y), "float64"))  # floor(y): nearest k
    r = ops.sub(x64, ops.mul(k, math.pi / 2))
    r2 = ops.mul(r, r)

    def series(first: int) -> Any:  # the sum of (-1)^(n//2) r^n / n!, n = first, first+2, ..
        acc: Any = None
        for n in range(17 if first else 18, first - 1, -2):
            c = (-1) ** (n // 2) / math.factorial(n)
            acc = c if acc is None else ops.add(ops.mul(acc, r2), c)
        return acc

    s, c = ops.mul(series(1), r), series(0)
    quadrant = ops.remainder(ops.cast(k, "int64"), 4)
    values = (s, c, ops.neg(s), ops.neg(c)) if want_sin else (c, ops.neg(s), ops.neg(c), s)
    out = values[3]
    for q in (2, 1, 0):
        out = ops.where(ops.equal(quadrant, q), values[q], out)
    finite = ops.less(ops.abs(x64), float(2**62))  # false for inf and nan
    out = ops.where(finite, out, float("nan"))
    return ops.cast(out, dtype_name(x))


def sin(input: Any) -> Any:
    return _sin_cos(input, True)


def cos(input: Any) -> Any:
    return _sin_cos(input, False)


def reciprocal(input: Any) -> Any:
    return binary(ops.div, 1.0, to_float(input))


def _arith(fn: Any) -> Any:
    def convert(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
        if out is not None:
            raise unsupported("out= arguments")
        if alpha != 1:
            other = binary(ops.mul, other, alpha) if is_tensor(other) else other * alpha
        return binary(fn, input, other)

    convert.__name__ = convert.__qualname__ = fn.__name__
    return convert


add, sub = _arith(ops.add), _arith(ops.sub)


def mul(input: Any, other: Any) -> Any:
    return binary(ops.mul, input, other)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Any:
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise unsupported(f"division with rounding_mode={rounding_mode!r}")
        from ember.torch.converters.composites import rounded_div

        return rounded_div(input, other, rounding_mode)
    dt = common_dtype(input, other)
    if not dt.startswith(("float", "bfloat")):
        dt = ember_dtype(torch.float32)
    return binary(ops.div, input, other, dtype=dt)


def floor_divide(input: Any, other: Any) -> Any:
    """Integer floor division; a zero divisor raises ember.DataError when it runs (torch
    raises ZeroDivisionError)."""
    dt = common_dtype(input, other)
    if dt.startswith(("float", "bfloat")):
        raise unsupported("floor division of floating-point tensors needs ember.ops.floor")
    return binary(ops.floor_divide, input, other, dtype=dt)


def remainder(input: Any, other: Any) -> Any:
    dt = common_dtype(input, other)
    if dt.startswith(("float", "bfloat")):
        raise unsupported("the remainder of floating-point tensors")
    return binary(ops.remainder, input, other, dtype=dt)


def ignored(*args: Any, **kwargs: Any) -> None:
    """Calls that compute nothing (API-usage logging recorded in the graph)."""
    return None


def rsub(input: Any, other: Any, alpha: Any = 1) -> Any:
    return sub(other, input, alpha=alpha)


def pow(input: Any, exponent: Any) -> Any:
    if not is_tensor(exponent) and py_value(exponent) == 2:
        return input * input
    return binary(ops.pow, input, exponent)


def _compare(fn: Any) -> Any:
    def convert(input: Any, other: Any) -> Any:
        return binary(fn, input, other)

    convert.__name__ = convert.__qualname__ = fn.__name__
    return convert


eq, ne, lt, le, gt, ge = (
    _compare(f)
    for f in (ops.equal, ops.not_equal, ops.less, ops.less_equal, ops.greater, ops.greater_equal)
)
maximum, minimum = _compare(ops.maximum), _compare(ops.minimum)


def logical_and(input: Any, other: Any) -> Any:
    return ops.logical_and(cast(input, "bool"), cast(other, "bool"))


def logical_or(input: Any, other: Any) -> Any:
    return ops.logical_or(cast(input, "bool"), cast(other, "bool"))


def logical_not(input: Any) -> Any:
    return ops.logical_not(cast(input, "bool"))


def invert(input: Any) -> Any:
    if dtype_name(input) != "bool":
        raise unsupported("bitwise not of an integer tensor")
    return ops.logical_not(input)


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    if input is None or other is None:
        raise unsupported("torch.where with one argument (nonzero)")
    dt = common_dtype(input, other)
    return ops.where(cast(condition, "bool"), cast(input, dt), cast(other, dt))


def masked_fill(input: Any, mask: Any, value: Any) -> Any:
    return ops.where(cast(mask, "bool"), cast(value, dtype_name(input)), input)


# ---- reductions ------------------------------------------------------------------------------
def _reduce(fn: Any, name: str) -> Any:
    def convert(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        x = cast(input, ember_dtype(dtype)) if dtype is not None else input
        if name in ("sum", "prod") and dtype_name(x) == "bool":
            x = cast(x, "int64")
        if name == "mean":
            x = to_float(x)
        return fn(x, norm_dims(dim, rank(x)), keepdim)

    convert.__name__ = convert.__qualname__ = name
    return convert


sum_, mean, prod = _reduce(ops.sum, "sum"), _reduce(ops.mean, "mean"), _reduce(ops.prod, "prod")


def _boolean_reduce(fn: Any) -> Any:
    def convert(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
        as_int = cast(cast(input, "bool"), "int32")
        return binary(ops.not_equal, fn(as_int, norm_dims(dim, rank(input)), keepdim), 0)

    return convert


any_, all_ = _boolean_reduce(ops.max), _boolean_reduce(ops.min)


def amax(input: Any, dim: Any = (), keepdim: bool = False) -> Any:
    return ops.max(input, norm_dims(dim, rank(input)), keepdim)


def amin(input: Any, dim: Any = (), keepdim: bool = False) -> Any:
    return ops.min(input, norm_dims(dim, rank(input)), keepdim)


def _max_or_min(values_fn: Any, index_fn: Any, pairwise: Any) -> Any:
    def convert(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
        if dim is None:
            return values_fn(input, None, False)
        if is_tensor(dim):
            return pairwise(input, dim)
        d = norm_dim(dim, rank(input))
        return (values_fn(input, [d], keepdim), index_fn(input, d, keepdim))

    return convert


max_ = _max_or_min(ops.max, ops.argmax, maximum)
min_ = _max_or_min(ops.min, ops.argmin, minimum)


def _arg(fn: Any) -> Any:
    def convert(input: Any, dim: Any = None, keepdim: bool = False) -> Any:
        if dim is None:
            return fn(ops.flatten(input, 0, -1), 0, False)
        return fn(input, norm_dim(dim, rank(input)), keepdim)

    return convert


argmax, argmin = _arg(ops.argmax), _arg(ops.argmin)


def var(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Any:
    if isinstance(dim, bool):  # var(x, False): torch's var(input, unbiased) overload
        if unbiased is not None:
            raise unsupported("var with both a positional unbiased and unbiased=")
        dim, unbiased = None, dim
    x = to_float(input)
    dims = norm_dims(dim, rank(x))
    if correction is None:
        correction = 1 if unbiased is None or unbiased is True else 0
    centered = x - ops.mean(x, dims, True)
    total = ops.sum(centered * centered, dims, keepdim)
    count = 1
    for d in dims:
        count *= static_int(x.shape[d], "the reduced size of var")
    return total / float(builtins.max(count - py_value(correction), 0))


def std(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Any:
    return ops.sqrt(var(input, dim, unbiased, keepdim, correction=correction))


def softmax(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Any:
    x = cast(input, ember_dtype(dtype)) if dtype is not None else to_float(input)
    if dim is None:
        raise unsupported("softmax without dim")
    return ops.softmax(x, norm_dim(dim, rank(x)))


def log_softmax(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Any:
    x = cast(input, ember_dtype(dtype)) if dtype is not None else to_float(input)
    d = norm_dim(dim, rank(x))
    shifted = x - ops.max(x, [d], True)
    return shifted - ops.log(ops.sum(ops.exp(shifted), [d], True))


# ---- matrix products ------------------------------------------------------------------------
def matmul(input: Any, other: Any) -> Any:
    dt = common_dtype(input, other)
    return ops.matmul(cast(input, dt), cast(other, dt))


def _scaled_sum(product: Any, input: Any, beta: Any, alpha: Any) -> Any:
    if alpha != 1:
        product = product * float(alpha)
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * float(beta))


def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    return _scaled_sum(matmul(mat1, mat2), input, beta, alpha)


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    return _scaled_sum(matmul(batch1, batch2), input, beta, alpha)


def linear(input: Any, weight: Any, bias: Any = None) -> Any:
    y = ops.matmul(input, transposed_constant(weight))
    return y if bias is None else y + bias


def _register_all() -> None:
    register(relu, torch.relu, F.relu, torch.relu_)
    register(clamp, torch.clamp, torch.clip)
    register(clamp_min, torch.clamp_min)
    register(clamp_max, torch.clamp_max)
    register(hardtanh, F.hardtanh, torch._C._nn.hardtanh)
    register(relu6, F.relu6)
    register(hardsigmoid, F.hardsigmoid)
    register(hardswish, F.hardswish)
    register(gelu, F.gelu)
    register(silu, F.silu)
    register(leaky_relu, F.leaky_relu)
    for fn, targets in (
        (sigmoid, (torch.sigmoid, F.sigmoid)), (tanh, (torch.tanh, F.tanh)),
        (exp, (torch.exp,)), (log, (torch.log,)), (sqrt, (torch.sqrt,)),
        (rsqrt, (torch.rsqrt,)), (erf, (torch.erf, torch.special.erf)),
        (abs_, (torch.abs, operator.abs)), (neg, (torch.neg, operator.neg)),
        (reciprocal, (torch.reciprocal,)), (sin, (torch.sin,)), (cos, (torch.cos,)),
    ):
        register(fn, *targets)
    register(add, torch.add, operator.add, operator.iadd)
    register(sub, torch.sub, torch.subtract, operator.sub, operator.isub)
    register(mul, torch.mul, torch.multiply, operator.mul, operator.imul)
    register(div, torch.div, torch.true_divide, operator.truediv, operator.itruediv)
    register(rsub, torch.rsub)
    register(floor_divide, torch.floor_divide, operator.floordiv, operator.ifloordiv)
    register(remainder, torch.remainder, operator.mod)
    register(ignored, torch._C._log_api_usage_once)
    register(pow, torch.pow, operator.pow)
    for fn, targets in (
        (eq, (torch.eq, operator.eq)), (ne, (torch.ne, operator.ne)),
        (lt, (torch.lt, operator.lt)), (le, (torch.le, operator.le)),
        (gt, (torch.gt, operator.gt)), (ge, (torch.ge, operator.ge)),
        (maximum, (torch.maximum,)), (minimum, (torch.minimum,)),
        (logical_and, (torch.logical_and, operator.and_)),
        (logical_or, (torch.logical_or, operator.or_)),
        (logical_not, (torch.logical_not,)), (invert, (operator.invert, torch.bitwise_not)),
    ):
        register(fn, *targets)
    register(where, torch.where)
    register(masked_fill, torch.masked_fill)
    register(sum_, torch.sum)
    register(mean, torch.mean)
    register(prod, torch.prod)
    register(amax, torch.amax)
    register(any_, torch.any)
    register(all_, torch.all)
    register(amin, torch.amin)
    register(max_, torch.max)
    register(min_, torch.min)
    register(argmax, torch.argmax)
    register(argmin, torch.argmin)
    register(var, torch.var)
    register(std, torch.std)
    register(softmax, F.softmax, torch.softmax)
    register(log_softmax, F.log_softmax, torch.log_softmax)
    register(matmul, torch.matmul, operator.matmul, torch.mm, torch.bmm)
    register(addmm, torch.addmm)
    register(baddbmm, torch.baddbmm)
    register(linear, F.linear)


_register_all()
