"""Per-layer time of 3x3 stride-1 convolutions under each algorithm that applies to them.

    python benchmarks/kernels/conv_algorithms.py [--layers resnet|grid] [--runs R] [--batch N]

Each layer is conv2d(x, w, padding=1) + bias, relu (the epilogue a ResNet layer has), with
w a constant, built once per forced algorithm (ops.conv2d(..., algo=...)) and timed with
CompiledGraph.profile (the median of every kernel launch over `runs` runs, summed over the
layer's kernels). Algorithms are interleaved round by round; the table gives the best
round of each (the machine is shared: other load only adds time) and which algorithm the
graph optimizer's rules pick. `--layers grid` times the
sizes and channel counts that decide the Winograd rule (src/ops/conv.cpp, winograd_wins).
"""

from __future__ import annotations

import argparse

import numpy as np

import ember

E = ember.ops

# (C = O, H = W) of the 3x3 stride-1 layers of ResNet-18/50 at 224x224 (ResNet-50's are
# C = O too: the bottleneck's middle convolution).
RESNET = [(64, 56), (128, 28), (256, 14), (512, 7)]
GRID = [(c, s) for c in (16, 32, 64, 128, 256) for s in (10, 14, 20, 28, 56)]


def build(c: int, size: int, batch: int, algo: str | None) -> tuple[ember.CompiledGraph, str]:
    rng = np.random.default_rng(c * 1000 + size)
    w = ember.asarray((rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32))
    b = ember.asarray(rng.standard_normal((1, c, 1, 1)).astype(np.float32))
    x = ember.symbol([batch, c, size, size], name="x")
    y = E.relu(E.conv2d(x, w, padding=1, algo=algo) + b)
    graph = ember.graph.optimize(ember.trace_from(y, x))
    text = str(graph)
    chosen = next((a for a in ("winograd", "gemm1x1", "wide", "im2col", "reduce")
                   if f"algo={a}" in text), "?")
    return graph.build(), chosen


def layer_seconds(graph: ember.CompiledGraph, x: ember.Tensor, runs: int) -> float:
    prof = graph.profile([x], runs=runs)
    return sum(launch["seconds"] for launch in prof["launches"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", choices=("resnet", "grid"), default="resnet")
    ap.add_argument("--runs", type=int, default=10, help="runs per profile")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    args = ap.parse_args()
    layers = RESNET if args.layers == "resnet" else GRID
    print(f"{'C=O':>5} {'HxW':>7} {'rule':>9} {'wide ms':>9} {'im2col ms':>9} "
          f"{'winograd ms':>11} {'speedup':>8}")
    for c, size in layers:
        x = ember.randn([args.batch, c, size, size], seed=1)
        _, rule = build(c, size, args.batch, None)
        graphs = {}
        for a in ("wide", "im2col", "winograd"):
            try:
                graphs[a] = build(c, size, args.batch, a)[0]
            except ember.EmberError:  # the algorithm does not apply to this layer
                pass
        times: dict[str, list[float]] = {a: [] for a in graphs}
        for _ in range(args.rounds):
            for a, g in graphs.items():
                times[a].append(layer_seconds(g, x, args.runs))
        med = {a: min(t) * 1e3 for a, t in times.items()}
        best_gemm = min(med.get("wide", float("inf")), med["im2col"])
        cells = " ".join(f"{med[a]:>9.3f}" if a in med else f"{'-':>9}" for a in ("wide", "im2col"))
        print(f"{c:>5} {size:>3}x{size:<3} {rule:>9} {cells} "
              f"{med['winograd']:>11.3f} {best_gemm / med['winograd']:>7.2f}x")


if __name__ == "__main__":
    main()
