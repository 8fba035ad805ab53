"""Layouts: ember.ops.to_layout inside traced graphs (channel-blocked and channels-last, 3-d
and 4-d, channels a multiple of the block or not), elementwise chains on them against numpy,
the printed layouts, the errors of operators that read plain tensors only, the memory a
blocked value takes, and pools (max, average, adaptive, a mean over H and W) on a blocked
value against torch in float64."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers_core import assert_matches

import ember

E = ember.ops


def _input(shape: list[int]) -> np.ndarray:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def _cases(shapes: list[list[int]], layouts: list[str],
           kept: list[list[int]]) -> list[object]:
    """(shape, layout) pairs: nChw16c takes every shape (channels fewer than a block, a
    partial last block, whole blocks; 4-d and 3-d); the other layouts take only the shapes
    in `kept` (the other blocks run nChw16c's code with another b; channels_last, a
    permutation, does not depend on the channel count) unless pytest --full."""
    return [pytest.param(shape, layout, id=f"{'x'.join(map(str, shape))}-{layout}",
                         marks=() if layout == "nChw16c" or shape in kept else pytest.mark.full)
            for shape in shapes for layout in layouts]


@pytest.mark.parametrize(("shape", "layout"), _cases(
    [[2, 3, 5, 4], [1, 17, 3, 3], [1, 64, 2, 5], [2, 17, 9], [1, 3, 4]],
    ["nChw16c", "nChw8c", "channels_last", "blocked4"], kept=[[1, 17, 3, 3], [2, 17, 9]]))
def test_round_trip_gives_the_users_tensor(shape: list[int], layout: str) -> None:
    x = ember.symbol(shape, name="x")
    y = E.to_layout(x, layout)
    assert y.layout != "plain"
    back = E.to_layout(y, "plain")
    assert back.layout == "plain"
    v = _input(shape)
    # Unoptimized: to_layout is a kernel of its own, its blocked output a buffer in memory.
    graph = ember.trace_from(back, x)
    np.testing.assert_array_equal(graph(ember.asarray(v)).numpy(), v)
    np.testing.assert_array_equal(ember.graph.optimize(graph)(ember.asarray(v)).numpy(), v)


def _chain(shape: list[int], layout: str) -> tuple[ember.FlowGraph, np.ndarray]:
    """x -> to_layout -> relu -> add(per-channel bias) -> mul(scale) -> to_layout(plain)."""
    x = ember.symbol(shape, name="x")
    c = shape[1]
    bias = np.linspace(-1, 1, c, dtype=np.float32).reshape([c] + [1] * (len(shape) - 2))
    y = E.to_layout(x, layout)
    out = E.to_layout(E.mul(E.add(E.relu(y), ember.asarray(bias)), y), "plain")
    return ember.trace_from(out, x), bias


@pytest.mark.parametrize(("shape", "layout"), _cases(
    [[2, 3, 5, 4], [1, 17, 3, 3], [1, 64, 4, 4], [2, 17, 6]],
    ["nChw16c", "nChw8c", "channels_last"], kept=[[1, 17, 3, 3], [2, 17, 6]]))
def test_elementwise_chain_matches_numpy(shape: list[int], layout: str) -> None:
    graph, bias = _chain(shape, layout)
    v = _input(shape)
    ref = (np.maximum(v.astype(np.float64), 0) + bias) * v
    for g in (graph, ember.graph.optimize(graph)):
        assert_matches(g(ember.asarray(v)), ref, "float32")


def test_printed_graph_shows_layouts() -> None:
    graph, _ = _chain([1, 64, 56, 56], "nChw16c")
    text = str(graph)
    assert "float32[1, 64, 56, 56]{nChw16c} = ToLayout(x, layout=blocked16)" in text
    assert "{nChw16c} = Relu(" in text
    assert "layout=plain" in text
    nhwc, _ = _chain([1, 8, 4, 4], "nhwc")
    assert "float32[1, 8, 4, 4]{nhwc}" in str(nhwc)
    ncw, _ = _chain([1, 8, 4], "nCw8c")
    assert "float32[1, 8, 4]{nCw8c}" in str(ncw)


def test_blocked_value_is_sized_by_its_memory() -> None:
    # 17 channels in blocks of 16 take 32 channels of memory: every intermediate of the
    # unoptimized chain (to_layout, relu, add, mul) is blocked, 1 * 2 * 4 * 4 * 16 floats.
    graph, bias = _chain([1, 17, 4, 4], "nChw16c")
    compiled = graph.build()
    v = _input([1, 17, 4, 4])
    ref = (np.maximum(v.astype(np.float64), 0) + bias) * v
    assert_matches(compiled.run([ember.asarray(v)])[0], ref, "float32")
    assert compiled.memory_stats["unshared_bytes"] == 4 * (2 * 4 * 4 * 16 * 4)


def test_operators_that_read_plain_tensors_refuse_other_layouts() -> None:
    x = ember.symbol([1, 16, 4, 4], name="x")
    y = E.to_layout(x, "nChw16c")
    with pytest.raises(ember.EmberError, match=r"softmax: input 0 .*nChw16c.* plain"):
        E.softmax(y, 1)
    with pytest.raises(ember.EmberError, match="reads plain"):
        E.matmul(y, y)
    with pytest.raises(ember.EmberError, match="different layouts"):
        E.add(y, E.to_layout(x, "nhwc"))
    with pytest.raises(ember.EmberError, match="inputs and outputs are plain"):
        ember.trace_from(E.relu(y), x).build()
    with pytest.raises(ember.EmberError, match="always plain"):
        E.to_layout(ember.asarray(np.zeros([1, 2, 2, 2], np.float32)), "nChw8c")
    with pytest.raises(ember.EmberError, match="unknown layout 'nchw'"):
        E.to_layout(x, "nchw")
    with pytest.raises(ember.EmberError, match="rank 2"):
        E.to_layout(ember.symbol([4, 4]), "nhwc")


def test_anchors_read_a_blocked_value_through_their_prologue_and_epilogue() -> None:
    # y is blocked between kernels; each conversion back to plain has one consumer and is
    # inlined: into a GEMM's epilogue, a reduction's prologue and softmax's epilogue. The
    # conversion into the blocked layout runs as its own kernel (tiles transposed in
    # registers), which exp reads as vectors.
    rng = np.random.default_rng(0)
    x = ember.symbol([1, 17, 3, 5], name="x")
    w = rng.standard_normal([5, 5]).astype(np.float32)
    y = E.exp(E.to_layout(x, "nChw8c"))
    mm = E.add(E.matmul(x, ember.asarray(w)), E.to_layout(y, "plain"))
    red = E.sum(E.to_layout(y, "plain"), [1, 3])
    sm = E.add(E.softmax(x, 3), E.to_layout(y, "plain"))
    graph = ember.graph.optimize(ember.trace_from([mm, red, sm], x))
    text = str(graph)
    assert "{nChw8c} = ToLayout(x, layout=blocked8)" in text
    assert "{nChw8c} = Exp(y)" in text
    assert "fused=[Matmul, ToLayout, Add], anchor=Matmul" in text
    assert "fused=[ToLayout, Sum], anchor=Sum" in text
    v = _input([1, 17, 3, 5])
    v64 = v.astype(np.float64)
    e = np.exp(v64)
    s = np.exp(v64 - v64.max(3, keepdims=True))
    s /= s.sum(3, keepdims=True)
    got = graph(ember.asarray(v))
    assert_matches(got[0], v64 @ w + e, "float32")
    assert_matches(got[1], e.sum(axis=(1, 3)), "float32")
    assert_matches(got[2], s + e, "float32")


@pytest.mark.parametrize("layout", ["nChw16c", "channels_last"])
@pytest.mark.parametrize("shape", [[1, 17, 3, 5], [2, 32, 4, 4]])
def test_fused_group_with_a_second_output_on_a_blocked_value(shape: list[int],
                                                             layout: str) -> None:
    """relu's result is read inside the fused chain and by a second consumer outside it: the
    fused kernel stores it too (a multi-output kernel), in the chain's layout."""
    x = ember.symbol(shape, name="x")
    r = E.relu(E.to_layout(x, layout))
    chain = E.to_layout(E.mul(E.add(r, r), r), "plain")
    side = E.sum(E.to_layout(r, "plain"), [1])
    graph = ember.trace_from([chain, side], [x])
    v = _input(shape).astype(np.float64)
    relu = np.maximum(v, 0)
    for g in (graph, ember.graph.optimize(graph)):
        got = g(ember.asarray(v.astype(np.float32)))
        assert_matches(got[0], 2 * relu * relu, "float32")
        assert_matches(got[1], relu.sum(axis=1), "float32")


