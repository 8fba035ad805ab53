"""Numbers known only when the graph runs, and results without elements.

Dynamo passes a Python float that changes between calls as a 0-d tensor or a SymFloat (and
an int as a SymInt): alpha and beta of add / sub / addmm / baddbmm, hardtanh's bounds, a
norm's eps, a fill value, eye's size. Each must convert (strict mode) and match eager PyTorch
on every call. A call whose every result has no elements (an inverse of 0 x 0 matrices)
converts whatever the operator; the *_ex factorizations of empty matrices report info 0.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from _helpers_torch import check


@pytest.fixture(autouse=True)
def _reset() -> None:
    torch._dynamo.reset()


def _calls(fn: Any, argsets: list[tuple], **options: Any) -> None:
    compiled = torch.compile(fn, backend="ember", options={"strict": True, **options})
    for args in argsets:
        with torch.no_grad():
            got, want = compiled(*args), fn(*args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5, equal_nan=True)


def test_alpha_and_beta_that_change_between_calls() -> None:
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    a, b = torch.randn(2, 3, 5), torch.randn(2, 5, 4)
    c = torch.randn(2, 3, 4)
    c[0, 0, 0] = float("nan")  # beta = 0 ignores input, NaN included

    def fn(x: torch.Tensor, y: torch.Tensor, s: float, t: float) -> Any:
        return (torch.add(x, y, alpha=s), torch.sub(x, 2.0, alpha=t), torch.rsub(x, y, alpha=s),
                torch.baddbmm(c, a, b, beta=t, alpha=s), F.hardtanh(x, -s, t))

    _calls(fn, [(x, y, 0.5, 2.0), (x, y, 1.5, 0.0), (x, y, -0.25, 3.0)])


def test_eps_and_fill_values_known_at_run_time() -> None:
    x = torch.randn(2, 3, 4)

    def fn(x: torch.Tensor, eps: float) -> Any:
        return (F.rms_norm(x, [4], eps=eps), F.layer_norm(x, [3, 4], eps=eps),
                F.group_norm(x, 3, eps=eps), torch.full((2, 2), x.max()),
                torch.full_like(x, x.min()), x.new_full((3,), x.sum()))

    _calls(fn, [(x, 1e-5), (x, 0.5), (x, 2.0)])


def test_softmin_of_a_0d_tensor_and_eye_of_a_symbolic_size() -> None:
    check(lambda x: (F.softmin(x, 0), F.softmin(x, -1, dtype=torch.float64)), torch.tensor(0.3))
    compiled = torch.compile(lambda x: (torch.eye(x.shape[0]), torch.eye(3, x.shape[1]) * 2),
                             backend="ember", dynamic=True, options={"strict": True})
    for shape in [(3, 4), (5, 2)]:
        x = torch.randn(*shape)
        with torch.no_grad():
            got = compiled(x)
        torch.testing.assert_close(got[0], torch.eye(shape[0]))
        torch.testing.assert_close(got[1], torch.eye(3, shape[1]) * 2)


def test_results_without_elements_convert() -> None:
    empty = torch.randn(0, 0)
    check(lambda a: (torch.linalg.inv(a), torch.linalg.cholesky(a), torch.linalg.solve(a, a),
                     torch.linalg.solve_triangular(a, a, upper=True)), empty)
    check(lambda x: torch.topk(x, 0, dim=1), torch.randn(3, 4))
    check(lambda a: (*torch.linalg.inv_ex(a), *torch.linalg.cholesky_ex(a),
                     *torch.linalg.lu_factor_ex(a), *torch.linalg.solve_ex(a, a)),
          torch.randn(2, 0, 0))
