"""A 3-layer multilayer perceptron (MNIST-sized by default)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class MLPConfig:
    in_features: int = 784
    hidden: int = 1024
    num_classes: int = 10


FULL = MLPConfig()
SMALL = MLPConfig(in_features=64, hidden=64, num_classes=10)


class MLP(nn.Module):
    """Linear-ReLU-Linear-GELU-Linear: covers both common activations."""

    def __init__(self, cfg: MLPConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.in_features, cfg.hidden)
        self.fc2 = nn.Linear(cfg.hidden, cfg.hidden)
        self.fc3 = nn.Linear(cfg.hidden, cfg.num_classes)
        self.act1 = nn.ReLU()
        self.act2 = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act1(self.fc1(x))
        x = self.act2(self.fc2(x))
        return self.fc3(x)


def make_inputs(cfg: MLPConfig, batch: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, cfg.in_features, generator=gen),)


def output_shapes(cfg: MLPConfig, batch: int) -> list[tuple[int, ...]]:
    return [(batch, cfg.num_classes)]
