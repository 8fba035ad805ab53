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

from ember.torch.context import ember_dtype, expected_value, same_size_or_unify
from ember.torch.converters.common import (
    binary,
    cast,
    common_dtype,
    dtype_name,
    is_runtime_scalar,
    is_tensor,
    norm_dim,
    norm_dims,
    ops,
    py_value,
    rank,
    shape_of,
    size_product,
    size_value,
    to_float,
    transposed_constant,
    unsupported,
    with_shape,
)
from ember.torch.registry import builtin_registrations, register_function, register_method


def register(fn: Any, *targets: Any) -> Any:
    with builtin_registrations():
        for target in targets:
            register_function(target)(fn)
    return fn


def register_methods(methods: dict[str, Any]) -> None:
    """Tensor method names (those torch has) to their converters."""
    with builtin_registrations():
        for name, converter in methods.items():
            if hasattr(torch.Tensor, name):
                register_method(name)(converter)


def register_tables(functions: Any, methods: dict[str, Any]) -> None:
    """A module's converters from its tables: (converter, torch targets) pairs, and
    Tensor method names (those torch has) to converters."""
    for converter, targets in functions:
        register(converter, *targets)
    register_methods(methods)


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
    if is_runtime_scalar(min_val) or is_runtime_scalar(max_val):
        return clamp(input, min_val, max_val)
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


