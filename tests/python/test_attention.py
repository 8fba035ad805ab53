"""The attention operator (ember.ops.attention), the scaled_dot_product_attention converter
that uses it, and the rewrite rule that finds attention written out (matmul, scale, mask,
softmax, matmul): against torch, on the BERT and GPT-2 benchmark models, and on near misses
the rule must leave alone."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import ember

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.models import get_model  # noqa: E402

E = ember.ops


def _rand(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _check(got: torch.Tensor, want: torch.Tensor, atol: float = 1e-4) -> None:
    torch.testing.assert_close(got, want, atol=atol, rtol=1e-4, equal_nan=True)


# (lq, lk, e, ev) with odd sizes, lq != lk
SIZES = [(1, 1, 1, 1), (3, 17, 64, 64), (17, 3, 65, 3), (64, 130, 17, 65), (130, 64, 64, 130)]


def _mask(kind: str, b: int, h: int, lq: int, lk: int, seed: int) -> torch.Tensor | None:
    """None, or a float / bool mask of a broadcast shape; every query row 0 masks all keys."""
    shapes = {"none": None, "float_keys": (b, 1, 1, lk), "float_full": (b, h, lq, lk),
              "bool_rows": (lq, lk), "bool_heads": (1, h, lq, 1)}
    shape = shapes[kind]
    if shape is None:
        return None
    r = torch.rand(*shape, generator=torch.Generator().manual_seed(seed))
    if kind.startswith("bool"):
        m = r > 0.3
        if shape[-2] == lq:
            m[..., 0, :] = False
        return m
    m = torch.where(r < 0.2, torch.tensor(float("-inf")), r)
    if shape[-2] == lq:
        m[..., 0, :] = float("-inf")
    return m


@pytest.mark.parametrize("lq,lk,e,ev", SIZES)
@pytest.mark.parametrize("kind", ["none", "float_keys", "float_full", "bool_rows", "bool_heads"])
@pytest.mark.parametrize("causal", [False, True])
def test_op_matches_torch_sdpa(lq: int, lk: int, e: int, ev: int, kind: str,
                               causal: bool) -> None:
    b, h = 2, 3
    q, k, v = _rand(b, h, lq, e, seed=1), _rand(b, h, lk, e, seed=2), _rand(b, h, lk, ev, seed=3)
    mask = _mask(kind, b, h, lq, lk, seed=4)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and
                                          mask is None)
    got = E.attention(ember.from_torch(q), ember.from_torch(k), ember.from_torch(v),
                      None if mask is None else ember.from_torch(mask), None,
                      causal and mask is None)
    _check(got.torch(), want)


def test_op_scale_and_errors() -> None:
    q, k, v = _rand(2, 5, 8, seed=1), _rand(2, 7, 8, seed=2), _rand(2, 7, 4, seed=3)
    got = E.attention(ember.from_torch(q), ember.from_torch(k), ember.from_torch(v), scale=0.3,
                      causal=True)
    want = F.scaled_dot_product_attention(q, k, v, scale=0.3, is_causal=True)
    _check(got.torch(), want)
    with pytest.raises(ember.EmberError, match="attention: q .* must have one head size"):
        E.attention(ember.from_torch(q), ember.from_torch(v), ember.from_torch(v))
    with pytest.raises(ember.EmberError, match="does not broadcast to the scores"):
        E.attention(ember.from_torch(q), ember.from_torch(k), ember.from_torch(v),
                    ember.from_torch(torch.zeros(5, 6)))
    with pytest.raises(ember.EmberError, match="takes float32 q, k and v"):
        E.attention(ember.from_torch(q.double()), ember.from_torch(k), ember.from_torch(v))


# ---- the scaled_dot_product_attention converter -----------------------------------------


class Sdpa(nn.Module):
    def __init__(self, mask: torch.Tensor | None, causal: bool, scale: float | None = None,
                 gqa: bool = False) -> None:
        super().__init__()
        self.mask, self.causal, self.scale, self.gqa = mask, causal, scale, gqa

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask,
                                              is_causal=self.causal, scale=self.scale,
                                              enable_gqa=self.gqa)


def _compiled_graph_text(model: nn.Module, args: tuple[torch.Tensor, ...], dump: Path) -> tuple[
        torch.Tensor, str]:
    """The compiled model's output and the text of its optimized graphs."""
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"dump_dir": str(dump)})
    with torch.no_grad():
        out = compiled(*args)
    texts = [p.read_text() for p in sorted(dump.rglob("*_rewrite_patterns.txt"))]
    return out, "\n".join(texts)


