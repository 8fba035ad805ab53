#!/usr/bin/env python
"""Benchmark one training step (forward, loss, backward, SGD step) with ember against eager
PyTorch and TorchInductor, measured in the same run.

    python benchmarks/train.py [--models mlp,resnet18] [--small] [--batch B] [--threads N]
                               [--repeat R] [--memory] [--curve N [--jitter K]]
                               [--json out.json]

For every model, in one process: build one instance per contender (identical weights), in
training mode with dropout off (each contender would draw its own masks), compile
it with torch.compile(backend="ember") and torch.compile(backend="inductor") and run the
first step (compile time); compare each contender's gradients of that first step, eager's
included, with eager's in float64; then time the steps of eager, ember and inductor in
interleaved rounds (the optimizer step stays eager for all three, unless --compile-step
compiles it with each contender's backend too). With --memory, each contender's peak
resident memory over a few steps is measured in a process of its own. --curve N compares
the losses of N SGD steps of ember and eager instead of timing. See benchmarks/README.md
("Training").
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import gc
import json
import os
import subprocess
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

DEFAULT_MODELS = "mlp,resnet18,mobilenet_v2,bert,gpt2"
CONTENDERS = ("eager", "ember", "inductor")
LR = 1e-3  # the timed steps' learning rate
CURVE_LR = 1e-2  # the loss curves': the small models' losses fall by 10-100x in 100 steps


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
    p.add_argument("--lr", type=float, default=None,
                   help=f"SGD learning rate ({LR} for the timed steps, {CURVE_LR} with --curve)")
    p.add_argument("--compile-step", action="store_true",
                   help="compile optimizer.step with ember's and inductor's backends too")
    p.add_argument("--memory-steps", type=int, default=3,
                   help="steps over which each contender's peak memory is measured")
    p.add_argument("--memory", action="store_true",
                   help="measure each contender's memory in a process of its own")
    p.add_argument("--memory-of", default=None, metavar="MODEL:CONTENDER",
                   help=argparse.SUPPRESS)  # the body of one --memory process
    p.add_argument("--curve", type=int, default=0, metavar="N",
                   help="instead of timing: N SGD steps of eager and ember from the same "
                        "weights, and the largest relative difference of their losses")
    p.add_argument("--jitter", type=int, default=4, metavar="K",
                   help="with --curve: K more eager curves, each from the weights changed by "
                        "about one float32 rounding")
    p.add_argument("--json", type=Path, default=None, help="write every number here")
    args = p.parse_args(argv)
    if args.lr is None:
        args.lr = CURVE_LR if args.curve else LR
    return args


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
    magnitude in `ref` (float64), floored at 1e-4 of the largest gradient of the model: a
    gradient that is zero up to rounding (an attention key's bias, a bias before a batch
    norm) has no meaningful relative error."""
    floor = 1e-4 * max(max((r.abs().max().item() for r in ref), default=0.0), 1e-30)
    worst = 0.0
    for g, r in zip(grads, ref, strict=True):
        scale = max(r.abs().max().item(), floor)
        worst = max(worst, (g.double() - r).abs().max().item() / scale)
    return worst


# --------------------------------------------------------------------------- memory


def _status_mb(field: str) -> float:
    """A field of /proc/self/status (VmRSS: resident memory now; VmHWM: its peak), in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def _malloc_trim() -> None:
    """Give the heap's free memory back to the kernel (glibc; a no-op elsewhere)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def step_memory(step: Callable[[], Any], steps: int) -> dict[str, float]:
    """The peak resident memory of the process while `step` runs `steps` times, and that
    peak above the resident memory before them: the kernel's peak counter (VmHWM) is reset
    first by writing "5" to /proc/self/clear_refs (Linux), after the memory the allocator
    keeps free is given back (glibc's malloc_trim), so that what was freed before (by a
    compile, by an earlier step) does not count as resident."""
    gc.collect()
    _malloc_trim()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    baseline = _status_mb("VmRSS")
    for _ in range(steps):
        step()
    peak = _status_mb("VmHWM")
    return {"baseline_mb": baseline, "peak_mb": peak, "above_mb": peak - baseline}


