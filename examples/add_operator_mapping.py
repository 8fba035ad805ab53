"""Add operator mappings (docs/add-operator-mapping.md, step by step).

We remove ember's converters for a few operators, see the error that names them, and add
them back: a function (torch.nn.functional.relu, operator.add), a module (torch.nn.Linear)
and a Tensor method (torch.Tensor.flatten). Run it with
`python examples/add_operator_mapping.py`.
"""

from __future__ import annotations

import operator

import torch
import torch.nn.functional as F
from torch import nn

import ember
import ember.torch
from ember.torch import registry
from ember.torch.registry import (
    ModuleConverter,
    register_function,
    register_method,
    register_module,
)

# ---- 1. remove some mappings, for the demonstration ------------------------------------------
# nn.Linear reaches ember as torch.nn.functional.linear (Dynamo inlines module calls), so we
# remove both the function's and the module's converters.
for target in (F.relu, operator.add, torch.Tensor.flatten, F.linear, nn.Linear):
    registry.remove(target)


class Model(nn.Module):
    """Uses nn.Linear, F.relu, operator.add and Tensor.flatten."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(10, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = F.relu(x)
        x = x + x
        return x.flatten()


def run_model() -> None:
    torch._dynamo.reset()
    model = Model().eval()
    # strict: fail instead of running unconverted operators in eager PyTorch.
    model_opt = torch.compile(model, backend="ember", options={"strict": True})
    x = torch.randn(10, 10)
    with torch.no_grad():
        torch.testing.assert_close(model_opt(x), model(x), atol=1e-5, rtol=1e-5)
    print("success!")


# ---- 2. compile: one error lists every missing mapping ---------------------------------------
try:
    run_model()
except Exception as e:  # Dynamo wraps the backend's error in BackendCompilerFailed
    print(getattr(e, "inner_exception", e))
    print()


# ---- 3. add the mappings back ----------------------------------------------------------------
@register_function(F.relu)
def relu(input: ember.Tensor, inplace: bool = False) -> ember.Tensor:
    # the signature follows F.relu; `input` is an ember.Tensor, and so is the result
    return ember.ops.relu(input)


@register_function(operator.add)
def add(a: ember.Tensor, b: ember.Tensor) -> ember.Tensor:
    return ember.ops.add(a, b)


@register_module(nn.Linear)
class Linear(ModuleConverter):
    def __init__(self, module: nn.Linear) -> None:
        super().__init__(module)
        # param() gives the module's weights as ember tensors sharing their memory
        self.weight_t = ember.ops.transpose(self.param("weight"), 0, 1)
        self.bias = self.param("bias", optional=True)

    def __call__(self, x: ember.Tensor) -> ember.Tensor:
        y = ember.ops.matmul(x, self.weight_t)
        return y if self.bias is None else y + self.bias


# Tensor.flatten is still missing: the error now names only it.
try:
    run_model()
except Exception as e:
    print(getattr(e, "inner_exception", e))
    print()


@register_method(torch.Tensor.flatten)
def flatten(self: ember.Tensor, start_dim: int = 0, end_dim: int = -1) -> ember.Tensor:
    return ember.ops.flatten(self, start_dim, end_dim)


run_model()

# Registering again without a priority replaces the default converter: the last registration
# takes effect.
@register_function(F.relu)
def relu_again(input: ember.Tensor, inplace: bool = False) -> ember.Tensor:
    return ember.ops.maximum(input, 0.0)


print("converters of F.relu now:", [c.name for c in registry.converters(F.relu)])
run_model()
