"""Converters for torch.Tensor methods (FX ``call_method`` nodes).

A method call passes the tensor first, so most methods reuse the function converters of
functions.py unchanged (the scalar operators' methods, ``x.sin()``, ``x.eq(y)``, are
registered by scalar.py). In-place methods (``relu_``, ``add_``, ``masked_fill_``, ...) use
the same converters: the prepare phase has already rewritten the graph so that later uses read
the in-place node's result (see inplace.functionalize).
"""

from __future__ import annotations

from typing import Any

import torch

from ember.torch.context import (
    ember_dtype,
    expected_value,
    remember_item_read,
)
from ember.torch.converters import functions as fn
from ember.torch.converters import indexing as ix
from ember.torch.converters import tensors as tn
from ember.torch.converters.common import dtype_name, full, sizes_arg, unsupported
from ember.torch.registry import builtin_registrations, register_method
from ember.torch.shape_guards import guarded_value

_SAME_AS_FUNCTION = {
    "relu": fn.relu, "relu_": fn.relu,
    "clamp": fn.clamp, "clamp_": fn.clamp, "clip": fn.clamp,
    "clamp_min": fn.clamp_min, "clamp_max": fn.clamp_max,
    "nan_to_num": fn.nan_to_num, "nan_to_num_": fn.nan_to_num,
    "add": fn.add, "add_": fn.add, "sub": fn.sub, "sub_": fn.sub,
    "mul": fn.mul, "mul_": fn.mul, "div": fn.div, "div_": fn.div,
    "true_divide": fn.div, "pow": fn.pow, "floor_divide": fn.floor_divide,
    "masked_fill": fn.masked_fill, "masked_fill_": fn.masked_fill, "where": fn.where,
    "sum": fn.sum_, "mean": fn.mean, "prod": fn.prod, "amax": fn.amax, "amin": fn.amin,
    "max": fn.max_, "min": fn.min_, "argmax": fn.argmax, "argmin": fn.argmin,
    "var": fn.var, "std": fn.std, "any": fn.any_, "all": fn.all_,
    "softmax": fn.softmax, "log_softmax": fn.log_softmax,
    "matmul": fn.matmul, "mm": fn.matmul, "bmm": fn.matmul,
    "addmm": fn.addmm, "baddbmm": fn.baddbmm,
    "view": tn.reshape, "reshape": tn.reshape, "flatten": tn.flatten,
    "unflatten": tn.unflatten, "permute": tn.permute, "transpose": tn.transpose,
    "swapaxes": tn.transpose, "t": tn.t,
    "contiguous": tn.identity, "clone": tn.identity, "detach": tn.identity,
    "expand": tn.expand, "expand_as": tn.expand_as,
    "squeeze": tn.squeeze, "unsqueeze": tn.unsqueeze,
    "split": tn.split, "chunk": tn.chunk, "unbind": tn.unbind,
    "narrow": tn.narrow, "select": ix.select,
    "tril": tn.tril, "triu": tn.triu,
    "to": tn.to, "type_as": tn.type_as, "size": tn.size,
}


def type_(self: Any, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    if dtype is None:
        raise unsupported("Tensor.type() without a dtype returns a string")
    if isinstance(dtype, str):
        raise unsupported(f"Tensor.type({dtype!r}) with a type name")
    return tn.to(self, dtype)


def new_full(self: Any, size: Any, fill_value: Any, *, dtype: Any = None, **kwargs: Any) -> Any:
    dt = ember_dtype(dtype) if dtype is not None else dtype_name(self)
    return full(list(size), fill_value, dt)


def _new_filled(value: float) -> Any:
    def convert(self: Any, *size: Any, dtype: Any = None, **kwargs: Any) -> Any:
        dt = ember_dtype(dtype) if dtype is not None else dtype_name(self)
        return full(sizes_arg(size), value, dt)

    return convert


def dim(self: Any) -> int:
    return len(self.shape)


def item(self: Any) -> Any:
    """A scalar read from a tensor stays a 0-d ember tensor (its value is known only when
    the graph runs); binary converters broadcast it. A number Dynamo has fixed by a guard
    (fixed_number: a converter needed it) is that number."""
    read = expected_value()
    if isinstance(read, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        known = guarded_value(read)
        if known is not None:
            return known
    value = self if len(self.shape) == 0 else tn.reshape(self, [])
    if isinstance(read, (torch.SymInt, torch.SymFloat)):
        remember_item_read(value, read)
    return value


def _register_all() -> None:
    with builtin_registrations():
        for name, converter in _SAME_AS_FUNCTION.items():
            if hasattr(torch.Tensor, name):
                register_method(name)(converter)
        for name, converter in tn.cast_methods.items():
            register_method(name)(converter)
        register_method("type")(type_)
        register_method("new_full")(new_full)
        register_method("new_ones")(_new_filled(1.0))
        register_method("new_zeros")(_new_filled(0.0))
        register_method("new_empty")(_new_filled(0.0))
        register_method("dim")(dim)
        register_method("item")(item)


_register_all()
