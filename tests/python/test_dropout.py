"""Random numbers and dropout in training: ember.ops.random_uniform against a numpy
Philox-4x32-10, and dropout (F.dropout, nn.Dropout, ATen's native_dropout through
AOTAutograd) compiled by ember: the keep fraction within a binomial bound, the values
exactly torch's formula on ember's mask, repeatability under torch.manual_seed, new masks on
every call, a backward that reuses the forward's mask, and models that train with it."""

from __future__ import annotations

import copy
import math
import sys
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import ember
import ember.torch
from ember.torch.phases import wrap
from ember.torch.report import EagerFallbackWarning

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.models import get_model  # noqa: E402

OPTIONS = {"progress": False}


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


# ---- the generator ------------------------------------------------------------------------
def philox_uniform(seed: int, offset: int, index: np.ndarray) -> np.ndarray:
    """Philox-4x32-10 (key = seed, counter = (index, offset)), first word's top 24 bits / 2^24,
    written out in numpy with 64-bit products."""
    mask = np.uint64(0xFFFFFFFF)
    i = index.astype(np.uint64)
    c = [i & mask, i >> np.uint64(32), np.full_like(i, offset & 0xFFFFFFFF),
         np.full_like(i, (offset >> 32) & 0xFFFFFFFF)]
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for _ in range(10):
        p0 = c[0] * np.uint64(0xD2511F53)
        p1 = c[2] * np.uint64(0xCD9E8D57)
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & mask,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & mask]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return (c[0] >> np.uint64(8)).astype(np.float32) / np.float32(2**24)


def _seed(seed: int, offset: int) -> ember.Tensor:
    return ember.asarray(np.array([seed, offset], dtype=np.int64))


