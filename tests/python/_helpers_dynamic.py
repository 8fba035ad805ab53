"""What the dynamic-shape tests of the torch backend share (test_torch_dynamic.py,
test_torch_dynamic_spatial.py): the largest difference from eager's outputs, and the check
that a function compiled with dynamic=True matches eager at several lengths without building
again (with conftest.py's `builds` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

STRICT = {"strict": True}


def max_err(actual: Any, expected: Any) -> float:
    if isinstance(expected, (tuple, list)):
        return max(max_err(a, e) for a, e in zip(actual, expected, strict=True))
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if expected.dtype == torch.bool or not expected.is_floating_point():
        return 0.0 if torch.equal(actual, expected) else float("inf")
    return float((actual.float() - expected.float()).abs().max())


def check_lengths(fn: Callable[..., Any], make: Callable[[int], tuple], lengths: tuple,
                  built: list[str]) -> None:
    """fn compiled with dynamic=True and strict matches eager at every length, and only the
    first length builds an ember graph."""
    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    with torch.no_grad():
        for k, n in enumerate(lengths):
            args = make(n)
            assert max_err(compiled(*args), fn(*args)) < 1e-4, f"length {n}"
            if k == 0:
                first = len(built)
                assert first >= 1
    assert len(built) == first, f"a new length rebuilt: {built}"
