"""The torch backend runs ember's kernels on PyTorch's OpenMP threads (ember.use_openmp) from
its first training graph on, unless EMBER_OPENMP=0; results are the same on either set of
threads."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
from torch import nn

import ember
from ember.torch import backend

needs_openmp = pytest.mark.skipif(not torch.backends.openmp.is_available(),
                                  reason="this PyTorch does not use OpenMP")


@pytest.fixture
def fresh_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The backend's one-time choice not made yet, and ember on its own pool; both as they
    were afterwards."""
    before = ember.uses_openmp()
    monkeypatch.setattr(backend, "_threads_shared", False)
    monkeypatch.delenv("EMBER_OPENMP", raising=False)
    ember.use_openmp(False)
    yield
    ember.use_openmp(before)


def small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


@needs_openmp
def test_a_training_compile_switches_ember_to_torchs_openmp_threads(fresh_choice: None) -> None:
    model = small_model()
    x = torch.randn(16, 64)
    compiled = torch.compile(model, backend="ember")
    with torch.no_grad():  # inference alone stays on ember's pool
        out = compiled(x)
        ref = model(x)
    assert not ember.uses_openmp()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="ember")
    compiled(x).sum().backward()  # a graph that needs gradients
    assert ember.uses_openmp()


@needs_openmp
def test_ember_openmp_0_keeps_ember_on_its_own_pool(fresh_choice: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_OPENMP", "0")
    assert backend.share_torch_threads() is False
    assert not ember.uses_openmp()
    monkeypatch.setattr(backend, "_threads_shared", False)
    monkeypatch.setenv("EMBER_OPENMP", "1")
    assert backend.share_torch_threads() is True


def test_invalid_ember_openmp_value_is_a_clear_error(fresh_choice: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_OPENMP", "yes")
    with pytest.raises(ValueError, match=r"EMBER_OPENMP='yes': use 0 to keep ember's kernels"):
        backend.share_torch_threads()


@needs_openmp
def test_graph_results_identical_on_either_set_of_threads(fresh_choice: None) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 1024)).astype(np.float32)
    w = rng.standard_normal((1024, 1024)).astype(np.float32)
    x = ember.symbol([8, 1024])
    y = ember.symbol([1024, 1024])
    outputs = [ember.ops.relu(x @ ember.ops.transpose(y, 0, 1)), ember.ops.sum(y, 0),
               ember.ops.softmax(y, -1)]
    compiled = ember.graph.optimize(ember.trace_from(outputs, [x, y])).build()
    inputs = [ember.asarray(a), ember.asarray(w)]
    assert ember.use_openmp(True)
    on = [o.numpy().copy() for o in compiled.run(inputs)]
    ember.use_openmp(False)
    off = [o.numpy().copy() for o in compiled.run(inputs)]
    for p, q in zip(on, off, strict=True):
        np.testing.assert_array_equal(p, q)
    ref = np.maximum(a.astype(np.float64) @ w.astype(np.float64).T, 0)
    np.testing.assert_allclose(on[0], ref, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(on[1], w.astype(np.float64).sum(0), rtol=1e-4, atol=1e-3)


@needs_openmp
def test_training_step_gradients_identical_on_either_set_of_threads(fresh_choice: None) -> None:
    x = torch.randn(8, 64)
    target = torch.arange(8) % 10
    grads = []
    for openmp in (True, False):
        model = small_model()
        compiled = torch.compile(model, backend="ember")
        torch.nn.functional.cross_entropy(compiled(x), target).backward()  # compiles
        ember.use_openmp(openmp)
        for p in model.parameters():
            p.grad = None
        torch.nn.functional.cross_entropy(compiled(x), target).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for g_on, g_off in zip(*grads, strict=True):
        torch.testing.assert_close(g_on, g_off, rtol=0, atol=0)
    model = small_model()
    torch.nn.functional.cross_entropy(model(x), target).backward()
    for g, p in zip(grads[0], model.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
