"""F.fold (col2im) through torch.compile(backend="ember"): against eager PyTorch in float64
and float32 (bit for bit: each pixel adds its terms in torch's order), the adjoint of
F.unfold, and a dtype ember does not fold. (Sizes that do not match never reach ember:
Dynamo raises torch's error while it traces.)"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ember.torch.report import EagerFallbackWarning


def blocks(size: int, k: int, d: int, p: int, s: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else v


CASES = [  # output_size, kernel_size, dilation, padding, stride, channels, batch (None: unbatched)
    ((4, 5), (2, 2), 1, 0, 1, 3, 2),
    ((6, 6), 3, 1, 1, 2, 2, 1),
    ((5, 7), (2, 3), (1, 2), (0, 1), (1, 2), 6, None),
    ((7, 7), 3, 2, 2, 2, 4, 3),
    ((8, 3), (3, 1), 1, (1, 0), 1, 1, 2),
    ((1, 1), 1, 1, 0, 1, 5, 1),
]


def columns(case: tuple, dtype: torch.dtype) -> torch.Tensor:
    out, k, d, p, s, c, n = case
    ks, ds, ps, ss = pair(k), pair(d), pair(p), pair(s)
    positions = 1
    for i in range(2):
        positions *= blocks(out[i], ks[i], ds[i], ps[i], ss[i])
    shape = (c * ks[0] * ks[1], positions)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(((n,) if n is not None else ()) + shape, generator=g, dtype=torch.float64)
    return x.to(dtype)


def compiled_fold(case: tuple):  # noqa: ANN201
    out, k, d, p, s, _, _ = case
    torch._dynamo.reset()
    return torch.compile(lambda t: F.fold(t, out, k, d, p, s), backend="ember",
                         options={"strict": True})


@pytest.mark.parametrize("case", CASES, ids=[str(c[:5]) for c in CASES])
def test_fold_matches_eager(case: tuple) -> None:
    out, k, d, p, s, _, _ = case
    for dtype in (torch.float64, torch.float32):
        x = columns(case, dtype)
        y = compiled_fold(case)(x)
        ref = F.fold(x, out, k, d, p, s)
        assert y.shape == ref.shape and y.dtype == ref.dtype
        torch.testing.assert_close(y, ref, rtol=0, atol=0)


def test_fold_is_the_adjoint_of_unfold() -> None:
    # <unfold(a), b> == <a, fold(b)> in float64.
    out, k, d, p, s = (9, 8), (3, 2), (2, 1), (1, 1), (2, 3)
    g = torch.Generator().manual_seed(3)
    a = torch.randn(2, 3, *out, generator=g, dtype=torch.float64)
    cols = F.unfold(a, k, d, p, s)
    b = torch.randn(cols.shape, generator=g, dtype=torch.float64)
    torch._dynamo.reset()
    fold = torch.compile(lambda t: F.fold(t, out, k, d, p, s), backend="ember",
                         options={"strict": True})
    lhs = (cols * b).sum()
    rhs = (a * fold(b)).sum()
    torch.testing.assert_close(lhs, rhs, rtol=1e-12, atol=1e-12)


def test_fold_of_bfloat16_runs_eagerly_with_a_warning_naming_it() -> None:
    x = torch.randn(2, 4, 9).to(torch.bfloat16)
    ref = F.fold(x, (4, 4), 2)
    torch._dynamo.reset()
    fn = torch.compile(lambda t: F.fold(t, (4, 4), 2), backend="ember")
    with pytest.warns(EagerFallbackWarning, match="fold of a bfloat16 tensor"):
        y = fn(x)
    torch.testing.assert_close(y, ref, rtol=0, atol=0)
