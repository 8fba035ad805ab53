"""Converters for operators of complex tensors, which ember holds as pairs of real tensors
(ember.torch.complex_values): ``torch.complex``, ``polar``, ``view_as_complex`` /
``view_as_real``, ``Tensor.cfloat`` / ``cdouble`` / ``chalf``, ``real`` / ``imag`` / ``conj`` /
``abs`` / ``angle``, the transposes, and ``+``, ``-``, ``*`` of complex tensors. The Fourier
transforms that make complex values are in spectral.py. Each is registered with
``complex_inputs=True``; those that share a target with a real converter are registered
beside it (STANDARD priority), so they are taken only for complex arguments.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import torch

from ember.torch.complex_values import ComplexValue, complex_of, from_stacked
from ember.torch.context import expected_value, sym_size
from ember.torch.converters.common import (
    dtype_name,
    full,
    is_tensor,
    no_out,
    ops,
    py_value,
    rank,
    shape_of,
    unsupported,
)
from ember.torch.converters.functions import register
from ember.torch.registry import (
    STANDARD,
    builtin_registrations,
    register_function,
    register_method,
)


def _node_shape() -> list[Any]:
    meta = expected_value()
    if not isinstance(meta, torch.Tensor):
        raise unsupported("a complex result without a recorded shape")
    return [sym_size(d) for d in meta.shape]


def _to_shape(x: Any, shape: list[Any]) -> Any:
    if list(x.shape) == shape:
        return x
    if rank(x) < len(shape):
        x = ops.reshape(x, [1] * (len(shape) - rank(x)) + shape_of(x))
    return ops.expand(x, shape)


def complex(real: Any, imag: Any, *, out: Any = None) -> Any:
    no_out(out)
    if not (is_tensor(real) and is_tensor(imag)) or dtype_name(real) != dtype_name(imag):
        raise unsupported("torch.complex of other than two tensors of one float dtype")
    complex_of(dtype_name(real))
    shape = _node_shape()
    return ComplexValue(_to_shape(real, shape), _to_shape(imag, shape))


def polar(abs: Any, angle: Any, *, out: Any = None) -> Any:
    no_out(out)
    if not (is_tensor(abs) and is_tensor(angle)) or dtype_name(abs) != dtype_name(angle):
        raise unsupported("torch.polar of other than two tensors of one float dtype")
    complex_of(dtype_name(abs))
    shape = _node_shape()
    return ComplexValue(_to_shape(ops.mul(abs, ops.cos(angle)), shape),
                        _to_shape(ops.mul(abs, ops.sin(angle)), shape))


def view_as_complex(input: Any) -> Any:
    if not is_tensor(input) or rank(input) == 0 or input.shape[-1] != 2:
        raise unsupported("view_as_complex of a tensor whose last dimension is not 2")
    complex_of(dtype_name(input))
    return from_stacked(input)


def view_as_real(input: Any) -> Any:
    if not isinstance(input, ComplexValue):
        raise unsupported("view_as_real of a real tensor (torch raises)")
    return input.stacked()


def _to_complex(part: str) -> Any:
    def convert(input: Any, memory_format: Any = None) -> Any:
        if isinstance(input, ComplexValue):
            return ComplexValue(ops.cast(input.real, part), ops.cast(input.imag, part))
        if not is_tensor(input):
            raise unsupported("a complex conversion of a non-tensor")
        re = input if dtype_name(input) == part else ops.cast(input, part)
        return ComplexValue(re, full(shape_of(input), 0.0, part))

    return convert


cfloat = _to_complex("float32")
cdouble = _to_complex("float64")
chalf = _to_complex("float16")


def real(input: Any) -> Any:
    return input.real if isinstance(input, ComplexValue) else input


def imag(input: Any) -> Any:
    if not isinstance(input, ComplexValue):
        raise unsupported("imag of a real tensor (torch raises)")
    return input.imag


def attribute(obj: Any, name: str, *default: Any) -> Any:
    """getattr(x, name): .real (of any tensor) and .imag, and the transposes of a complex
    tensor (.T, .mT, and .H, .mH, which conjugate)."""
    if default:
        raise unsupported(f"getattr with a default ({name!r})")
    if name == "real" and is_tensor(obj):
        return obj
    if not isinstance(obj, ComplexValue):
        raise unsupported(f"the tensor attribute {name!r}")
    if name in ("real", "imag"):
        return getattr(obj, name)
    n = len(obj.shape)
    if name in ("T", "H") and n >= 2:
        order = list(range(n - 1, -1, -1))
        value = ComplexValue(ops.permute(obj.real, order), ops.permute(obj.imag, order))
    elif name in ("T", "H"):
        value = obj
    elif name in ("mT", "mH") and n >= 2:
        value = ComplexValue(ops.transpose(obj.real, -2, -1), ops.transpose(obj.imag, -2, -1))
    else:
        raise unsupported(f"the attribute {name!r} of a complex tensor of rank {n}")
    return conj(value) if name in ("H", "mH") else value


def conj(input: Any) -> Any:
    if isinstance(input, ComplexValue):
        return ComplexValue(input.real, ops.neg(input.imag))
    return input


def complex_abs(input: Any) -> Any:
    if not isinstance(input, ComplexValue):
        raise unsupported("not a complex tensor")
    return ops.hypot(input.real, input.imag)


def angle(input: Any) -> Any:
    if not isinstance(input, ComplexValue):
        raise unsupported("not a complex tensor")
    return ops.atan2(input.imag, input.real)


def _complex_operands(a: Any, b: Any, what: str) -> tuple[Any, Any, Any, Any]:
    """The parts of two operands of complex arithmetic (a Python number or a real tensor has
    a zero imaginary part), in the parts' common dtype."""
    def parts(v: Any) -> tuple[Any, Any]:
        if isinstance(v, ComplexValue):
            return v.real, v.imag
        if is_tensor(v):
            return v, None
        value = py_value(v)
        if isinstance(value, builtins.complex):
            return value.real, value.imag
        if isinstance(value, (int, float)):
            return float(value), None
        raise unsupported(f"{what} with a {type(v).__name__}")

    ar, ai = parts(a)
    br, bi = parts(b)
    part = next(v.part_dtype for v in (a, b) if isinstance(v, ComplexValue))
    for v in (ar, br):
        if is_tensor(v) and dtype_name(v) not in ("float32", "float64", "float16"):
            if not dtype_name(v).startswith(("int", "uint", "bool")):
                raise unsupported(f"{what} of {part} and {dtype_name(v)} tensors")
    if any(is_tensor(v) and dtype_name(v) != part for v in (ar, ai, br, bi)):
        raise unsupported(f"{what} of complex tensors of different dtypes")
    return ar, ai, br, bi