# Pools on a channel-blocked value (ResNet's max pool between blocked convolutions): each
# case as (ember's pool on an ember tensor, torch's on a float64 tensor).
_POOLS: list[tuple[str, Callable[[ember.Tensor], ember.Tensor],
                   Callable[[torch.Tensor], torch.Tensor]]] = [
    ("max 3x3/2 pad 1",
     lambda y: E.max_pool2d(y, 3, 2, 1),
     lambda t: F.max_pool2d(t, 3, 2, 1)),
    ("max 2x2/2 ceil",
     lambda y: E.max_pool2d(y, 2, 2, 0, 1, True),
     lambda t: F.max_pool2d(t, 2, 2, 0, 1, True)),
    ("max 3x3/1 pad 1 dilation 2",
     lambda y: E.max_pool2d(y, 3, 1, 1, 2),
     lambda t: F.max_pool2d(t, 3, 1, 1, 2)),
    ("max 3x2/(2,1) pad (1,0) ceil",
     lambda y: E.max_pool2d(y, [3, 2], [2, 1], [1, 0], 1, True),
     lambda t: F.max_pool2d(t, (3, 2), (2, 1), (1, 0), 1, True)),
    ("avg 3x3/2 pad 1",
     lambda y: E.avg_pool2d(y, 3, 2, 1),
     lambda t: F.avg_pool2d(t, 3, 2, 1)),
    ("avg 3x3/2 pad 1 without the padding",
     lambda y: E.avg_pool2d(y, 3, 2, 1, False, False),
     lambda t: F.avg_pool2d(t, 3, 2, 1, False, False)),
    ("avg 2x2 ceil",
     lambda y: E.avg_pool2d(y, 2, None, 0, True),
     lambda t: F.avg_pool2d(t, 2, None, 0, True)),
    ("avg 3x2/(1,2) pad 1 ceil without the padding",
     lambda y: E.avg_pool2d(y, [3, 2], [1, 2], 1, True, False),
     lambda t: F.avg_pool2d(t, (3, 2), (1, 2), 1, True, False)),
    ("adaptive 3x4",
     lambda y: E.adaptive_avg_pool2d(y, [3, 4]),
     lambda t: F.adaptive_avg_pool2d(t, (3, 4))),
    ("adaptive 1x1",
     lambda y: E.adaptive_avg_pool2d(y, [1, 1]),
     lambda t: F.adaptive_avg_pool2d(t, 1)),
    ("mean over H, W",
     lambda y: E.mean(y, [2, 3], True),
     lambda t: t.mean(dim=(2, 3), keepdim=True)),
]


