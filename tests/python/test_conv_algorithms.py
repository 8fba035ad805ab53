"""Convolution algorithms chosen by the graph optimizer (choose_algorithms, src/ops/conv.cpp).

The optimized graph's print names each convolution's algorithm. By default every conv2d on a
constant weight runs on the channel-blocked layout (`blocked`, `depthwise_blocked`); under
EMBER_CONV_ALGORITHM=plain (the `plain_conv_rules` fixture) the rules choose among the plain
forms: Winograd F(4x4, 3x3) for 3x3 stride-1 convolutions on constant weights where its rule
says it wins, the others keeping their forms (stride 2, dilation 2, groups 2, 5x5, 1x1, a
weight that is an input). Results are compared with float64 references (max abs / relative
error printed with -s) and, through the torch backend, with eager PyTorch.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers_conv import reference as _reference
from _helpers_conv import weights as _weights
from torch import nn

import ember
from ember import ops

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks.models


def _optimized(x_shape: tuple[int, ...], w: np.ndarray, weight_is_input: bool = False,
               **kw: object) -> tuple[ember.FlowGraph, list[ember.Tensor]]:
    """conv2d(x, w) traced with x an input and w a constant (or an input), optimized."""
    x = ember.symbol(list(x_shape), name="x")
    wt = ember.symbol(list(w.shape), name="w") if weight_is_input else ember.asarray(w)
    y = ops.conv2d(x, wt, **kw)
    inputs = [x, wt] if weight_is_input else [x]
    return ember.graph.optimize(ember.trace_from([y], inputs)), inputs


@pytest.mark.usefixtures("plain_conv_rules")
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
    # Winograd runs as its own operator on the transformed filter. The transform of the
    # constant weight stays in the graph as a constant preparation, which the build runs
    # once, launching no kernel for it (test_profile counts the launches).
    assert ("Conv2dWinograd" in text) == (algo == "winograd"), text
    assert ("= WinogradFilter(" in text) == (algo == "winograd"), text
    got = graph(ember.asarray(x))
    got = got[0] if isinstance(got, (list, tuple)) else got
    ref = _reference(x, w, None, groups=groups, **kw)
    np.testing.assert_allclose(got.numpy(), ref, rtol=0, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize(
    ("k", "kw", "groups", "algo"),
    [
        (3, dict(padding=1), 1, "blocked"),
        (3, dict(stride=2, padding=1), 1, "blocked"),
        (1, dict(), 1, "blocked"),
        (30, dict(padding=0), 1, "blocked"),
        (3, dict(padding=1), 72, "depthwise_blocked"),
        (5, dict(stride=2, padding=2), 72, "depthwise_blocked"),
        (3, dict(padding=1), 2, "reduce"),  # grouped: no blocked form
    ],
)
def test_default_rules_run_conv2d_blocked(k: int, kw: dict, groups: int, algo: str) -> None:
    """Without EMBER_CONV_ALGORITHM, every conv2d on a constant weight that a blocked algorithm
    computes runs on the channel-blocked layout, converted from and back to the plain one
    at the graph's input and output."""
    c = 72
    w = _weights(c, c // groups, k, seed=k + groups)
    x = np.random.default_rng(1).standard_normal((1, c, 30, 30)).astype(np.float32)
    graph, _ = _optimized(x.shape, w, groups=groups, **kw)
    text = str(graph)
    assert re.search(rf"algo={algo}\b", text), text
    assert text.count("ToLayout") == (2 if algo.endswith("blocked") else 0), text
    got = graph(ember.asarray(x))
    got = got[0] if isinstance(got, (list, tuple)) else got
    ref = _reference(x, w, None, groups=groups, **kw)
    # float32 sums of (c / groups) * k * k products: their rounding grows with the square
    # root of the depth (the 30x30 kernel sums 64800; AVX2's order differs from AVX-512's)
    depth = (c // groups) * k * k
    bound = max(1e-5, 2 * np.sqrt(depth) * np.finfo(np.float32).eps)
    np.testing.assert_allclose(got.numpy(), ref, rtol=0, atol=bound * np.abs(ref).max())


def test_depthwise_on_a_weight_input_stays_plain() -> None:
    """A depthwise weight that is a graph input (a training graph's) runs the plain routine:
    the convolutions around it are plain, and converting to the blocked layout and back
    around each depthwise layer cost more than the blocked routine saved."""
    c = 24
    w = _weights(c, 1, 3, seed=3)
    x = np.random.default_rng(2).standard_normal((2, c, 17, 19)).astype(np.float32)
    graph, _ = _optimized(x.shape, w, weight_is_input=True, padding=1, groups=c)
    text = str(graph)
    assert "algo=depthwise" in text and "depthwise_blocked" not in text, text
    assert "ToLayout" not in text, text
    got = graph(ember.asarray(x), ember.asarray(w))
    got = got[0] if isinstance(got, (list, tuple)) else got
    ref = _reference(x, w, None, groups=c, padding=1)
    np.testing.assert_allclose(got.numpy(), ref, rtol=0, atol=1e-5 * np.abs(ref).max())


def test_plain_and_a_blocked_algorithm_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", "plain,blocked")
    with pytest.raises(ember.EmberError, match="names `plain` and a blocked algorithm"):
        _optimized((1, 8, 10, 10), _weights(8, 8, 3, seed=1), padding=1)


def test_weight_that_is_an_input_keeps_its_old_form() -> None:
    """Winograd needs its filter transformed once, at build time: a weight given at run time
    keeps the implicit GEMM."""
    w = _weights(72, 72, 3, seed=3)
    graph, _ = _optimized((1, 72, 30, 30), w, weight_is_input=True, padding=1)
    text = str(graph)
    assert "algo=implicit" in text and "Winograd" not in text, text


@pytest.mark.usefixtures("plain_conv_rules")
def test_small_outputs_and_few_channels_keep_their_old_form() -> None:
    """winograd_wins: too few tiles (7x7 and 14x14 outputs, 20x20 below 128 channels) or too
    few channels (3, 32) lose to the GEMM."""
    for c, size in ((256, 7), (256, 14), (64, 20), (3, 56), (32, 56)):
        graph, _ = _optimized((1, c, size, size), _weights(c, c, 3, seed=c), padding=1)
        assert "Winograd" not in str(graph), str(graph)


# ResNet-like layers: C = O, odd and even sizes, padding 0 and 1, batch 1 and 2, with a
# bias (the epilogue of the last stage). Each value of the brief's grid appears at least once
# in the cases the default run keeps; the ones marked full (pytest --full) combine them again.
LAYERS = [
    (1, 3, 13, 1),
    pytest.param(2, 3, 56, 0, marks=pytest.mark.full),
    pytest.param(1, 16, 7, 1, marks=pytest.mark.full),
    (2, 16, 28, 1),
    pytest.param(1, 16, 13, 0, marks=pytest.mark.full),
    (1, 64, 56, 1),
    (2, 64, 14, 0),
    pytest.param(1, 128, 28, 1, marks=pytest.mark.full),
    (1, 128, 13, 1),
    pytest.param(1, 256, 14, 1, marks=pytest.mark.full),
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


@pytest.mark.usefixtures("plain_conv_rules")
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


@pytest.mark.usefixtures("plain_conv_rules")
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


@pytest.mark.usefixtures("plain_conv_rules")
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


# Every algorithm that applies computes the convolution: tuning may pick any of them. Stride
# 1 (all four dense forms; wide also where its rule would not take it: a kernel wide next to
# the output), 1x1 (gemm1x1 and the forms that read a view of it) and strided ones.
FORCED_CASES = [
    # (c, o, (h, w), (kh, kw), stride, padding, dilation, algorithms)
    (6, 5, (11, 9), (3, 3), (1, 1), (1, 1), (1, 1),
     ("winograd", "implicit", "wide", "im2col", "blocked")),
    (4, 7, (9, 8), (5, 5), (1, 1), (0, 1), (1, 1), ("implicit", "wide", "im2col", "blocked")),
    (3, 4, (10, 13), (3, 3), (1, 1), (2, 0), (2, 3), ("implicit", "wide", "im2col", "blocked")),
    (5, 6, (7, 9), (1, 1), (1, 1), (0, 0), (1, 1),
     ("gemm1x1", "implicit", "wide", "im2col", "blocked")),
    (5, 6, (13, 11), (3, 3), (2, 3), (1, 2), (1, 1), ("implicit", "im2col", "blocked")),
]


@pytest.mark.parametrize(("c", "o", "hw", "k", "stride", "pad", "dil", "algos"), FORCED_CASES)
def test_every_algorithm_that_applies_matches_torch(c: int, o: int, hw: tuple[int, int],
                                                    k: tuple[int, int], stride: tuple[int, int],
                                                    pad: tuple[int, int], dil: tuple[int, int],
                                                    algos: tuple[str, ...]) -> None:
    rng = np.random.default_rng(c * 100 + o)
    x = rng.standard_normal((2, c, *hw)).astype(np.float32)
    w = (rng.standard_normal((o, c, *k)) / np.sqrt(c * k[0] * k[1])).astype(np.float32)
    kw = dict(stride=stride, padding=pad, dilation=dil)
    ref = _reference(x, w, None, **kw)
    for algo in algos:
        xs = ember.symbol(list(x.shape), name="x")
        y = ops.conv2d(xs, ember.asarray(w), algo=algo, **kw)
        graph = ember.graph.optimize(ember.trace_from([y], [xs]))
        assert f"algo={algo}" in str(graph), str(graph)
        got = graph(ember.asarray(x))
        got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
        assert got.shape == ref.shape, algo
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * max(1.0, float(np.abs(ref).max())),
                                   err_msg=algo)


# The direct convolution on the channel-blocked layout (algo="blocked"): the input converted
# to nChw<b>c (b = the ISA's float lanes), conv2d_blocked on the weight prepared by
# conv_blocked_filter (folded at build time), the output converted back.
BLOCKED_CASES = [
    # (n, c, o, (h, w), (kh, kw), stride, padding, dilation)
    (2, 3, 17, (11, 9), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 17, 64, (9, 10), (1, 1), (2, 2), (0, 0), (1, 1)),
    (1, 64, 3, (12, 12), (7, 7), (2, 2), (3, 3), (1, 1)),
    (2, 17, 17, (12, 13), (3, 3), (1, 2), (2, 0), (2, 3)),
    (1, 3, 64, (32, 30), (7, 7), (2, 2), (3, 3), (1, 1)),  # ResNet's stem, smaller
    (1, 64, 64, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1)),
    (2, 64, 128, (14, 14), (1, 1), (2, 2), (0, 0), (1, 1)),  # a downsampling 1x1
    (1, 128, 128, (7, 7), (3, 3), (2, 2), (1, 1), (1, 1)),
    (1, 17, 3, (5, 6), (3, 3), (1, 1), (0, 0), (1, 1)),  # one output row of 3 x 4
]


def _block() -> int:
    """The channel block of this ISA's blocked layout: its float32 lanes."""
    return {"avx512": 16, "avx2": 8}.get(ember.isa(), 1)


@pytest.mark.parametrize(("n", "c", "o", "hw", "k", "stride", "pad", "dil"), BLOCKED_CASES)
def test_blocked_matches_float64(n: int, c: int, o: int, hw: tuple[int, int], k: tuple[int, int],
                                 stride: tuple[int, int], pad: tuple[int, int],
                                 dil: tuple[int, int]) -> None:
    rng = np.random.default_rng(n * 1000 + c * 10 + o)
    x = rng.standard_normal((n, c, *hw)).astype(np.float32)
    w = (rng.standard_normal((o, c, *k)) / np.sqrt(c * k[0] * k[1])).astype(np.float32)
    kw = dict(stride=stride, padding=pad, dilation=dil)
    xs = ember.symbol(list(x.shape), name="x")
    y = ops.conv2d(xs, ember.asarray(w), algo="blocked", **kw)
    graph = ember.graph.optimize(ember.trace_from([y], [xs]))
    text = str(graph)
    assert "Conv2dBlocked" in text and "algo=blocked" in text, text
    assert text.count("ToLayout") == 2, text  # into the blocked layout and back
    assert f"{{nChw{_block()}c}}" in text, text
    got = graph(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = _reference(x, w, None, **kw)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


def test_blocked_with_bias_relu_and_a_symbolic_batch() -> None:
    """The elementwise ops after the blocked convolution fused into it, and a batch known only
    at run time."""
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((20, 9, 3, 3)) / 9.0).astype(np.float32)
    bias = rng.standard_normal(20).astype(np.float32)
    xs = ember.symbol(["n", 9, 10, 11], name="x")
    y = ops.conv2d(xs, ember.asarray(w), padding=(1, 1), algo="blocked")
    y = ops.relu(ops.add(y, ember.asarray(bias.reshape(20, 1, 1))))
    graph = ember.graph.optimize(ember.trace_from([y], [xs]))
    # The bias and the relu are the routine's row epilogue, on the blocked rows (20 channels:
    # a partial last block, whose padding lanes the epilogue writes as zeros).
    assert "fused=[Conv2dBlocked, Add, Relu]" in str(graph), str(graph)
    for n in (1, 3):
        x = rng.standard_normal((n, 9, 10, 11)).astype(np.float32)
        got = graph(ember.asarray(x))
        got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
        ref = np.maximum(_reference(x, w, bias, padding=(1, 1)), 0.0)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * float(np.abs(ref).max()))


