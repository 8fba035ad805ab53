"""ember quick start: tensors, operators, symbolic tensors, flow graphs, compiled graphs.

Run it with `python examples/quickstart.py` (or `bash scripts/demo.sh`, which installs
everything first). Set EMBER_CACHE_DIR to an empty directory to see a cold compile.
"""

from __future__ import annotations

import time

import numpy as np

import ember


def linear_bias(x: ember.Tensor, b: ember.Tensor, c: ember.Tensor) -> ember.Tensor:
    return ember.ops.matmul(x, b) + c


def timed_build(graph: ember.FlowGraph) -> tuple[ember.CompiledGraph, float, str]:
    """Builds `graph`; returns the compiled graph, the seconds it took, and where its kernels
    came from according to the kernel cache's counters."""
    before = ember.cache_stats()
    start = time.perf_counter()
    compiled = graph.build()
    seconds = time.perf_counter() - start
    after = ember.cache_stats()
    delta = {key: after[key] - before[key] for key in ("builds", "disk_hits", "memory_hits")}
    if delta["builds"]:
        source = f"compiled {delta['builds']} kernel module(s) now"
    elif delta["disk_hits"]:
        source = f"loaded {delta['disk_hits']} module(s) from the disk cache"
    else:
        source = f"{delta['memory_hits']} module(s) already in memory"
    return compiled, seconds, source


def section(title: str) -> None:
    print(f"\n--- {title} " + "-" * (60 - len(title)))


def main() -> None:
    print(f"ember {ember.__version__}: kernels for {ember.isa()}, "
          f"{ember.get_num_threads()} threads, cache in {ember.cache_dir()}")

    section("Define tensors")
    a = ember.randn([2, 3])
    print(a)

    section("Run operators (imperative)")
    b = ember.randn([3, 2])
    c = ember.randn([2])
    d = ember.ops.matmul(a, b)
    d = d + c  # the same as ember.ops.add(d, c)
    print(d)

    section("Symbolic tensors and flow graphs")
    x = ember.symbol_like(a)
    y = linear_bias(x, b, c)
    assert x.trace is None
    assert y.trace is not None
    print("x:", x)
    print("y:", y)
    print("y.trace:", y.trace)
    # trace_from finds the graph inputs itself; ember.trace_from(y, x) names them explicitly.
    graph = ember.trace_from(y)
    print(graph)

    section("Optimize the flow graph")
    opt_graph = ember.graph.optimize(graph)
    print(opt_graph)

    section("Build (compile) the graph")
    compiled, cold_seconds, cold_source = timed_build(opt_graph)
    print(f"first build: {cold_seconds * 1e3:.1f} ms ({cold_source})")

    section("Run the flow graph")
    y1 = opt_graph(a)
    print(y1)
    y2 = compiled.run([a])[0]
    print(y2)

    expected = a.numpy() @ b.numpy() + c.numpy()
    for name, value in (("imperative", d), ("graph call", y1), ("compiled run", y2)):
        np.testing.assert_allclose(value.numpy(), expected, rtol=1e-5, atol=1e-5)
        error = float(np.max(np.abs(value.numpy() - expected)))
        print(f"{name:>12}: max |ember - numpy| = {error:.2e}")

    section("Warm start")
    # Drop every reference to the compiled kernels, so the next build must find them on disk
    # the way a new process would: a hash of the generated source and a dlopen.
    del compiled, opt_graph
    ember.clear_memory_cache()
    warm_graph = ember.graph.optimize(ember.trace_from(y))
    _, warm_seconds, warm_source = timed_build(warm_graph)
    print(f"first build: {cold_seconds * 1e3:8.1f} ms ({cold_source})")
    print(f" warm build: {warm_seconds * 1e3:8.1f} ms ({warm_source})")


if __name__ == "__main__":
    main()
