"""Per-run latency of small graphs with 1 and 2 threads: the cost of the thread pool itself.

    python benchmarks/kernels/small_graph.py [--rounds R] [--calls C]

A small graph runs in tens of microseconds, so waking sleeping pool workers (~50 us on the
2-core development VM) or waiting for a descheduled one can make two threads slower than
one. Each graph is called back to back, as a model called in a loop is; thread counts are
interleaved round by round and the median per call is printed. EMBER_SPIN_US (the pool's
idle spin time) is read when the pool is created: compare values in separate processes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import ember

E = ember.ops


def mlp() -> tuple[ember.CompiledGraph, ember.Tensor]:
    """1x256 through three 256x256 layers with ReLU: matrix-vector products, split in two."""
    x0 = ember.randn([1, 256], seed=1)
    x = ember.symbol_like(x0)
    h = x
    for i in range(3):
        h = E.relu(E.matmul(h, ember.randn([256, 256], seed=2 + i)))
    return ember.graph.optimize(ember.trace_from(h, x)).build(), x0


def elementwise() -> tuple[ember.CompiledGraph, ember.Tensor]:
    """tanh(x * x + x) on 64x64: one fused kernel."""
    x0 = ember.randn([64, 64], seed=1)
    x = ember.symbol_like(x0)
    y = E.tanh(E.add(E.mul(x, x), x))
    return ember.graph.optimize(ember.trace_from(y, x)).build(), x0


GRAPHS: dict[str, Callable[[], tuple[ember.CompiledGraph, ember.Tensor]]] = {
    "mlp": mlp,
    "elementwise": elementwise,
}


def us_per_call(graph: ember.CompiledGraph, x: ember.Tensor, calls: int) -> float:
    graph.run([x])  # settle: the pool's workers are awake and spinning, as in a loop
    start = time.perf_counter()
    for _ in range(calls):
        graph.run([x])
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calls", type=int, default=300, help="calls per timed batch")
    args = ap.parse_args()
    before = ember.get_num_threads()
    print(f"us per call, median of {args.rounds} interleaved rounds of {args.calls} calls")
    print(f"{'graph':12s} {'1 thread':>9s} {'2 threads':>10s}")
    for name, build in GRAPHS.items():
        graph, x = build()
        runs: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(args.rounds):
            for threads in runs:
                ember.set_num_threads(threads)
                runs[threads].append(us_per_call(graph, x, args.calls))
        one, two = (statistics.median(runs[t]) for t in (1, 2))
        print(f"{name:12s} {one:9.1f} {two:10.1f}")
    ember.set_num_threads(before)


if __name__ == "__main__":
    main()