@pytest.mark.parametrize("lq,lk,e,ev", SIZES[1:4])
@pytest.mark.parametrize("kind,causal", [("none", False), ("none", True), ("float_keys", False),
                                         ("float_full", False), ("bool_rows", False),
                                         ("bool_heads", False)])
def test_sdpa_converter_uses_attention(lq: int, lk: int, e: int, ev: int, kind: str,
                                       causal: bool, tmp_path: Path) -> None:
    torch._dynamo.reset()
    b, h = 2, 3
    q, k, v = _rand(b, h, lq, e, seed=5), _rand(b, h, lk, e, seed=6), _rand(b, h, lk, ev, seed=7)
    model = Sdpa(_mask(kind, b, h, lq, lk, seed=8), causal)
    out, graphs = _compiled_graph_text(model, (q, k, v), tmp_path)
    assert "Attention(" in graphs
    with torch.no_grad():
        _check(out, model(q, k, v))


def test_sdpa_converter_scale_and_gqa(tmp_path: Path) -> None:
    torch._dynamo.reset()
    q, k, v = _rand(1, 4, 9, 16, seed=1), _rand(1, 2, 11, 16, seed=2), _rand(1, 2, 11, 8, seed=3)
    model = Sdpa(None, True, scale=0.25, gqa=True)
    out, graphs = _compiled_graph_text(model, (q, k, v), tmp_path)
    assert "Attention(" in graphs and "scale=0.25" in graphs
    with torch.no_grad():
        _check(out, model(q, k, v))


# ---- the rewrite rule ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bert", "gpt2", "gpt2_sdpa"])
def test_rewrite_fires_on_models(name: str, tmp_path: Path) -> None:
    torch._dynamo.reset()
    spec = get_model(name)
    model = spec.build(small=True)
    inputs = spec.example_inputs(batch_size=2, small=True)
    out, graphs = _compiled_graph_text(model, inputs, tmp_path)
    layers = 2
    assert graphs.count("= Attention(") == layers, graphs
    assert "Softmax(" not in graphs
    if name == "gpt2":  # the tril buffer became causal=True
        assert "causal=True" in graphs and "mask=False" in graphs
    with torch.no_grad():
        want = model(*inputs)
    for g, w in zip(out if isinstance(out, tuple) else (out,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        _check(g, w)


def _np_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
                  mask: np.ndarray | None = None) -> np.ndarray:
    s = (q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64)) * scale
    if mask is not None:
        s = s + mask
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v.astype(np.float64)


def _traced(build: object, shapes: list[list[int]]) -> tuple[ember.FlowGraph, list[ember.Tensor]]:
    syms = [ember.symbol(s, "float32") for s in shapes]
    outs = build(*syms)  # type: ignore[operator]
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    return ember.trace_from(outs, syms), syms


def test_rewrite_on_traced_graph_matches_numpy() -> None:
    mask = ember.asarray(np.where(np.arange(9) % 4 == 0, -1e9, 0.0).astype(np.float32)
                            .reshape(1, 1, 9))

    def build(q: ember.Tensor, k: ember.Tensor, v: ember.Tensor) -> ember.Tensor:
        s = E.matmul(q, E.transpose(k, -1, -2)) * 0.125 + mask
        return E.matmul(E.softmax(s, 2), v)

    graph, _ = _traced(build, [[2, 7, 16], [2, 9, 16], [2, 9, 5]])
    opt = ember.graph.optimize(graph)
    assert "Attention(" in str(opt) and "scale=0.125" in str(opt)
    q, k, v = (np.random.default_rng(i).standard_normal(s).astype(np.float32)
               for i, s in enumerate([[2, 7, 16], [2, 9, 16], [2, 9, 5]]))
    got = opt.build().run([ember.asarray(q), ember.asarray(k), ember.asarray(v)])[0]
    want = _np_attention(q, k, v, 0.125, mask.numpy().astype(np.float64))
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5, rtol=1e-4)


