"""Symbolic sizes (dynamic=True) in the torch.compile backend: the size patterns of
transformer code (position ids from arange, causal masks sliced to the length, views to
[B, T, heads, head_dim], expand/full to symbolic shapes, arithmetic on sizes) convert to
ember with symbolic dimensions, match eager PyTorch at several lengths, compile in strict
mode (no eager fallback), and a new length reuses the compiled graph."""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from _helpers_dynamic import STRICT, check_lengths, max_err
from torch import nn

import ember
import ember.torch
from ember.torch.report import EagerFallbackWarning

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
models = pytest.importorskip("benchmarks.models")



pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def x3(n: int) -> tuple[torch.Tensor]:
    return (torch.randn(2, n, 6),)


# ---- the patterns, one per test --------------------------------------------------------
def test_arange_of_a_symbolic_length(builds):
    def fn(x):
        t = x.shape[1]
        pos = torch.arange(t)  # int64 position ids
        return x + pos[None, :, None].float() + torch.arange(1, t + 1, dtype=torch.float32)[
            None, :, None]

    check_lengths(fn, x3, (8, 12, 5), builds)


def test_arange_with_step_and_symbolic_start(builds):
    def fn(x):
        t = x.shape[1]
        return x.sum(1) + torch.arange(0, t * 2, 2).float().sum() + torch.arange(t - 1, t + 3)[
            None, :].float()[:, :1]

    check_lengths(fn, x3, (8, 12, 5), builds)


def test_slices_with_symbolic_bounds(builds):
    def fn(x):
        t = x.shape[1]
        return x[:, : t - 1] * 2 + x[:, 1:], x[:, -2:] + x[:, :2], x[:, 1 : t - 1 : 2]

    check_lengths(fn, x3, (8, 12, 5), builds)


