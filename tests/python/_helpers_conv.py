"""Shared by the convolution tests (test_conv_algorithms.py, test_conv_tuning.py): random
weights and float64 references."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def weights(o: int, c: int, k: int, seed: int) -> np.ndarray:
    """A float32 [o, c, k, k] weight scaled so that outputs stay near unit size."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)


def reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, **kw: int) -> np.ndarray:
    """The convolution in float64 (torch's conv2d on float64 copies)."""
    y = F.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), **kw)
    if bias is not None:
        y = y + torch.from_numpy(bias).double()[None, :, None, None]
    return y.numpy()
