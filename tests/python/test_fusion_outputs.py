"""Fused kernels with several outputs: an intermediate that is also returned (an activation
a training forward graph saves for the backward) or read by a node outside the group is
stored by the fused kernel itself. Values against numpy and eager torch, kernel counts, the
printed graph, memory planning, symbolic shapes, and torch.compile in grad mode."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from _helpers_core import assert_matches, np_softmax
from torch import nn

import ember
import ember.torch

E = ember.ops


def np_gelu(h: np.ndarray) -> np.ndarray:
    return torch.nn.functional.gelu(torch.from_numpy(h)).numpy()


def test_elementwise_chain_writes_its_intermediate_in_the_same_kernel() -> None:
    x = ember.symbol([6, 40], name="x")
    a = x * 0.5
    b = E.exp(a)
    graph = ember.graph.optimize(ember.trace_from([b, a], x))
    assert graph.node_titles == ["Fused"]
    assert "y_1: float32[6, 40], y: float32[6, 40] = Fused(x, " in str(graph)
    compiled = graph.build()
    assert len(compiled.kernel_names) == 1
    v = np.linspace(-3, 3, 240, dtype=np.float32).reshape(6, 40)
    got_b, got_a = compiled.run([ember.asarray(v)])
    assert_matches(got_a, v.astype(np.float64) * 0.5, "float32")
    assert_matches(got_b, np.exp(v.astype(np.float64) * 0.5), "float32")


def test_matmul_bias_gelu_stores_the_pre_activation() -> None:
    rng = np.random.default_rng(0)
    wv = rng.standard_normal((16, 24)).astype(np.float32)
    cv = rng.standard_normal(24).astype(np.float32)
    x = ember.symbol([10, 16], name="x")
    h = E.matmul(x, ember.asarray(wv)) + ember.asarray(cv)
    y = E.gelu(h)
    graph = ember.graph.optimize(ember.trace_from([y, h], x))
    assert graph.node_titles == ["Fused"]
    assert "fused=[Matmul, Add, Gelu], anchor=Matmul" in str(graph)
    compiled = graph.build()
    assert len(compiled.kernel_names) == 1
    xv = rng.standard_normal((10, 16)).astype(np.float32)
    got_y, got_h = compiled.run([ember.asarray(xv)])
    ref_h = xv.astype(np.float64) @ wv.astype(np.float64) + cv
    assert_matches(got_h, ref_h, "float32")
    assert_matches(got_y, np_gelu(ref_h), "float32")


def test_layer_norm_and_softmax_groups_store_their_anchor_output() -> None:
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((5, 32)).astype(np.float32)
    x = ember.symbol([5, 32], name="x")
    n = E.layer_norm(x, 1)
    p = E.softmax(x, 1)
    graph = ember.graph.optimize(ember.trace_from([n * 2.0 + 1.0, n, E.tanh(p), p], x))
    assert graph.node_titles == ["Fused", "Fused"], str(graph)
    text = str(graph)
    # (trace_from adds the outputs with the fewest nodes first: n, p, tanh(p), then n * 2 + 1)
    assert "y_4: float32[5, 32], y: float32[5, 32] = Fused(x, c, c_1, fused=[LayerNorm" in text
    assert "y_2: float32[5, 32], y_1: float32[5, 32] = Fused(x, fused=[Softmax, Tanh]" in text
    compiled = graph.build()
    assert len(compiled.kernel_names) == 2
    out = compiled.run([ember.asarray(xv)])
    x64 = xv.astype(np.float64)
    ref_n = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    ref_p = np_softmax(x64, 1)
    assert_matches(out[0], ref_n * 2.0 + 1.0, "float32")
    assert_matches(out[1], ref_n, "float32")
    assert_matches(out[2], np.tanh(ref_p), "float32")
    assert_matches(out[3], ref_p, "float32")


def test_no_fusion_through_a_cycle_and_values_stay_right() -> None:
    """e = exp(x) is read by a sum and by e + sum(e): a group of exp and the add would have
    to run both before and after the sum."""
    x = ember.symbol([16], name="x")
    e = E.exp(x)
    y = E.sum(e, 0, keepdim=True) + e
    graph = ember.graph.optimize(ember.trace_from(y, x))
    assert len(graph.node_titles) == 3, str(graph)
    v = np.linspace(-1, 1, 16, dtype=np.float32)
    ev = np.exp(v.astype(np.float64))
    assert_matches(graph.build().run([ember.asarray(v)])[0], ev.sum() + ev, "float32")


def test_an_extra_output_read_by_later_kernels_keeps_its_memory() -> None:
    """r is stored by the kernel of t = tanh(r) and read by a matmul two kernels later; the
    memory planner keeps r alive until then while other intermediates come and go."""
    rng = np.random.default_rng(2)
    wv = rng.standard_normal((8, 8)).astype(np.float32)
    x = ember.symbol(["n", 8], name="x")
    r = x * 2.0 + 1.0
    t = E.tanh(r)
    u = E.matmul(t, ember.asarray(wv))
    z = E.matmul(r, ember.asarray(wv)) + E.exp(u) * 0.1
    graph = ember.graph.optimize(ember.trace_from(z, x))
    # {Mul, Add, Tanh} writes t and r; {Matmul, Exp, Mul}; {Matmul, Add} reads r.
    assert graph.node_titles == ["Fused", "Fused", "Fused"], str(graph)
    assert "y_3: float32[n, 8], y_1: float32[n, 8] = Fused(x, " in str(graph)
    compiled = graph.build()
    for n in (1, 7, 33):
        xv = rng.standard_normal((n, 8)).astype(np.float32)
        rv = xv.astype(np.float64) * 2.0 + 1.0
        ref = rv @ wv + np.exp(np.tanh(rv) @ wv) * 0.1
        assert_matches(compiled.run([ember.asarray(xv)])[0], ref, "float32")


@pytest.mark.parametrize("n", [1, 5, 67])
def test_symbolic_shapes(n: int) -> None:
    x = ember.symbol(["n", 3], name="x")
    a = x + 1.0
    b = E.tanh(a) * a
    compiled = ember.graph.optimize(ember.trace_from([b, a], x)).build()
    assert len(compiled.kernel_names) == 1
    v = np.linspace(-2, 2, n * 3, dtype=np.float32).reshape(n, 3)
    got_b, got_a = compiled.run([ember.asarray(v)])
    av = v.astype(np.float64) + 1.0
    assert_matches(got_a, av, "float32")
    assert_matches(got_b, np.tanh(av) * av, "float32")


@pytest.mark.usefixtures("fresh_dynamo")
def test_training_forward_kernel_writes_the_saved_activation(tmp_path: Path) -> None:
    """In grad mode AOTAutograd's forward graph returns the pre-activation of the GELU for
    the backward: the matmul kernel stores it beside the activation, no GELU kernel of its
    own; gradients match eager."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    eager = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    eager.load_state_dict(model.state_dict())
    x = torch.randn(5, 8)
    options = {"progress": False, "dump_dir": str(tmp_path)}
    compiled = torch.compile(model, backend="ember", options=options)
    compiled(x).square().sum().backward()
    eager(x).square().sum().backward()
    for p, q in zip(model.parameters(), eager.parameters(), strict=True):
        assert p.grad is not None and q.grad is not None
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    (dump,) = (tmp_path / "graph_0_forward").glob("*_fuse_operators.txt")
    fused = dump.read_text()
    # MatmulNT: the product reads the weight as stored (AOTAutograd's t(w) is no copy)
    lines = [line for line in fused.splitlines() if "fused=[MatmulNT, Add, Gelu]" in line]
    assert len(lines) == 1, fused
    assert lines[0].split(" = ")[0].count(":") == 2, lines[0]  # two outputs
    assert "Gelu(" not in fused.replace("fused=[MatmulNT, Add, Gelu]", ""), fused
    assert "Permute" not in fused, fused
    plans = (tmp_path / "graph_0_forward" / "kernels").glob("*.plan.txt")
    assert any("also stores:" in p.read_text() for p in plans)