def test_causal_mask_buffer_sliced_to_the_length(builds):
    class Masked(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(6, 6)
            causal = torch.tril(torch.ones(32, 32, dtype=torch.bool)).view(1, 1, 32, 32)
            self.register_buffer("bias", causal, persistent=False)

        def forward(self, x):
            t = x.shape[1]
            h = self.proj(x)[:, None]
            att = h @ h.transpose(-2, -1)
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            return att.softmax(-1)

    model = Masked().eval()
    check_lengths(model, x3, (8, 12, 5), builds)


def test_narrow_select_and_integer_indices(builds):
    def fn(x):
        t = x.shape[1]
        return torch.narrow(x, 1, 1, t - 2) + 1, x[:, 0] + x[:, -1], x.select(1, 2), \
            torch.narrow(x, 1, -2, 2)

    check_lengths(fn, x3, (8, 12, 5), builds)


def test_views_to_symbolic_shapes(builds):
    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(6, 8)
            self.heads = 2

        def forward(self, x):
            b, t, _ = x.shape
            y = self.proj(x)
            c = y.shape[-1]
            q = y.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            back = q.transpose(1, 2).contiguous().view(b, t, c)
            flat = y.view(-1, c)
            return back + y, flat * 2, y.reshape(b * t, c), q.reshape(b, self.heads, t * 4)

    check_lengths(Heads().eval(), x3, (8, 12, 5), builds)


def test_views_with_symbolic_arithmetic(builds):
    def fn(x):
        b, t, c = x.shape  # every size symbolic, c included
        y = x.view(b, t, 2, c // 2).transpose(1, 2).contiguous()
        return y.view(b, 2, t * (c // 2)), x.reshape(b, t // 2, 2 * c)

    check_lengths(fn, lambda n: (torch.randn(2, n, 6),), (8, 12, 6), builds)


def test_expand_and_filled_tensors_of_symbolic_shapes(builds):
    def fn(x):
        b, t, c = x.shape
        e = x[:, :1, :].expand(b, t, c) + x[:, :1].expand(-1, t, -1)
        f = torch.full((b, t, 1), 2.0) + torch.ones(t, c) + torch.zeros(b, t, c)
        g = x.new_ones(b, t, c) + x.new_zeros((t, c)) + x.new_full((1, t, 1), 3.0)
        return e + f + g, torch.ones(t, t, dtype=torch.bool).tril()

    check_lengths(fn, x3, (8, 12, 5), builds)


def test_size_arithmetic(builds):
    def fn(x):
        b, t, c = x.shape
        scale = (t * 2 - 1) / (c // 2)
        return x * scale + (t - 1), x.sum() * t

    check_lengths(fn, x3, (8, 12, 5), builds)


def test_ember_prints_and_reads_size_expressions():
    x = ember.symbol([2, "n", 6])
    y = ember.ops.slice(x, [1], [1], ["n - 1"], clamp=False)
    assert y.shape == (2, "(n - 2)", 6)
    z = ember.ops.reshape(y, [-1, 6])
    assert z.shape == ("((2 * n) - 4)", 6)
    assert ember.ops.reshape(z, list(y.shape)).shape == y.shape  # printed sizes read back
    assert ember.ops.arange(0, "n").shape == ("n",)
    assert ember.ops.full(["n * 2", 3], 1.0).shape == ("(2 * n)", 3)
    with pytest.raises(ember.EmberError, match="cannot read the size expression"):
        ember.ops.reshape(x, [2, "n +* 1", 6])


# ---- whole models --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gpt2", "gpt2_sdpa", "bert"])
def test_models_at_two_lengths(name, builds):
    spec = models.get_model(name)
    model = spec.build(small=True)
    config = spec.config(small=True)

    def make(n: int) -> tuple:
        cfg = dataclasses.replace(config, seq_len=n)
        return spec.make_inputs(cfg, 2, torch.Generator().manual_seed(n))

    check_lengths(model, make, (16, 11), builds)


# ---- scalars and sizes across segments, creation ops, reports ------------------------------
def compiled_split(fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    """fn compiled with dynamic=True, its fallback warning silenced (the split is wanted)."""
    opts = {"min_block_size": 1, **options}
    compiled = torch.compile(fn, backend="ember", dynamic=True, options=opts)

    def call(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EagerFallbackWarning)
            return compiled(*args)

    return call


def test_a_float_scalar_read_in_one_segment_and_used_in_another(builds):
    # The float argument arrives as a 0-d tensor read with .item() (a SymFloat with a symbol
    # of its own) in segment 0; segment 1 gets that SymFloat as an input. It was bound with
    # int(): 0.125 became 0.
    def fn(x, scale):
        return torch.relu(x * scale) * scale

    compiled = compiled_split(fn, torch_executed_ops=["torch.relu"])
    with torch.no_grad():
        for n, scale in ((8, 0.125), (12, 2.75), (5, -0.5)):
            x = torch.randn(2, n)
            assert max_err(compiled(x, scale), fn(x, scale)) < 1e-5, (n, scale)
    assert len(builds) == 2, builds  # two ember segments, built once


def test_creation_ops_sized_by_a_symbolic_size_are_not_folded(builds):
    emb = nn.Embedding(10, 4)

    def fn(ids):
        shape = ids.size()
        token_types = torch.zeros(shape, dtype=torch.long, device=ids.device)
        mask = torch.ones(ids.shape)
        filled = torch.full(ids.size(), 2.0)
        return emb(ids) + emb(token_types), mask * filled, ids.new_zeros(ids.size()) + ids

    check_lengths(fn, lambda n: (torch.randint(0, 10, (2, n)),), (8, 12, 5), builds)


def test_the_correctness_report_with_symbolic_sizes(builds, capsys):
    lin = nn.Linear(6, 6)

    def fn(x):
        b, t, c = x.shape
        y = lin(x).view(b, t, 2, c // 2).transpose(1, 2)
        att = (y @ y.transpose(-1, -2)) * (c // 2) ** -0.5
        return att.softmax(-1) + torch.arange(t)[None, None, :, None] + t

    for options in ({}, {"torch_executed_ops": ["torch.Tensor.softmax"]}):
        torch._dynamo.reset()
        builds.clear()
        compiled = compiled_split(fn, correctness_report=True, **options)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("error")  # "could not compile graph 0" is a failure
            for n in (8, 5):
                x = torch.randn(2, n, 6)
                assert max_err(compiled(x), fn(x)) < 1e-5
        table = capsys.readouterr().out
        assert "0 nodes exceed the error expected" in table, table
        assert "torch.Tensor.view" in table
        assert ("eager" in table) == bool(options)
        assert builds and all(b.startswith("graph_0") for b in builds), builds


def test_arithmetic_on_symbolic_floats(builds):
    def fn(x):
        d = x.shape[-1]
        s = d ** -0.5
        half = d * 0.5
        return ((x * s).softmax(-1) / s + x / math.sqrt(d) - torch._sym_sqrt(d) * x
                + x * (half * 2.0) + x / (half / 3.0) + (half - 1.5) / half,
                torch.full((2, x.shape[1]), s))

    check_lengths(fn, lambda n: (torch.randn(2, n, n + 3),), (8, 12, 5), builds)


def test_rotary_embeddings_of_a_symbolic_length(builds):
    # cos and sin of a table computed from arange(seq): not a constant with dynamic sizes.
    class Rotary(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
            self.register_buffer("inv_freq", inv, persistent=False)

        def forward(self, x):
            t = x.shape[1]
            freqs = torch.arange(t, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
            emb = torch.cat([freqs, freqs], dim=-1)
            x1, x2 = x.chunk(2, dim=-1)
            rotated = torch.cat([-x2, x1], dim=-1)
            return x * emb.cos() + rotated * torch.sin(emb), torch.cos(x * 300.0).sin()

    check_lengths(Rotary(8).eval(), lambda n: (torch.randn(2, n, 8),), (9, 12, 700), builds)


def test_an_input_sized_by_an_expression_unifies_with_computed_sizes(builds):
    # relu runs eagerly, so its result enters the segment with the size 4*s; the same size
    # computed inside (a reshape of x) must be the same size to ember (it was a symbol
    # e_4_s of its own, so add, bmm and view fell back).
    def fn(x):
        r = torch.relu(x.reshape(2, -1))
        v = x.reshape(2, -1)
        return r + v, torch.bmm(r[:, None, :], v[:, :, None]), r.view(2, 4, -1) + x

    compiled = compiled_split(fn, torch_executed_ops=["torch.relu"], strict=True)
    with torch.no_grad():
        for n in (9, 12, 5):
            x = torch.randn(2, 4, n)
            assert max_err(compiled(x), fn(x)) < 1e-4, n
    assert len(builds) == 2, builds


# ---- sizes used as values, and sizes that Dynamo's guards pin ------------------------------
def test_var_and_std_over_symbolic_sizes(builds):
    # The divisor N - correction is the symbolic size read at run time.
    def fn(x):
        return (x.var(1), x.std(-1, keepdim=True), torch.var(x, (0, 1), correction=0),
                x.std(1, unbiased=False))

    check_lengths(fn, x3, (8, 12, 5), builds)


def test_var_divides_by_torchs_max_of_count_minus_correction():
    # (0, n) with n symbolic: the count 0 * n is symbolic and 0; torch divides the empty sum
    # by max(0 - correction, 0) = 0 (NaN), never by -1 (-0.0: a wrong answer OpInfo found).
    # Corrections above the count give NaN or inf, as in torch.
    def fn(x):
        return (x.var(), torch.var(x, 1, correction=2.5), x[:0].std(), x.std(0, correction=7))

    compiled = torch.compile(fn, backend="ember", dynamic=True, options={"strict": True})
    for n in (3, 6):
        x = torch.randn(4, n)
        with torch.no_grad():
            for got, want in zip(compiled(x), fn(x), strict=True):
                torch.testing.assert_close(got, want, equal_nan=True)


def test_flip_and_roll_of_symbolic_dimensions():
    # gathers at positions computed in the graph (n - 1 - i; (i - shift) mod n), shifts that
    # change between calls included
    def fn(x, k):
        return x.flip(0, 2), torch.roll(x, 3, 1), torch.roll(x, (k, -k), (0, 2)), x.roll(k)

    compiled = torch.compile(fn, backend="ember", dynamic=True, options={"strict": True})
    for shape, k in [((3, 4, 5), 2), ((6, 2, 7), -9), ((4, 5, 3), 11)]:
        x = torch.randn(*shape)
        with torch.no_grad():
            for got, want in zip(compiled(x, k), fn(x, k), strict=True):
                torch.testing.assert_close(got, want)


def test_fftshift_trace_and_select_scatter_of_symbolic_sizes():
    def fn(x, src, i):
        return (torch.fft.fftshift(x), torch.fft.ifftshift(x, dim=1), torch.trace(x[0]),
                torch.select_scatter(x, src, 1, i), torch.select_scatter(x, src, 1, -1))

    compiled = torch.compile(fn, backend="ember", dynamic=True, options={"strict": True})
    for shape, i in [((3, 4, 5), 2), ((2, 7, 6), 5), ((4, 3, 3), 0)]:
        x = torch.randn(*shape)
        src = torch.randn(shape[0], shape[2])
        with torch.no_grad():
            for got, want in zip(compiled(x, src, i), fn(x, src, i), strict=True):
                torch.testing.assert_close(got, want)


def test_splits_by_sizes_known_at_run_time():
    # a split size that changes between calls (a SymInt): the pieces torch recorded, whose
    # sizes are expressions of it; hsplit / vsplit / dsplit of symbolic dimensions
    def fn(x, k):
        return (*torch.split(x, k, 1), *torch.split(x, [k, x.shape[1] - k], 1),
                *torch.hsplit(x, 2), *torch.vsplit(x.mT, 2), *torch.dsplit(x, [1]))

    compiled = torch.compile(fn, backend="ember", dynamic=True, options={"strict": True})
    for shape, k in [((2, 8, 3), 3), ((4, 6, 4), 4), ((2, 10, 5), 3)]:
        x = torch.randn(*shape)
        with torch.no_grad():
            got, want = compiled(x, k), fn(x, k)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w)


def test_constant_pad_by_widths_and_values_known_at_run_time():
    # widths that change between calls are symbols (non-negative: a guard), the fill value a
    # run-time scalar
    def fn(x, a, b, v):
        return F.pad(x, (a, b, 1, a), value=v), torch.constant_pad_nd(x, (0, b), v)

    compiled = torch.compile(fn, backend="ember", options={"strict": True})
    for a, b, v in [(1, 2, 0.5), (3, 0, 1.5), (2, 5, -1.0)]:
        x = torch.randn(2, 3, 4)
        with torch.no_grad():
            for got, want in zip(compiled(x, a, b, v), fn(x, a, b, v), strict=True):
                torch.testing.assert_close(got, want)


def test_attention_with_a_symbolic_head_size(builds):
    # The default scale 1 / sqrt(E) of a symbolic head size E is computed at run time.
    def fn(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    def make(n: int) -> tuple:
        g = torch.Generator().manual_seed(n)
        return tuple(torch.randn(2, 3, 5, n, generator=g) for _ in range(3))

    check_lengths(fn, make, (8, 16, 6), builds)


def test_chunk_and_split_of_a_symbolic_dimension(builds):
    # Uneven pieces ((n + 2) // 3 each, the rest last) as torch records them.
    def fn(x):
        a, b, c = x.chunk(3, dim=1)
        p, q = torch.split(x, x.shape[1] // 2 + 1, dim=1)
        return a * 2, b + 1, c.sum(1), p - 1, q * q

    check_lengths(fn, x3, (8, 7, 11), builds)


def test_a_size_pinned_by_a_view_is_a_constant(builds):
    # Viewing the last (symbolic) dim as (2, 3) makes Dynamo guard that it is 6; ember
    # takes the guard instead of failing to prove s * s == s * 6.
    def fn(x):
        y = torch.softmax(x, 3)
        return y.reshape(*y.shape[:-1], 2, 3).exp(), y * 2

    check_lengths(fn, lambda n: (torch.randn(n, 3, 6, 6),), (5, 7, 4), builds)


def test_a_slice_whose_stop_torch_clamps_to_a_symbolic_size(builds):
    # x[:, 2:4] of a dimension s that Dynamo guarded s <= 4: torch's length is s - 2.
    # (Dynamo may recompile for another length; each graph must convert in strict mode.)
    def fn(x):
        return x[:, 2:4] * 2, x[:, 1:9:2] + 1

    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    with torch.no_grad():
        for n in (3, 4, 7):
            x = torch.randn(2, n, 3)
            assert max_err(compiled(x), fn(x)) < 1e-4, n
    assert builds


def test_an_unspecialized_global_float_under_sqrt(builds):
    # GPT-2's gelu_new: math.sqrt(2 / math.pi) of a global float, which Dynamo passes as a
    # 0-d float64 input read with .item() (torch._sym_sqrt of it), plus `is not` tests.
    def fn(x):
        k = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + torch.tanh(k * (x + 0.044715 * torch.pow(x, 3.0))))

    check_lengths(fn, x3, (8, 12, 5), builds)


def test_narrow_and_tril_with_offsets_known_at_run_time(builds):
    # Integer arguments that Dynamo makes symbolic after they change: a narrow start (a
    # symbol the slice holds in its attributes, bound at run time), a diagonal offset (which
    # may be negative: a 0-d run-time value, never a size), and a 0-d tensor start.
    cut = torch.compile(lambda x, s: torch.narrow(x, 1, s, 2), backend="ember", options=STRICT)
    tri = torch.compile(lambda x, k: (torch.tril(x, k), torch.triu(x, k)), backend="ember",
                        options=STRICT)
    at = torch.compile(lambda x, s: torch.narrow(x, 1, s, 3), backend="ember", options=STRICT)
    with torch.no_grad():
        for s in (0, 1, 5, 3):
            x = torch.randn(3, 8)
            assert torch.equal(cut(x, s), torch.narrow(x, 1, s, 2)), s
        for k in (0, 1, -1, 2, -3):
            x = torch.randn(4, 5)
            assert max_err(tri(x, k), (torch.tril(x, k), torch.triu(x, k))) == 0, k
        for s in (0, 2, -3):
            x = torch.randn(2, 7)
            start = torch.tensor(s)
            assert torch.equal(at(x, start), torch.narrow(x, 1, start, 3)), s


def test_a_negative_symbolic_start_or_index_is_fixed_by_a_guard():
    # ember binds symbols as sizes, never negative: a start or index that may be negative
    # is fixed to its traced value by a guard (one graph per negative value) and converts.
    cut = torch.compile(lambda x, s: torch.narrow(x, 1, s, 2), backend="ember", options=STRICT)
    pick = torch.compile(lambda x, i: (x[:, i], x[i:]), backend="ember", options=STRICT)
    with torch.no_grad():
        for s in (1, 2, -3, -4, -3):
            x = torch.randn(3, 8)
            assert torch.equal(cut(x, s), torch.narrow(x, 1, s, 2)), s
        for i in (1, 2, -1, -2, 0):
            x = torch.randn(4, 5)
            assert max_err(pick(x, i), (x[:, i], x[i:])) == 0, i


@pytest.mark.parametrize("k", [0, 2, -1])
def test_diagonals_of_symbolic_sizes(k, builds):
    # positions computed in the graph: the diagonal's length is
    # max(min(rows - max(-k, 0), cols - max(k, 0)), 0); diag_embed places a symbolic length
    def fn(x):
        return (torch.diagonal(x, k, 0, 1), torch.diagonal(x, k, 2, 0), x[0].diag(k),
                torch.diag_embed(x, k), torch.diag_embed(x[0], k, 0, 2),
                torch.diagonal_scatter(x, torch.diagonal(x, k, 1, 2).exp(), k, 1, 2))

    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    with torch.no_grad():
        for shape in [(4, 5, 6), (7, 3, 2), (3, 3, 9), (2, 6, 1)]:
            x = torch.randn(*shape)
            for got, want in zip(compiled(x), fn(x), strict=True):  # some are empty
                torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert len(builds) < 4, builds


@pytest.mark.parametrize("options", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                     {"label_smoothing": 0.1}, {"ignore_index": 1},
                                     {"weight": True, "label_smoothing": 0.2}])
def test_class_index_losses_of_a_symbolic_batch(options, builds):
    # nll_loss / cross_entropy with class indices and probabilities over symbolic batch and
    # class counts; a label smoothing Dynamo passes as a run-time value included
    def fn(x, t, w, p):
        kw = dict(options)
        if kw.pop("weight", None):
            kw["weight"] = w
        plain = {k: v for k, v in kw.items() if k != "label_smoothing"}
        return (F.cross_entropy(x, t, **kw), F.nll_loss(x.log_softmax(1), t, **plain),
                F.cross_entropy(x, p.softmax(1), label_smoothing=kw.get("label_smoothing", 0.0)))

    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    with torch.no_grad():
        for n, c in [(4, 5), (7, 3), (9, 6)]:
            x, t = torch.randn(n, c), torch.randint(0, c, (n,))
            w, p = torch.rand(c), torch.randn(n, c)
            assert max_err(compiled(x, t, w, p), fn(x, t, w, p)) < 1e-5, (n, c)


def test_repeat_and_tile_by_symbolic_counts_and_sizes(builds):
    # x viewed as [1, s0, 1, s1], expanded by the counts and flattened: a count Dynamo
    # passes as a SymInt becomes a symbol of the graph
    def fn(x, r):
        return x.repeat(2, r, 1), torch.tile(x, (r, 3)), x.repeat(r, 1, 1, 2)

    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    with torch.no_grad():
        for shape, r in [((3, 4), 2), ((5, 2), 3), ((2, 7), 5)]:
            x = torch.randn(*shape)
            assert max_err(compiled(x, r), fn(x, r)) == 0, (shape, r)
    assert len(builds) == 1, builds


def test_einsum_of_symbolic_sizes(builds):
    # sums, permutes and one batched matmul whose reshapes are products of symbolic sizes
    def fn(a, b, x):
        return (torch.einsum("bij,bjk->bik", a, b), torch.einsum("bij->ji", a),
                torch.einsum("bij,bjk->ik", a, b), torch.einsum("ij,ij->i", x, x),
                torch.einsum("...j,...j->...", x, x))

    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    with torch.no_grad():
        for b, i, j, k in [(2, 3, 4, 5), (3, 5, 2, 7), (4, 6, 3, 2)]:
            args = (torch.randn(b, i, j), torch.randn(b, j, k), torch.randn(i, j))
            assert max_err(compiled(*args), fn(*args)) < 1e-5, (b, i, j, k)
    assert len(builds) == 1, builds


def test_sizes_ember_cannot_match_name_themselves_in_the_fallback_reason():
    # a class-index target and an einsum operand whose sizes are other symbols than the
    # input's: the converter refuses (the node runs eagerly) and says which sizes
    from ember.torch.context import ConversionFailure
    from ember.torch.converters import norms_losses

    x, t = ember.symbol(["n", 5, "h"]), ember.symbol(["n", "m"], "int64")
    with pytest.raises(ConversionFailure, match=r"nll_loss of an input of shape \['n', 5, 'h'\] "
                       r"with a target of shape \['n', 'm'\], not \['n', 'h'\]"):
        norms_losses.nll_loss(x, t)
    a, b = ember.symbol(["i", "j"]), ember.symbol(["k", "l"])
    with pytest.raises(ConversionFailure, match=r"einsum with index 'j' of sizes j and k"):
        norms_losses.einsum("ij,jl->il", a, b)
