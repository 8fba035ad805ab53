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

from ember.torch.context import ember_dtype, expected_value
from ember.torch.converters.common import constant, dtype_name, is_tensor, py_value, unsupported
from ember.torch.converters.functions import register
from ember.torch.converters.views import _zeros
from ember.torch.registry import builtin_registrations, register_method


def _dtype_of_result(dtype: Any, fallback: str) -> str:
    if dtype is not None:
        return ember_dtype(dtype)
    meta = expected_value()
    return ember_dtype(meta.dtype) if isinstance(meta, torch.Tensor) else fallback


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, **kwargs: Any) -> Any:
    return _zeros(list(size), _dtype_of_result(dtype, "float32"))


def new_empty_strided(self: Any, size: Any, stride: Any, *, dtype: Any = None,
                      **kwargs: Any) -> Any:
    return _zeros(list(size), _dtype_of_result(dtype, dtype_name(self)))


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


_WINDOWS = ("bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
            "general_hamming", "hamming", "hann", "kaiser", "nuttall")


def _register_all() -> None:
    register(empty_permuted, torch.empty_permuted)
    register(_computed(torch.logspace), torch.logspace)
    register(_computed(torch.linspace), torch.linspace)
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
