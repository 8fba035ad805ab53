"""A/B of the convolution algorithms on one benchmark model, interleaved in one process.

Each variant is the model compiled by ember with EMBER_CONV_ALGORITHM set to that variant's
value while it compiles (the choice is made when the graph is optimized, so the variants can
share the process); they are then timed in interleaved rounds (medians of the wall clock and
of the process's CPU time per call), eager PyTorch too with --eager, and every output is
checked against eager's.

    python benchmarks/kernels/conv_layouts_ab.py --model mobilenet_v2 --threads 2 \\
        --variants default blocked blocked,depthwise depthwise_blocked

`default` leaves EMBER_CONV_ALGORITHM unset (the rules); a variant `NAME=VALUE` sets that
environment variable instead while the variant compiles and first runs (e.g.
`EMBER_HUGE_PAGES=0`: its weights and workspace without huge pages); `blocked` runs the dense
convolutions on the channel-blocked layout and the depthwise ones too
(conv2d_depthwise_blocked); `blocked,depthwise` keeps the depthwise ones plain (converted
around each); `depthwise_blocked` runs only the depthwise ones blocked.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import harness as H  # noqa: E402
from benchmarks.models import MODELS  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="mobilenet_v2", choices=sorted(MODELS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--min-batch-s", type=float, default=0.2)
    p.add_argument("--small", action="store_true", help="the model's small configuration")
    p.add_argument("--eager", action="store_true",
                   help="time eager PyTorch too (its OpenMP threads spin after each call, "
                        "which on a loaded machine slows the variants timed after it)")
    p.add_argument("--variants", nargs="+",
                   default=["default", "blocked", "blocked,depthwise", "depthwise_blocked"])
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    os.environ.setdefault("EMBER_NUM_THREADS", str(args.threads))
    os.environ.setdefault("EMBER_SPIN_US", "0")  # no spinning into the next variant's turn
    import ember  # noqa: F401  (registers the backend)

    spec = MODELS[args.model]
    model = spec.build(small=args.small)
    inputs = spec.example_inputs(batch_size=1, small=args.small)
    with torch.no_grad():
        ref = model(*inputs)

    from ember.torch.backend import ember_backend

    env_names = {v.split("=", 1)[0] for v in args.variants if "=" in v}
    saved_env = {n: os.environ.get(n) for n in env_names | {"EMBER_CONV_ALGORITHM"}}

    def variant_env(v: str) -> None:
        for n in env_names:
            os.environ.pop(n, None)
        if v == "default":
            os.environ.pop("EMBER_CONV_ALGORITHM", None)
        elif "=" in v:
            os.environ.pop("EMBER_CONV_ALGORITHM", None)
            name, value = v.split("=", 1)
            os.environ[name] = value
        else:
            os.environ["EMBER_CONV_ALGORITHM"] = v

    def backend_for(v: str) -> H.Fn:
        # A backend object of its own per variant: dynamo compiles the model once per variant
        # (its cache entries check the backend) instead of reusing the first variant's graph.
        def backend(gm: torch.fx.GraphModule, example_inputs: list, **kw: object) -> H.Fn:
            variant_env(v)
            compiled[v] = compiled.get(v, 0) + 1
            return ember_backend(gm, example_inputs, **kw)

        return backend

    compiled: dict[str, int] = {}  # graphs compiled per variant (each must compile its own)
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit,
                                                4 * len(args.variants))
    contenders: dict[str, H.Fn] = {"eager": model} if args.eager else {}
    for v in args.variants:
        variant_env(v)
        fn = torch.compile(model, backend=backend_for(v), dynamic=False)
        with torch.no_grad():
            out = fn(*inputs)  # compiles now, under this variant's setting
            out = fn(*inputs)
        if not compiled.get(v):
            raise RuntimeError(f"variant {v} reused another variant's compiled graph")
        err, scale = H.max_abs_error(out, ref)
        print(f"{v:>24}: max abs error vs eager {err:.2e} (max |eager| {scale:.2e})", flush=True)
        contenders[v] = fn
    for n, value in saved_env.items():
        if value is None:
            os.environ.pop(n, None)
        else:
            os.environ[n] = value

    # Interleaved rounds, the order rotating; each sample is one batch of calls, timed by the
    # wall clock and by the process's CPU time (all its threads): on a machine loaded by
    # other work the wall clock mostly measures the wait for a core, the CPU time does not.
    names = list(contenders)
    iters: dict[str, int] = {}
    with torch.no_grad():
        for name in names:
            fn = contenders[name]
            for _ in range(3):
                fn(*inputs)
            t0 = time.perf_counter()
            fn(*inputs)
            iters[name] = max(1, math.ceil(args.min_batch_s / max(time.perf_counter() - t0, 1e-9)))
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for r in range(args.rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                fn = contenders[name]
                fn(*inputs)
                w0, c0 = time.perf_counter(), time.process_time()
                for _ in range(iters[name]):
                    fn(*inputs)
                wall[name].append((time.perf_counter() - w0) * 1e3 / iters[name])
                cpu[name].append((time.process_time() - c0) * 1e3 / iters[name])
    base = "default" if "default" in names else names[0]
    print(f"\n{args.model}, {args.threads} threads, load average {os.getloadavg()[0]:.1f} "
          f"(1 min); medians over {args.rounds} interleaved rounds, ms per call")
    print(f"{'variant':>24}  {'wall':>9} {'vs ' + base:>12}  {'cpu':>9} {'vs ' + base:>12}")
    for name in names:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        wr = statistics.median(wall[base]) / w
        cr = statistics.median(cpu[base]) / c
        print(f"{name:>24}  {w:9.3f} {wr:11.3f}x  {c:9.3f} {cr:11.3f}x")

if __name__ == "__main__":
    main()