@pytest.mark.parametrize("shape", [[1000], [3, 37], [2, 3, 17], [1, 16]])
def test_random_uniform_is_philox(shape):
    seed, offset = 0x0123456789ABCDEF, 77
    got = ember.ops.random_uniform(_seed(seed, offset), shape).numpy()
    want = philox_uniform(seed, offset, np.arange(math.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float32 and got.min() >= 0 and got.max() < 1


def test_random_uniform_fused_into_a_transpose_and_a_graph_input_seed():
    """Read through a transpose (a lane stride of 29 in the consumer's vectors) and scaled,
    with the seed a graph input: new seeds give new numbers from the same compiled graph."""
    seed = ember.symbol([2], "int64", name="seed")
    u = ember.ops.random_uniform(seed, [29, 45])
    out = ember.ops.transpose(u, 0, 1) * 2.0
    compiled = ember.graph.optimize(ember.trace_from([out], [seed])).build()
    for s, o in [(1, 0), (2, 0), (1, 2**40 + 3), (2**62 + 5, 9)]:
        (got,) = compiled.run([_seed(s, o)])
        want = philox_uniform(s, o, np.arange(29 * 45)).reshape(29, 45).T * np.float32(2)
        np.testing.assert_array_equal(got.numpy(), want)


def test_dropout_is_one_vectorized_kernel(tmp_path):
    """x * where(u >= p, 1, 0) * scale: the draw fuses with its consumers into one kernel
    that computes Philox in vectors (philox_uniform_lanes), along the rows and, read
    through a transpose, at a lane stride."""
    seed = ember.symbol([2], "int64", name="seed")
    x = ember.symbol([64, 100], "float32", name="x")
    keep = ember.ops.random_uniform(seed, [64, 100]) >= 0.1
    one = ember.ops.where(keep, ember.ops.scalar(1.0, "float32"), ember.ops.scalar(0.0, "float32"))
    out = x * one * (1 / 0.9)
    flipped = ember.ops.transpose(ember.ops.random_uniform(seed, [100, 64]), 0, 1) + x
    graph = ember.graph.optimize(ember.trace_from([out, flipped], [x, seed]))
    graph.build(dump_dir=str(tmp_path))
    plans = sorted((tmp_path / "kernels").glob("*.plan.txt"))
    assert len(plans) == 2
    for plan in plans:
        assert "vector: __i1, ember_rt::vf::width lanes" in plan.read_text(), plan.read_text()
    source = "".join(p.read_text() for p in (tmp_path / "kernels").glob("unit_*.cpp"))
    assert "philox_uniform_lanes<1>" in source and "philox_uniform_lanes<64>" in source


def test_random_uniform_checks_its_seed():
    with pytest.raises(ember.EmberError, match="int64 tensor of 2 elements"):
        ember.ops.random_uniform(ember.asarray(np.zeros(3, np.int64)), [4])
    with pytest.raises(ember.EmberError, match="int64 tensor of 2 elements"):
        ember.ops.random_uniform(ember.asarray(np.zeros(2, np.int32)), [4])


# ---- dropout in a compiled function (no gradients) ----------------------------------------
def _compiled_dropout(p: float):
    return torch.compile(lambda x: F.dropout(x, p, training=True), backend="ember",
                         options={**OPTIONS, "strict": True})


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_fraction_and_values(p):
    n = 1_000_000
    x = torch.randn(n)
    out = _compiled_dropout(p)(x)
    kept = out != 0
    # The number kept is binomial(n, 1 - p): within 5 standard deviations.
    sigma = math.sqrt(n * p * (1 - p))
    assert abs(kept.sum().item() - n * (1 - p)) < 5 * sigma
    # Exactly ATen's native_dropout on this mask: input * mask * (1 / (1 - p)).
    torch.testing.assert_close(out, x.mul(kept.float()).mul_(1 / (1 - p)), rtol=0, atol=0)


def test_dropout_of_float64_and_edge_probabilities():
    x = torch.randn(4, 300, dtype=torch.float64)
    out = _compiled_dropout(0.3)(x)
    kept = out != 0
    assert out.dtype == torch.float64 and 0 < kept.sum() < x.numel()
    assert torch.equal(out, x.mul(kept.double()).mul_(1 / 0.7))
    torch._dynamo.reset()
    assert torch.equal(_compiled_dropout(1.0)(x), torch.zeros_like(x))
    torch._dynamo.reset()
    assert torch.equal(_compiled_dropout(0.0)(x), x)


def test_same_seed_repeats_and_each_call_draws_anew():
    f = _compiled_dropout(0.5)
    x = torch.randn(64, 33)
    torch.manual_seed(123)
    a, b = f(x), f(x)
    torch.manual_seed(123)
    c, d = f(x), f(x)
    assert torch.equal(a, c) and torch.equal(b, d)
    assert not torch.equal(a != 0, b != 0)


def test_two_dropouts_in_one_graph_draw_different_masks():
    f = torch.compile(lambda x: (F.dropout(x, 0.5, True), F.dropout(x, 0.5, True)),
                      backend="ember", options={**OPTIONS, "strict": True})
    a, b = f(torch.randn(2000) + 10)
    assert not torch.equal(a != 0, b != 0)


def test_eval_and_feature_dropout_stay_as_before():
    x = torch.randn(4, 8, 5)
    f = torch.compile(lambda x: F.dropout(x, 0.5, training=False) * 2, backend="ember",
                      options={**OPTIONS, "strict": True})
    assert torch.equal(f(x), x * 2)
    torch._dynamo.reset()
    g = torch.compile(lambda x: F.dropout1d(x, 0.5, training=True) + 1, backend="ember",
                      options=OPTIONS)
    with pytest.warns(EagerFallbackWarning, match="dropout1d"):
        g(x)


# ---- training through AOTAutograd ---------------------------------------------------------
def test_backward_reuses_the_forward_mask_and_draws_nothing():
    p = 0.4
    f = torch.compile(lambda x: F.dropout(x, p, training=True), backend="ember",
                      options={**OPTIONS, "strict": True})
    x = torch.randn(50, 70, requires_grad=True)
    grad_out = torch.randn(50, 70)
    with mock.patch.object(wrap, "draw_seeds", side_effect=wrap.draw_seeds) as draws:
        y = f(x)
        forward_draws = draws.call_count
        y.backward(grad_out)
        assert forward_draws == 1 and draws.call_count == 1  # none in the backward
    mask = (y != 0).float()
    assert 0 < mask.sum() < mask.numel()
    # ATen's native_dropout_backward on the forward's mask: grad * (mask * scale).
    assert torch.equal(x.grad, grad_out * (mask * (1 / (1 - p))))
    assert torch.equal(y, x.detach().mul(mask).mul_(1 / (1 - p)))


class DropoutNet(nn.Module):
    """tanh (never exactly 0) then dropout: the kept elements of the dropout's output are
    its nonzeros. With `mask` set, the dropout is replaced by that mask (eager reference)."""

    def __init__(self, p: float = 0.3) -> None:
        super().__init__()
        self.l1, self.l2 = nn.Linear(12, 48), nn.Linear(48, 5)
        self.drop = nn.Dropout(p)
        self.mask: torch.Tensor | None = None

    def forward(self, x):
        h = torch.tanh(self.l1(x))
        if self.mask is None:
            d = self.drop(h)
        else:
            d = h * self.mask * (1 / (1 - self.drop.p))
        return self.l2(d), d


def _grads(model: nn.Module) -> list[torch.Tensor]:
    return [p.grad.clone() for p in model.parameters()]


def test_a_model_with_dropout_trains_and_matches_eager_on_embers_mask():
    torch.manual_seed(0)
    model = DropoutNet().train()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="ember", options={**OPTIONS, "strict": True})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    x, target = torch.randn(16, 12), torch.randint(0, 5, (16,))
    masks = []
    for _ in range(3):
        opt.zero_grad()
        ref_opt.zero_grad()
        out, d = compiled(x)
        F.cross_entropy(out, target).backward()
        reference.mask = (d != 0).float().detach()
        masks.append(reference.mask)
        ref_out, _ = reference(x)
        F.cross_entropy(ref_out, target).backward()
        torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
        for g, r in zip(_grads(model), _grads(reference), strict=True):
            torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-6)
        opt.step()
        ref_opt.step()
    assert not torch.equal(masks[0], masks[1])
    for a, b in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_training_runs_repeat_bit_for_bit_under_manual_seed():
    torch.manual_seed(0)
    base = DropoutNet(0.5).train()
    x, target = torch.randn(16, 12), torch.randint(0, 5, (16,))
    runs = []
    for _ in range(2):
        model = copy.deepcopy(base)
        compiled = torch.compile(model, backend="ember", options={**OPTIONS, "strict": True})
        torch.manual_seed(7)
        out, _ = compiled(x)
        F.cross_entropy(out, target).backward()
        runs.append((out.detach(), _grads(model)))
        torch._dynamo.reset()
    (out_a, grads_a), (out_b, grads_b) = runs
    assert torch.equal(out_a, out_b)
    for a, b in zip(grads_a, grads_b, strict=True):
        assert torch.equal(a, b)


