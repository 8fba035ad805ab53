"""Flow graphs: symbols, tracing, the printed graph, optimization (fusion, dumps, timings),
running a graph (called directly or built into a CompiledGraph), symbolic shapes, the
checks run() makes on its inputs, and memory planning."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from _helpers_core import assert_matches, np_softmax

import ember

E = ember.ops


def quick_start() -> tuple[ember.Tensor, ember.Tensor, ember.Tensor, ember.Tensor, ember.Tensor]:
    """The quick start's tensors: a, b, c, the symbol x like a, and y = matmul(x, b) + c."""
    a = ember.randn([2, 3], seed=1)
    b = ember.randn([3, 2], seed=2)
    c = ember.randn([2], seed=3)
    x = ember.symbol_like(a)
    y = E.matmul(x, b) + c
    return a, b, c, x, y


def linear_bias_reference(a: ember.Tensor, b: ember.Tensor, c: ember.Tensor) -> np.ndarray:
    return a.numpy().astype(np.float64) @ b.numpy().astype(np.float64) + c.numpy()


QUICK_START_GRAPH = """\
Graph(x: float32[2, 3]) {
  c = Constant(float32[3, 2])
  c_1 = Constant(float32[2])
  y: float32[2, 2] = Matmul(x, c)
  y_1: float32[2, 2] = Add(y, c_1)
  return y_1
}"""

QUICK_START_OPTIMIZED = """\
Graph(x: float32[2, 3]) {
  c = Constant(float32[3, 2])
  c_1 = Constant(float32[2])
  y_1: float32[2, 2] = Fused(x, c, c_1, fused=[Matmul, Add], anchor=Matmul)
  return y_1
}"""


def test_symbols_and_traces() -> None:
    a, _, _, x, y = quick_start()
    assert x.is_symbolic and x.trace is None
    assert x.shape == a.shape and x.dtype == a.dtype and x.device == a.device
    assert y.is_symbolic and y.trace == ("Add", 0)
    assert str(x) == "Tensor(shape=(2, 3), dtype='float32', device='cpu')"
    assert str(y) == "Tensor(shape=(2, 2), dtype='float32', device='cpu')\nfrom Add"
    s = ember.symbol(["n", 4], "int8", name="tokens")
    assert s.shape == ("n", 4) and s.dtype == ember.int8 and s.name == "tokens"
    assert str(s) == "Tensor(shape=(n, 4), dtype='int8', device='cpu')"


def test_quick_start_graph_prints() -> None:
    _, _, _, x, y = quick_start()
    graph = ember.trace_from(y)
    assert str(graph) == QUICK_START_GRAPH
    assert repr(graph) == QUICK_START_GRAPH
    assert str(ember.trace_from(y, x)) == QUICK_START_GRAPH
    assert str(ember.trace_from([y], [x])) == QUICK_START_GRAPH
    assert graph.num_nodes == 2 and graph.node_titles == ["Matmul", "Add"]
    assert graph.num_constants == 2
    assert [str(t) for t in graph.inputs] == ["float32[2, 3]"]
    assert [str(t) for t in graph.outputs] == ["float32[2, 2]"]
    assert graph.symbols == []
    graph.verify()


def test_quick_start_optimized_graph_prints_fused_node() -> None:
    _, _, _, _, y = quick_start()
    graph = ember.trace_from(y)
    optimized = ember.graph.optimize(graph)
    assert str(optimized) == QUICK_START_OPTIMIZED
    assert "fused=[Matmul, Add]" in str(optimized)
    assert optimized.node_titles == ["Fused"]
    assert str(graph) == QUICK_START_GRAPH  # optimize returns a new graph
    assert optimized.fingerprint() != graph.fingerprint()
    assert ember.graph.optimize(ember.trace_from(y)).fingerprint() == optimized.fingerprint()


