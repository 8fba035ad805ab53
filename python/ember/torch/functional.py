"""Functional forms of PyTorch's writes into part of a tensor, which the prepare phase puts
in the graph in place of the writes (see inplace.functionalize).

``setitem(x, index, value)`` is ``x[index] = value`` as a value: a new tensor, x itself
unchanged. Run eagerly it computes exactly what the write leaves in x; ember converts it
(converters/writes.py) for basic indices and boolean masks.

``running_stat(stat, input, momentum, kind)`` is the update of a batch norm's (or an
instance norm's) running mean or variance in training mode as a value: what torch's batch
norm leaves in the running statistic (kind ``"mean"`` or ``"var"``; ``"instance_mean"``,
``"instance_var"`` for instance norm, which averages the per-instance statistics over the
batch). The prepare phase splits a batch norm that updates its running statistics into the
norm without them and these updates (inplace.split_running_stat_updates); ember converts
them (converters/nn_extra.py).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["RUNNING_STAT_KINDS", "batch_norm_with_update", "running_stat", "setitem"]

RUNNING_STAT_KINDS = ("mean", "var", "instance_mean", "instance_var")


def setitem(x: torch.Tensor, index: Any, value: Any) -> torch.Tensor:
    """A copy of x with ``x[index] = value`` applied to the copy."""
    out = x.clone()
    out[index] = value
    return out


def running_stat(stat: torch.Tensor, input: torch.Tensor, momentum: float,
                 kind: str) -> torch.Tensor:
    """(1 - momentum) * stat + momentum * the batch's statistic (the unbiased variance), per
    channel (dim 1 of input); for an instance norm, the per-instance statistics averaged over
    the batch."""
    dims = [0] + list(range(2, input.dim()))
    x = input.detach().to(stat.dtype)
    if kind == "mean":
        batch = x.mean(dims)
    elif kind == "var":
        batch = x.var(dims, correction=1)
    elif kind == "instance_mean":
        batch = x.mean(dims[1:]).mean(0)
    elif kind == "instance_var":
        batch = x.var(dims[1:], correction=1).mean(0)
    else:
        raise ValueError(f"running_stat: unknown kind {kind!r}")
    return stat * (1 - momentum) + batch * momentum


def batch_norm_with_update(input: torch.Tensor, weight: Any, bias: Any, momentum: float,
                           eps: float) -> tuple[torch.Tensor, ...]:
    """``aten._batch_norm_with_update`` without its running statistics: the batch's
    normalization, its mean and inverse standard deviation, and an empty reserve."""
    out, mean, invstd = torch.native_batch_norm(input, weight, bias, None, None, True,
                                                momentum, eps)
    return out, mean, invstd, torch.empty(0, dtype=torch.uint8)
