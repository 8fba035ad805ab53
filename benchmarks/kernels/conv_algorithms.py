"""Per-layer time of convolutions under each algorithm that applies to them.

    python benchmarks/kernels/conv_algorithms.py [--layers resnet|grid|strided|unet] [--runs R]
        [--batch N]

Each layer is conv2d(x, w, stride, padding) + bias, relu (the epilogue a ResNet layer has),
with w a constant, built once per forced algorithm (ops.conv2d(..., algo=...)) and timed
with CompiledGraph.profile (the median of every kernel launch over `runs` runs, summed over
the layer's kernels). Algorithms are interleaved round by round; the table gives the best
round of each (the machine is shared: other load only adds time) and which algorithm the
graph optimizer's rules pick. `--layers resnet` and `grid` are 3x3 stride-1 layers (C = O;
grid: the sizes and channel counts that decide the rules of src/ops/conv_algos.cpp),
`strided` ResNet's stride-2 layers (the 7x7 stem, the 3x3 downsampling convolutions) and
`unet` the convolutions of benchmarks/models' unet_block.
"""

from __future__ import annotations

import argparse

import numpy as np

import ember

E = ember.ops

ALGOS = ("implicit", "wide", "im2col", "winograd")

# (C, O, H = W, kernel, stride, padding).
RESNET = [(c, c, s, 3, 1, 1) for c, s in [(64, 56), (128, 28), (256, 14), (512, 7)]]
GRID = [(c, c, s, 3, 1, 1) for c in (16, 32, 64, 128, 256) for s in (10, 14, 20, 28, 56)]
STRIDED = [(3, 64, 224, 7, 2, 3), (64, 128, 56, 3, 2, 1), (128, 256, 28, 3, 2, 1),
           (256, 512, 14, 3, 2, 1)]
UNET = [(32, 64, 64, 3, 1, 1), (64, 64, 64, 3, 1, 1), (96, 32, 128, 3, 1, 1),
        (32, 32, 128, 3, 1, 1)]
LAYERS = {"resnet": RESNET, "grid": GRID, "strided": STRIDED, "unet": UNET}


def build(layer: tuple[int, ...], batch: int, algo: str | None) -> tuple[ember.CompiledGraph, str]:
    c, o, size, k, stride, pad = layer
    rng = np.random.default_rng(c * 1000 + size)
    w = ember.asarray((rng.standard_normal((o, c, k, k)) / np.sqrt(k * k * c)).astype(np.float32))
    b = ember.asarray(rng.standard_normal((1, o, 1, 1)).astype(np.float32))
    x = ember.symbol([batch, c, size, size], name="x")
    y = E.relu(E.conv2d(x, w, stride=stride, padding=pad, algo=algo) + b)
    graph = ember.graph.optimize(ember.trace_from(y, x))
    text = str(graph)
    chosen = next((a for a in ("winograd", "gemm1x1", "implicit", "wide", "im2col", "reduce")
                   if f"algo={a}" in text), "?")
    return graph.build(), chosen


def layer_seconds(graph: ember.CompiledGraph, x: ember.Tensor, runs: int) -> float:
    prof = graph.profile([x], runs=runs)
    return sum(launch["seconds"] for launch in prof["launches"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", choices=tuple(LAYERS), default="resnet")
    ap.add_argument("--runs", type=int, default=10, help="runs per profile")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    args = ap.parse_args()
    print(f"{'C':>4} {'O':>4} {'HxW':>7} {'k/s':>4} {'rule':>9} "
          + " ".join(f"{a + ' ms':>11}" for a in ALGOS) + f" {'implicit vs best other':>22}")
    for layer in LAYERS[args.layers]:
        c, o, size, k, stride, _ = layer
        x = ember.randn([args.batch, c, size, size], seed=1)
        _, rule = build(layer, args.batch, None)
        graphs = {}
        for a in ALGOS:
            try:
                graphs[a] = build(layer, args.batch, a)[0]
            except ember.EmberError:  # the algorithm does not apply to this layer
                pass
        times: dict[str, list[float]] = {a: [] for a in graphs}
        for _ in range(args.rounds):
            for a, g in graphs.items():
                times[a].append(layer_seconds(g, x, args.runs))
        best = {a: min(t) * 1e3 for a, t in times.items()}
        others = [v for a, v in best.items() if a != "implicit"]
        ratio = (f"{min(others) / best['implicit']:>21.2f}x" if "implicit" in best and others
                 else f"{'-':>22}")
        cells = " ".join(f"{best[a]:>11.3f}" if a in best else f"{'-':>11}" for a in ALGOS)
        print(f"{c:>4} {o:>4} {size:>3}x{size:<3} {k}/{stride:<2} {rule:>9} {cells} {ratio}")


if __name__ == "__main__":
    main()
