"""Window operators on the vectorized paths, compared with torch.

Convolutions with groups > 1 (depthwise included) and pooling are reductions that ember
vectorizes along the output's width: strided loads for stride 2, masked lane ranges where a
window reaches into the padding, and full vectors, a partial vector and the 4/2/1-vector
blocks of a row. The widths below (odd, above and below the vector width, past 32) exercise
each of those; fused epilogues (bias, relu6, a residual add) run on the same vectors.
Reductions over a leading axis take the same path. Every result must match torch to 1e-4
(convolutions relative to the output's magnitude).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from test_nn_ops import Case, randn, run_cases

from ember import ops

WIDTHS = (5, 13, 45)  # a partial vector only; one vector and a tail; 4-, 2-, 1-vector blocks


def grouped_case(c, h, w, mult, k, stride, padding, dilation, groups) -> Case:
    x, wt = randn(2, c, h, w), randn(c * mult, c // groups, k, k, seed=1)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    return Case(
        f"conv2d c{c} {h}x{w} x{mult} k{k} {kw}",
        lambda a, b: ops.conv2d(a, b, **kw),
        lambda a, b: F.conv2d(a, b, **kw),
        [x, wt],
        rel=True,
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_depthwise_and_grouped_conv2d(width: int) -> None:
    cases = []
    for stride in (1, 2):
        for padding, dilation in ((0, 1), (1, 1), (2, 2), (1, 2)):
            cases.append(grouped_case(6, 7, width, 1, 3, stride, padding, dilation, groups=6))
        cases.append(grouped_case(4, 9, width, 2, 5, stride, 2, 1, groups=4))  # multiplier 2
        cases.append(grouped_case(6, 6, width, 1, 3, stride, 1, 1, groups=2))  # 1 < groups < C
        cases.append(grouped_case(6, 6, width, 1, 3, stride, 1, 1, groups=3))
    cases.append(grouped_case(3, 5, width, 1, 3, (2, 1), (1, 0), 1, groups=3))  # mixed
    run_cases(cases)


def test_depthwise_conv2d_fused_epilogues() -> None:
    """Bias, batch norm (scale and shift), relu6 and a residual add fused after a depthwise
    convolution: the MobileNetV2 block."""
    c = 8
    x, w = randn(1, c, 23, 37), randn(c, 1, 3, 3, seed=1)
    bias, scale, shift = randn(c, seed=2), randn(c, seed=3), randn(c, seed=4)
    res = randn(1, c, 23, 37, seed=5)
    res2 = randn(1, c, 12, 19, seed=6)

    def ember_fn(stride: int):
        def fn(a, b, bi, sc, sh, r):
            y = ops.conv2d(a, b, stride=stride, padding=1, groups=c)
            y = (y + ops.reshape(bi, [c, 1, 1])) * ops.reshape(sc, [c, 1, 1])
            return ops.relu6(y + ops.reshape(sh, [c, 1, 1])) + r

        return fn

    def torch_fn(stride: int):
        def fn(a, b, bi, sc, sh, r):
            y = F.conv2d(a, b, bi, stride=stride, padding=1, groups=c)
            return F.relu6(y * sc.view(c, 1, 1) + sh.view(c, 1, 1)) + r

        return fn

    run_cases(
        [
            Case("dw s1 epilogue", ember_fn(1), torch_fn(1), [x, w, bias, scale, shift, res]),
            Case("dw s2 epilogue", ember_fn(2), torch_fn(2), [x, w, bias, scale, shift, res2]),
        ]
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_padded_pooling(width: int) -> None:
    cases = []
    for stride in (1, 2):
        for padding in (0, 1):
            for fn in ("max_pool2d", "avg_pool2d"):
                x = randn(2, 3, 8, width)
                kw = dict(kernel_size=3, stride=stride, padding=padding)
                torch_fn = getattr(F, fn)
                cases.append(
                    Case(
                        f"{fn} w{width} {kw}",
                        lambda a, f=fn, k=kw: getattr(ops, f)(a, **k),
                        lambda a, f=torch_fn, k=kw: f(a, **k),
                        [x],
                    )
                )
    x = randn(1, 2, 9, width)
    cases.append(
        Case(
            f"max_pool2d w{width} dilated, ceil_mode",
            lambda a: ops.max_pool2d(a, 3, 2, 1, dilation=2, ceil_mode=True),
            lambda a: F.max_pool2d(a, 3, 2, 1, dilation=2, ceil_mode=True),
            [x],
        )
    )
    # Every window has some padding and the maximum of a window may be negative: the
    # padding (-inf) must never win.
    xn = -randn(1, 2, 3, width).abs() - 1
    cases.append(
        Case(
            f"max_pool2d w{width} negative",
            lambda a: ops.max_pool2d(a, 3, 1, 1),
            lambda a: F.max_pool2d(a, 3, 1, 1),
            [xn],
        )
    )
    run_cases(cases)


def test_reductions_over_leading_axes() -> None:
    """Sums and maxima whose reduced axis is not the last: vectors along the output."""
    a, b, c = randn(5, 37), randn(3, 7, 21), randn(37, 2)
    run_cases(
        [
            Case("sum dim 0", lambda t: ops.sum(t, 0), lambda t: t.sum(0), [a]),
            Case("mean dim 1", lambda t: ops.mean(t, 1), lambda t: t.mean(1), [b]),
            Case("max dim 1", lambda t: ops.max(t, 1), lambda t: t.amax(1), [b]),
            Case("sum of pairs", lambda t: ops.sum(t, 1), lambda t: t.sum(1), [c]),  # stride 2
            Case("max of pairs", lambda t: ops.max(t, 1), lambda t: t.amax(1), [c]),
        ]
    )


def test_tril_vectorized_matches() -> None:
    """tril / triu select on an index condition affine in the column: a masked lane range."""
    x = randn(19, 45)
    run_cases(
        [
            Case("tril", lambda t: ops.tril(t, 0), lambda t: torch.tril(t, 0), [x]),
            Case("triu 3", lambda t: ops.triu(t, 3), lambda t: torch.triu(t, 3), [x]),
            Case("tril -20", lambda t: ops.tril(t, -20), lambda t: torch.tril(t, -20), [x]),
        ]
    )