def _np_layer_norm(v: np.ndarray, dims: tuple[int, ...], w: np.ndarray, b: np.ndarray,
                   eps: float = 1e-5) -> np.ndarray:
    mean = v.mean(axis=dims, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=dims, keepdims=True)
    return (v - mean) / np.sqrt(var + eps) * w + b


def test_a_composite_anchor_never_reads_a_value_its_group_computes() -> None:
    # max(layer_norm(y), y) with y = exp(x) also returned (permuted): the elementwise consumer
    # may inline exp, but then layer_norm (a composite, reading memory) would read y before
    # the group's loop writes it. The fuzzer found it (a wrong answer, relative error ~0.4).
    x = ember.symbol([5, 3, 8], name="x")
    w, b = ember.symbol([3, 8], name="w"), ember.symbol([3, 8], name="b")
    y = E.exp(x * 0.3)
    out = E.minimum(E.layer_norm(y, 2, w, b, 1e-5), y)
    compiled = ember.graph.optimize(ember.trace_from([E.permute(y, [1, 2, 0]), out],
                                                     [x, w, b])).build()
    rng = np.random.default_rng(0)
    xv, wv, bv = (rng.standard_normal(s).astype(np.float32) for s in ([5, 3, 8], [3, 8], [3, 8]))
    got_p, got = compiled.run([ember.asarray(a) for a in (xv, wv, bv)])
    yv = np.exp(xv.astype(np.float64) * 0.3)
    assert_matches(got_p, yv.transpose(1, 2, 0), "float32")
    assert_matches(got, np.minimum(_np_layer_norm(yv, (1, 2), wv, bv), yv), "float32")