@pytest.mark.parametrize("layout", ["nChw16c", "nChw8c"])
@pytest.mark.parametrize("c", [3, 17, 64])
def test_pools_on_a_blocked_value_keep_it_and_match_torch(c: int, layout: str) -> None:
    """Every pool reads the blocked value and writes its result blocked (the window a vector
    along a block's lanes), converted back to plain only at the end; odd sizes, strides,
    padding, dilation, ceil_mode, channels not a multiple of the block."""
    shape = [2, c, 11, 9]
    x = ember.symbol(shape, name="x")
    y = E.to_layout(x, layout)
    pooled = [pool(y) for _, pool, _ in _POOLS]
    for (name, _, _), p in zip(_POOLS, pooled, strict=True):
        assert p.layout == layout, name
    graph = ember.trace_from([E.to_layout(p, "plain") for p in pooled], x)
    v = _input(shape)
    t = torch.from_numpy(v.astype(np.float64))
    for g in (graph, ember.graph.optimize(graph)):
        got = g(ember.asarray(v))
        for (name, _, ref), r in zip(_POOLS, got, strict=True):
            expected = ref(t).numpy()
            assert tuple(r.shape) == expected.shape, name
            np.testing.assert_allclose(r.numpy(), expected, rtol=1e-5, atol=1e-6, err_msg=name)