def _binary_parts(fn: Any, x: Any, y: Any) -> Any:
    if x is None and y is None:
        return None
    if y is None:
        return x
    if x is None:
        return ops.neg(y) if fn is ops.sub else y
    return fn(x, y)


def complex_add(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
    no_out(out)
    if py_value(alpha) != 1:
        raise unsupported("add of complex tensors with alpha")
    return _add_sub(input, other, ops.add)


def complex_sub(input: Any, other: Any, *, alpha: Any = 1, out: Any = None) -> Any:
    no_out(out)
    if py_value(alpha) != 1:
        raise unsupported("sub of complex tensors with alpha")
    return _add_sub(input, other, ops.sub)


def _add_sub(a: Any, b: Any, fn: Any) -> Any:
    ar, ai, br, bi = _complex_operands(a, b, "complex arithmetic")
    shape = _node_shape()
    re = _binary_parts(fn, ar, br)
    im = _binary_parts(fn, ai, bi)
    return _assemble(re, im, shape, a, b)


def _assemble(re: Any, im: Any, shape: list[Any], a: Any, b: Any) -> ComplexValue:
    part = next(v.part_dtype for v in (a, b) if isinstance(v, ComplexValue))

    def tensor(v: Any) -> Any:
        if v is None:
            return full(shape, 0.0, part)
        if not is_tensor(v):
            return full(shape, v, part)
        return _to_shape(v, shape)

    return ComplexValue(tensor(re), tensor(im))


def complex_mul(input: Any, other: Any, *, out: Any = None) -> Any:
    no_out(out)
    ar, ai, br, bi = _complex_operands(input, other, "complex multiplication")
    mul = _mul
    re = _binary_parts(ops.sub, mul(ar, br), mul(ai, bi))
    im = _binary_parts(ops.add, mul(ar, bi), mul(ai, br))
    return _assemble(re, im, _node_shape(), input, other)


def _mul(x: Any, y: Any) -> Any:
    if x is None or y is None:
        return None
    if not is_tensor(x) and not is_tensor(y):
        return x * y
    if not is_tensor(x):
        x, y = y, x
    return ops.mul(x, y) if is_tensor(y) else ops.mul(x, float(y))


def _registrations() -> None:
    with builtin_registrations():
        for fn, target in ((view_as_real, torch.view_as_real), (imag, torch.imag)):
            register_function(target, complex_inputs=True)(fn)
        # Beside the real converters of these targets: taken only for complex arguments.
        for fn, targets in (
            (real, (torch.real,)), (conj, (torch.conj, torch.conj_physical, torch.resolve_conj)),
            (complex_abs, (torch.abs,)), (angle, (torch.angle,)),
            (complex_add, (torch.add, operator.add)), (complex_sub, (torch.sub, operator.sub)),
            (complex_mul, (torch.mul, operator.mul)), (attribute, (builtins.getattr,)),
        ):
            for target in targets:
                register_function(target, priority=STANDARD, complex_inputs=True)(fn)
        for name, fn in (("cfloat", cfloat), ("cdouble", cdouble), ("chalf", chalf)):
            register_method(name, complex_inputs=True)(fn)
        for name, fn in (("conj", conj), ("abs", complex_abs), ("angle", angle),
                         ("add", complex_add), ("sub", complex_sub), ("mul", complex_mul)):
            register_method(name, priority=STANDARD, complex_inputs=True)(fn)
    register(complex, torch.complex)
    register(polar, torch.polar)
    register(view_as_complex, torch.view_as_complex)


_registrations()
