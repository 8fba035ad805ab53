"""Converters for creation functions: ``empty_permuted`` and ``Tensor.new_empty_strided``
(zeros: their values are unspecified), and the creation functions whose arguments are all
known at compile time (``torch.signal.windows``, ``torch.hann_window`` and the other
``*_window`` functions, ``logspace``, ``linspace``), computed once
by torch and kept as constants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ember._sizes import size_value
from ember.torch.context import ember_dtype, expected_value, sym_size, torch_dtype
from ember.torch.converters.common import (
    cast,
    constant,
    dtype_name,
    is_tensor,
    ops,
    py_value,
    unsupported,
)
from ember.torch.converters.functions import register
from ember.torch.converters.views import zeros_of
from ember.torch.registry import builtin_registrations, register_method


def _dtype_of_result(dtype: Any, fallback: str) -> str:
    if dtype is not None:
        return ember_dtype(dtype)
    meta = expected_value()
    return ember_dtype(meta.dtype) if isinstance(meta, torch.Tensor) else fallback


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, **kwargs: Any) -> Any:
    return zeros_of(list(size), _dtype_of_result(dtype, "float32"))


def new_empty_strided(self: Any, size: Any, stride: Any, *, dtype: Any = None,
                      **kwargs: Any) -> Any:
    return zeros_of(list(size), _dtype_of_result(dtype, dtype_name(self)))


def _computed(target: Callable[..., Any]) -> Callable[..., Any]:
    """A creation function whose arguments are all Python values: torch computes it once,
    at compile time, and the result is a constant."""
    def convert(*args: Any, **kwargs: Any) -> Any:
        def value(v: Any) -> Any:
            if is_tensor(v):
                raise unsupported(f"{target.__name__} with a tensor argument known at run time")
            if isinstance(v, (tuple, list)):
                return type(v)(value(x) for x in v)
            return py_value(v)

        result = target(*[value(a) for a in args], **{k: value(v) for k, v in kwargs.items()})
        return constant(result.contiguous())

    convert.__qualname__ = target.__name__
    return convert


def _spaced(log: bool) -> Callable[..., Any]:
    """linspace / logspace: computed once by torch when start and end are numbers; with a
    0-d tensor among them (known at run time), in the graph with torch's CPU formula (the
    first half counted up from start, the second down from end, by one step computed in the
    result's dtype; logspace raises base to those exponents)."""
    target = torch.logspace if log else torch.linspace
    at_compile_time = _computed(target)

    def convert(start: Any, end: Any, steps: Any, base: Any = 10.0, *, out: Any = None,
                dtype: Any = None, **kwargs: Any) -> Any:
        numbers = (start, end, steps, base)
        if not any(is_tensor(v) or isinstance(v, (torch.SymInt, torch.SymFloat))
                   for v in numbers):
            extra = {"base": base} if log else {}
            if out is not None:
                raise unsupported(f"{target.__name__} with out=")
            return at_compile_time(start, end, steps, dtype=dtype, **extra, **kwargs)
        if out is not None:
            raise unsupported(f"{target.__name__} with out=")
        dt = _dtype_of_result(dtype, "float32")
        if dt not in ("float32", "float64"):
            raise unsupported(f"{target.__name__} of {dt} with a tensor bound")
        def scalar(v: Any) -> Any:  # a 0-d tensor of dt (a runtime input for a SymInt)
            v = cast(v, dt)
            return v if is_tensor(v) else ops.scalar(float(v), dt)

        lo, hi = scalar(start), scalar(end)
        if isinstance(steps, torch.SymInt):
            # guards: 0 and 1 steps compile apart from the rest
            n: Any = 0 if bool(steps == 0) else 1 if bool(steps == 1) else sym_size(steps)
        else:
            n = int(py_value(steps))
        ground = ops.expand(ops.reshape(scalar(base), [1]), [n]) if log else None
        if n == 0:
            return constant(torch.empty(0, dtype=torch_dtype(dt)))
        if n == 1:  # [start]
            first = ops.reshape(lo, [1])
            return ops.pow(ground, first) if log else first
        idx = ops.cast(ops.arange(0, n, 1, "int64"), dt)
        last = size_value(n, dt) - 1 if isinstance(n, int) else ops.sub(size_value(n, dt), 1.0)
        step = ops.div(ops.sub(hi, lo), last)
        up = ops.add(lo, ops.mul(step, idx))
        down = ops.sub(hi, ops.mul(step, ops.sub(last, idx)))
        half = n // 2 if isinstance(n, int) else size_value(f"({n} // 2)", dt)
        value = ops.where(ops.less(idx, half), up, down)
        return ops.pow(ground, value) if log else value

    convert.__qualname__ = target.__name__
    return convert


_WINDOWS = ("bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
            "general_hamming", "hamming", "hann", "kaiser", "nuttall")


def _register_all() -> None:
    register(empty_permuted, torch.empty_permuted)
    register(_spaced(True), torch.logspace)
    register(_spaced(False), torch.linspace)
    for name in _WINDOWS:
        window = getattr(torch.signal.windows, name, None)
        if window is not None:
            register(_computed(window), window)
        window = getattr(torch, f"{name}_window", None)  # torch.hann_window, for stft
        if window is not None:
            register(_computed(window), window)
    if hasattr(torch.Tensor, "new_empty_strided"):
        with builtin_registrations():
            register_method("new_empty_strided")(new_empty_strided)


_register_all()
