"""Optimize a PyTorch model with torch.compile(backend="ember").

Run it with `python examples/torch_quickstart.py`. It compiles a small convolutional
network, checks the result against eager PyTorch, times both, and shows the settings of
docs/torch-backend.md: the input graph, the correctness report, tuning, bfloat16 and a
dynamic batch size.
"""

from __future__ import annotations

import time

import torch
from torch import nn

import ember.torch


class SmallNet(nn.Module):
    """conv-bn-relu blocks, a residual add, pooling and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = torch.relu(self.block(x) + x)
        return self.head(x)


def best_of(fn, *args, repeat: int = 20) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    torch.manual_seed(0)
    model = SmallNet().eval()
    x = torch.randn(1, 3, 32, 32)

    # 1. Compile and check against eager PyTorch. Inference only: use no_grad.
    model_opt = torch.compile(model, backend="ember")
    with torch.no_grad():
        start = time.perf_counter()
        y = model_opt(x)  # the first call traces, converts and compiles
        print(f"first call (compiles): {time.perf_counter() - start:.2f} s")
        torch.testing.assert_close(y, model(x), atol=1e-4, rtol=1e-4)
        print(f"eager: {best_of(model, x):.3f} ms   ember: {best_of(model_opt, x):.3f} ms")

    # 2. See what Dynamo hands over, and each operator's error against eager.
    torch._dynamo.reset()
    ember.torch.dynamo_config.print_input_graph(True).correctness_report(True)
    with torch.no_grad():
        torch.compile(model, backend="ember")(x)
    ember.torch.dynamo_config.reset()

    # 3. Settings per model: tuning (mode="max-autotune" is search_space=2), bfloat16.
    torch._dynamo.reset()
    with torch.no_grad():
        tuned = torch.compile(model, backend="ember", mode="max-autotune")
        torch.testing.assert_close(tuned(x), model(x), atol=1e-4, rtol=1e-4)
        bf16 = torch.compile(model, backend="ember", options={"use_bf16": True})
        err = (bf16(x) - model(x)).abs().max().item()
        print(f"bfloat16 compute, float32 in and out: max error {err:.1e}")

    # 4. A dynamic batch size: one compile serves every batch size.
    torch._dynamo.reset()
    dyn = torch.compile(model, backend="ember", dynamic=True)
    with torch.no_grad():
        for batch in (1, 3, 8):
            xb = torch.randn(batch, 3, 32, 32)
            torch.testing.assert_close(dyn(xb), model(xb), atol=1e-4, rtol=1e-4)
    print("dynamic batch sizes 1, 3, 8: match eager")


if __name__ == "__main__":
    main()
