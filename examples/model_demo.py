"""Compile a bundled model with torch.compile(backend="ember") and compare it with eager.

    python examples/model_demo.py [--model resnet18] [--small] [--threads N]

Prints the compile time, the median latency of eager PyTorch and of ember (interleaved, so
machine noise hits both), and the largest difference between their outputs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.models import MODELS  # noqa: E402


def first_tensor(out: object) -> torch.Tensor:
    while not isinstance(out, torch.Tensor):
        out = out[0]  # type: ignore[index]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="resnet18", choices=sorted(MODELS))
    ap.add_argument("--small", action="store_true", help="a reduced-size variant")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import ember

    ember.set_num_threads(args.threads)
    spec = MODELS[args.model]
    model = spec.build(args.small)
    inputs = spec.example_inputs(1, args.small)
    compiled = torch.compile(model, backend="ember")
    with torch.no_grad():
        start = time.perf_counter()
        got = first_tensor(compiled(*inputs))
        compile_s = time.perf_counter() - start
        want = first_tensor(model(*inputs))
        times: dict[str, list[float]] = {"eager": [], "ember": []}
        for _ in range(args.rounds):
            for name, fn in (("eager", model), ("ember", compiled)):
                start = time.perf_counter()
                fn(*inputs)
                times[name].append(time.perf_counter() - start)
    eager_ms = statistics.median(times["eager"]) * 1e3
    ember_ms = statistics.median(times["ember"]) * 1e3
    print(f"model {args.model}{' (small)' if args.small else ''}, float32, batch 1, "
          f"{args.threads} threads")
    print(f"first call (compile + run): {compile_s:.1f} s")
    print(f"eager: {eager_ms:.2f} ms   ember: {ember_ms:.2f} ms   "
          f"speedup {eager_ms / ember_ms:.2f}x (median of {args.rounds} interleaved rounds)")
    print(f"max |ember - eager| = {(got - want).abs().max().item():.2e}")


if __name__ == "__main__":
    main()
