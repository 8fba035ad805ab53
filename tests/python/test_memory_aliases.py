"""Memory that values share instead of copying: a reshape of a plain value is a view that
runs no kernel (its memory is its input's; a graph output's is written by its producer), an
output that a kernel can write over a dying input takes that input's memory (a scatter into
zeros), and a large fill is computed in the graph rather than kept as a constant. Values
are checked against numpy and eager PyTorch, memory through the memory planner's counters,
the launched kernels and a saved model's round trip."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers_core import assert_matches
from _helpers_deploy import QUIET, container, file_sections, load_bytes
from torch import nn

import ember
from ember.torch.fx_nodes import IN_GRAPH_FILL_BYTES

E = ember.ops


def test_a_reshaped_matmul_output_is_written_by_the_matmul() -> None:
    """GPT-2's logits: matmul [1024, N] reshaped to [8, 128, N] as the graph's output. The
    matmul writes the output's memory: no copy kernel, nothing in the workspace."""
    x = ember.symbol([8, 16, 32])
    w = ember.randn([32, 24], seed=1)
    y = E.reshape(E.matmul(E.reshape(x, [128, 32]), w), [8, 16, 24])
    graph = ember.trace_from(y, x)
    compiled = graph.build()
    assert len(compiled.kernel_names) == 1  # the matmul; both reshapes are views
    v = np.random.default_rng(0).standard_normal((8, 16, 32)).astype(np.float32)
    out = compiled.run([ember.asarray(v)])[0]
    assert tuple(out.shape) == (8, 16, 24)
    ref = (v.astype(np.float64).reshape(128, 32) @ w.numpy().astype(np.float64)).reshape(8, 16, 24)
    assert_matches(out, ref, "float32", rtol=1e-4, atol=1e-5)  # sums of 32 products
    assert compiled.memory_stats["workspace_bytes"] == 0
    again = compiled.run([ember.asarray(2 * v)])[0]  # a fresh tensor: the first keeps its values
    assert_matches(out, ref, "float32", rtol=1e-4, atol=1e-5)
    assert_matches(again, 2 * ref, "float32", rtol=1e-4, atol=1e-5)


def test_a_view_read_by_later_kernels_keeps_its_memory_alive() -> None:
    """t = tanh(x) viewed as [4, 64] feeds a matmul, then t is read again at the end: the
    values are right whatever the planner placed between."""
    x = ember.symbol([16, 16])
    w = ember.randn([64, 64], seed=2)
    t = E.tanh(x)
    u = E.matmul(E.reshape(t, [4, 64]), w)
    v = E.tanh(E.reshape(u, [16, 16]))
    y = E.matmul(v, E.sin(E.reshape(t, [16, 16])))
    compiled = ember.trace_from(y, x).build()
    a = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
    t64 = np.tanh(a.astype(np.float64))
    u64 = t64.reshape(4, 64) @ w.numpy().astype(np.float64)
    ref = np.tanh(u64.reshape(16, 16)) @ np.sin(t64)
    assert_matches(compiled.run([ember.asarray(a)])[0], ref, "float32", rtol=1e-4, atol=1e-5)


def test_a_reshaped_input_returned_is_a_copy() -> None:
    x = ember.symbol([6, 4])
    compiled = ember.trace_from([E.reshape(x, [4, 6]), x * 2.0], x).build()
    a = np.arange(24, dtype=np.float32).reshape(6, 4)
    given = ember.asarray(a)
    out = compiled.run([given])
    assert_matches(out[0], a.reshape(4, 6), "float32")
    assert_matches(out[1], 2 * a, "float32")
    changed = out[0].numpy()
    changed[0, 0] = 99.0  # the caller's own copy: the input keeps its values
    assert np.array_equal(given.numpy(), a)


def test_two_reshapes_of_one_result_returned_are_two_tensors() -> None:
    """Two outputs cannot share memory: the second reshape runs its copy kernel."""
    x = ember.symbol([3, 4])
    t = E.exp(x)
    compiled = ember.trace_from([E.reshape(t, [12]), E.reshape(t, [4, 3])], x).build()
    a = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    out = compiled.run([ember.asarray(a)])
    ref = np.exp(a.astype(np.float64))
    assert_matches(out[0], ref.reshape(12), "float32")
    assert_matches(out[1], ref.reshape(4, 3), "float32")
    first = out[0].numpy()
    first[:] = 0.0
    assert_matches(out[1], ref.reshape(4, 3), "float32")


def test_a_scatter_into_zeros_takes_the_zeros_memory() -> None:
    """An embedding's gradient: zeros (computed in the graph) with rows added at indices.
    The scatter writes over the zeros, which die at it: one buffer, not two (the scale and
    shift after it fused into one kernel that writes the output)."""
    rows, width, n = 4096, 64, 300  # 1 MiB of zeros
    idx = ember.symbol([n, width], "int64")
    src = ember.symbol([n, width])
    zeros = E.full([rows, width], 0.0, "float32", in_graph=True)
    y = E.scatter(zeros, 0, idx, src, reduce="sum") * 2.0 + 1.0
    compiled = ember.graph.optimize(ember.trace_from(y, [idx, src])).build()
    rng = np.random.default_rng(2)
    rows_hit = rng.integers(0, rows, n)
    i = np.repeat(rows_hit[:, None], width, axis=1).astype(np.int64)
    s = rng.standard_normal((n, width)).astype(np.float32)
    out = compiled.run([ember.asarray(i), ember.asarray(s)])[0]
    ref = np.zeros((rows, width))
    np.add.at(ref, rows_hit, s.astype(np.float64))
    assert_matches(out, ref * 2.0 + 1.0, "float32")
    assert compiled.memory_stats["workspace_bytes"] == rows * width * 4


