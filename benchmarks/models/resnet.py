"""ImageNet ResNets (He et al. 2015), v1.5 layout: the stride sits on the 3x3 convolution.

Written in plain torch. Like common implementations the blocks use in-place ReLU and an
in-place residual add, so compilers see those patterns too.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ._init import randomize_batchnorm


@dataclass(frozen=True)
class ResNetConfig:
    block: str  # "basic" or "bottleneck"
    layers: tuple[int, int, int, int]
    width: int = 64  # channels of the stem and of the first stage
    num_classes: int = 1000
    image_size: int = 224


RESNET18 = ResNetConfig("basic", (2, 2, 2, 2))
RESNET50 = ResNetConfig("bottleneck", (3, 4, 6, 3))
RESNET18_SMALL = ResNetConfig("basic", (1, 1, 1, 1), width=16, num_classes=10, image_size=32)
RESNET50_SMALL = ResNetConfig("bottleneck", (1, 1, 1, 1), width=16, num_classes=10, image_size=32)


def conv3x3(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(cin: int, cout: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        self.conv1 = conv3x3(cin, width, stride)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv3x3(width, width)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int, downsample: nn.Module | None) -> None:
        super().__init__()
        cout = width * self.expansion
        self.conv1 = conv1x1(cin, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv3x3(width, width, stride)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = conv1x1(width, cout)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, cfg: ResNetConfig) -> None:
        super().__init__()
        if cfg.block not in ("basic", "bottleneck"):
            raise ValueError(f"unknown block {cfg.block!r}; valid: 'basic', 'bottleneck'")
        block: type[BasicBlock] | type[Bottleneck]
        block = BasicBlock if cfg.block == "basic" else Bottleneck
        w = cfg.width
        self.conv1 = nn.Conv2d(3, w, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        stages: list[nn.Module] = []
        cin = w
        for i, n in enumerate(cfg.layers):
            width = w * 2**i
            stride = 1 if i == 0 else 2
            stage, cin = self._make_stage(block, cin, width, n, stride)
            stages.append(stage)
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, cfg.num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        randomize_batchnorm(self)

    @staticmethod
    def _make_stage(
        block: type[BasicBlock] | type[Bottleneck], cin: int, width: int, n: int, stride: int
    ) -> tuple[nn.Sequential, int]:
        cout = width * block.expansion
        downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            downsample = nn.Sequential(conv1x1(cin, cout, stride), nn.BatchNorm2d(cout))
        blocks: list[nn.Module] = [block(cin, width, stride, downsample)]
        blocks += [block(cout, width, 1, None) for _ in range(n - 1)]
        return nn.Sequential(*blocks), cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def make_inputs(cfg: ResNetConfig, batch: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, 3, cfg.image_size, cfg.image_size, generator=gen),)


def output_shapes(cfg: ResNetConfig, batch: int) -> list[tuple[int, ...]]:
    return [(batch, cfg.num_classes)]