def test_rewrite_takes_a_key_transposed_from_another_order() -> None:
    """k^T made by one permute from [B, S, H, E] to [B, H, E, S] (as ONNX exports write
    GPT-2's attention), with GPT-2's causal where(drop, fill, s): still one attention, its k a
    permute of its own, the values those of the written-out graph."""
    b, s_len, h, e = 2, 7, 3, 8
    drop = ember.asarray(np.triu(np.ones((1, 1, s_len, s_len), bool), 1))

    def build(q: ember.Tensor, k: ember.Tensor, v: ember.Tensor) -> ember.Tensor:
        kt = E.permute(k, [0, 2, 3, 1])  # [B, S, H, E] -> [B, H, E, S]
        scores = E.where(drop, float("-inf"), E.matmul(q, kt) * 0.25)
        return E.matmul(E.softmax(scores, 3), v)

    shapes = [[b, h, s_len, e], [b, s_len, h, e], [b, h, s_len, e]]
    graph, _ = _traced(build, shapes)
    opt = ember.graph.optimize(graph)
    text = str(opt)
    assert "Attention(" in text and "causal=True" in text and "Softmax" not in text, text
    args = [ember.asarray(np.random.default_rng(i).standard_normal(sh).astype(np.float32))
            for i, sh in enumerate(shapes)]
    got = opt.build().run(args)[0].numpy()
    q, k, v = (a.numpy() for a in args)
    causal = np.where(np.triu(np.ones((s_len, s_len), bool), 1), -np.inf, 0.0)
    want = _np_attention(q, np.transpose(k, (0, 2, 1, 3)), v, 0.25, causal)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-4)


def test_rewrite_of_fully_masked_row_gives_nan_as_softmax() -> None:
    keep = ember.asarray(np.array([[False] * 4, [True] * 4, [True, False, True, False]]))

    def build(q: ember.Tensor, k: ember.Tensor, v: ember.Tensor) -> ember.Tensor:
        s = E.where(keep, E.matmul(q, E.transpose(k, -1, -2)), float("-inf"))
        return E.matmul(E.softmax(s / 2.0, 1), v)

    graph, _ = _traced(build, [[3, 8], [4, 8], [4, 2]])
    opt = ember.graph.optimize(graph)
    assert "Attention(" in str(opt) and "empty_rows=nan" in str(opt)
    q, k, v = (np.random.default_rng(i).standard_normal(s).astype(np.float32)
               for i, s in enumerate([[3, 8], [4, 8], [4, 2]]))
    args = [ember.asarray(x) for x in (q, k, v)]
    got = opt.build().run(args)[0].numpy()
    want = ember.graph.optimize(graph).build().run(args)[0].numpy()  # same graph, same result
    eager = build(*args).numpy()  # run at once: no rewrite
    np.testing.assert_allclose(got, eager, atol=1e-5, rtol=1e-4, equal_nan=True)
    assert np.isnan(got[0]).all() and np.isnan(want[0]).all()


def _near_miss(build: object, e: int = 8) -> None:
    graph, _ = _traced(build, [[2, 6, e], [2, 6, e], [2, 6, e]])
    assert "Attention(" not in str(ember.graph.optimize(graph))


def test_rewrite_leaves_softmax_over_another_axis_alone() -> None:
    _near_miss(lambda q, k, v: E.matmul(E.softmax(E.matmul(q, E.transpose(k, -1, -2)) * 0.3, 1),
                                        v))


def test_rewrite_leaves_intermediate_used_twice_alone() -> None:
    def build(q: ember.Tensor, k: ember.Tensor, v: ember.Tensor) -> tuple[ember.Tensor, ...]:
        s = E.matmul(q, E.transpose(k, -1, -2)) * 0.3
        return E.matmul(E.softmax(s, 2), v), s

    _near_miss(build)

    def probs_twice(q: ember.Tensor, k: ember.Tensor, v: ember.Tensor) -> ember.Tensor:
        p = E.softmax(E.matmul(q, E.transpose(k, -1, -2)), 2)
        return E.matmul(p, v) + E.sum(p)

    _near_miss(probs_twice)


def test_rewrite_leaves_scaled_mask_and_tensor_scale_alone() -> None:
    def mask_then_scale(q: ember.Tensor, k: ember.Tensor, v: ember.Tensor) -> ember.Tensor:
        s = (E.matmul(q, E.transpose(k, -1, -2)) + q[:, :, :6]) * 0.3
        return E.matmul(E.softmax(s, 2), v)

    _near_miss(mask_then_scale)

    def tensor_scale(q: ember.Tensor, k: ember.Tensor, v: ember.Tensor) -> ember.Tensor:
        s = E.matmul(q, E.transpose(k, -1, -2)) * E.sum(v)
        return E.matmul(E.softmax(s, 2), v)

    _near_miss(tensor_scale)
    # k not transposed: a product of two square [6, 6] matrices, not q k^T
    _near_miss(lambda q, k, v: E.matmul(E.softmax(E.matmul(q, k) * math.sqrt(2.0), 2), v), e=6)
