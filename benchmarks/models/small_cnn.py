"""Small convolutional pieces that cover operators the big models do not.

* ``Conv1dNet``: conv1d (plain, strided, dilated), batchnorm1d, maxpool1d, adaptive
  average pooling, linear.
* ``UNetBlock``: a two-level UNet: max and average pooling on the way down, nearest and
  bilinear upsampling on the way up, skip connections joined with ``torch.cat``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from ._init import randomize_batchnorm


@dataclass(frozen=True)
class Conv1dConfig:
    in_channels: int = 8
    channels: int = 64
    length: int = 1024
    num_classes: int = 10


CONV1D_FULL = Conv1dConfig()
CONV1D_SMALL = Conv1dConfig(in_channels=4, channels=16, length=64)


class Conv1dNet(nn.Module):
    def __init__(self, cfg: Conv1dConfig) -> None:
        super().__init__()
        c = cfg.channels
        self.features = nn.Sequential(
            nn.Conv1d(cfg.in_channels, c, kernel_size=7, padding=3),
            nn.BatchNorm1d(c),
            nn.ReLU(),
            nn.MaxPool1d(2),
            nn.Conv1d(c, 2 * c, kernel_size=3, stride=2, padding=1),
            nn.BatchNorm1d(2 * c),
            nn.ReLU(),
            nn.Conv1d(2 * c, 2 * c, kernel_size=3, padding=2, dilation=2),
            nn.SiLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.fc = nn.Linear(2 * c, cfg.num_classes)
        randomize_batchnorm(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.features(x), 1))


def conv1d_inputs(cfg: Conv1dConfig, batch: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, cfg.in_channels, cfg.length, generator=gen),)


def conv1d_output_shapes(cfg: Conv1dConfig, batch: int) -> list[tuple[int, ...]]:
    return [(batch, cfg.num_classes)]


@dataclass(frozen=True)
class UNetConfig:
    in_channels: int = 3
    base: int = 32
    out_channels: int = 2
    image_size: int = 128  # must be a multiple of 4


UNET_FULL = UNetConfig()
UNET_SMALL = UNetConfig(base=8, image_size=16)


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1),
        nn.ReLU(inplace=True),
    )


class UNetBlock(nn.Module):
    def __init__(self, cfg: UNetConfig) -> None:
        super().__init__()
        if cfg.image_size % 4 != 0:
            raise ValueError(f"image_size {cfg.image_size} must be a multiple of 4")
        b = cfg.base
        self.enc1 = _double_conv(cfg.in_channels, b)
        self.enc2 = _double_conv(b, 2 * b)
        self.bottom = _double_conv(2 * b, 4 * b)
        self.up_bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec2 = _double_conv(4 * b + 2 * b, 2 * b)
        self.dec1 = _double_conv(2 * b + b, b)
        self.head = nn.Conv2d(b, cfg.out_channels, 1)
        randomize_batchnorm(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)  # H
        e2 = self.enc2(F.max_pool2d(e1, 2))  # H/2
        m = self.bottom(F.avg_pool2d(e2, 2))  # H/4
        d2 = self.dec2(torch.cat([F.interpolate(m, scale_factor=2.0, mode="nearest"), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up_bilinear(d2), e1], dim=1))
        return self.head(d1)


def unet_inputs(cfg: UNetConfig, batch: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    size = cfg.image_size
    return (torch.randn(batch, cfg.in_channels, size, size, generator=gen),)


def unet_output_shapes(cfg: UNetConfig, batch: int) -> list[tuple[int, ...]]:
    return [(batch, cfg.out_channels, cfg.image_size, cfg.image_size)]