def test_a_matmul_anchor_never_reads_a_value_its_group_computes() -> None:
    # matmul(t, w) - t with t = tanh(x): inlining tanh into the subtraction must not put it in
    # the matmul's group (the fuzzer's "map::at" internal error)
    x, w = ember.symbol([5, 3, 6, 4], name="x"), ember.symbol([4, 4], name="w")
    t = E.tanh(x)
    compiled = ember.graph.optimize(ember.trace_from([E.matmul(t, w) - t], [x, w])).build()
    rng = np.random.default_rng(1)
    xv = rng.standard_normal([5, 3, 6, 4]).astype(np.float32)
    wv = rng.standard_normal([4, 4]).astype(np.float32)
    (got,) = compiled.run([ember.asarray(xv), ember.asarray(wv)])
    tv = np.tanh(xv.astype(np.float64))
    assert_matches(got, tv @ wv.astype(np.float64) - tv, "float32")


def test_a_blocked_convolution_read_elsewhere_keeps_its_epilogue_apart() -> None:
    # conv -> conv, and conv / c: the blocked routine's epilogue cannot also store the
    # convolution's output for the second convolution (the fuzzer's internal error)
    torch.manual_seed(0)
    c1, c2 = nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.Conv2d(4, 2, 3, padding=1)
    scale = torch.randn(1, 1, 4, 4).abs() + 1

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        v = c1(x)
        return c2(v), v / scale

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="ember", options={"strict": True})
    x = torch.randn(5, 3, 8, 8)
    with torch.no_grad():
        for got, want in zip(compiled(x), fn(x), strict=True):
            torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def test_an_epilogue_never_reads_its_anchor_through_a_view() -> None:
    """The fuzzer's seed 7916: atan2(m.permute(1, 0), m) after m = amax(x, 1). The permute is
    inlined into atan2, which then read the reduction's output at two indices; as the
    reduction's epilogue it raised an internal error. The atan2 runs as its own kernel."""
    torch._dynamo.reset()

    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m = x.amax(1)
        return torch.matmul(m, x), torch.atan2(m.permute(1, 0), m)

    x = torch.randn(4, 4, 4, generator=torch.Generator().manual_seed(7916))
    with torch.no_grad():
        got = torch.compile(f, backend="ember", options={"strict": True})(x)
    for g, want in zip(got, f(x), strict=True):
        torch.testing.assert_close(g, want, rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()
