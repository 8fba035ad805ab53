"""Converters for the operators of compiled optimizer steps
(``torch.compile(optimizer.step, backend="ember")``):

- the ``_foreach_*`` operators (``foreach=True``): each is the list of its elementwise
  operator applied to the i-th tensor of each list argument (a number, a tensor that is
  not in a list, or a list of numbers applies to every, or to the i-th, element). The
  in-place forms (``_foreach_add_``) have the same converters: the prepare phase makes
  their value the list of updated tensors (inplace.functionalize), each in the dtype of
  the tensor it updates;
- the in-place methods of the single-tensor steps that have no method converter of their
  own (``lerp_``, ``addcmul_``, ``addcdiv_``);
- ``prims.fma`` (Dynamo's form of ``addcmul_``): a product and a sum, rounded twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch._inductor.inductor_prims  # noqa: F401  (defines prims.fma, which Dynamo emits)

from ember.torch.converters import elementwise_extra as ee
from ember.torch.converters import functions as fn
from ember.torch.converters import writes
from ember.torch.converters.common import cast, dtype_name, is_tensor, unsupported
from ember.torch.converters.scalar import converter as scalar_converter
from ember.torch.converters.scalar import table as scalar_table
from ember.torch.registry import builtin_registrations, register_function, register_method

__all__ = ["foreach"]


def _addcmul(input: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
    return ee.addcmul(input, tensor1, tensor2, value=value)


def _addcdiv(input: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
    return ee.addcdiv(input, tensor1, tensor2, value=value)


def _clamp_min(input: Any, scalar: Any) -> Any:
    return fn.clamp_min(input, scalar)


def _clamp_max(input: Any, scalar: Any) -> Any:
    return fn.clamp_max(input, scalar)


# _foreach_<name> -> the converter of one element (torch's argument order, value positional).
_ELEMENTWISE: dict[str, Callable[..., Any]] = {
    "add": fn.add, "sub": fn.sub, "mul": fn.mul, "div": fn.div, "pow": fn.pow,
    "addcmul": _addcmul, "addcdiv": _addcdiv, "lerp": ee.lerp,
    "clamp_min": _clamp_min, "clamp_max": _clamp_max,
    "maximum": scalar_converter("maximum"), "minimum": scalar_converter("minimum"),
    "zero": writes.zero_, "copy": writes.copy_,
}
_ELEMENTWISE.update({name: scalar_converter(name) for name, (arity, _) in scalar_table().items()
                     if arity == 1 and name not in _ELEMENTWISE})


def _length(args: tuple, kwargs: dict) -> int:
    for a in (*args, *kwargs.values()):
        if isinstance(a, (list, tuple)) and a and is_tensor(a[0]):
            return len(a)
    raise unsupported("a _foreach_ operator without a list of tensors")


def _pick(a: Any, i: int) -> Any:
    return a[i] if isinstance(a, (list, tuple)) else a


def foreach(element: Callable[..., Any], inplace: bool) -> Callable[..., Any]:
    """The converter of a _foreach_ operator whose i-th result is element(i-th arguments);
    an in-place one keeps each updated tensor's dtype."""

    def convert(*args: Any, **kwargs: Any) -> list[Any]:
        n = _length(args, kwargs)
        for a in (*args, *kwargs.values()):
            if isinstance(a, (list, tuple)) and len(a) != n:
                raise unsupported("_foreach_ lists of different lengths")
        out = []
        for i in range(n):
            value = element(*(_pick(a, i) for a in args),
                            **{k: _pick(v, i) for k, v in kwargs.items()})
            if inplace:
                value = cast(value, dtype_name(args[0][i]))
            out.append(value)
        return out

    convert.__name__ = convert.__qualname__ = f"_foreach_{element.__name__}{'_' if inplace else ''}"
    return convert


def _method(element: Callable[..., Any]) -> Callable[..., Any]:
    """An in-place method: element's value in the dtype of the tensor it updates."""

    def convert(self: Any, *args: Any, **kwargs: Any) -> Any:
        return cast(element(self, *args, **kwargs), dtype_name(self))

    convert.__name__ = convert.__qualname__ = f"{element.__name__}_"
    return convert


def fma(a: Any, b: Any, c: Any) -> Any:
    if not (is_tensor(a) or is_tensor(b) or is_tensor(c)):
        raise unsupported("prims.fma of numbers")
    return fn.add(fn.mul(a, b), c)


def _register_all() -> None:
    with builtin_registrations():
        for name, element in _ELEMENTWISE.items():
            for inplace in (False, True):
                target = getattr(torch, f"_foreach_{name}{'_' if inplace else ''}", None)
                if target is not None:
                    register_function(target)(foreach(element, inplace))
        for name, element in (("lerp", ee.lerp), ("addcmul", ee.addcmul),
                              ("addcdiv", ee.addcdiv)):
            register_method(f"{name}_")(_method(element))
        register_function(torch.ops.prims.fma.default)(fma)


_register_all()