def bench_model(spec: ModelSpec[Any], args: argparse.Namespace) -> dict[str, Any]:
    inputs = spec.example_inputs(batch_size=args.batch, small=args.small)
    result: dict[str, Any] = {"model": spec.name, "errors": {}, "warnings": {}}
    models = {c: training_copy(spec, args.small) for c in CONTENDERS}
    params = {c: list(m.parameters()) for c, m in models.items()}
    callables: dict[str, Callable[..., Any]] = {"eager": models["eager"]}
    # The reference: eager's gradients in float64, from the same weights (a copy made before
    # any step). eager's own float32 gradients are then measured like the others'.
    model64 = copy.deepcopy(models["eager"]).double()
    inputs64 = tuple(t.double() if t.is_floating_point() else t for t in inputs)
    ref = gradients(model64, list(model64.parameters()), inputs64)
    del model64
    result["eager_grad_err"] = grad_error(
        gradients(models["eager"], params["eager"], inputs), ref)
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
    if args.memory:
        result["memory"] = {c: memory_in_subprocess(spec.name, c, args) for c in CONTENDERS}
    return result


def memory_in_subprocess(name: str, contender: str, args: argparse.Namespace
                         ) -> dict[str, Any]:
    """`contender`'s step memory measured in a process of its own (`--memory-of`)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-of",
           f"{name}:{contender}", "--batch", str(args.batch), "--threads", str(args.threads),
           "--lr", str(args.lr), "--memory-steps", str(args.memory_steps)]
    cmd += ["--small"] * args.small + ["--compile-step"] * args.compile_step
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {done.returncode}: {tail}"}
    return json.loads(lines[-1])


def memory_of(name: str, contender: str, args: argparse.Namespace) -> dict[str, Any]:
    """The body of a `--memory-of` process: one training step of a tiny model with the
    contender (the one-time costs of a process: autograd's and the thread pools' start, and
    for a compiled contender Dynamo's, AOTAutograd's and the backend's imports), then build
    the model, compile it with `contender`'s backend, run one step (the compiles), and
    measure `--memory-steps` steps. `model_mb` is their peak above the resident memory
    before the model was built: the model, its gradients, what compiling it left (graphs,
    compiled code) and the steps' activations and buffers."""
    tiny = nn.Linear(4, 4)
    fn: Callable[..., Any] = tiny if contender == "eager" else torch.compile(
        tiny, backend=contender)
    make_step(fn, list(tiny.parameters()), (torch.randn(2, 4),), 0.0)()
    del tiny, fn
    torch._dynamo.reset()
    gc.collect()
    start = _status_mb("VmRSS")
    spec = MODELS[name]
    model = training_copy(spec, args.small)
    fn = model if contender == "eager" else torch.compile(model, backend=contender)
    backend = contender if args.compile_step and contender != "eager" else None
    step = make_step(fn, list(model.parameters()),
                     spec.example_inputs(batch_size=args.batch, small=args.small), args.lr,
                     backend)
    step()
    compile_peak = _status_mb("VmHWM")
    measured = step_memory(step, args.memory_steps)
    return {"start_mb": start, "compile_peak_mb": compile_peak, **measured,
            "model_mb": measured["peak_mb"] - start}


# --------------------------------------------------------------------------- loss curve


JITTER = "eager_jitter"  # a loss_curve contender: eager_jitter<seed>


def jitter_(model: nn.Module, seed: int) -> None:
    """Multiplies every parameter by 1 + 1e-7 * N(0, 1) (drawn from `seed`): a change of
    the size of one float32 rounding."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1 + 1e-7 * torch.randn(p.shape, generator=g))


def loss_curve(spec: ModelSpec[Any], steps: int, lr: float, small: bool = False,
               batch: int = 8, dtype: torch.dtype = torch.float32,
               contenders: tuple[str, ...] = ("eager", "ember")) -> dict[str, list[float]]:
    """The loss of each of `steps` SGD steps on the same fixed batch, from the same weights,
    for each contender: "eager", "ember" (torch.compile(backend="ember")), in `dtype`,
    "eager_f64" (eager in float64) and "eager_jitter<seed>" (eager from the weights
    changed by jitter_): the references that show how much rounding alone moves the
    curve."""
    curves: dict[str, list[float]] = {}
    for c in contenders:
        model = training_copy(spec, small)
        inputs = spec.example_inputs(batch_size=batch, small=small)
        if c.startswith(JITTER):
            jitter_(model, int(c.removeprefix(JITTER)))
        to = torch.float64 if c == "eager_f64" else dtype
        model = model.to(to)
        inputs = tuple(x.to(to) if x.is_floating_point() else x for x in inputs)
        torch._dynamo.reset()
        fn = torch.compile(model, backend="ember") if c == "ember" else model
        step = make_step(fn, list(model.parameters()), inputs, lr)
        curves[c] = [step().item() for _ in range(steps)]
    return curves


def curve_diff(curve: list[float], ref: list[float]) -> float:
    """The largest difference of two loss curves, relative to `ref`'s loss at each step."""
    return max(abs(a - e) / abs(e) for a, e in zip(curve, ref, strict=True))


# --------------------------------------------------------------------------- report


HEADER = ["model", "thr", "eager_ms", "ember_ms", "ind_ms", "speedup", "vs_ind",
          "eager_mb", "ember_mb", "ind_mb", "mem_ratio",
          "ember_compile_s", "ind_compile_s", "eager_grad_err", "ember_grad_err", "ind_grad_err",
          "notes"]


def table_row(r: dict[str, Any], threads: int) -> list[str]:
    lat = {c: r["latency"][c]["median_ms"] for c in r["latency"]}

    def ratio(a: str, b: str) -> float | None:
        return lat[a] / lat[b] if a in lat and b in lat else None

    memory = r.get("memory", {})
    mem = {c: m["model_mb"] for c, m in memory.items() if "model_mb" in m}
    notes = [f"{c}: {H.short_error(e)}" for c, e in r["errors"].items()]
    notes += [f"{c} memory: {m['error']}" for c, m in memory.items() if "error" in m]
    notes += [f"ember: {w}" for w in r["warnings"].get("ember", [])]
    noisy = [c for c, s in r["latency"].items() if s["spread"] > 0.10]
    if noisy:
        worst = max(r["latency"][c]["spread"] for c in noisy)
        notes.append(f"noisy (IQR {100 * worst:.0f}%)")
    return [
        r["model"], str(threads),
        *(H.fmt_ms(lat.get(c)) if c in lat else "ERROR" for c in CONTENDERS),
        H.fmt_ratio(ratio("eager", "ember")), H.fmt_ratio(ratio("inductor", "ember")),
        *(f"{mem[c]:.0f}" if c in mem else "-" for c in CONTENDERS),
        H.fmt_ratio(mem["ember"] / mem["eager"] if "ember" in mem and mem.get("eager")
                    else None),
        H.fmt_s(r["compile_s"].get("ember")), H.fmt_s(r["compile_s"].get("inductor")),
        H.fmt_err(r.get("eager_grad_err")), H.fmt_err(r.get("ember_grad_err")),
        H.fmt_err(r.get("inductor_grad_err")),
        "; ".join(notes),
    ]


def curve_main(names: list[str], args: argparse.Namespace) -> int:
    rows, results = [], []
    for name in names:
        print(f"loss curve of {name} ...", file=sys.stderr, flush=True)
        try:
            jitters = tuple(f"{JITTER}{seed}" for seed in range(1, args.jitter + 1))
            curves = loss_curve(MODELS[name], args.curve, args.lr, args.small, args.batch,
                                contenders=("eager", "ember", "eager_f64", *jitters))
        except Exception as e:  # noqa: BLE001 - the run goes on with the other models
            results.append({"model": name, "error": H.error_text(e)})
            rows.append([name, "", "", "", "", "", "", H.short_error(H.error_text(e))])
            continue
        diff = curve_diff(curves["ember"], curves["eager"])
        f64 = curve_diff(curves["eager"], curves["eager_f64"])
        jitter = max((curve_diff(curves[c], curves["eager"]) for c in jitters), default=None)
        results.append({"model": name, "losses": curves, "max_rel_diff": diff,
                        "eager_vs_f64": f64, "eager_vs_jitter": jitter})
        eager = curves["eager"]
        rows.append([name, f"{eager[0]:.4f}", f"{eager[-1]:.4f}",
                     f"{curves['ember'][-1]:.4f}", f"{diff:.1e}", f"{f64:.1e}",
                     "-" if jitter is None else f"{jitter:.1e}", ""])
    size = "small" if args.small else "full size"
    print(f"loss curves: {args.curve} SGD steps (lr {args.lr}) on one fixed batch, {size}, "
          f"batch {args.batch}")
    header = ["model", "eager_first", "eager_last", "ember_last", "max_rel_diff",
              "eager_vs_f64", "eager_vs_jitter", "notes"]
    print(H.format_table(header, rows, left={0, len(header) - 1}))
    if args.json:
        args.json.write_text(json.dumps({"curves": results}, indent=1))
    return 0


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
    if args.memory_of:
        name, contender = args.memory_of.split(":")
        print(json.dumps(memory_of(name, contender, args)))
        return 0
    names = [n for n in args.models.split(",") if n]
    if args.curve:
        return curve_main(names, args)
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