def test_quick_start_runs_three_ways() -> None:
    a, b, c, _, y = quick_start()
    expected = linear_bias_reference(a, b, c)
    imperative = E.matmul(a, b) + c
    graph = ember.trace_from(y)
    optimized = ember.graph.optimize(graph)
    called = optimized(a)
    compiled = optimized.build()
    outputs = compiled.run([a])
    assert isinstance(outputs, list) and len(outputs) == 1
    for got in (imperative, graph(a), called, outputs[0], compiled(a)):
        assert isinstance(got, ember.Tensor) and not got.is_symbolic
        assert_matches(got, expected, "float32")
    assert [str(t) for t in compiled.inputs] == ["float32[2, 3]"]
    assert [str(t) for t in compiled.outputs] == ["float32[2, 2]"]
    assert len(compiled.kernel_names) == 1  # one fused kernel
    # Other inputs, same compiled graph.
    a2 = ember.randn([2, 3], seed=9)
    assert_matches(compiled.run([a2])[0], linear_bias_reference(a2, b, c), "float32")


def test_layers_that_compute_the_same_share_one_kernel() -> None:
    """Two chains that compute the same on values of the same shapes, named apart, run one
    compiled kernel twice (the kernel's identity ignores the values' names); a chain on
    another shape gets its own. Each output still has its own values."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ([4, 6], [4, 6], [5, 6])]
    names_given = ("p", "q", "r")
    xs = [ember.symbol(list(a.shape), name=n) for a, n in zip(arrays, names_given, strict=True)]
    outs = [E.relu(x * 2.0) + 1.0 for x in xs]
    compiled = ember.graph.optimize(ember.trace_from(outs, xs)).build()
    names = compiled.kernel_names
    assert len(names) == 3 and names[0] == names[1] and names[2] != names[0], names
    for got, a in zip(compiled.run([ember.asarray(a) for a in arrays]), arrays, strict=True):
        np.testing.assert_allclose(got.numpy(), np.maximum(a * 2, 0) + 1, rtol=1e-6)


def test_printed_node_attributes_and_several_outputs() -> None:
    x = ember.symbol([4, 6], name="x")
    w = ember.symbol([6], name="w")
    s = E.sum(x, 1, keepdim=True)
    m = E.softmax(x * w, -1)
    t = E.transpose(m, 0, 1)
    graph = ember.trace_from([s, t], [x, w])
    assert str(graph) == (
        "Graph(x: float32[4, 6], w: float32[6]) {\n"
        "  y: float32[4, 1] = Sum(x, dims=[1], keepdim=True)\n"
        "  y_1: float32[4, 6] = Mul(x, w)\n"
        "  y_2: float32[4, 6] = Softmax(y_1, axis=1)\n"
        "  y_3: float32[6, 4] = Permute(y_2, dims=[1, 0])\n"
        "  return y, y_3\n"
        "}"
    )
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((4, 6)).astype(np.float32)
    wv = rng.standard_normal(6).astype(np.float32)
    for g in (graph, ember.graph.optimize(graph)):
        got_s, got_t = g(ember.asarray(xv), ember.asarray(wv))
        assert_matches(got_s, xv.astype(np.float64).sum(1, keepdims=True), "float32")
        assert_matches(got_t, np_softmax(xv.astype(np.float64) * wv, -1).T, "float32")


def test_optimize_dump_dir_and_timings(tmp_path: Path) -> None:
    _, _, _, _, y = quick_start()
    graph = ember.trace_from(y)
    dump = tmp_path / "dump"
    optimized, timings = ember.graph.optimize(graph, dump_dir=str(dump), return_timings=True)
    passes = ember.graph.pass_names()
    assert passes and "fuse_operators" in passes
    expected_files = ["00_input.txt"] + [f"{i + 1:02d}_{p}.txt" for i, p in enumerate(passes)]
    assert sorted(os.listdir(dump)) == expected_files
    assert (dump / "00_input.txt").read_text().strip() == str(graph)
    assert (dump / expected_files[-1]).read_text().strip() == str(optimized)
    fuse_index = passes.index("fuse_operators")
    assert "Fused(" in (dump / expected_files[fuse_index + 1]).read_text()
    assert "Fused(" not in (dump / expected_files[fuse_index]).read_text()
    assert [t["pass"] for t in timings] == passes
    for t in timings:
        assert t["seconds"] >= 0.0
    assert timings[0]["nodes_before"] == 2
    assert timings[-1]["nodes_after"] == optimized.num_nodes == 1


def test_symbolic_shapes_run_for_several_sizes() -> None:
    x = ember.symbol(["n", 4], name="x")
    w = ember.asarray(np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32))
    outs = [
        E.relu(x @ w) * 2.0,  # matmul with a symbolic M, fused with its epilogue
        E.sum(x, 0),  # reduction over the symbolic dimension
        E.mean(x, 0),  # divides by n
        E.softmax(x, 0),
        E.concat([x, x], 0),
        E.reshape(x, [-1]),
        x[1:],
        E.transpose(x, 0, 1) @ x,
    ]
    graph = ember.trace_from(outs, x)
    assert graph.symbols == ["n"]
    assert str(graph).startswith("Graph(x: float32[n, 4]) {\n")
    compiled = ember.graph.optimize(graph).build()
    for n in (1, 2, 5, 17, 64):
        a = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        d = a.astype(np.float64)
        got = compiled.run([ember.asarray(a)])
        refs = [
            np.maximum(d @ w.numpy(), 0) * 2,
            d.sum(0),
            d.mean(0),
            np_softmax(d, 0),
            np.concatenate([d, d], 0),
            d.reshape(-1),
            d[1:],
            d.T @ d,
        ]
        assert len(got) == len(refs)
        for g, r in zip(got, refs, strict=True):
            assert_matches(g, r, "float32", rtol=1e-5, atol=1e-5)
    assert compiled.memory_stats["plans_made"] >= 5  # one plan per set of symbol values


def test_run_with_wrong_inputs_raises() -> None:
    x = ember.symbol(["n", 4], name="x")
    compiled = ember.trace_from(E.exp(x) + 1.0, x).build()
    cases = [
        (
            [ember.zeros([5, 3])],
            "CompiledGraph.run: input 0 has shape [5, 3] but the graph expects [n, 4]: "
            "dimension 1 must be 4",
        ),
        (
            [ember.zeros([4])],
            "CompiledGraph.run: input 0 has shape [4] but the graph expects [n, 4]: "
            "the rank must be 2",
        ),
        (
            [ember.zeros([2, 4], "int32")],
            "CompiledGraph.run: input 0 has type int32[2, 4] but the graph expects "
            "float32[n, 4]: the dtype must be float32",
        ),
        ([], "CompiledGraph.run: the graph takes 1 inputs but 0 were given"),
        (
            [ember.symbol([2, 4])],
            "CompiledGraph.run: input 0 is a symbolic tensor (float32[2, 4]); run() needs "
            "tensors that hold values",
        ),
    ]
    for inputs, text in cases:
        with pytest.raises(ember.EmberError) as info:
            compiled.run(inputs)
        assert str(info.value) == text
    _, _, _, _, y = quick_start()
    static = ember.trace_from(y)
    with pytest.raises(ember.EmberError) as info:
        static(ember.zeros([3, 3]))
    assert str(info.value) == (
        "CompiledGraph.run: input 0 has shape [3, 3] but the graph expects [2, 3]: "
        "dimension 0 must be 2"
    )
    # After the errors, the graph still runs.
    a = np.ones((3, 4), np.float32)
    assert_matches(compiled.run([ember.asarray(a)])[0], np.exp(a.astype(np.float64)) + 1, "float32")


def test_symbols_bound_consistently() -> None:
    a = ember.symbol(["n", 3], name="a")
    b = ember.symbol(["n", 3], name="b")
    compiled = ember.trace_from(a + b, [a, b]).build()
    got = compiled.run([ember.ones([2, 3]), ember.ones([2, 3])])[0]
    assert_matches(got, np.full((2, 3), 2.0), "float32")
    with pytest.raises(ember.EmberError) as info:
        compiled.run([ember.ones([2, 3]), ember.ones([4, 3])])
    assert str(info.value) == (
        "CompiledGraph.run: input 1 has shape [4, 3] but the graph expects [n, 3]: "
        "dimension 0 must be n = 2, as set by dimension 0 of input 0"
    )


def test_memory_planning_reuses_buffers_on_a_chain() -> None:
    x = ember.symbol([1024], name="x")
    t = x
    for i in range(8):  # 8 intermediate float32[1024] values, each 4096 bytes
        t = E.tanh(t) if i % 2 == 0 else E.exp(t) * 0.5
    graph = ember.trace_from(t, x)
    assert graph.num_nodes == 12
    compiled = graph.build()
    v = np.linspace(-1, 1, 1024).astype(np.float32)
    ref = v.astype(np.float64)
    for i in range(8):
        ref = np.tanh(ref) if i % 2 == 0 else np.exp(ref) * 0.5
    assert_matches(compiled.run([ember.asarray(v)])[0], ref, "float32")
    stats = compiled.memory_stats
    intermediates = graph.num_nodes - 1
    assert stats["unshared_bytes"] == intermediates * 4096
    assert 0 < stats["workspace_bytes"] <= 2 * 4096  # a chain needs two live buffers at most
    assert stats["plans_made"] == 1


def test_several_outputs_and_repeated_calls_give_fresh_tensors() -> None:
    x = ember.symbol([3])
    compiled = ember.trace_from([x + 1.0, x * 2.0], x).build()
    first = compiled.run([ember.asarray([1.0, 2.0, 3.0])])
    second = compiled.run([ember.asarray([10.0, 20.0, 30.0])])
    assert_matches(first[0], np.array([2.0, 3.0, 4.0]), "float32")
    assert_matches(first[1], np.array([2.0, 4.0, 6.0]), "float32")
    assert_matches(second[0], np.array([11.0, 21.0, 31.0]), "float32")
    assert ember.to_torch(first[0]).data_ptr() != ember.to_torch(second[0]).data_ptr()


def test_graph_inputs_from_torch_without_copies() -> None:
    x = ember.symbol([2, 3])
    compiled = ember.trace_from(E.relu(x), x).build()
    t = torch.tensor([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]])
    out = compiled.run([ember.from_torch(t)])[0]
    assert torch.equal(ember.to_torch(out), torch.relu(t))
    t[0, 0] = 7.0  # the next run reads torch's memory again
    out = compiled.run([ember.from_torch(t)])[0]
    assert ember.to_torch(out)[0, 0].item() == 7.0


def test_negative_slice_of_a_symbolic_dimension() -> None:
    x = ember.symbol(["n", 3])
    graph = ember.trace_from(x[-2:], x)
    a = np.arange(1, 4, dtype=np.float32).reshape(1, 3)
    got = graph(ember.asarray(a))
    assert got.shape == (1, 3)
    np.testing.assert_array_equal(got.numpy(), a[-2:])


def test_slice_stop_beyond_a_symbolic_dimension() -> None:
    x = ember.symbol(["n"])
    graph = ember.trace_from(E.slice(x, [0], [0], [3]), x)
    got = graph(ember.asarray(np.array([5.0, 6.0], np.float32)))
    assert got.shape == (2,)
    np.testing.assert_array_equal(got.numpy(), np.array([5.0, 6.0], np.float32))


def symbol_name_case(name: str) -> tuple[ember.FlowGraph, np.ndarray]:
    x = ember.symbol([3, name])
    graph = ember.trace_from(
        [E.softmax(x, -1), E.softmax(x, 0), E.sum(x, 1), x @ E.transpose(x, 0, 1)], x
    )
    return graph, np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)


def symbol_name_references(a: np.ndarray) -> list[np.ndarray]:
    d = a.astype(np.float64)
    return [np_softmax(d, -1), np_softmax(d, 0), d.sum(1), d @ d.T]


@pytest.mark.parametrize("name", ["n", "seq_len"])
def test_symbol_names_do_not_matter(name: str) -> None:
    graph, a = symbol_name_case(name)
    for got, ref in zip(graph(ember.asarray(a)), symbol_name_references(a), strict=True):
        assert_matches(got, ref, "float32", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["k", "i0"])
def test_symbol_names_that_collide_with_loop_variables(name: str) -> None:
    graph, a = symbol_name_case(name)
    for got, ref in zip(graph(ember.asarray(a)), symbol_name_references(a), strict=True):
        assert_matches(got, ref, "float32", rtol=1e-5, atol=1e-5)


def test_softmax_3d_with_symbol_named_k_compiles() -> None:
    x = ember.symbol([2, 3, "k"])
    graph = ember.trace_from(E.softmax(x, 1), x)
    a = np.random.default_rng(0).standard_normal((2, 3, 7)).astype(np.float32)
    assert_matches(graph(ember.asarray(a)), np_softmax(a.astype(np.float64), 1), "float32")
