"""Window operators on the vectorized paths, compared with torch.

Grouped convolutions (1 < groups < C, or not float32) and pooling are reductions that ember
vectorizes along the output's width: strided loads for stride 2, masked lane ranges where a
window reaches into the padding, and full vectors, a partial vector and the 4/2/1-vector
blocks of a row. The widths below (odd, above and below the vector width, past 32) exercise
each of those; fused epilogues (bias, relu6, a residual add) run on the same vectors.
Reductions over a leading axis take the same path. Depthwise float32 convolutions and
bilinear resizing are routines of the runtime library (ember_rt/depthwise.h, resize.h) with
the fused epilogue applied to each row they finish: the maps below cover small and large
planes, several bands of rows, strides, dilation, channel multipliers and conv1d. Every
result must match torch to 1e-4 (convolutions relative to the output's magnitude).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from test_nn_ops import Case, randn, run_cases

import ember
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


POOL_GEOMETRIES = [  # kernel, stride, padding, dilation, ceil_mode
    ((3, 3), (2, 2), (1, 1), (1, 1), False), ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), True), ((3, 2), (1, 2), (1, 0), (2, 1), False),
    ((2, 3), (3, 2), (1, 1), (1, 2), True), ((1, 1), (1, 1), (0, 0), (1, 1), False)]


@pytest.mark.parametrize("width", [11, 75])
@pytest.mark.parametrize("values", ["randn", "ties", "all -inf but one", "nan", "int64"])
@pytest.mark.parametrize("geometry", POOL_GEOMETRIES)
def test_max_pool2d_indices_match_torch(values: str, geometry: tuple, width: int) -> None:
    """max_pool2d_indices gives torch's max_pool2d_with_indices: the first of equal maxima,
    a NaN's position (the last of several), the window's first position inside the input
    where every element is -inf (the padding never wins), on 4-d and 3-d inputs and
    integers. Rows of 75 reach the
    float32 routine's vectors of outputs (11 stay element by element)."""
    kernel, stride, padding, dilation, ceil_mode = geometry
    gen = torch.Generator().manual_seed(hash((values, geometry, width)) % 2**31)
    shape = (2, 3, 9, width)
    x = torch.randn(*shape, generator=gen)
    if values == "ties":
        x = torch.randint(0, 3, shape, generator=gen).float()
    elif values == "all -inf but one":
        x = torch.full(shape, float("-inf"))
        x[0, 0, 4, 4] = x[1, 2, 0, width * 2 // 3] = 1.0
    elif values == "nan":
        x[0, 1, 3, 3] = x[1, 2, 0, 0] = x[0, 0, 5, width // 2] = float("nan")
        x[1, 1, 2, width // 2 : width // 2 + 3] = float("nan")  # torch: the window's last NaN
    elif values == "int64":
        x = torch.randint(-5, 5, shape, generator=gen)
    args = (list(kernel), list(stride), list(padding), list(dilation), ceil_mode)
    _, want = F.max_pool2d(x.float(), *args, return_indices=True)
    for given, expected in ((x, want), (x[0], want[0])):
        got = ops.max_pool2d_indices(ember.from_torch(given.contiguous()), *args).torch()
        assert got.dtype == torch.int64
        assert torch.equal(got, expected), (given.shape, (got != expected).sum())


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



def test_depthwise_conv2d_routine() -> None:
    """Depthwise float32 convolutions (ember_rt::lib::depthwise_conv2d): channel counts around
    the vector widths, maps from 1x1 to 112x112 (several bands of rows), odd maps, strides,
    padding 0 to 3, dilation, 5x5 and 7x7 kernels, a multiplier of 2, conv1d."""
    cases = []
    for c in (1, 7, 16, 17, 33, 96):
        for size in (1, 7, 14):
            for stride in (1, 2):
                cases.append(grouped_case(c, size, size, 1, 3, stride, 1, 1, groups=c))
    for padding in (0, 1, 2):
        for stride in (1, 2):
            cases.append(grouped_case(17, 15, 17, 1, 3, stride, padding, 1, groups=17))
    cases.append(grouped_case(16, 15, 17, 1, 3, 1, 2, 2, groups=16))  # dilation 2
    cases.append(grouped_case(16, 15, 17, 1, 3, 2, 2, 2, groups=16))
    for k in (5, 7):
        cases.append(grouped_case(33, 14, 14, 1, k, 1, k // 2, 1, groups=33))
        cases.append(grouped_case(9, 28, 28, 1, k, 2, k // 2, 1, groups=9))
    cases.append(grouped_case(8, 14, 15, 2, 3, 2, 1, 1, groups=8))  # multiplier 2
    cases.append(grouped_case(5, 2, 3, 1, 3, 1, 3, 1, groups=5))  # padding wider than the map
    cases.append(grouped_case(3, 112, 112, 1, 3, 1, 1, 1, groups=3))  # several bands
    cases.append(grouped_case(3, 112, 112, 1, 3, 2, 1, 1, groups=3))
    x1, w1 = randn(2, 6, 40), randn(6, 1, 5, seed=1)
    cases.append(
        Case(
            "conv1d depthwise k5 s2 d2",
            lambda a, b: ops.conv1d(a, b, stride=2, padding=3, dilation=2, groups=6),
            lambda a, b: F.conv1d(a, b, stride=2, padding=3, dilation=2, groups=6),
            [x1, w1],
            rel=True,
        )
    )
    x64, w64 = randn(1, 4, 9, 9, dtype=torch.float64), randn(4, 1, 3, 3, dtype=torch.float64)
    cases.append(  # float64 keeps the reduction
        Case(
            "conv2d depthwise float64",
            lambda a, b: ops.conv2d(a, b, padding=1, groups=4),
            lambda a, b: F.conv2d(a, b, padding=1, groups=4),
            [x64, w64],
            rel=True,
        )
    )
    run_cases(cases)


def test_depthwise_routine_fused_epilogues() -> None:
    """Bias, batch norm, relu6 and a residual add fused after the routine, on a 7x7 map (rows
    shorter than a vector) and a 56x56 one, and after a depthwise conv1d."""
    cases = []
    for c, size in ((96, 7), (24, 56)):
        x, w = randn(1, c, size, size), randn(c, 1, 3, 3, seed=1)
        sc, sh, res = randn(c, seed=3), randn(c, seed=4), randn(1, c, size, size, seed=5)

        def ember_fn(a, b, s, t, r, c=c):
            y = ops.conv2d(a, b, padding=1, groups=c)
            return ops.relu6(y * ops.reshape(s, [c, 1, 1]) + ops.reshape(t, [c, 1, 1])) + r

        def torch_fn(a, b, s, t, r, c=c):
            y = F.conv2d(a, b, padding=1, groups=c)
            return F.relu6(y * s.view(c, 1, 1) + t.view(c, 1, 1)) + r

        inputs = [x, w, sc, sh, res]
        cases.append(Case(f"dw {c}x{size}x{size} epilogue", ember_fn, torch_fn, inputs))
    x1, w1, b1 = randn(2, 6, 33), randn(6, 1, 3, seed=1), randn(6, seed=2)
    cases.append(
        Case(
            "conv1d depthwise + bias + relu",
            lambda a, b, c: ops.relu(
                ops.conv1d(a, b, padding=1, groups=6) + ops.reshape(c, [6, 1])
            ),
            lambda a, b, c: F.relu(F.conv1d(a, b, c, padding=1, groups=6)),
            [x1, w1, b1],
        )
    )
    run_cases(cases)


def test_bilinear_resize_routine() -> None:
    """upsample_bilinear2d (ember_rt::lib::resize_bilinear for float32): the UNet decoder's 2x
    upscale concatenated with a skip connection, with a fused epilogue, a downscale,
    align_corners, output rows split into several blocks, and float64 (a compute stage)."""
    cases = []
    d, e = randn(1, 8, 32, 32), randn(1, 4, 64, 64, seed=1)
    cases.append(
        Case(
            "bilinear 2x + concat",
            lambda a, b: ops.concat([ops.upsample_bilinear2d(a, [64, 64], False), b], 1),
            lambda a, b: torch.cat(
                [F.interpolate(a, scale_factor=2, mode="bilinear", align_corners=False), b], 1
            ),
            [d, e],
        )
    )
    r = randn(1, 8, 64, 64, seed=2)
    cases.append(
        Case(
            "bilinear 2x + relu + add",
            lambda a, b: ops.relu(ops.upsample_bilinear2d(a, [64, 64], False)) + b,
            lambda a, b: F.relu(F.interpolate(a, size=(64, 64), mode="bilinear")) + b,
            [d, r],
        )
    )
    for shape, size, align in (
        ((2, 3, 17, 23), (9, 10), False),
        ((2, 3, 17, 23), (40, 31), True),
        ((1, 2, 300, 3), (1000, 5), False),  # several blocks of rows per plane
    ):
        x = randn(*shape)
        cases.append(
            Case(
                f"bilinear {shape}->{size} align_corners={align}",
                lambda a, s=size, al=align: ops.upsample_bilinear2d(a, list(s), al),
                lambda a, s=size, al=align: F.interpolate(
                    a, size=s, mode="bilinear", align_corners=al
                ),
                [x],
            )
        )
    x64 = randn(1, 2, 5, 7, dtype=torch.float64)
    cases.append(
        Case(
            "bilinear float64",
            lambda a: ops.upsample_bilinear2d(a, [11, 6], False),
            lambda a: F.interpolate(a, size=(11, 6), mode="bilinear"),
            [x64],
        )
    )
    run_cases(cases, atol=1e-5)
