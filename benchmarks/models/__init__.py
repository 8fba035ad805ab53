"""Benchmark models, written from scratch in plain torch.

Every model is registered in :data:`MODELS` as a :class:`ModelSpec`. A spec holds two
configurations: the full-size one (the architecture as published, used by the benchmark
runner) and a ``small`` one (same code paths, tiny sizes) that builds and runs in a few
milliseconds so tests can use it.

Weights are initialized randomly from a fixed seed, so two builds of the same spec give
bit-identical parameters, and building a model does not disturb the caller's RNG state.
No weights or data are ever downloaded.

Usage::

    from benchmarks.models import MODELS

    spec = MODELS["resnet18"]
    model = spec.build(small=True)          # nn.Module in eval mode
    inputs = spec.example_inputs(batch_size=1, small=True)
    out = model(*inputs)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch
from torch import nn

from . import bert, gpt2, mlp, mobilenet_v2, resnet, small_cnn

__all__ = ["MODELS", "ModelSpec", "get_model"]

C = TypeVar("C")

DEFAULT_SEED = 0


@dataclass(frozen=True)
class ModelSpec(Generic[C]):
    """How to build one benchmark model and its inputs.

    Attributes:
        name: registry key.
        description: one line, for listings.
        factory: builds the module from a config (called under a fixed seed).
        make_inputs: ``(config, batch_size, generator) -> inputs`` for ``model(*inputs)``.
        output_shapes: ``(config, batch_size) -> shapes`` of the flattened outputs, in order.
        full: configuration used for benchmarking.
        small: reduced configuration for fast tests.
        seed: seed for parameter initialization and example inputs.
    """

    name: str
    description: str
    factory: Callable[[C], nn.Module]
    make_inputs: Callable[[C, int, torch.Generator], tuple[torch.Tensor, ...]]
    output_shapes: Callable[[C, int], list[tuple[int, ...]]]
    full: C
    small: C
    seed: int = DEFAULT_SEED

    def config(self, small: bool = False) -> C:
        return self.small if small else self.full

    def build(self, small: bool = False) -> nn.Module:
        """Build the model in eval mode with deterministic weights."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = self.factory(self.config(small))
        return model.eval()

    def example_inputs(self, batch_size: int = 1, small: bool = False) -> tuple[torch.Tensor, ...]:
        """Deterministic example inputs for ``model(*inputs)``."""
        gen = torch.Generator().manual_seed(self.seed + 1)
        return self.make_inputs(self.config(small), batch_size, gen)

    def expected_output_shapes(
        self, batch_size: int = 1, small: bool = False
    ) -> list[tuple[int, ...]]:
        """Shapes of the model's output tensors (flattened in pytree order)."""
        return self.output_shapes(self.config(small), batch_size)


def _spec(
    name: str,
    description: str,
    factory: Callable[[Any], nn.Module],
    make_inputs: Callable[[Any, int, torch.Generator], tuple[torch.Tensor, ...]],
    output_shapes: Callable[[Any, int], list[tuple[int, ...]]],
    full: Any,
    small: Any,
) -> ModelSpec[Any]:
    return ModelSpec(name, description, factory, make_inputs, output_shapes, full, small)


MODELS: dict[str, ModelSpec[Any]] = {
    s.name: s
    for s in [
        _spec(
            "mlp",
            "3-layer MLP 784-1024-1024-10 (ReLU, GELU)",
            mlp.MLP,
            mlp.make_inputs,
            mlp.output_shapes,
            mlp.FULL,
            mlp.SMALL,
        ),
        _spec(
            "resnet18",
            "ResNet-18 (BasicBlock), 1x3x224x224",
            resnet.ResNet,
            resnet.make_inputs,
            resnet.output_shapes,
            resnet.RESNET18,
            resnet.RESNET18_SMALL,
        ),
        _spec(
            "resnet50",
            "ResNet-50 (Bottleneck), 1x3x224x224",
            resnet.ResNet,
            resnet.make_inputs,
            resnet.output_shapes,
            resnet.RESNET50,
            resnet.RESNET50_SMALL,
        ),
        _spec(
            "mobilenet_v2",
            "MobileNetV2 1.0 (inverted residuals, depthwise, ReLU6), 1x3x224x224",
            mobilenet_v2.MobileNetV2,
            mobilenet_v2.make_inputs,
            mobilenet_v2.output_shapes,
            mobilenet_v2.FULL,
            mobilenet_v2.SMALL,
        ),
        _spec(
            "bert",
            "BERT-base encoder (12x768, erf GELU, explicit attention + mask), seq 128",
            bert.Bert,
            bert.make_inputs,
            bert.output_shapes,
            bert.FULL,
            bert.SMALL,
        ),
        _spec(
            "gpt2",
            "GPT-2 small (12x768, tanh GELU, tril mask + masked_fill, tied head), seq 128",
            gpt2.GPT2,
            gpt2.make_inputs,
            gpt2.output_shapes,
            gpt2.FULL,
            gpt2.SMALL,
        ),
        _spec(
            "gpt2_sdpa",
            "GPT-2 small with F.scaled_dot_product_attention(is_causal=True), seq 128",
            gpt2.GPT2,
            gpt2.make_inputs,
            gpt2.output_shapes,
            gpt2.FULL_SDPA,
            gpt2.SMALL_SDPA,
        ),
        _spec(
            "conv1d_net",
            "tiny 1-D convnet (conv1d, batchnorm1d, maxpool1d, avgpool, linear)",
            small_cnn.Conv1dNet,
            small_cnn.conv1d_inputs,
            small_cnn.conv1d_output_shapes,
            small_cnn.CONV1D_FULL,
            small_cnn.CONV1D_SMALL,
        ),
        _spec(
            "unet_block",
            "UNet-style block (pools, nearest + bilinear upsampling, torch.cat skips)",
            small_cnn.UNetBlock,
            small_cnn.unet_inputs,
            small_cnn.unet_output_shapes,
            small_cnn.UNET_FULL,
            small_cnn.UNET_SMALL,
        ),
    ]
}


def get_model(name: str) -> ModelSpec[Any]:
    """Look a model up by name; the error lists the valid names."""
    try:
        return MODELS[name]
    except KeyError:
        valid = ", ".join(MODELS)
        raise KeyError(f"unknown model {name!r}; valid models: {valid}") from None