def test_pools_keep_layouts_only_where_the_channel_stays() -> None:
    x = ember.symbol([1, 16, 4, 4], name="x")
    y = E.to_layout(x, "nChw16c")
    with pytest.raises(ember.EmberError, match=r"sum: .*keepdim and dimension 1"):
        E.sum(y, [1], True)
    with pytest.raises(ember.EmberError, match=r"mean: .*keepdim and dimension 1"):
        E.mean(y, [2, 3])
    three = E.to_layout(ember.symbol([16, 4, 4], name="z"), "nCw8c")
    with pytest.raises(ember.EmberError, match="a 3-d input must be plain"):
        E.max_pool2d(three, 2)


@pytest.mark.parametrize("layout", ["nChw16c", "nChw8c"])
@pytest.mark.parametrize("channels", [(32, 16), (17, 5), (3, 64)])
def test_concat_and_nearest_upsample_on_blocked_values_match_torch(
        channels: tuple[int, int], layout: str) -> None:
    """A UNet's decoder step on blocked values: the nearest upsampling and the concatenation
    along the channels (and along H) keep the layout; channels whole blocks or not."""
    a, b = channels
    x = ember.symbol([2, a, 3, 5], name="x")
    z = ember.symbol([2, b, 6, 10], name="z")
    xb, zb = E.to_layout(x, layout), E.to_layout(z, layout)
    up = E.upsample_nearest2d(E.relu(xb), [6, 10])
    joined = E.concat([up, zb], 1)
    stacked = E.concat([zb, zb], 2)
    assert up.layout == joined.layout == stacked.layout == layout
    graph = ember.trace_from([E.to_layout(joined, "plain"), E.to_layout(stacked, "plain")],
                             [x, z])
    vx, vz = _input([2, a, 3, 5]), _input([2, b, 6, 10])
    tx, tz = torch.from_numpy(vx.astype(np.float64)), torch.from_numpy(vz.astype(np.float64))
    want_joined = torch.cat([F.interpolate(tx.relu(), size=[6, 10], mode="nearest"), tz], 1)
    want_stacked = torch.cat([tz, tz], 2)
    for g in (graph, ember.graph.optimize(graph)):
        got = g(ember.asarray(vx), ember.asarray(vz))
        np.testing.assert_allclose(got[0].numpy(), want_joined.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[1].numpy(), want_stacked.numpy(), rtol=1e-6, atol=1e-6)


def test_blocked_concat_reads_whole_vectors(tmp_path: Path) -> None:
    """Between two blocked convolutions, a concatenation of a blocked value (32 channels)
    with a plain one (16 channels, with pixels) runs blocked: the plain input is converted by
    a kernel of its own, and the concatenation reads both inputs as vectors along the lanes
    (each input's channels start at a whole block: one branch per vector)."""
    rng = np.random.default_rng(1)
    w1 = rng.standard_normal([32, 8, 1, 1]).astype(np.float32)
    w2 = rng.standard_normal([8, 48, 3, 3]).astype(np.float32)
    x = ember.symbol([1, 8, 4, 6], name="x")
    p = ember.symbol([1, 16, 4, 6], name="p")
    a = E.relu(E.conv2d(x, ember.asarray(w1)))
    out = E.conv2d(E.concat([a, E.exp(p)], 1), ember.asarray(w2), padding=1)
    graph = ember.graph.optimize(ember.trace_from(out, [x, p]))
    text = str(graph)
    assert "{nChw16c} = Concat(" in text, text
    graph.build(dump_dir=str(tmp_path))
    plans = [f.read_text() for f in (tmp_path / "kernels").glob("*.plan.txt")]
    # (its blocked memory [1, 3, 4, 6, 16]: rows of 4 * 6 * 16 once the trailing axes merge)
    concat = [t for t in plans if "[1, 3, 384], elementwise" in t]
    assert len(concat) == 1, plans
    assert "vector: " in concat[0] and "gathered" not in concat[0], concat[0]
    assert concat[0].count("contiguous along") == 2, concat[0]
    vx, vp = _input([1, 8, 4, 6]), _input([1, 16, 4, 6])
    got = graph(ember.asarray(vx), ember.asarray(vp))
    tx, tp = torch.from_numpy(vx.astype(np.float64)), torch.from_numpy(vp.astype(np.float64))
    joined = torch.cat([F.conv2d(tx, torch.from_numpy(w1.astype(np.float64))).relu(), tp.exp()], 1)
    want = F.conv2d(joined, torch.from_numpy(w2.astype(np.float64)), padding=1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
