"""Batch norms in training mode that update their running statistics, through ember under
no_grad: the prepare phase splits each into the norm of the batch and two updates of the
statistics (inplace.split_running_stat_updates); the outputs and the statistics left in the
module's buffers (or the tensors passed in) must be eager PyTorch's, call after call."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from ember.torch.report import EagerFallbackWarning


@pytest.fixture(autouse=True)
def _reset() -> None:
    torch._dynamo.reset()


def _run_both(fn: Any, *args: torch.Tensor, calls: int = 2) -> None:
    """fn compiled (strict: every node converts) and eager, each on its own copies of args,
    `calls` times; outputs and the (updated) arguments compared after each call."""
    ours = [a.clone() for a in args]
    theirs = [a.clone() for a in args]
    compiled = torch.compile(fn, backend="ember", options={"strict": True})
    for _ in range(calls):
        with torch.no_grad():
            got, want = compiled(*ours), fn(*theirs)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
        for i, (g, w) in enumerate(zip(ours, theirs, strict=True)):
            torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-6, msg=f"argument {i}")


def _data() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, 5, 5, generator=g)
    return (x, torch.randn(3, generator=g), torch.rand(3, generator=g) + 0.5,
            torch.randn(3, generator=g), torch.randn(3, generator=g))


@pytest.mark.parametrize("fn", [
    lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3),
    lambda x, rm, rv, w, b: torch.batch_norm(x, w, b, rm, rv, True, 0.2, 1e-5, False),
    lambda x, rm, rv, w, b: torch.native_batch_norm(x, w, b, rm, rv, True, 0.2, 1e-5),
    lambda x, rm, rv, w, b: torch._native_batch_norm_legit(x, w, b, rm, rv, True, 0.2, 1e-5),
    lambda x, rm, rv, w, b: torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.2,
                                                                   1e-5)[:3],
    lambda x, rm, rv, w, b: F.instance_norm(x, rm, rv, w, b, use_input_stats=True,
                                            momentum=0.4),
], ids=["F.batch_norm", "torch.batch_norm", "native_batch_norm", "native_batch_norm_legit",
        "batch_norm_with_update", "instance_norm"])
def test_norms_update_the_running_statistics_they_are_given(fn: Any) -> None:
    _run_both(fn, *_data())


def test_later_readers_see_the_updated_statistics() -> None:
    def fn(x: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor) -> torch.Tensor:
        y = F.batch_norm(x, rm, rv, training=True, momentum=0.5)
        return y * rm.reshape(1, -1, 1, 1) + rv.sum()

    x, rm, rv, _, _ = _data()
    _run_both(fn, x, rm, rv, calls=3)


def test_a_module_in_training_mode_keeps_its_buffers_as_eager() -> None:
    torch.manual_seed(0)
    ours = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU(), torch.nn.BatchNorm2d(4, momentum=None)).train()
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                 torch.nn.ReLU(), torch.nn.BatchNorm2d(4, momentum=None)).train()
    theirs.load_state_dict(ours.state_dict())
    compiled = torch.compile(ours, backend="ember")
    x = torch.randn(2, 3, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        for _ in range(3):
            with torch.no_grad():
                torch.testing.assert_close(compiled(x), theirs(x), atol=1e-5, rtol=1e-5)
    for (name, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items(),
                                 strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6, msg=name)


def test_a_momentum_that_changes_between_calls() -> None:
    # Dynamo passes such a float as a value known only at run time
    fn = lambda x, rm, rv, m: F.batch_norm(x, rm, rv, training=True, momentum=m)  # noqa: E731
    x, rm, rv, _, _ = _data()
    ours, theirs = [rm.clone(), rv.clone()], [rm.clone(), rv.clone()]
    compiled = torch.compile(fn, backend="ember")
    for m in (0.1, 0.25, 0.7):
        with torch.no_grad():
            torch.testing.assert_close(compiled(x, *ours, m), fn(x, *theirs, m))
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)