def nan_to_num(input: Any, nan: Any = 0.0, posinf: Any = None, neginf: Any = None, *,
               out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    return ops.nan_to_num(
        input, float(py_value(nan)) if nan is not None else 0.0,
        None if posinf is None else float(py_value(posinf)),
        None if neginf is None else float(py_value(neginf)))


def leaky_relu(input: Any, negative_slope: float = 0.01, inplace: bool = False) -> Any:
    return ops.where(input > 0.0, input, input * float(negative_slope))


def _arith(fn: Any) -> Any:
    def convert(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
        if out is not None:
            raise unsupported("out= arguments")
        if is_runtime_scalar(alpha):  # a float Dynamo passes as a value known when the graph runs
            dt = common_dtype(input, other)
            return binary(fn, input, binary(ops.mul, other, cast(alpha, dt), dtype=dt), dtype=dt)
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
    """Floor division; for integers a zero divisor raises ember.DataError when it runs (torch
    raises ZeroDivisionError). Floats are torch.div with rounding_mode='floor'."""
    dt = common_dtype(input, other)
    if dt.startswith(("float", "bfloat")):
        from ember.torch.converters.composites import rounded_div

        return rounded_div(input, other, "floor")
    return binary(ops.floor_divide, input, other, dtype=dt)


def ignored(*args: Any, **kwargs: Any) -> None:
    """Calls that compute nothing (API-usage logging recorded in the graph)."""
    return None


def rsub(input: Any, other: Any, alpha: Any = 1) -> Any:
    return sub(other, input, alpha=alpha)


def pow(input: Any, exponent: Any) -> Any:
    if not is_tensor(exponent) and py_value(exponent) == 2:
        return input * input
    return binary(ops.pow, input, exponent)


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
            return binary(pairwise, input, dim)
        d = norm_dim(dim, rank(input))
        return (values_fn(input, [d], keepdim), index_fn(input, d, keepdim))

    return convert


max_ = _max_or_min(ops.max, ops.argmax, ops.maximum)
min_ = _max_or_min(ops.min, ops.argmin, ops.minimum)


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
    count = size_product([x.shape[d] for d in dims])
    dt = dtype_name(total)
    if is_runtime_scalar(correction):  # a correction Dynamo passes as a run-time value
        n = float(count) if isinstance(count, int) else size_value(count, dt)
        return total / ops.maximum(n - cast(correction, dt), 0.0)
    correction = py_value(correction)
    if isinstance(count, int):
        return total / float(builtins.max(count - correction, 0))
    # A symbolic count (which may be 0: a static empty dimension times a symbol): torch's
    # max(count - correction, 0), computed when the graph runs.
    divisor = ops.maximum(ops.sub(size_value(count, dt), float(correction)), 0.0)
    return total / divisor


def std(input: Any, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Any:
    return ops.sqrt(var(input, dim, unbiased, keepdim, correction=correction))


def softmax(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Any:
    x = cast(input, ember_dtype(dtype)) if dtype is not None else to_float(input)
    if dim is None:
        raise unsupported("softmax without dim")
    d = norm_dim(dim, rank(x))
    if rank(x) == 0:  # one element: exp(x - x) / exp(x - x), as torch computes it
        return ops.reshape(ops.softmax(ops.reshape(x, [1]), 0), [])
    if x.shape[d] == 0:
        return x  # no element to compute
    return ops.softmax(x, d)


def log_softmax(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Any:
    x = cast(input, ember_dtype(dtype)) if dtype is not None else to_float(input)
    d = norm_dim(dim, rank(x))
    if rank(x) == 0:
        return ops.reshape(log_softmax(ops.reshape(x, [1]), 0), [])
    if x.shape[d] == 0:
        return x  # no element to compute
    shifted = x - ops.max(x, [d], True)
    return shifted - ops.log(ops.sum(ops.exp(shifted), [d], True))


# ---- matrix products ------------------------------------------------------------------------
def matmul(input: Any, other: Any) -> Any:
    dt = common_dtype(input, other)
    a = cast(input, dt)
    return ops.matmul(a, _paired_sizes(a, cast(other, dt)))


def _paired_sizes(a: Any, b: Any) -> Any:
    """b with each size matmul pairs with one of a's (a's columns with b's rows, batch sizes
    other than 1) spelled as a's where Dynamo's guards make them equal but spell them apart:
    ``s24`` against a strided convolution's ``((s58 - 1)//2) + 1`` (with_shape renames)."""
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        return b
    pairs = {len(sb) - 2 if len(sb) >= 2 else 0: sa[-1]}
    for i in range(3, min(len(sa), len(sb)) + 1):
        pairs[len(sb) - i] = sa[len(sa) - i]
    want = list(sb)
    for axis, size in pairs.items():
        if sb[axis] != size and 1 not in (sb[axis], size) and same_size_or_unify(size, sb[axis]):
            want[axis] = size
    return b if want == sb else with_shape(b, want, "matmul's second operand")


def _scaled_sum(product: Any, input: Any, beta: Any, alpha: Any) -> Any:
    dt = dtype_name(product)
    if is_runtime_scalar(alpha):
        product = product * cast(alpha, dt)
    elif alpha != 1:
        product = product * float(alpha)
    if is_runtime_scalar(beta):  # torch ignores input (its NaN too) where beta is 0
        b = cast(beta, dt)
        return product + ops.where(ops.equal(b, 0.0), 0.0, input * b)
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * float(beta))


def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    return _scaled_sum(matmul(mat1, mat2), input, beta, alpha)


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    return _scaled_sum(matmul(batch1, batch2), input, beta, alpha)


def linear(input: Any, weight: Any, bias: Any = None) -> Any:
    # The weight is read as stored ([out, in], ops.matmul_nt): a constant one is packed once,
    # when the graph is built, in the GEMM micro-kernel's order, whatever the number of rows.
    if rank(weight) == 2:
        y = ops.matmul_nt(input, weight)
    else:
        y = ops.matmul(input, transposed_constant(weight))
    return y if bias is None else y + bias


# ---- Python scalars -----------------------------------------------------------------------
def sym_sqrt(a: Any) -> Any:
    """``torch._sym_sqrt`` (``math.sqrt`` of a float Dynamo did not specialize, e.g.
    ``math.sqrt(2 / math.pi)`` of a global): a 0-d tensor read with ``.item()`` stays one, so
    its square root is taken in its dtype (float64 for a Python float), as Python does."""
    if is_tensor(a):
        return ops.sqrt(to_float(a))
    return math.sqrt(float(py_value(a)))


def identity_test(a: Any, b: Any) -> Any:
    """``a is b`` / ``a is not b``: Dynamo decided it when tracing (identity cannot change
    between calls that reuse the graph), so the result is its record."""
    recorded = expected_value()
    if isinstance(recorded, bool):
        return recorded
    raise unsupported("an identity test whose result Dynamo did not record")


def _register_all() -> None:
    register(sym_sqrt, torch._sym_sqrt)
    register(identity_test, operator.is_, operator.is_not)
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
    register(nan_to_num, torch.nan_to_num)
    register(add, torch.add, operator.add, operator.iadd)
    register(sub, torch.sub, torch.subtract, operator.sub, operator.isub)
    register(mul, torch.mul, torch.multiply, operator.mul, operator.imul)
    register(div, torch.div, torch.true_divide, operator.truediv, operator.itruediv)
    register(rsub, torch.rsub)
    register(floor_divide, torch.floor_divide, operator.floordiv, operator.ifloordiv)
    register(ignored, torch._C._log_api_usage_once)
    register(pow, torch.pow, operator.pow)
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
