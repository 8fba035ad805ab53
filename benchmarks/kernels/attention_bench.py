"""Attention at BERT / GPT-2 sizes: ember's fused attention operator against the same
computation written out (matmul, scale, mask, softmax, matmul), each compiled by ember.

The written-out graph takes its scale as a 0-d graph input, so the attention rewrite (which
needs a constant scale) leaves it unfused: it runs as ember ran attention before the rule.

    python benchmarks/kernels/attention_bench.py [--lengths 128,512] [--repeat 50]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable

import numpy as np

import ember

E = ember.ops


def _median_ms(run: Callable[[], object], repeat: int) -> float:
    for _ in range(3):
        run()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def bench(length: int, heads: int, head_dim: int, variant: str, repeat: int) -> tuple[float, float]:
    shape = [1, heads, length, head_dim]
    rng = np.random.default_rng(0)
    data = [ember.asarray(rng.standard_normal(shape).astype(np.float32)) for _ in range(3)]
    q, k, v = (ember.symbol(shape) for _ in range(3))
    scale = 1.0 / math.sqrt(head_dim)
    pad = np.zeros([1, 1, 1, length], np.float32)
    pad[..., length - length // 8:] = np.finfo(np.float32).min
    mask = ember.asarray(pad) if variant == "padding" else None
    causal = variant == "causal"

    fused = E.attention(q, k, v, mask, scale, causal)
    fused_graph = ember.graph.optimize(ember.trace_from([fused], [q, k, v])).build()

    s_in = ember.symbol([], "float32")
    scores = E.matmul(q, E.transpose(k, -1, -2)) * s_in
    if mask is not None:
        scores = scores + mask
    if causal:
        keep = ember.asarray(np.tril(np.ones([length, length], bool)))
        scores = E.where(keep, scores, float("-inf"))
    out = E.matmul(E.softmax(scores, 3), v)
    unfused_graph = ember.graph.optimize(ember.trace_from([out], [q, k, v, s_in])).build()
    s_val = ember.asarray(np.array(scale, np.float32))

    got = fused_graph.run(data)[0].numpy()
    want = unfused_graph.run([*data, s_val])[0].numpy()
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)
    t_fused = _median_ms(lambda: fused_graph.run(data), repeat)
    t_unfused = _median_ms(lambda: unfused_graph.run([*data, s_val]), repeat)
    return t_fused, t_unfused


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", default="128,512")
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    print(f"{'L':>5} {'variant':>8} {'fused ms':>9} {'unfused ms':>11} {'speedup':>8}")
    for length in (int(x) for x in args.lengths.split(",")):
        for variant in ("plain", "padding", "causal"):
            f, u = bench(length, args.heads, args.head_dim, variant, args.repeat)
            print(f"{length:>5} {variant:>8} {f:>9.3f} {u:>11.3f} {u / f:>7.2f}x")


if __name__ == "__main__":
    main()
