"""Converters for torch's special functions that take more than the operands of ember's scalar
operators (the others, i0, bessel_j0, zeta, igamma, the orthogonal polynomials, ..., are rows
of the operator table and convert through scalar.py).

``polygamma(n, x)`` with a Python int ``n``: ``digamma(x)`` for ``n = 0``, and
``(-1)^(n+1) n! zeta(n + 1, x)`` above, as torch computes it (for n = 1 torch has its own
trigamma: 0 at +inf and NaN at -inf, where zeta(2, x) is NaN and inf; at the non-positive
integers torch's float32 trigamma is a large finite number from sin(pi x) != 0, ember's inf).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ember.torch.converters.common import (
    binary,
    is_tensor,
    ops,
    py_value,
    to_float,
    unsupported,
)
from ember.torch.registry import builtin_registrations, register_function, register_method

aten = torch.ops.aten


def polygamma(n: Any, input: Any, *, out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    if is_tensor(n):
        raise unsupported("polygamma with a tensor order n")
    n = py_value(n)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise unsupported(f"polygamma of order {n!r} (torch asks for an int n >= 0)")
    x = to_float(input)
    if n == 0:
        return ops.digamma(x)
    scale = float((1 if n % 2 else -1) * math.factorial(n)) if n <= 170 else math.inf
    result = binary(ops.mul, binary(ops.zeta, float(n + 1), x), scale)
    if n == 1:
        result = ops.where(ops.equal(x, math.inf), 0.0, result)
        result = ops.where(ops.equal(x, -math.inf), math.nan, result)
    return result


def polygamma_method(self: Any, n: Any) -> Any:
    return polygamma(n, self)


with builtin_registrations():
    for target in (torch.polygamma, torch.special.polygamma, aten.polygamma.default):
        register_function(target)(polygamma)
    register_method("polygamma")(polygamma_method)
