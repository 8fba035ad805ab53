"""Overload one of ember's converters with a custom one, for some calls only.

GELU has an exact (erf) form and a tanh approximation. We register our own converter for the
tanh form only: a capability validator accepts the node when approximate == "tanh", and HIGH
priority puts it before ember's standard converter. The exact form fails the validator and
falls through to the standard converter. Run it with `python examples/overload_converter.py`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import ember
import ember.torch
from ember.torch import HIGH, registry
from ember.torch.registry import register_function


class GeLU(torch.nn.Module):
    def __init__(self, mode: str = "tanh") -> None:
        super().__init__()
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate=self.mode)


x = torch.randn(2, 5)


def compile_and_check(mode: str) -> torch.Tensor:
    torch._dynamo.reset()
    module = GeLU(mode).eval()
    compiled = torch.compile(module, backend="ember", options={"strict": True})
    with torch.no_grad():
        out = compiled(x)
        torch.testing.assert_close(out, module(x), atol=1e-5, rtol=1e-5)
    return out


# The baseline: ember's standard converter, tanh mode.
standard = compile_and_check("tanh")
print("standard converter:", standard)


# A converter for the ATen overload torch.ops.aten.gelu.default. Its arguments follow the ATen
# schema (`self`, keyword-only `approximate`); it also converts Dynamo's calls of
# torch.nn.functional.gelu, which share that layout.
def tanh_only(node, settings) -> bool:
    return node.kwargs.get("approximate") == "tanh"


@register_function(
    torch.ops.aten.gelu.default,
    capability_validator=tanh_only,  # which nodes this converter takes
    supports_dynamic_shapes=True,  # usable when shapes are symbolic
    priority=HIGH,  # tried before ember's standard converter
)
def custom_gelu(self: ember.Tensor, *, approximate: str = "none") -> ember.Tensor:
    print("\n--- using the custom tanh GELU converter ---\n")
    inner = math.sqrt(2.0 / math.pi) * (self + 0.044715 * self * self * self)
    return 0.5 * self * (1.0 + ember.ops.tanh(inner))


custom = compile_and_check("tanh")  # prints the banner above
print("custom converter:", custom)
print("tanh approximations agree:", bool(torch.allclose(standard, custom, atol=1e-6)))

# approximate="none" fails the validator: no banner, ember's standard converter is used.
exact = compile_and_check("none")
print("exact GELU (standard converter):", exact)
print("candidates for F.gelu, in order:",
      [c.name for c, _ in registry.candidates_for("function", F.gelu)])
