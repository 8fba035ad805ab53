"""MobileNetV2 (Sandler et al. 2018): inverted residuals with depthwise convolutions."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ._init import randomize_batchnorm

# expansion t, output channels c, repeats n, first stride s
_SETTINGS: tuple[tuple[int, int, int, int], ...] = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


@dataclass(frozen=True)
class MobileNetV2Config:
    width_mult: float = 1.0
    num_classes: int = 1000
    image_size: int = 224
    last_channels: int = 1280
    dropout: float = 0.2


FULL = MobileNetV2Config()
SMALL = MobileNetV2Config(width_mult=0.25, num_classes=10, image_size=32, last_channels=128)


def make_divisible(v: float, divisor: int = 8) -> int:
    """Round channels to a multiple of ``divisor`` without dropping more than 10%."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU6(nn.Sequential):
    def __init__(self, cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1):
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = int(round(cin * expand))
        self.use_residual = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(ConvBNReLU6(cin, hidden, kernel=1))
        layers += [
            ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),  # depthwise
            nn.Conv2d(hidden, cout, 1, bias=False),  # linear bottleneck
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.use_residual:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, cfg: MobileNetV2Config) -> None:
        super().__init__()
        cin = make_divisible(32 * cfg.width_mult)
        last = make_divisible(cfg.last_channels * max(1.0, cfg.width_mult))
        layers: list[nn.Module] = [ConvBNReLU6(3, cin, stride=2)]
        for t, c, n, s in _SETTINGS:
            cout = make_divisible(c * cfg.width_mult)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        layers.append(ConvBNReLU6(cin, last, kernel=1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(cfg.dropout), nn.Linear(last, cfg.num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.01)
                nn.init.zeros_(m.bias)
        randomize_batchnorm(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)


def make_inputs(
    cfg: MobileNetV2Config, batch: int, gen: torch.Generator
) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, 3, cfg.image_size, cfg.image_size, generator=gen),)


def output_shapes(cfg: MobileNetV2Config, batch: int) -> list[tuple[int, ...]]:
    return [(batch, cfg.num_classes)]
