"""Shared deterministic initialization helpers (they draw from torch's global RNG, which
ModelSpec.build seeds)."""

from __future__ import annotations

import torch
from torch import nn


@torch.no_grad()
def randomize_batchnorm(model: nn.Module) -> None:
    """Give every batch norm non-trivial affine parameters and running statistics.

    Freshly constructed batch norms hold mean 0, variance 1, weight 1, bias 0, which makes
    them identities in eval mode; a compiler that folds them wrongly would go unnoticed.
    The ranges keep activations O(1) through deep networks.
    """
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.weight.uniform_(0.5, 1.0)
            m.bias.uniform_(-0.1, 0.1)
            assert m.running_mean is not None and m.running_var is not None
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