def test_a_large_fill_is_computed_in_the_graph_not_kept_as_a_constant() -> None:
    """torch.zeros of a static shape of IN_GRAPH_FILL_BYTES or more is no constant of the
    compiled graph (which would hold it for its lifetime); a small one still folds."""
    class Scatter(nn.Module):
        def __init__(self, rows: int) -> None:
            super().__init__()
            self.rows = rows

        def forward(self, idx, src):
            big = torch.zeros(self.rows, src.shape[1]).scatter_add(0, idx, src)
            return big.sum(0) + torch.ones(src.shape[1])

    rows = IN_GRAPH_FILL_BYTES // (4 * 16) + 1
    idx = torch.randint(0, rows, (50, 16))
    src = torch.randn(50, 16)
    model = Scatter(rows)
    compiled = ember.compile(model, (idx, src), options=QUIET)
    torch.testing.assert_close(compiled(idx, src), model(idx, src), rtol=1e-5, atol=1e-5)
    assert compiled.info()["weight_bytes"] < IN_GRAPH_FILL_BYTES


class AliasNet(nn.Module):
    """A model whose saved plan has views (the reshapes) and an in-place scatter."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(32, 48)

    def forward(self, x, idx):
        h = self.fc(x.reshape(-1, 32))
        grad = torch.zeros(1 << 14, 48).index_add(0, idx, h)  # 3 MiB, scattered in place
        return h.reshape(x.shape[0], x.shape[1], 48), grad.sum(0)


def test_views_and_in_place_outputs_survive_save_and_load(tmp_path) -> None:
    model = AliasNet().eval()
    x, idx = torch.randn(4, 8, 32), torch.randint(0, 1 << 14, (32,))
    with torch.no_grad():
        want = model(x, idx)
    compiled = ember.compile(model, (x, idx), options=QUIET)
    path = tmp_path / "aliases.ember"
    compiled.save(path)
    loaded = ember.load(path)
    assert loaded.info()["format_version"] == 6
    for got in (compiled(x, idx), loaded(x, idx)):
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def _aliases(data: bytes) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The "aliases" section's records: views (view, base), in-place launches (launch, input)."""
    (n,) = struct.unpack_from("<I", data)
    views = [struct.unpack_from("<qq", data, 4 + 16 * i) for i in range(n)]
    at = 4 + 16 * n
    (m,) = struct.unpack_from("<I", data, at)
    in_place = [struct.unpack_from("<qq", data, at + 4 + 16 * i) for i in range(m)]
    return views, in_place


def _aliases_section(views: list, in_place: list) -> bytes:
    out = struct.pack("<I", len(views)) + b"".join(struct.pack("<qq", *r) for r in views)
    return out + struct.pack("<I", len(in_place)) + b"".join(
        struct.pack("<qq", *r) for r in in_place)


def test_a_damaged_aliases_section_is_an_error(tmp_path) -> None:
    """A view listed twice, an in-place input that is no input of its launch, views that
    form a cycle: an ArtifactError naming what is wrong, never a wrong answer."""
    x, idx = torch.randn(4, 8, 32), torch.randint(0, 1 << 14, (32,))
    compiled = ember.compile(AliasNet().eval(), (x, idx), options=QUIET)
    path = tmp_path / "aliases.ember"
    compiled.save(path)
    sections = file_sections(path.read_bytes())
    views, in_place = _aliases(sections["aliases"])
    assert len(views) >= 2 and len(in_place) == 1

    def load_with(views: list, in_place: list) -> None:
        load_bytes(tmp_path, container(6, {**sections,
                                           "aliases": _aliases_section(views, in_place)}))

    with pytest.raises(ember.ArtifactError, match="aliases section.*a view is listed twice"):
        load_with(views + views[:1], in_place)
    launch, _ = in_place[0]
    with pytest.raises(ember.ArtifactError,
                       match="aliases section.*an in-place input is not an input of its launch"):
        load_with(views, [(launch, 99)])
    (v, _), (w, _) = views[0], views[1]
    with pytest.raises(ember.ArtifactError, match="damaged.*form a cycle"):
        load_with([(v, w), (w, v)] + views[2:], in_place)


@pytest.mark.usefixtures("fresh_dynamo")
def test_an_embeddings_gradient_keeps_no_zeros_between_steps() -> None:
    """Training an embedding: the backward's zeros (embedding_dense_backward) are computed in
    the graph, not a constant of the vocabulary's size kept by the compiled backward."""
    from ember.torch.phases.wrap import CompiledSegment

    vocab, dim = 1 << 13, 64  # 2 MiB of zeros
    torch.manual_seed(0)
    emb = nn.Embedding(vocab, dim)
    ids = torch.randint(0, vocab, (4, 32))
    graphs: list = []
    original = CompiledSegment._setup

    def record(self, *args, **kwargs):
        original(self, *args, **kwargs)
        graphs.append(self.compiled)

    def loss_of(m):
        return F.mse_loss(m(ids), torch.ones(4, 32, dim))

    ref = nn.Embedding(vocab, dim)
    ref.load_state_dict(emb.state_dict())
    loss_of(ref).backward()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CompiledSegment, "_setup", record)
        loss_of(torch.compile(emb, backend="ember")).backward()
    torch.testing.assert_close(emb.weight.grad, ref.weight.grad, rtol=1e-5, atol=1e-7)
    assert len(graphs) == 2  # forward and backward
    for g in graphs:
        assert g is not None
        assert g.constant_bytes < IN_GRAPH_FILL_BYTES
