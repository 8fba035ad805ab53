"""Elementwise ONNX operators: unary math and activations, binary arithmetic, comparisons
and logic (numpy broadcasting, as ember's binary operators), Where, Cast, Clip."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember.onnx.errors import unsupported
from ember.onnx.registry import NotFoldable, converter, folder
from ember.onnx.values import (
    FLOAT_DTYPES,
    dtype_of,
    ember_dtype,
    is_symbolic_array,
    numpy_dtype,
    simplify,
)

ops = ember.ops

# ---- unary -----------------------------------------------------------------------------------
_UNARY = {
    "Relu": ops.relu, "Sigmoid": ops.sigmoid, "Tanh": ops.tanh, "Sqrt": ops.sqrt,
    "Exp": ops.exp, "Log": ops.log, "Erf": ops.erf, "Neg": ops.neg, "Abs": ops.abs,
    "Reciprocal": ops.reciprocal, "Floor": ops.floor, "Ceil": ops.ceil, "Round": ops.round,
    "Sin": ops.sin, "Cos": ops.cos, "Tan": ops.tan, "Asin": ops.asin, "Acos": ops.acos,
    "Atan": ops.atan, "Sinh": ops.sinh, "Cosh": ops.cosh, "Asinh": ops.asinh,
    "Acosh": ops.acosh, "Atanh": ops.atanh, "Softplus": ops.softplus, "Sign": ops.sign,
    "IsNaN": ops.isnan, "Not": ops.logical_not, "Mish": ops.mish,
}


def _unary(fn: Callable[[Any], Any]) -> Callable[..., list[Any]]:
    def convert(ctx: Any, xs: list[Any]) -> list[Any]:
        return [fn(ctx.tensor(xs[0]))]

    return convert


for _op, _fn in _UNARY.items():
    converter(_op)(_unary(_fn))


@folder("Neg", "Abs", "Not")
def _fold_unary(ctx: Any, xs: list[Any]) -> list[Any]:
    x = xs[0]
    if ctx.op_type == "Not":
        return [np.logical_not(x)]
    return [simplify(np.asarray(np.negative(x) if ctx.op_type == "Neg" else np.abs(x)))]


@converter("Softsign")
def _softsign(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    return [x / (ops.abs(x) + 1.0)]


@converter("IsInf")
def _isinf(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    neg, pos = ctx.attr("detect_negative", 1), ctx.attr("detect_positive", 1)
    if neg and pos:
        return [ops.isinf(x)]
    if not neg and not pos:
        return [ops.logical_and(ops.isinf(x), ops.isnan(x))]
    return [ops.logical_and(ops.isinf(x), ops.greater(x, 0.0) if pos else ops.less(x, 0.0))]


def _alpha_unit(alpha: float, x: Any) -> Any:
    """alpha * (exp(x) - 1) for x <= 0, x above (Elu)."""
    return ops.where(ops.greater(x, 0.0), x, ops.expm1(x) * alpha)


@converter("Elu")
def _elu(ctx: Any, xs: list[Any]) -> list[Any]:
    return [ops.elu(ctx.tensor(xs[0]), float(ctx.attr("alpha", 1.0)))]


@converter("Celu")
def _celu(ctx: Any, xs: list[Any]) -> list[Any]:
    return [ops.celu(ctx.tensor(xs[0]), float(ctx.attr("alpha", 1.0)))]


@converter("Selu")
def _selu(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    alpha = float(ctx.attr("alpha", 1.67326319217681884765625))
    gamma = float(ctx.attr("gamma", 1.05070102214813232421875))
    return [_alpha_unit(alpha, x) * gamma]


@converter("LeakyRelu")
def _leaky_relu(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    return [ops.where(ops.greater_equal(x, 0.0), x, x * float(ctx.attr("alpha", 0.01)))]


@converter("PRelu")
def _prelu(ctx: Any, xs: list[Any]) -> list[Any]:
    x, slope = ctx.tensor(xs[0]), ctx.tensor(xs[1])
    return [ops.where(ops.less(x, 0.0), x * slope, x)]


@converter("ThresholdedRelu")
def _thresholded_relu(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    return [ops.where(ops.greater(x, float(ctx.attr("alpha", 1.0))), x, 0.0)]


@converter("HardSigmoid")
def _hard_sigmoid(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    alpha, beta = float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5))
    return [ops.clamp(x * alpha + beta, 0.0, 1.0)]


@converter("HardSwish")
def _hard_swish(ctx: Any, xs: list[Any]) -> list[Any]:
    return [ops.hardswish(ctx.tensor(xs[0]))]


@converter("Gelu", since=20)
def _gelu(ctx: Any, xs: list[Any]) -> list[Any]:
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise unsupported(f"Gelu approximate={approximate!r}")
    return [ops.gelu(ctx.tensor(xs[0]), approximate)]


# ---- binary and variadic ---------------------------------------------------------------------
def _trunc_div(a: Any, b: Any) -> Any:
    """Integer division toward zero (ONNX Div of integers); (a - fmod(a, b)) is a multiple
    of b, so the floor division is exact."""
    return ops.floor_divide(ops.sub(a, ops.fmod(a, b)), b)


def _div(a: Any, b: Any) -> Any:
    if dtype_of(a) in FLOAT_DTYPES:
        return ops.div(a, b)
    return _trunc_div(a, b)


def _mod(ctx: Any) -> Callable[[Any, Any], Any]:
    return ops.fmod if ctx.attr("fmod", 0) else ops.remainder


def _pow(a: Any, b: Any) -> Any:
    if dtype_of(a) != dtype_of(b):
        b = ops.cast(b, dtype_of(a))
    return ops.pow(a, b)


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": ops.add, "Sub": ops.sub, "Mul": ops.mul, "Div": _div, "Pow": _pow,
    "Equal": ops.equal, "Less": ops.less, "Greater": ops.greater,
    "LessOrEqual": ops.less_equal, "GreaterOrEqual": ops.greater_equal,
    "And": ops.logical_and, "Or": ops.logical_or, "Xor": ops.logical_xor,
    "BitwiseAnd": ops.bitwise_and, "BitwiseOr": ops.bitwise_or, "BitwiseXor": ops.bitwise_xor,
}


def _binary(fn: Callable[[Any, Any], Any]) -> Callable[..., list[Any]]:
    def convert(ctx: Any, xs: list[Any]) -> list[Any]:
        return [fn(ctx.tensor(xs[0]), ctx.tensor(xs[1]))]

    return convert


for _op, _fn in _BINARY.items():
    converter(_op)(_binary(_fn))


@converter("Mod")
def _mod_convert(ctx: Any, xs: list[Any]) -> list[Any]:
    return [_mod(ctx)(ctx.tensor(xs[0]), ctx.tensor(xs[1]))]


@converter("Max", "Min", "Sum", "Mean")
def _variadic(ctx: Any, xs: list[Any]) -> list[Any]:
    fn = {"Max": ops.maximum, "Min": ops.minimum, "Sum": ops.add, "Mean": ops.add}[ctx.op_type]
    ts = [ctx.tensor(x) for x in xs]
    out = functools.reduce(fn, ts)
    if ctx.op_type == "Mean":
        out = out / float(len(ts))
    return [out]


def _np_trunc_div(a: Any, b: Any) -> Any:
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return np.divide(a, b)
    return (a - np.fmod(a, b)) // b


_NP_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal,
    "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
    "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or,
    "Max": np.maximum, "Min": np.minimum,
}


@folder("Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater", "LessOrEqual",
        "GreaterOrEqual", "And", "Or", "Max", "Min", "Sum")
def _fold_binary(ctx: Any, xs: list[Any]) -> list[Any]:
    """Shape arithmetic with numpy; object arrays (symbolic sizes) elementwise through Dim."""
    symbolic = any(is_symbolic_array(x) for x in xs)
    op = {"Sum": "Add"}.get(ctx.op_type, ctx.op_type)
    out = xs[0]
    for b in xs[1:]:
        a = out
        if op == "Div":
            out = (np.floor_divide(a, b) if symbolic else _np_trunc_div(a, b))
        elif symbolic and op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                                 "Max", "Min"):
            fn = _NP_BINARY[op]
            out = np.vectorize(lambda p, q, fn=fn: fn(p, q), otypes=[object])(a, b)
            if op not in ("Max", "Min"):
                out = out.astype(bool)
        else:
            out = _NP_BINARY[op](a, b)
        out = np.asarray(out)
        if not symbolic and out.dtype != a.dtype and op not in _BOOL_RESULTS:
            out = out.astype(a.dtype)
    return [simplify(out) if out.dtype == object else out]


_BOOL_RESULTS = ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or")


# ---- where, cast, clip -----------------------------------------------------------------------
@converter("Where")
def _where(ctx: Any, xs: list[Any]) -> list[Any]:
    return [ops.where(ctx.tensor(xs[0]), ctx.tensor(xs[1]), ctx.tensor(xs[2]))]


@folder("Where")
def _fold_where(ctx: Any, xs: list[Any]) -> list[Any]:
    out = np.asarray(np.where(xs[0], xs[1], xs[2]))
    return [simplify(out) if out.dtype == object else out]


@converter("Cast")
def _cast(ctx: Any, xs: list[Any]) -> list[Any]:
    dt = ember_dtype(int(ctx.attr("to")), "Cast's target")
    x = ctx.tensor(xs[0])
    return [x if dtype_of(x) == dt else ops.cast(x, dt)]


@converter("CastLike")
def _cast_like(ctx: Any, xs: list[Any]) -> list[Any]:
    x, dt = ctx.tensor(xs[0]), dtype_of(xs[1])
    return [x if dtype_of(x) == dt else ops.cast(x, dt)]


@folder("Cast")
def _fold_cast(ctx: Any, xs: list[Any]) -> list[Any]:
    dt = ember_dtype(int(ctx.attr("to")), "Cast's target")
    x = xs[0]
    if is_symbolic_array(x):
        if dt in ("int32", "int64"):
            return [x]  # sizes stay sizes
        raise NotFoldable("a symbolic size cast to a non-integer type")
    return [np.asarray(x).astype(numpy_dtype(dt))]


@converter("Clip")
def _clip(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    lo = xs[1] if len(xs) > 1 else None
    hi = xs[2] if len(xs) > 2 else None
    for bound, fn in ((lo, ops.maximum), (hi, ops.minimum)):
        if bound is None:
            continue
        if isinstance(bound, np.ndarray) and bound.size == 1 and not is_symbolic_array(bound):
            x = fn(x, bound.reshape(()).item())
        else:
            x = fn(x, ctx.tensor(bound))
    return [x]
