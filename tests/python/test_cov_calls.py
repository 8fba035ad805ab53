"""Scans, sorts and scatters (converters/scans_sorts.py and scatters.py, ember's library-call
stage): each compiled in strict mode (so ember must convert it) and compared with eager
PyTorch, over several shapes, dtypes, dims and edge values (NaN, +-inf, 0-d, empty,
duplicates)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _helpers_torch import check

INF, NAN = float("inf"), float("nan")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def rand(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def with_nan(*shape, seed=0):
    x = rand(*shape, seed=seed)
    flat = x.view(-1)
    for i, v in enumerate([NAN, INF, -INF, NAN][: max(flat.numel() // 4, 1)]):
        flat[(i * 5 + 1) % flat.numel()] = v
    return x


# ---- scans ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), -2), ((2, 3, 4), 1), ((), 0),
                                       ((0, 3), 1)])
def test_scans(shape, dim):
    check(lambda x: (torch.cumsum(x, dim), torch.cumprod(x, dim), torch.logcumsumexp(x, dim)),
          rand(*shape) * 0.5, tol=1e-4)


def test_scans_with_nan_and_integers():
    check(lambda x: (torch.cumsum(x, 1), torch.logcumsumexp(x, 1)), with_nan(3, 8), tol=1e-4)
    i = torch.tensor([[3, -1, 4], [1, 5, -9]], dtype=torch.int32)
    check(lambda x: (torch.cumsum(x, 1), torch.cumprod(x, 0), x.cumsum(0, dtype=torch.float64)),
          i)
    check(lambda x: torch.cumsum(x, 0), torch.tensor([True, False, True]))


def test_long_float32_cumsum_matches_eager():
    check(lambda x: torch.cumsum(x, 0), rand(100_000) + 0.1, tol=1e-4)


@pytest.mark.parametrize("fn", [torch.cummax, torch.cummin])
def test_cummax_cummin(fn):
    check(lambda x: tuple(fn(x, 1)), with_nan(3, 9))
    check(lambda x: tuple(fn(x, 0)), torch.tensor([[2, 2], [1, 3], [2, 3]], dtype=torch.int64))
    check(lambda x: tuple(fn(x, 0)), torch.tensor(1.5))


def test_cumulative_trapezoid_and_masked_scans():
    y = rand(3, 6)
    check(lambda y: torch.cumulative_trapezoid(y), y, tol=1e-4)
    check(lambda y: torch.cumulative_trapezoid(y, dx=0.5, dim=0), y, tol=1e-4)
    check(lambda y, x: torch.cumulative_trapezoid(y, x), y, torch.linspace(0, 2, 6) ** 2,
          tol=1e-4)
    mask = rand(3, 6, seed=1) > 0
    check(lambda y, m: (torch.masked._ops.cumsum(y, 1, mask=m),
                        torch.masked._ops.cumprod(y, 0, mask=m)), y, mask, tol=1e-4)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient(edge_order):
    """Central differences inside, one-sided ones at the ends: uniform spacings (one, or
    one per dim) and coordinates (uneven, per dim), over every dim or some."""
    x = rand(4, 5, 3)
    check(lambda x: torch.gradient(x, edge_order=edge_order), x, tol=1e-4)
    check(lambda x: torch.gradient(x, spacing=2.0, dim=1, edge_order=edge_order), x, tol=1e-4)
    check(lambda x: torch.gradient(x, spacing=[0.5, 2.1], dim=(0, -1),
                                   edge_order=edge_order), x, tol=1e-4)
    check(lambda x, a, b: torch.gradient(x, spacing=[a, b], dim=(1, 0),
                                         edge_order=edge_order),
          x, torch.tensor([0.0, 0.4, 1.5, 1.7, 3.0]), torch.tensor([1.0, 3.0, 2.0, 8.0]),
          tol=1e-4)


# ---- sorts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_nan_largest(descending):
    x = torch.tensor([[2.0, NAN, 1.0, 2.0, -INF, 1.0, INF, NAN]])
    check(lambda x: tuple(torch.sort(x, descending=descending, stable=True)), x)
    check(lambda x: torch.argsort(x, dim=0, descending=descending, stable=True),
          torch.tensor([[3, 1], [1, 1], [3, 0]]))
    check(lambda x: tuple(torch.sort(x, 0)), torch.tensor(2.0))
    check(lambda x: tuple(x.sort(-1)), rand(0, 4))
    check(lambda x: torch.msort(x), rand(5, 3))


def test_sort_with_dynamic_shapes():
    fn = lambda x: tuple(torch.sort(x, 1, descending=True))  # noqa: E731
    compiled = torch.compile(fn, backend="ember", dynamic=True, options={"strict": True})
    for shape in [(3, 7), (5, 2), (4, 11)]:
        x = rand(*shape)
        for a, e in zip(compiled(x), fn(x), strict=True):
            torch.testing.assert_close(a, e)


def test_topk_kthvalue_median():
    x = rand(4, 7)
    check(lambda x: tuple(torch.topk(x, 3)), x)
    check(lambda x: tuple(torch.topk(x, 2, dim=0, largest=False)), x)
    # a 0-d tensor: k = 0 and k = 1 both give the tensor and index 0 in torch
    check(lambda x: (*torch.topk(x[0, 0] + 1, 0), *torch.topk(x[0, 1] * 2, 1)), x)
    check(lambda x: tuple(torch.kthvalue(x, 3, 1, keepdim=True)), x)
    check(lambda x: (torch.median(x), *torch.median(x, 1)), x)
    check(lambda x: (torch.nanmedian(x), *torch.nanmedian(x, 0, keepdim=True)), with_nan(5, 4))
    check(lambda x: tuple(torch.median(x, -1)), with_nan(4, 6))
    allnan = torch.full((2, 3), NAN)
    check(lambda x: tuple(torch.nanmedian(x, 1)), allnan)
    check(lambda x: tuple(torch.median(x, 0)), torch.tensor([[4, 1], [2, 2], [9, 3]]))


def test_quantile():
    x, nan_x = rand(4, 9), with_nan(3, 8)
    q = torch.tensor([0.0, 0.25, 0.5, 0.9, 1.0])
    for interp in ["linear", "lower", "higher", "midpoint", "nearest"]:
        check(lambda x, n, q, i=interp: (
            torch.quantile(x, 0.3, dim=1, interpolation=i),
            torch.quantile(x, q, dim=0, keepdim=True, interpolation=i),
            torch.nanquantile(n, 0.4, dim=1, interpolation=i),
            torch.quantile(n, 0.4, dim=1, interpolation=i)), x, nan_x, q, tol=1e-4)
    check(lambda x, q: (torch.quantile(x, 0.75), torch.quantile(x, q[1:3], keepdim=True)), x, q,
          tol=1e-4)


# ---- scatters ------------------------------------------------------------------------------
def test_scatter_family():
    x = rand(3, 5)
    idx = torch.tensor([[0, 1, 2, 0], [2, 0, 0, 1]])
    src = rand(2, 4, seed=1)
    check(lambda x, i, s: torch.scatter(x, 0, i, s), x, idx, src)
    check(lambda x, i: torch.scatter(x, 1, i, 2.5), x, idx)
    check(lambda x, i, s: torch.scatter(x, 1, i, s, reduce="multiply"), x, idx, src)
    check(lambda x, i, s: torch.scatter_add(x, 0, i, s), x, idx, src)
    check(lambda x, i, s: tuple(torch.scatter_reduce(x, 0, i, s, r, include_self=inc)
                                for r in ["sum", "prod", "mean", "amax", "amin"]
                                for inc in [True, False]), x, idx, src, tol=1e-4)
    ints = torch.tensor([[5, -3, 7], [1, 2, -8]])
    check(lambda x, i: torch.scatter_reduce(x, 1, i, x, "mean", include_self=False), ints,
          torch.tensor([[0, 0, 2], [1, 1, 1]]))
    check(lambda x, i, s: torch.scatter(x, 0, i, s), torch.tensor(1.0), torch.tensor(0),
          torch.tensor(4.0))


def test_index_family():
    x = rand(4, 3)
    idx = torch.tensor([2, 0, 2])
    src = rand(3, 3, seed=2)
    check(lambda x, i, s: torch.index_add(x, 0, i, s, alpha=2.0), x, idx, src)
    check(lambda x, i, s: x.index_copy(1, i, s), x, torch.tensor([2, 0, 1]), rand(4, 3, seed=8))
    check(lambda x, i, s: tuple(x.index_reduce(0, i, s, r, include_self=inc)
                                for r in ["prod", "mean", "amax", "amin"]
                                for inc in [True, False]), x, idx, src, tol=1e-4)
    check(lambda x, i: torch.index_fill(x, 1, i, -1.0), x, torch.tensor([0, 2]))
    check(lambda x, i: torch.index_fill(x, 0, i, torch.tensor(3.0)), x, torch.tensor([1]))


def test_put_index_put_masked_scatter():
    x = rand(3, 4)
    check(lambda x, i, s: torch.put(x, i, s), x, torch.tensor([0, -1, 5]), rand(3, seed=3))
    check(lambda x, i, s: x.put(i, s, accumulate=True), x, torch.tensor([[1, 1], [-12, 3]]),
          rand(2, 2, seed=3))
    i0, i1 = torch.tensor([0, 2, 0]), torch.tensor([1, -1, 1])
    check(lambda x, a, b, v: torch.index_put(x, (a, b), v, accumulate=True), x, i0, i1,
          rand(3, seed=4))
    check(lambda x, a, v: torch.index_put(x, (a,), v), x, torch.tensor([2, 0]), rand(4, seed=5))
    mask = rand(3, 4, seed=6) > 0
    check(lambda x, m, s: torch.masked_scatter(x, m, s), x, mask, rand(20, seed=7))


def test_max_unpool_and_histc():
    x = rand(2, 3, 8, 8)
    out, ind = F.max_pool2d(x, 2, return_indices=True)
    check(lambda o, i: F.max_unpool2d(o, i, 2), out, ind)
    out1, ind1 = F.max_pool1d(rand(2, 3, 9), 3, stride=2, return_indices=True)
    check(lambda o, i: F.max_unpool1d(o, i, 3, stride=2, output_size=[9]), out1, ind1)
    check(lambda x: torch.histc(x, bins=7, min=-1.0, max=1.5), with_nan(50))
    check(lambda x: (torch.histc(x, bins=5) + 1, torch.histc(x, 4, 1, 3) * 2), rand(0, 3))


def test_searchsorted_bucketize():
    seq = torch.tensor([[1.0, 2.0, 2.0, 5.0, NAN], [-INF, 0.0, 0.0, 3.0, INF]])
    v = torch.tensor([[2.0, NAN, 0.5], [0.0, INF, -1.0]])
    check(lambda s, v: (torch.searchsorted(s, v), torch.searchsorted(s, v, right=True),
                        torch.searchsorted(s, v, side="right", out_int32=True)), seq, v)
    b = torch.tensor([-1, 0, 0, 4])
    x = torch.tensor([[-2, 0, 3], [4, 9, -1]])
    check(lambda x, b: (torch.bucketize(x, b), torch.bucketize(x, b, right=True),
                        torch.searchsorted(b, 0)), x, b)


def test_scatter_index_out_of_range_falls_back_to_eager_error():
    x = torch.zeros(3)
    fn = lambda x, i, s: torch.scatter_add(x, 0, i, s)  # noqa: E731
    compiled = torch.compile(fn, backend="ember")
    with pytest.raises(RuntimeError):
        compiled(x, torch.tensor([0, 3]), torch.ones(2))
