"""Complex tensors inside ember's graphs, as pairs of real tensors.

ember's runtime has no complex dtype. A complex value of a torch graph (the result of an FFT,
``torch.complex``, ``view_as_complex``, a complex graph input) is converted to a
``ComplexValue``: its real and imaginary parts, two ember tensors of the matching real dtype
(complex64: float32, complex128: float64, complex32: float16).

- Only converters registered with ``complex_inputs=True`` receive a ComplexValue; every other
  converter is skipped for a call with a complex argument, so the node runs in eager PyTorch
  (or strict mode names it) instead of treating the pair as real numbers.
- A converter returns a ComplexValue where torch's result is complex (the interpreter
  checks it against Dynamo's record).
- At a segment's boundary the pair travels as one real tensor of shape ``[..., 2]``:
  an input through ``torch.view_as_real``, an output through ``torch.view_as_complex``, both
  views without a copy (phases/wrap.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

import ember
from ember.torch.context import ConversionFailure, weight_to_ember

ops = ember.ops

_PART_OF = {torch.complex64: "float32", torch.complex128: "float64",
            torch.complex32: "float16"}
_COMPLEX_NAME = {"float32": "complex64", "float64": "complex128", "float16": "complex32"}


@dataclass(eq=False)
class ComplexValue:
    """A complex tensor as its real and imaginary parts (same shape and real dtype)."""

    real: Any
    imag: Any

    @property
    def shape(self) -> list[Any]:
        return list(self.real.shape)

    @property
    def dtype(self) -> str:
        """torch's name of the complex dtype ("complex64", ...)."""
        return _COMPLEX_NAME.get(str(self.real.dtype), f"complex({self.real.dtype})")

    @property
    def part_dtype(self) -> str:
        return str(self.real.dtype)

    @property
    def is_symbolic(self) -> bool:
        return bool(self.real.is_symbolic or self.imag.is_symbolic)

    def torch(self) -> torch.Tensor:
        return torch.complex(self.real.torch(), self.imag.torch())

    def stacked(self) -> Any:
        """The pair as one real tensor [..., 2] (torch.view_as_real's layout)."""
        n = len(self.real.shape)
        return ops.concat([ops.unsqueeze(self.real, [n]), ops.unsqueeze(self.imag, [n])], n)


def part_dtype(dtype: torch.dtype) -> str:
    """The ember dtype of a complex torch dtype's parts."""
    if dtype not in _PART_OF:
        raise ConversionFailure("value", f"ember has no dtype for {dtype}")
    return _PART_OF[dtype]


def complex_of(part: str) -> str:
    """The complex dtype (torch's name) whose parts are of ember dtype `part`."""
    if part not in _COMPLEX_NAME:
        raise ConversionFailure("error", f"no complex dtype has {part} parts")
    return _COMPLEX_NAME[part]


def from_stacked(pair: Any) -> ComplexValue:
    """A ComplexValue from a real tensor [..., 2] (a graph input taken as view_as_real)."""
    n = len(pair.shape)
    parts = [ops.squeeze(ops.slice(pair, [n - 1], [k], [k + 1]), [n - 1]) for k in (0, 1)]
    return ComplexValue(parts[0], parts[1])


def constant(tensor: torch.Tensor) -> ComplexValue:
    """A complex torch tensor (a folded constant, a weight) as a constant ComplexValue."""
    real = tensor.detach().real.contiguous()
    imag = tensor.detach().imag.contiguous()
    return ComplexValue(weight_to_ember(real), weight_to_ember(imag))


def contains_complex(tree: Any) -> bool:
    if isinstance(tree, ComplexValue):
        return True
    if isinstance(tree, (tuple, list)):
        return any(contains_complex(v) for v in tree)
    if isinstance(tree, dict):
        return any(contains_complex(v) for v in tree.values())
    return False


def as_runtime_input(t: torch.Tensor) -> torch.Tensor:
    """A torch argument as ember takes it: a complex tensor as its view_as_real pair."""
    if t.is_complex():
        return torch.view_as_real(t.resolve_conj().resolve_neg())
    return t.resolve_neg() if t.is_neg() else t


def check_result(result: Any, meta: torch.Tensor, check_shape: Any) -> ComplexValue:
    """A converter's result for a complex node: a ComplexValue whose parts have the node's
    shape and its parts' dtype."""
    if not isinstance(result, ComplexValue):
        raise ConversionFailure(
            "mismatch", f"the converter returned {type(result).__name__}, torch a {meta.dtype} "
            "tensor")
    want = part_dtype(meta.dtype)
    parts = []
    for p in (result.real, result.imag):
        check_shape(p, meta)
        parts.append(p if str(p.dtype) == want else ops.cast(p, want))
    return ComplexValue(parts[0], parts[1])
