"""Memory of training with torch.compile(backend="ember"): the compiled graphs share one
workspace pool (a step's forward and backward keep one workspace, allocated once), and the
backward drops the activations the forward saved while it runs. Values are checked against
eager PyTorch; memory through the pool's counters and the tensors' finalizers."""

from __future__ import annotations

import threading
import weakref
from typing import Any
from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import ember.torch
from ember.torch import training
from ember.torch.phases.wrap import WORKSPACES, CompiledSegment
from ember.torch.pipeline import compile_graph

OPTIONS = {"progress": False}

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(8 * 16 * 16, 5)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.tanh(self.conv2(x))
        return self.head(x.flatten(1))


def case() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return Net(), torch.randn(4, 3, 16, 16), torch.randint(0, 5, (4,))


def train_step(model: Any, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    return loss.detach()


class Probe:
    """Stands for a CompiledGraph and says whether its run is in progress."""

    def __init__(self, graph: Any) -> None:
        self.graph, self.running = graph, False

    def run(self, inputs: Any, release_inputs: bool = False) -> Any:
        self.running = True
        try:
            return self.graph.run(inputs, release_inputs=release_inputs)
        finally:
            self.running = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.graph, name)


def probe(segment: CompiledSegment) -> Probe:
    if not isinstance(segment.compiled, Probe):
        segment.compiled = Probe(segment.compiled)
    return segment.compiled


class Recorder:
    """Wraps the compiled graphs' boxed call: keeps each graph's CompiledSegment, and counts
    the tensor arguments of each call (after the first, which compiles) that were freed
    while its CompiledGraph ran, not after (when the Python frames holding them end).
    Arguments whose memory is in `held` (the weights, the input) are not counted."""

    def __init__(self, held: set[int]) -> None:
        self.held = held
        self.segments: dict[str, CompiledSegment] = {}
        self.calls: list[tuple[str, int, int]] = []  # (graph, tensor args, freed in the run)
        self.original = training._Boxed.__call__

    def __call__(self, boxed: Any, args: list[Any]) -> Any:
        freed: list[bool] = []
        tensors = [a for a in args if isinstance(a, torch.Tensor)
                   and a.untyped_storage().data_ptr() not in self.held]
        if isinstance(boxed.compiled, CompiledSegment):
            p = probe(boxed.compiled)
            for t in tensors:
                weakref.finalize(t, lambda: freed.append(p.running))
        count = len(tensors)
        del tensors
        out = self.original(boxed, args)
        self.calls.append((boxed.index, count, sum(freed)))
        if isinstance(boxed.compiled, CompiledSegment):
            self.segments[boxed.index] = boxed.compiled
        return out


def recorded_steps(steps: int) -> tuple[Recorder, nn.Module, nn.Module]:
    model, x, target = case()
    reference = Net()
    reference.load_state_dict(model.state_dict())
    held = {t.untyped_storage().data_ptr() for t in [*model.parameters(), x, target]}
    recorder = Recorder(held)
    compiled = torch.compile(model, backend="ember", options=OPTIONS)
    with mock.patch.object(training._Boxed, "__call__", lambda self, args: recorder(self, args)):
        for _ in range(steps):
            torch.testing.assert_close(train_step(compiled, x, target),
                                       train_step(reference, x, target), rtol=1e-5, atol=1e-6)
    return recorder, model, reference


def test_forward_and_backward_keep_one_workspace_allocated_once():
    WORKSPACES.clear()
    allocations = WORKSPACES.stats["allocations"]
    recorder, model, reference = recorded_steps(3)
    sizes = {k: s.compiled.graph.memory_stats["workspace_bytes"]
             for k, s in recorder.segments.items()}
    assert set(sizes) == {"0_forward", "0_backward"}
    stats = WORKSPACES.stats
    assert stats["idle"] == 1
    assert stats["idle_bytes"] == max(sizes.values())
    # The first call of each graph at most (the smaller one first); none in later steps.
    assert stats["allocations"] - allocations <= 2
    for p, r in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5)
    ember.torch.reset()
    assert WORKSPACES.stats["idle"] == 0


def test_the_backward_frees_the_saved_activations_during_its_call():
    recorder, _, _ = recorded_steps(2)
    backward = [(n, freed) for graph, n, freed in recorder.calls if graph == "0_backward"]
    assert len(backward) == 2
    n, freed = backward[1]  # the first call compiled
    # The saved activations the backward received (the relu and tanh outputs) are freed while
    # its CompiledGraph runs: it held the last reference. The incoming gradient (the last of
    # the n) is not: autograd holds it until the backward node returns, as in eager.
    assert n == 3
    assert freed == n - 1, f"{freed} of {n} arguments freed during the run"


def test_a_boxed_call_frees_its_inputs_in_the_call_and_keeps_the_values():
    def f(a, b):
        return (torch.relu(a) * 2 + b.sum(),)

    gm = torch.fx.symbolic_trace(f)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    expected = f(a, b)[0]
    segment = compile_graph(gm, [a, b], ember.torch.config.resolve_settings(options=OPTIONS),
                            "t")
    assert isinstance(segment, CompiledSegment)
    segment(a, b)  # the auto-profile's calls, if any, come first
    segment(a, b)
    p = probe(segment)
    freed: list[tuple[str, bool]] = []
    args = [a.clone(), b.clone()]
    weakref.finalize(args[0], lambda: freed.append(("a", p.running)))
    weakref.finalize(args[1], lambda: freed.append(("b", p.running)))
    (out,) = segment.call_boxed(args)
    assert args == []
    assert sorted(freed) == [("a", True), ("b", True)]
    torch.testing.assert_close(out, expected)


def test_two_compiled_graphs_run_concurrently_from_two_threads():
    torch.manual_seed(0)
    w1, w2 = torch.randn(32, 32), torch.randn(32, 48)

    def f(x):
        return torch.tanh(x @ w1) * 3 + x

    def g(x):
        return torch.relu(x @ w2).sum(-1) - x.mean(-1)

    cf = torch.compile(f, backend="ember", options=OPTIONS)
    cg = torch.compile(g, backend="ember", options=OPTIONS)
    xs = [torch.randn(64, 32) for _ in range(8)]
    with torch.no_grad():
        cf(xs[0]), cg(xs[0])  # compiled here: Dynamo compiles on one thread
        failures: list[str] = []

        def work(fn: Any, ref: Any, name: str) -> None:
            for i in range(40):
                x = xs[i % len(xs)]
                try:
                    torch.testing.assert_close(fn(x), ref(x), rtol=1e-4, atol=1e-5)
                except AssertionError as e:
                    failures.append(f"{name} call {i}: {e}")

        threads = [threading.Thread(target=work, args=(cf, f, "f")),
                   threading.Thread(target=work, args=(cg, g, "g"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
