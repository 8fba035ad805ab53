"""Converters for ember's scalar operators, from the operator table itself.

Every row of ember's scalar operator table (``ember.ops.scalar_op_table()``; the C++ list is
in ember/ir/scalar_ops.h) gets a converter for the torch function of the same name
(``torch.sin``, ``torch.special.erfc``, ``torch.nn.functional.mish``), its aliases
(``torch.arcsin``, ``torch.special.psi``), the Tensor method and its in-place form
(``x.sin()``, ``x.sin_()``), its ATen overload (``aten.sin.default``) and the Python
operator that means it (``operator.and_`` is ``bitwise_and``, as in torch). A torch callable
with more arguments than the operator (``F.softplus`` with ``beta``, ``torch.round`` with
``decimals``, ``torch.add`` with ``alpha``) has its own converter elsewhere, which takes
precedence: this module registers only where no converter of ember's own exists, and is
imported after the others.

Dtypes follow torch: float operators compute integer inputs in float32; binary operators
promote as ``torch.result_type``.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.converters.common import (
    binary,
    cast,
    common_dtype,
    is_float_dtype,
    ops,
    to_float,
    unsupported,
)
from ember.torch.registry import (
    builtin_registrations,
    has_builtin_converter,
    register_function,
    register_method,
)

aten = torch.ops.aten

# Names under which torch offers an operator besides its own (torch.X, torch.special.X,
# torch.nn.functional.X and Tensor.X are found by name).
ALIASES: dict[str, tuple[Any, ...]] = {
    "abs": (torch.absolute, operator.abs),
    "neg": (torch.negative, operator.neg),
    "asin": (torch.arcsin,),
    "acos": (torch.arccos,),
    "atan": (torch.arctan,),
    "asinh": (torch.arcsinh,),
    "acosh": (torch.arccosh,),
    "atanh": (torch.arctanh,),
    "atan2": (torch.arctan2,),
    "trunc": (torch.fix,),
    "digamma": (torch.special.psi,),
    "lgamma": (torch.special.gammaln,),
    "sigmoid": (torch.special.expit,),
    "i0": (torch.special.modified_bessel_i0,),
    "i1": (torch.special.modified_bessel_i1,),
    "igamma": (torch.special.gammainc,),
    "igammac": (torch.special.gammaincc,),
    "remainder": (operator.mod,),
    "equal": (torch.eq, operator.eq),
    "not_equal": (torch.ne, operator.ne),
    "less": (torch.lt, operator.lt),
    "less_equal": (torch.le, operator.le),
    "greater": (torch.gt, operator.gt),
    "greater_equal": (torch.ge, operator.ge),
    "bitwise_and": (operator.and_,),
    "bitwise_or": (operator.or_,),
    "bitwise_xor": (operator.xor,),
    "bitwise_not": (operator.invert,),
    "bitwise_left_shift": (operator.lshift,),
    "bitwise_right_shift": (operator.rshift,),
}
# Method names that are aliases (x.arcsin(), x.absolute()).
METHOD_ALIASES: dict[str, tuple[str, ...]] = {
    "abs": ("absolute",), "neg": ("negative",), "asin": ("arcsin",), "acos": ("arccos",),
    "atan": ("arctan",), "asinh": ("arcsinh",), "acosh": ("arccosh",), "atanh": ("arctanh",),
    "atan2": ("arctan2",), "trunc": ("fix",), "equal": ("eq",), "not_equal": ("ne",),
    "less": ("lt",), "less_equal": ("le",), "greater": ("gt",), "greater_equal": ("ge",),
}
# ATen names that differ from the operator's.
ATEN_NAMES: dict[str, str] = {
    "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
    "greater_equal": "ge",
}
# torch names that share an operator's name but mean something else (torch.equal compares
# whole tensors and returns a Python bool).
NOT_ELEMENTWISE = frozenset({"equal"})

# The dtype rules of the table (ember/ir/scalar_ops.h: UnaryDomain, BinaryKind).
_FLOAT_RESULT = frozenset({"float", "div"})


@functools.cache
def table() -> dict[str, tuple[int, str]]:
    """name -> (arity, dtype rule) for every scalar operator."""
    return {name: (arity, rule) for name, arity, rule in ops.scalar_op_table()}


def unary_converter(name: str) -> Any:
    """The converter of the unary operator `name` (torch's signature: input, out=None)."""
    arity, rule = table()[name]
    assert arity == 1, name
    fn = getattr(ops, name)
    promote = rule == "float"

    def convert(input: Any, *, out: Any = None) -> Any:
        if out is not None:
            raise unsupported("out= arguments")
        return fn(to_float(input) if promote else input)

    convert.__name__ = convert.__qualname__ = name
    return convert


def binary_converter(name: str) -> Any:
    """The converter of the binary operator `name`, with torch's type promotion."""
    arity, rule = table()[name]
    assert arity == 2, name
    fn = getattr(ops, name)

    def convert(input: Any, other: Any, *, out: Any = None) -> Any:
        if out is not None:
            raise unsupported("out= arguments")
        if rule == "logical":
            return fn(cast(input, "bool"), cast(other, "bool"))
        dt = common_dtype(input, other)
        if rule in _FLOAT_RESULT and not is_float_dtype(dt):
            dt = "float32"
        return binary(fn, input, other, dtype=dt)

    convert.__name__ = convert.__qualname__ = name
    return convert


def converter(name: str) -> Any:
    return unary_converter(name) if table()[name][0] == 1 else binary_converter(name)


def _function_targets(name: str) -> list[Any]:
    targets: list[Any] = []
    if name not in NOT_ELEMENTWISE:
        for namespace in (torch, torch.special, F):
            target = getattr(namespace, name, None)
            if callable(target) and target not in targets:
                targets.append(target)
    targets.extend(ALIASES.get(name, ()))
    packet = getattr(aten, ATEN_NAMES.get(name, name), None)
    for overload in ("default", "Tensor", "Scalar"):
        target = getattr(packet, overload, None) if packet is not None else None
        if target is not None:
            targets.append(target)
    return targets


def _method_names(name: str) -> list[str]:
    names = [] if name in NOT_ELEMENTWISE else [name]
    names += METHOD_ALIASES.get(name, ())
    return [m for n in names for m in (n, n + "_") if hasattr(torch.Tensor, m)]


def _register_all() -> None:
    with builtin_registrations():
        for name in table():
            conv = converter(name)
            for target in _function_targets(name):
                if not has_builtin_converter("function", target):
                    register_function(target)(conv)
            for method in _method_names(name):
                if not has_builtin_converter("method", method):
                    register_method(method)(conv)


_register_all()