def test_bert_trains_with_dropout_in_ember():
    """The small benchmark BERT in train() mode (dropout 0.1 after the embeddings, on the
    attention probabilities and after each dense layer): forward and backward compile with
    no operator in eager PyTorch, and a seed repeats the step exactly."""
    spec = get_model("bert")
    model = spec.build(small=True).train()
    ids, attention_mask = spec.example_inputs(batch_size=2, small=True)
    compiled = torch.compile(model, backend="ember", options={**OPTIONS, "strict": True})
    results = []
    for _ in range(2):
        model.zero_grad()
        torch.manual_seed(3)
        with warnings.catch_warnings():
            warnings.simplefilter("error", EagerFallbackWarning)
            out = compiled(ids, attention_mask)
            first = out[0] if isinstance(out, (tuple, list)) else out
            first.float().square().mean().backward()
        results.append((first.detach(), [p.grad.clone() for p in model.parameters()
                                         if p.grad is not None]))
    (out_a, grads_a), (out_b, grads_b) = results
    assert torch.isfinite(out_a).all() and len(grads_a) > 10
    assert torch.equal(out_a, out_b)
    for a, b in zip(grads_a, grads_b, strict=True):
        assert torch.equal(a, b)
    # Dropout changed the output: eval mode (the identity) gives another one.
    with torch.no_grad():
        eager_eval = copy.deepcopy(model).eval()(ids, attention_mask)
    eval_first = eager_eval[0] if isinstance(eager_eval, (tuple, list)) else eager_eval
    assert not torch.allclose(out_a, eval_first, atol=1e-3)


def test_ahead_of_time_compile_refuses_a_model_that_draws_random_numbers() -> None:
    """A saved model has no generator to draw from: ember.compile says to call eval()."""
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)).train()
    with pytest.raises(ember.EmberError, match=r"draws random numbers .*call model\.eval\(\)"):
        ember.compile(model, (torch.randn(2, 8),), options=OPTIONS)
    # In eval mode the same model compiles and matches eager.
    model.eval()
    x = torch.randn(2, 8)
    compiled = ember.compile(model, (x,), options=OPTIONS)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
