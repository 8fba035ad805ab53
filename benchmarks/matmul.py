"""float32 matmul throughput: ember's generated GEMM next to torch.matmul, same process.

    python benchmarks/matmul.py [--sizes 1024,512,128x768x768] [--threads N] [--rounds R]
                                [--warmup W] [--settle-ms S]

Contenders are interleaved round by round and the median per contender is reported, so a
burst of load on this shared machine hits both alike. GFLOP/s = 2*M*N*K / seconds.

Each contender is timed in steady state, as a model called in a loop runs:
  * --warmup untimed calls first: the first ~10 calls of a graph fault in the pages of a
    freshly allocated output (glibc returns the memory to the OS until its thresholds
    adapt), ~1000 page faults per call for a 4 MiB output;
  * every timed batch starts after --settle-ms of untimed calls of the same contender:
    after each call PyTorch's OpenMP workers keep spinning (~5 ms of CPU with libgomp's
    default wait policy), so the contender timed right after torch shared a core with them
    (measured on 2 cores, 1024^3: ember ~108 GFLOP/s right after torch.matmul, ~170 after
    itself); an idle pause instead is no cure: after ~30 ms idle both ran at ~110 GFLOP/s,
    the idle core apparently clocked down.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import ember


def parse_size(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.split("x")]
    return (parts[0], parts[0], parts[0]) if len(parts) == 1 else (parts[0], parts[1], parts[2])


def time_once(fn, iters: int, settle_s: float) -> float:
    settle_end = time.perf_counter() + settle_s
    fn()
    while time.perf_counter() < settle_end:
        fn()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - start) / iters


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1024,512,128x768x768,1x3072x768")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=10, help="untimed calls per contender")
    ap.add_argument(
        "--settle-ms", type=float, default=15.0, help="untimed calls before each timed batch"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    ember.set_num_threads(args.threads)
    print(f"float32 matmul, threads {args.threads}, median of {args.rounds} interleaved rounds")
    header = ("M x N x K", "ember GF/s", "torch GF/s", "ember/torch", "max err")
    print(f"{header[0]:>16} {header[1]:>11} {header[2]:>11} {header[3]:>12} {header[4]:>9}")
    for text in args.sizes.split(","):
        m, n, k = parse_size(text)
        a, b = ember.randn([m, k], seed=1), ember.randn([k, n], seed=2)
        x = ember.symbol_like(a)
        compiled = ember.graph.optimize(ember.trace_from(ember.ops.matmul(x, b), x)).build()
        ta, tb = ember.to_torch(a), ember.to_torch(b)
        err = float(np.abs(compiled.run([a])[0].numpy() - (ta @ tb).numpy()).max())
        flops = 2.0 * m * n * k
        iters = max(3, int(2e8 / flops))
        contenders = {
            "ember": lambda c=compiled, a=a: c.run([a]),
            "torch": lambda ta=ta, tb=tb: torch.matmul(ta, tb),
        }
        for fn in contenders.values():
            for _ in range(args.warmup):
                fn()
        runs: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.rounds):
            for name, fn in contenders.items():
                runs[name].append(time_once(fn, iters, args.settle_ms / 1e3))
        ge = flops / statistics.median(runs["ember"]) / 1e9
        gt = flops / statistics.median(runs["torch"]) / 1e9
        print(f"{m:>5}x{n}x{k:<5} {ge:>11.1f} {gt:>11.1f} {ge / gt:>11.2f}x {err:>9.1e}")


if __name__ == "__main__":
    main()
