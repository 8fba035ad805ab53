#!/usr/bin/env python
"""Benchmark one training step (forward, loss, backward, SGD step) with ember against eager
PyTorch and TorchInductor, measured in the same run.

    python benchmarks/train.py [--models mlp,resnet18] [--small] [--batch B] [--threads N]
                               [--repeat R] [--json out.json]

For every model, in one process: build one instance per contender (identical weights), in
training mode with dropout off (each contender would draw its own masks), compile
it with torch.compile(backend="ember") and torch.compile(backend="inductor") and run the
first step (compile time); compare each contender's gradients of that first step with
eager's; then time the steps of eager, ember and inductor in interleaved rounds (the
optimizer step stays eager for all three, unless --compile-step compiles it with each
contender's backend too). See benchmarks/README.md ("Training").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from benchmarks import harness as H  # noqa: E402
from benchmarks.models import MODELS, ModelSpec  # noqa: E402

DEFAULT_MODELS = "mlp,resnet18,bert,gpt2"
CONTENDERS = ("eager", "ember", "inductor")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=DEFAULT_MODELS, help="comma-separated registry names")
    p.add_argument("--small", action="store_true", help="the reduced model sizes")
    p.add_argument("--batch", type=int, default=8, help="batch size of the inputs")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--repeat", type=int, default=5, help="interleaved timing rounds")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps before each batch")
    p.add_argument("--min-time", type=float, default=0.2,
                   help="a timed batch holds enough steps to last about this many seconds")
    p.add_argument("--lr", type=float, default=1e-3, help="SGD learning rate")
    p.add_argument("--compile-step", action="store_true",
                   help="compile optimizer.step with ember's and inductor's backends too")
    p.add_argument("--json", type=Path, default=None, help="write every number here")
    return p.parse_args(argv)


# --------------------------------------------------------------------------- one step


def training_copy(spec: ModelSpec[Any], small: bool) -> nn.Module:
    model = spec.build(small=small).train()
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.eval()  # dropout off: identity
    return model


def loss_of(out: Any) -> torch.Tensor:
    """Cross entropy of the first output over its last dimension, against fixed targets
    (class i % C for row i): a classifier's logits, a language model's, or BERT's
    sequence output."""
    first = out[0] if isinstance(out, (tuple, list)) else out
    logits = first.reshape(-1, first.shape[-1])
    target = torch.arange(logits.shape[0]) % logits.shape[-1]
    return F.cross_entropy(logits, target)


def make_step(model: Callable[..., Any], params: list[torch.Tensor], inputs: tuple,
              lr: float, backend: str | None = None) -> Callable[[], torch.Tensor]:
    """One training step; its optimizer step compiled with `backend` unless None."""
    optimizer = torch.optim.SGD(params, lr=lr)
    update = optimizer.step if backend is None else torch.compile(optimizer.step,
                                                                  backend=backend)

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(model(*inputs))
        loss.backward()
        update()
        return loss.detach()

    return step


def gradients(model: Callable[..., Any], params: list[torch.Tensor],
              inputs: tuple) -> list[torch.Tensor]:
    for p in params:
        p.grad = None
    loss_of(model(*inputs)).backward()
    grads = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in params]
    for p in params:
        p.grad = None
    return grads


def grad_error(grads: list[torch.Tensor], ref: list[torch.Tensor]) -> float:
    """The largest error of any parameter's gradient, relative to that gradient's largest
    magnitude in eager, floored at 1e-4 of the largest gradient of the model: a gradient
    that is zero up to rounding (an attention key's bias, a bias before a batch norm) has
    no meaningful relative error."""
    floor = 1e-4 * max(max((r.abs().max().item() for r in ref), default=0.0), 1e-30)
    worst = 0.0
    for g, r in zip(grads, ref, strict=True):
        scale = max(r.abs().max().item(), floor)
        worst = max(worst, (g - r).abs().max().item() / scale)
    return worst


def bench_model(spec: ModelSpec[Any], args: argparse.Namespace) -> dict[str, Any]:
    inputs = spec.example_inputs(batch_size=args.batch, small=args.small)
    result: dict[str, Any] = {"model": spec.name, "errors": {}, "warnings": {}}
    models = {c: training_copy(spec, args.small) for c in CONTENDERS}
    params = {c: list(m.parameters()) for c, m in models.items()}
    callables: dict[str, Callable[..., Any]] = {"eager": models["eager"]}
    ref = gradients(models["eager"], params["eager"], inputs)
    compile_s: dict[str, float] = {}
    for c in ("ember", "inductor"):
        torch._dynamo.reset()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                compiled = torch.compile(models[c], backend=c)
                grads = gradients(compiled, params[c], inputs)
                compile_s[c] = time.perf_counter() - t0
            result["warnings"][c] = sorted({str(w.message).splitlines()[0] for w in caught
                                            if "ember" in str(w.message)})
            result[f"{c}_grad_err"] = grad_error(grads, ref)
            callables[c] = compiled
        except Exception as e:  # noqa: BLE001 - the run goes on with the other contenders
            result["errors"][c] = H.error_text(e)
    result["compile_s"] = compile_s
    steps = {c: make_step(fn, params[c], inputs, args.lr,
                          c if args.compile_step and c != "eager" else None)
             for c, fn in callables.items()}
    stats, errors = H.measure_interleaved({c: s for c, s in steps.items()}, [], args.repeat,
                                          args.min_time, args.warmup)
    result["errors"].update(errors)
    result["latency"] = {c: s.as_dict() for c, s in stats.items()}
    return result


# --------------------------------------------------------------------------- report


HEADER = ["model", "thr", "eager_ms", "ember_ms", "ind_ms", "speedup", "vs_ind",
          "ember_compile_s", "ind_compile_s", "ember_grad_err", "ind_grad_err", "notes"]


def table_row(r: dict[str, Any], threads: int) -> list[str]:
    lat = {c: r["latency"][c]["median_ms"] for c in r["latency"]}

    def ratio(a: str, b: str) -> float | None:
        return lat[a] / lat[b] if a in lat and b in lat else None

    notes = [f"{c}: {H.short_error(e)}" for c, e in r["errors"].items()]
    notes += [f"ember: {w}" for w in r["warnings"].get("ember", [])]
    noisy = [c for c, s in r["latency"].items() if s["spread"] > 0.10]
    if noisy:
        worst = max(r["latency"][c]["spread"] for c in noisy)
        notes.append(f"noisy (IQR {100 * worst:.0f}%)")
    return [
        r["model"], str(threads),
        *(H.fmt_ms(lat.get(c)) if c in lat else "ERROR" for c in CONTENDERS),
        H.fmt_ratio(ratio("eager", "ember")), H.fmt_ratio(ratio("inductor", "ember")),
        H.fmt_s(r["compile_s"].get("ember")), H.fmt_s(r["compile_s"].get("inductor")),
        H.fmt_err(r.get("ember_grad_err")), H.fmt_err(r.get("inductor_grad_err")),
        "; ".join(notes),
    ]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch._dynamo.config.suppress_errors = False
    torch._dynamo.config.recompile_limit = 64
    ember = H.import_ember()
    if ember.error:
        print(f"ember could not be imported: {ember.error}", file=sys.stderr)
    else:
        ember.set_num_threads(args.threads)
    names = [n for n in args.models.split(",") if n]
    meta = {"threads": args.threads, "batch": args.batch, "small": args.small,
            "repeat": args.repeat, "torch": torch.__version__, "ember": ember.version(),
            "load_start": os.getloadavg()}
    results = []
    for name in names:
        print(f"training step of {name} ...", file=sys.stderr, flush=True)
        results.append(bench_model(MODELS[name], args))
    meta["load_end"] = os.getloadavg()
    size = "small" if args.small else "full size"
    print(f"one training step (forward, cross-entropy loss, backward, SGD step), {size}, "
          f"batch {args.batch}, {args.threads} threads, median of {args.repeat} rounds; "
          f"load average {meta['load_start'][0]:.1f} at start, {meta['load_end'][0]:.1f} at end")
    rows = [table_row(r, args.threads) for r in results]
    print(H.format_table(HEADER, rows, left={0, len(HEADER) - 1}))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
