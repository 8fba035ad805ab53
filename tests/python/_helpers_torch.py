"""Helpers shared by the torch converter tests."""

from __future__ import annotations

from typing import Any

import torch


def check(fn: Any, *args: Any, tol: float = 1e-5, **options: Any) -> None:
    """fn compiled by ember in strict mode (it must convert) against eager, under no_grad:
    dtypes, shapes and values of every output."""
    compiled = torch.compile(fn, backend="ember", options={"strict": True, **options})
    with torch.no_grad():
        actual = compiled(*args)
        expected = fn(*args)
    actual = actual if isinstance(actual, (tuple, list)) else [actual]
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a.dtype == e.dtype, f"output {i}: {a.dtype} != {e.dtype}"
        assert a.shape == e.shape, f"output {i}: {a.shape} != {e.shape}"
        torch.testing.assert_close(a, e, atol=tol, rtol=tol, equal_nan=True,
                                   msg=lambda m, i=i: f"output {i}: {m}")
