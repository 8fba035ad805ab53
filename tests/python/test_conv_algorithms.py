"""Convolution algorithms chosen by the graph optimizer (choose_algorithms, src/ops/conv.cpp).

The optimized graph's print names each convolution's algorithm; Winograd F(4x4, 3x3) runs
3x3 stride-1 convolutions on constant weights where its rule says it wins, and the others
keep the forms they had (stride 2, dilation 2, groups 2, 5x5, 1x1, a weight that is an
input). Winograd's results are compared with float64 references (max abs / relative error
printed with -s) and, through the torch backend, with eager PyTorch.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import ember
from ember import ops

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks.models


def _weights(o: int, c: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)


def _reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, **kw: int) -> np.ndarray:
    """The convolution in float64 (torch's conv2d on float64 copies)."""
    y = F.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), **kw)
    if bias is not None:
        y = y + torch.from_numpy(bias).double()[None, :, None, None]
    return y.numpy()


def _optimized(x_shape: tuple[int, ...], w: np.ndarray, weight_is_input: bool = False,
               **kw: object) -> tuple[ember.FlowGraph, list[ember.Tensor]]:
    """conv2d(x, w) traced with x an input and w a constant (or an input), optimized."""
    x = ember.symbol(list(x_shape), name="x")
    wt = ember.symbol(list(w.shape), name="w") if weight_is_input else ember.asarray(w)
    y = ops.conv2d(x, wt, **kw)
    inputs = [x, wt] if weight_is_input else [x]
    return ember.graph.optimize(ember.trace_from([y], inputs)), inputs


