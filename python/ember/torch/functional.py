"""Functional forms of PyTorch's writes into part of a tensor, which the prepare phase puts
in the graph in place of the writes (see inplace.functionalize).

``setitem(x, index, value)`` is ``x[index] = value`` as a value: a new tensor, x itself
unchanged. Run eagerly it computes exactly what the write leaves in x; ember converts it
(converters/writes.py) for basic indices and boolean masks.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["setitem"]


def setitem(x: torch.Tensor, index: Any, value: Any) -> torch.Tensor:
    """A copy of x with ``x[index] = value`` applied to the copy."""
    out = x.clone()
    out[index] = value
    return out