def test_blocked_on_a_weight_that_is_an_input() -> None:
    """Not a rule's choice (the weight would be prepared on every run), but forced it runs:
    conv_blocked_filter is then a kernel of the graph."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 5, 8, 9)).astype(np.float32)
    w = rng.standard_normal((7, 5, 3, 3)).astype(np.float32)
    xs = ember.symbol([1, 5, 8, 9], name="x")
    ws = ember.symbol([7, 5, 3, 3], name="w")
    y = ops.conv2d(xs, ws, algo="blocked", padding=(1, 1))
    graph = ember.graph.optimize(ember.trace_from([y], [xs, ws]))
    assert "ConvBlockedFilter" in str(graph)
    got = graph(ember.asarray(x), ember.asarray(w))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = _reference(x, w, None, padding=(1, 1))
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * float(np.abs(ref).max()))
    # The rules never take it there.
    z = ops.conv2d(xs, ws, padding=(1, 1))
    assert "algo=blocked" not in str(ember.graph.optimize(ember.trace_from([z], [xs, ws])))


# The depthwise convolution on the channel-blocked layout (algo="depthwise_blocked"): the
# input converted to nChw<b>c, conv2d_depthwise_blocked (the block's channels in the vector
# lanes, the weight as it is), the output converted back. Channel multiplier 1.
DEPTHWISE_BLOCKED_CASES = [
    # (n, c, (h, w), (kh, kw), stride, padding, dilation)
    (2, 3, (11, 9), (3, 3), (1, 1), (1, 1), (1, 1)),
    (1, 17, (13, 12), (3, 3), (2, 2), (1, 1), (1, 1)),
    (1, 32, (14, 14), (3, 3), (1, 1), (1, 1), (1, 1)),
    (1, 96, (15, 16), (3, 3), (2, 2), (1, 1), (1, 1)),  # MobileNetV2's downsampling, odd rows
    (2, 17, (12, 13), (3, 5), (1, 2), (2, 0), (2, 3)),
    (1, 32, (9, 10), (5, 5), (1, 1), (0, 0), (1, 1)),  # no padding: x read in place
    (1, 96, (7, 7), (7, 7), (1, 1), (3, 3), (1, 1)),
    (1, 3, (5, 6), (1, 1), (3, 3), (0, 0), (1, 1)),
    (2, 17, (1, 1), (3, 3), (1, 1), (1, 1), (1, 1)),  # one pixel: only the centre tap inside
]


@pytest.mark.parametrize(("n", "c", "hw", "k", "stride", "pad", "dil"), DEPTHWISE_BLOCKED_CASES)
def test_depthwise_blocked_matches_float64(n: int, c: int, hw: tuple[int, int],
                                           k: tuple[int, int], stride: tuple[int, int],
                                           pad: tuple[int, int], dil: tuple[int, int]) -> None:
    rng = np.random.default_rng(n * 1000 + c * 10 + k[0])
    x = rng.standard_normal((n, c, *hw)).astype(np.float32)
    w = (rng.standard_normal((c, 1, *k)) / np.sqrt(k[0] * k[1])).astype(np.float32)
    kw = dict(stride=stride, padding=pad, dilation=dil, groups=c)
    xs = ember.symbol(list(x.shape), name="x")
    y = ops.conv2d(xs, ember.asarray(w), algo="depthwise_blocked", **kw)
    graph = ember.graph.optimize(ember.trace_from([y], [xs]))
    text = str(graph)
    assert "Conv2dDepthwiseBlocked" in text and "algo=depthwise_blocked" in text, text
    assert text.count("ToLayout") == 2, text  # into the blocked layout and back
    assert f"{{nChw{_block()}c}}" in text, text
    got = graph(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = _reference(x, w, None, **kw)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * max(1.0, float(np.abs(ref).max())))


def test_depthwise_blocked_with_bias_relu6_and_a_symbolic_batch() -> None:
    """The bias and relu6 (a clamp) after the blocked depthwise convolution fused into it, and
    a batch known only at run time; 20 channels: a partial last block."""
    rng = np.random.default_rng(7)
    w = (rng.standard_normal((20, 1, 3, 3)) / 3.0).astype(np.float32)
    bias = rng.standard_normal(20).astype(np.float32)
    xs = ember.symbol(["n", 20, 10, 11], name="x")
    y = ops.conv2d(xs, ember.asarray(w), stride=(2, 2), padding=(1, 1), groups=20,
                   algo="depthwise_blocked")
    y = ops.hardtanh(ops.add(y, ember.asarray(bias.reshape(20, 1, 1))), 0.0, 6.0)
    graph = ember.graph.optimize(ember.trace_from([y], [xs]))
    assert "fused=[Conv2dDepthwiseBlocked, Add, " in str(graph), str(graph)
    for n in (1, 3):
        x = 3.0 * rng.standard_normal((n, 20, 10, 11)).astype(np.float32)
        got = graph(ember.asarray(x))
        got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
        ref = np.clip(_reference(x, w, bias, stride=(2, 2), padding=(1, 1), groups=20), 0.0, 6.0)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * float(np.abs(ref).max()))


def test_depthwise_blocked_needs_channel_multiplier_1() -> None:
    xs = ember.symbol([1, 4, 8, 8], name="x")
    w = ember.asarray(np.ones((8, 1, 3, 3), np.float32))  # multiplier 2
    with pytest.raises(ember.EmberError,
                       match=r"conv2d_depthwise_blocked: takes a float32 input and a depthwise "
                             r"weight with channel multiplier 1 \(groups == C == O\)"):
        ops.conv2d(xs, w, padding=(1, 1), groups=4, algo="depthwise_blocked")
    # The rules take it for multiplier 1, and the plain routine for multiplier 2.
    for o, algo in ((4, "depthwise_blocked"), (8, "depthwise")):
        wo = ember.asarray(np.ones((o, 1, 3, 3), np.float32))
        y = ops.conv2d(xs, wo, padding=(1, 1), groups=4)
        text = str(ember.graph.optimize(ember.trace_from([y], [xs])))
        assert re.search(rf"algo={algo}\b", text), text