@pytest.mark.parametrize(
    ("k", "kw", "groups", "algo"),
    [
        (3, dict(padding=1), 1, "winograd"),
        (3, dict(stride=2, padding=1), 1, "implicit"),
        (3, dict(padding=2, dilation=2), 1, "implicit"),
        (3, dict(padding=1), 2, "reduce"),
        (3, dict(padding=1), 72, "depthwise"),
        (5, dict(stride=2, padding=2), 72, "depthwise"),
        (5, dict(padding=2), 1, "implicit"),
        (7, dict(padding=0, stride=(1, 2)), 1, "implicit"),
        (30, dict(padding=0), 1, "im2col"),  # one output pixel: a matrix-vector product
        (1, dict(), 1, "gemm1x1"),
    ],
)
def test_optimized_graph_names_the_algorithm(k: int, kw: dict, groups: int, algo: str) -> None:
    c = 72  # not a multiple of 16
    w = _weights(c, c // groups, k, seed=k + groups)
    x = np.random.default_rng(0).standard_normal((1, c, 30, 30)).astype(np.float32)
    graph, _ = _optimized(x.shape, w, groups=groups, **kw)
    text = str(graph)
    assert f"algo={algo}" in text, text
    # Winograd runs as its own operator on the filter transformed at build time: the
    # graph keeps the transformed filter as a constant, not the transform.
    assert ("Conv2dWinograd" in text) == (algo == "winograd"), text
    assert "WinogradFilter" not in text, text
    got = graph(ember.asarray(x))
    got = got[0] if isinstance(got, (list, tuple)) else got
    ref = _reference(x, w, None, groups=groups, **kw)
    np.testing.assert_allclose(got.numpy(), ref, rtol=0, atol=1e-5 * np.abs(ref).max())


def test_weight_that_is_an_input_keeps_its_old_form() -> None:
    """Winograd needs its filter transformed once, at build time: a weight given at run time
    keeps the implicit GEMM."""
    w = _weights(72, 72, 3, seed=3)
    graph, _ = _optimized((1, 72, 30, 30), w, weight_is_input=True, padding=1)
    text = str(graph)
    assert "algo=implicit" in text and "Winograd" not in text, text


def test_small_outputs_and_few_channels_keep_their_old_form() -> None:
    """winograd_wins: too few tiles (7x7 and 14x14 outputs, 20x20 below 128 channels) or too
    few channels (3, 32) lose to the GEMM."""
    for c, size in ((256, 7), (256, 14), (64, 20), (3, 56), (32, 56)):
        graph, _ = _optimized((1, c, size, size), _weights(c, c, 3, seed=c), padding=1)
        assert "Winograd" not in str(graph), str(graph)


# ResNet-like layers: C = O, odd and even sizes, padding 0 and 1, batch 1 and 2, with a
# bias (the epilogue of the last stage). Each value of the brief's grid appears at least once.
LAYERS = [
    (1, 3, 13, 1),
    (2, 3, 56, 0),
    (1, 16, 7, 1),
    (2, 16, 28, 1),
    (1, 16, 13, 0),
    (1, 64, 56, 1),
    (2, 64, 14, 0),
    (1, 128, 28, 1),
    (1, 128, 13, 1),
    (1, 256, 14, 1),
    (2, 256, 7, 0),
]


@pytest.mark.parametrize(("n", "c", "size", "pad"), LAYERS)
def test_winograd_matches_float64(n: int, c: int, size: int, pad: int) -> None:
    rng = np.random.default_rng(c + size + pad)
    x = rng.standard_normal((n, c, size, size)).astype(np.float32)
    w = _weights(c, c, 3, seed=c)
    bias = rng.standard_normal(c).astype(np.float32)
    xs = ember.symbol(list(x.shape), name="x")
    y = ops.conv2d(xs, ember.asarray(w), padding=pad, algo="winograd")
    y = y + ember.asarray(bias).reshape([1, c, 1, 1])
    graph = ember.graph.optimize(ember.trace_from([y], [xs]))
    assert "Conv2dWinograd" in str(graph) and "algo=winograd" in str(graph)  # fused with the add
    got = graph(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = _reference(x, w, bias, padding=pad)
    abs_err = float(np.abs(got - ref).max())
    rel_err = abs_err / float(np.abs(ref).max())
    print(f"winograd n={n} c={c} {size}x{size} pad={pad}: max abs {abs_err:.3g}, "
          f"relative to the largest output {rel_err:.3g}")
    assert rel_err < 2e-5


class _ConvNet(nn.Module):
    """Two 3x3 convolutions with bias, batch norm, relu and a residual add: Winograd with
    every epilogue the torch backend fuses."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=0, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv1(x))) + x
        return self.conv2(y)


@pytest.mark.parametrize(("c", "size"), [(72, 30), (100, 33)])
def test_torch_backend_runs_winograd(tmp_path: Path, c: int, size: int) -> None:
    torch.manual_seed(c)
    model = _ConvNet(c).eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, c, size, size)
    # Static shapes: Winograd needs a known height and width (a second compile in one
    # process would otherwise make them symbolic).
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x)
        expected = model(x)
    scale = float(expected.abs().max())
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-4 * scale)
    dumps = [p.read_text() for p in tmp_path.rglob("*fuse_operators.txt")]
    assert dumps and sum(d.count("Conv2dWinograd") for d in dumps) >= 2, dumps


@pytest.mark.parametrize("name", ["resnet18", "resnet50"])
def test_small_resnets_through_winograd_match_eager(tmp_path: Path, name: str) -> None:
    """The small ResNets (benchmarks/models: widths 16 to 128) with two blocks in the third
    stage (its second block has a stride-1 3x3 convolution of 64 channels in either block
    type), on 448x448 images so that stage is 28x28 (Winograd), within 1e-4 of eager
    relative to the output's magnitude."""
    resnet = pytest.importorskip("benchmarks.models.resnet")
    small = resnet.RESNET18_SMALL if name == "resnet18" else resnet.RESNET50_SMALL
    torch.manual_seed(0)
    model = resnet.ResNet(dataclasses.replace(small, layers=(1, 1, 2, 1))).eval()
    x = torch.randn(2, 3, 448, 448, generator=torch.Generator().manual_seed(0))
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x)
        expected = model(x)
    err = float((got - expected).abs().max() / expected.abs().max())
    print(f"{name} small, 448x448: max error relative to the largest output {err:.3g}")
    assert err < 1e-4
    dumps = "".join(p.read_text() for p in tmp_path.rglob("*fuse_operators.txt"))
    assert "algo=winograd" in dumps


# The implicit GEMM (the columns read in place through a row view of the phase-split padded
# input): odd sizes, strides 2 and 3 (also unequal, and not dividing the padded size),
# padding, dilation, channels that are no multiple of 16, batch > 1, a 1x1 with stride, the
# 7x7 stride-2 stem; against float64.
IMPLICIT_CASES = [
    # (n, c, o, (h, w), (kh, kw), stride, padding, dilation)
    (1, 3, 5, (13, 11), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 17, 33, (20, 23), (3, 3), (2, 2), (1, 1), (1, 1)),
    (1, 7, 9, (31, 29), (7, 7), (2, 2), (3, 3), (1, 1)),
    (2, 5, 6, (16, 19), (3, 5), (2, 3), (0, 2), (1, 1)),
    (1, 9, 4, (17, 17), (3, 3), (1, 1), (2, 2), (2, 2)),
    (1, 6, 7, (15, 18), (3, 3), (3, 2), (1, 0), (2, 3)),
    (2, 8, 24, (9, 9), (1, 1), (2, 2), (0, 0), (1, 1)),
    (1, 96, 32, (24, 24), (3, 3), (1, 1), (1, 1), (1, 1)),
    (1, 4, 3, (5, 40), (5, 1), (1, 1), (2, 0), (1, 1)),
    (1, 2, 3, (5, 4), (4, 4), (1, 1), (0, 0), (1, 1)),
]


@pytest.mark.parametrize(("n", "c", "o", "hw", "k", "stride", "pad", "dil"), IMPLICIT_CASES)
def test_implicit_gemm_matches_float64(n: int, c: int, o: int, hw: tuple[int, int],
                                       k: tuple[int, int], stride: tuple[int, int],
                                       pad: tuple[int, int], dil: tuple[int, int]) -> None:
    rng = np.random.default_rng(c * 7 + o)
    x = rng.standard_normal((n, c, *hw)).astype(np.float32)
    w = (rng.standard_normal((o, c, *k)) / np.sqrt(c * k[0] * k[1])).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    kw = dict(stride=stride, padding=pad, dilation=dil)
    xs = ember.symbol(list(x.shape), name="x")
    y = ops.conv2d(xs, ember.asarray(w), algo="implicit", **kw)
    y = ops.relu(y + ember.asarray(bias).reshape([1, o, 1, 1]))
    graph = ember.graph.optimize(ember.trace_from([y], [xs]))
    assert "algo=implicit" in str(graph), str(graph)
    got = graph(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = np.maximum(_reference(x, w, bias, **kw), 0.0)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * max(1.0, float(np.abs(ref).max())))


# Kernels narrower than the stride read only some stride phases, and only those are copied
# (1x1 stride 2: one phase of four): kernels 1, 2 and 3 with strides 2 and 3, odd sizes,
# padding and dilation (dilation 2 with stride 2 reads one row phase from a 3-tall kernel).
PHASE_CASES = [
    # ((kh, kw), stride, padding, dilation)
    ((1, 1), (2, 2), (0, 0), (1, 1)),
    ((1, 1), (3, 3), (0, 0), (1, 1)),
    ((1, 1), (2, 3), (1, 0), (1, 1)),
    ((2, 2), (3, 3), (1, 1), (1, 1)),
    ((2, 1), (3, 2), (0, 1), (2, 1)),
    ((2, 2), (3, 3), (0, 2), (2, 2)),
    ((3, 3), (2, 2), (1, 1), (2, 2)),
    ((3, 2), (3, 2), (2, 0), (1, 2)),
    ((1, 3), (2, 3), (0, 1), (1, 1)),
]


@pytest.mark.parametrize(("k", "stride", "pad", "dil"), PHASE_CASES)
def test_implicit_gemm_reading_some_phases_matches_torch(k: tuple[int, int],
                                                         stride: tuple[int, int],
                                                         pad: tuple[int, int],
                                                         dil: tuple[int, int]) -> None:
    rng = np.random.default_rng(k[0] * 10 + k[1] + stride[0])
    x = rng.standard_normal((2, 5, 17, 15)).astype(np.float32)
    w = (rng.standard_normal((7, 5, *k)) / np.sqrt(5 * k[0] * k[1])).astype(np.float32)
    kw = dict(stride=stride, padding=pad, dilation=dil)
    xs = ember.symbol(list(x.shape), name="x")
    graph = ember.graph.optimize(ember.trace_from([ops.conv2d(xs, ember.asarray(w),
                                                              algo="implicit", **kw)], [xs]))
    got = graph(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = _reference(x, w, None, **kw)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.parametrize(("stride", "pad", "dil", "k"), [(1, 1, 1, 3), (2, 3, 1, 7), (3, 0, 2, 4)])
def test_implicit_gemm_conv1d_matches_float64(stride: int, pad: int, dil: int, k: int) -> None:
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 5, 37)).astype(np.float32)
    w = (rng.standard_normal((6, 5, k)) / np.sqrt(5 * k)).astype(np.float32)
    xs = ember.symbol(list(x.shape), name="x")
    y = ops.conv1d(xs, ember.asarray(w), stride=stride, padding=pad, dilation=dil, algo="implicit")
    got = ember.graph.optimize(ember.trace_from([y], [xs]))(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = F.conv1d(torch.from_numpy(x).double(), torch.from_numpy(w).double(), stride=stride,
                   padding=pad, dilation=dil).numpy()
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.parametrize("stride", [1, 2])
def test_implicit_gemm_symbolic_sizes(stride: int) -> None:
    """One graph for any batch, height and width: the row offsets and the phase-split copy's
    sizes are computed from the symbols at run time."""
    rng = np.random.default_rng(stride)
    w = (rng.standard_normal((6, 5, 3, 3)) / 7).astype(np.float32)
    xs = ember.symbol(["n", 5, "h", "w"], name="x")
    y = ops.conv2d(xs, ember.asarray(w), stride=stride, padding=1)
    graph = ember.graph.optimize(ember.trace_from([y], [xs]))
    assert "algo=implicit" in str(graph), str(graph)
    for shape in ((1, 5, 9, 11), (2, 5, 16, 7)):
        x = rng.standard_normal(shape).astype(np.float32)
        got = graph(ember.asarray(x))
        got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
        ref = _reference(x, w, None, stride=stride, padding=1)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * max(1.0, float(np.abs(ref).max())))
