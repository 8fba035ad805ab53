"""Symbolic sizes (dynamic=True) in the torch.compile backend around convolutions and
pooling: output lengths such as (s - 2) // 2 + 1 that views, broadcasts, group norms and
index selects read, ceil-mode and adaptive pooling of symbolic sizes, glu's halves. Each
matches eager PyTorch at several sizes in strict mode, and a new size reuses the compiled
graph."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _helpers_dynamic import STRICT, check_lengths, max_err
from torch import nn

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def test_a_view_to_fixed_sizes_of_a_symbolic_product(builds):
    # view(-1, 35) of [b, 6, h - 1, w - 1] with (h - 1) * (w - 1) == 35 by the guards;
    # then batch_norm with 35 channels.
    bn = nn.BatchNorm1d(35).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)

    def fn(x):
        y = torch.nn.functional.conv2d(x, torch.ones(6, 3, 2, 2) / 12)
        return bn(y.view(-1, 35))

    check_lengths(fn, lambda n: (torch.randn(n, 3, 6, 8),), (5, 7, 3), builds)


def test_index_select_along_a_strided_convolutions_output(builds):
    # The select moves the last axis first and views the rest as one: its length is
    # 8 * s * ((s - 2) // 2 + 1), which is not 4 * s * s for an odd s (found by the fuzzer).
    w, b = torch.randn(8, 3, 2, 2), torch.randn(8)
    idx = torch.tensor([1, 0, 1])

    def fn(x):
        return torch.index_select(F.conv2d(x, w, b, stride=2), 3, idx)

    check_lengths(fn, lambda n: (torch.randn(2, 3, n, n),), (5, 7, 6), builds)


def test_a_broadcast_against_a_constant_size_after_pooling(builds):
    # max_pool2d's output length (s - 2) // 2 + 1 broadcasts with 2: Dynamo guards that it
    # is 2, and ember's result is refined to it.
    def fn(x):
        y = torch.nn.functional.max_pool2d(x, 2)
        return y + torch.arange(2.0), y.mean()

    check_lengths(fn, lambda n: (torch.randn(n, 2, 5, 4),), (3, 6, 2), builds)


def test_group_norm_of_half_a_symbolic_size(builds):
    # (s + 1) // 2 channels: the group reshape must see (1 + s) // 2 and (s + 1) // 2 as one
    # size.
    def fn(x):
        y = x[:, ::2]
        return torch.nn.functional.group_norm(y.reshape(y.shape[0], y.shape[1], -1), 1)

    check_lengths(fn, lambda n: (torch.randn(2, n, 4),), (7, 9, 5), builds)


@pytest.mark.parametrize(("kernel", "stride", "padding"),
                         [(2, 2, 0), (3, 2, 1), (3, 3, 1), (2, 3, 0)])
def test_pooling_with_ceil_mode_over_symbolic_sizes(kernel, stride, padding, builds):
    # the rounded-up window count, less the last window where it would start past the
    # padding (torch's rule), as a size expression: sizes where it applies and where not.
    # (Not max_pool1d: Dynamo itself specializes its sizes under ceil_mode.)
    def fn(x):
        return (
            F.max_pool2d(x, kernel, stride, padding, ceil_mode=True),
            F.avg_pool2d(x, kernel, stride, padding, ceil_mode=True),
            F.avg_pool2d(x, kernel, stride, padding, ceil_mode=True, count_include_pad=False),
        )

    # torch's meta function guards on whether the last window is dropped, so Dynamo may
    # trace a graph per outcome; each is symbolic and compiled by ember with no fallback.
    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    with torch.no_grad():
        for h, w in [(7, 8), (9, 10), (5, 11), (6, 6), (13, 4), (8, 7)]:
            x = torch.randn(2, 3, h, w)
            assert max_err(compiled(x), fn(x)) < 1e-5, (h, w)
    assert len(builds) < 6, builds


def test_adaptive_average_pooling_of_symbolic_sizes(builds):
    # windows [floor(i * n / o), ceil((i + 1) * n / o)) of a symbolic n, each divided by its
    # own length; sizes that divide evenly, that do not, and that are smaller than the output
    def fn(x):
        return (F.adaptive_avg_pool2d(x, (2, 3)), F.adaptive_avg_pool2d(x, 5),
                F.adaptive_avg_pool1d(x[0], 4))

    sizes = [(7, 8), (9, 10), (6, 6), (3, 2), (14, 7)]
    check_lengths(fn, lambda k: (torch.randn(2, 3, *sizes[k]),), tuple(range(len(sizes))), builds)


@pytest.mark.parametrize("dim", [0, -1, 1])
def test_glu_halves_a_symbolic_size(builds, dim):
    # torch checks that the halved size is even; ember cannot see that n == 2 * (n // 2), so
    # it cuts the two halves instead of reshaping into [2, n // 2] (an OpInfo sample that ran
    # eagerly once its sizes were symbolic).
    check_lengths(lambda x: F.glu(x, dim), lambda n: (torch.randn(2 * n, 2 * n + 2, 4),),
                  (3, 5, 4), builds)
