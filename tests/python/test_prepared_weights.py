"""Constant GEMM weights prepared once when the model is compiled: Linear layers and matmuls
with constant weights match torch for any number of rows, the prepared bytes are reported,
a tied weight is stored once (plus its panels), and saved models reload bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

QUIET = {"progress": False}


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(77, 130)
        self.fc2 = torch.nn.Linear(130, 33, bias=False)
        self.w = torch.nn.Parameter(torch.randn(33, 65) / 8)  # x @ W, stored [K, N]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc2(torch.relu(self.fc1(x)))) @ self.w


@pytest.mark.parametrize("rows", [1, 2, 5, 64, 200])
def test_constant_weights_match_torch(rows, tmp_path):
    torch.manual_seed(rows)
    model = Mlp().eval()
    x = torch.randn(rows, 77)
    compiled = ember.compile(model, (x,), options=QUIET)
    with torch.no_grad():
        expected = model(x)
    got = compiled(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    # Three weights prepared: each is at least its own size (panels are zero-padded).
    prepared = compiled.graph.prepared_weight_bytes
    assert prepared >= 4 * (77 * 130 + 130 * 33 + 33 * 65)
    info = compiled.info()
    assert info["prepared_weight_bytes"] == prepared
    # No weight is held twice: the biases and the panels, nothing else.
    assert info["weight_bytes"] == prepared + 4 * 130
    assert "prepared for the kernels" in repr(compiled)

    path = str(tmp_path / "mlp.ember")
    compiled.save(path)
    loaded = ember.load(path)
    assert loaded.info()["prepared_weight_bytes"] == prepared
    np.testing.assert_array_equal(loaded(x).numpy(), got.numpy())


class TiedHead(torch.nn.Module):
    """GPT-2's tied embedding: one weight gathered and used by the output projection."""

    def __init__(self) -> None:
        super().__init__()
        self.wte = torch.nn.Embedding(50, 24)
        self.head = torch.nn.Linear(24, 50, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.wte(ids)))


def test_tied_weight_is_stored_once_plus_its_panels():
    model = TiedHead().eval()
    ids = torch.tensor([[3, 1, 49, 0, 7]])
    compiled = ember.compile(model, (ids,), options=QUIET)
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids), model(ids), rtol=1e-4, atol=1e-4)
    info = compiled.info()
    assert info["prepared_weight_bytes"] > 0
    assert info["weight_bytes"] == 50 * 24 * 4 + info["prepared_weight_bytes"]
