#!/usr/bin/env python
"""Benchmark ember against eager PyTorch and TorchInductor, measured in the same run.

    python benchmarks/run.py [--models a,b] [--threads N] [--repeat R] [--json out.json]
                             [--small] [--isolate] [--warm-mode reset|process]

For every model, in one process: build it (one instance per contender, identical weights),
compile it with torch.compile(backend="ember") and torch.compile(backend="inductor"),
time the first call with empty on-disk caches (cold) and again after forgetting everything
held in memory (warm, served by the now-filled disk caches), check the outputs against
eager, then time eager, ember and inductor in interleaved rounds. A failure of one
backend on one model is recorded in the table and the run goes on.

See benchmarks/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

from benchmarks import harness as H  # noqa: E402
from benchmarks.models import MODELS, ModelSpec  # noqa: E402

BACKENDS = ("ember", "inductor")
WARM_TAG = "EMBER_BENCH_WARM "


# --------------------------------------------------------------------------- setup


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated (default: all)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--repeat", type=int, default=10, help="interleaved timing rounds")
    p.add_argument("--json", type=Path, help="write results here (rewritten after each model)")
    p.add_argument("--small", action="store_true", help="reduced model sizes (quick checks)")
    p.add_argument("--mode", choices=["default", "max-autotune"], default=None,
                   help="torch.compile mode for every compiled contender (max-autotune: ember "
                        "measures its GEMM blockings, search_space 2)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--warmup", type=int, default=1, help="untimed calls before each batch")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per timed batch")
    p.add_argument("--backends", default=",".join(BACKENDS), help="compiled contenders to run")
    p.add_argument(
        "--warm-mode",
        choices=("reset", "process"),
        default="reset",
        help="warm compile: reset in-memory state and recompile here, or in a new process",
    )
    p.add_argument("--isolate", action="store_true", help="one subprocess per model")
    p.add_argument("--keep-cache", action="store_true", help="keep the temporary cache dirs")
    p.add_argument(
        "--ember-backend",
        default="ember",
        help="backend name compiled in the ember column (a stand-in such as aot_eager "
        "exercises the runner itself)",
    )
    p.add_argument("--list", action="store_true", help="list the models and exit")
    p.add_argument("--warm-child", help=argparse.SUPPRESS)  # internal: --warm-mode process
    p.add_argument("--no-table", action="store_true", help=argparse.SUPPRESS)  # for --isolate
    args = p.parse_args(argv)
    args.model_names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in args.model_names if m not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; valid: {', '.join(MODELS)}")
    args.backend_names = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in args.backend_names if b not in BACKENDS]
    if bad:
        p.error(f"unknown backend(s) {', '.join(bad)}; valid: {', '.join(BACKENDS)}")
    if args.threads < 1 or args.repeat < 1 or args.batch < 1:
        p.error("--threads, --repeat and --batch must be >= 1")
    return args


def fresh_cache_dirs() -> Path:
    """Point ember and inductor at empty cache dirs. Must run before ember is imported."""
    root = Path(tempfile.mkdtemp(prefix="ember-bench-"))
    os.environ["EMBER_CACHE_DIR"] = str(root / "ember")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(root / "inductor")
    return root


def configure_torch(threads: int) -> None:
    torch.set_num_threads(threads)
    # A backend error must surface, not silently fall back to eager.
    torch._dynamo.config.suppress_errors = False
    # Several compiled copies of the same forward() live at once; never hit the limit.
    torch._dynamo.config.recompile_limit = 64


def backend_name(contender: str, args: argparse.Namespace) -> str:
    return args.ember_backend if contender == "ember" else contender


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def warm_up_backends(args: argparse.Namespace, ember: H.EmberHandle) -> dict[str, Any]:
    """Compile a tiny function once per backend so one-time process costs (imports, compile
    worker pools) are reported here and not charged to the first model."""

    def tiny(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * 2.0 + 1.0

    out: dict[str, Any] = {}
    x = torch.randn(8, 8)
    for contender in args.backend_names:
        if contender == "ember" and ember.error and args.ember_backend == "ember":
            out[contender] = {"error": ember.error}
            continue
        t0 = time.perf_counter()
        try:
            with torch.inference_mode():
                torch.compile(tiny, backend=backend_name(contender, args))(x)
            out[contender] = {"seconds": time.perf_counter() - t0}
        except Exception as e:  # noqa: BLE001
            out[contender] = {"error": H.error_text(e)}
    torch._dynamo.reset()
    return out


# --------------------------------------------------------------------------- one model


_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def compile_cold_and_warm(
    spec: ModelSpec[Any],
    args: argparse.Namespace,
    ember: H.EmberHandle,
    inputs: tuple[torch.Tensor, ...],
    res: dict[str, Any],
) -> dict[str, H.Fn]:
    """Fill res["compile"] / res["errors"]; return the warm compiled callables."""
    models: dict[str, torch.nn.Module] = {}
    compiled: dict[str, H.Fn] = {}
    for c in args.backend_names:
        if c == "ember" and ember.error and args.ember_backend == "ember":
            res["errors"][c] = ember.error
            continue
        models[c] = spec.build(args.small)
        ember.reset_cache_stats()
        try:
            fn, st = H.compile_first_call(models[c], backend_name(c, args), inputs, args.mode)
        except Exception as e:  # noqa: BLE001
            res["errors"][c] = H.error_text(e)
            log(f"  {c}: compile failed: {H.short_error(res['errors'][c], 200)}")
            continue
        compiled[c] = fn
        res["compile"][c] = {
            "cold_s": st.seconds,
            "graphs": st.graphs,
            "graph_breaks": st.graph_breaks,
            "warnings": st.warnings,
        }
        if c == "ember":
            res["compile"][c]["cold_kernel_cache"] = ember.cache_stats()
        log(f"  {c}: cold compile {st.seconds:.2f} s ({st.graphs} graph(s))")
    if not compiled:
        return compiled
    if args.warm_mode == "reset":
        reset_done = H.reset_compilers(ember)
        for c in list(compiled):
            res["compile"][c]["memory_reset"] = reset_done.get(c, False)
            ember.reset_cache_stats()
            try:
                fn, st = H.compile_first_call(models[c], backend_name(c, args), inputs, args.mode)
            except Exception as e:  # noqa: BLE001
                res["errors"][c] = H.error_text(e)
                del compiled[c]
                continue
            compiled[c] = fn
            res["compile"][c]["warm_s"] = st.seconds
            if c == "ember":
                res["compile"][c]["warm_kernel_cache"] = ember.cache_stats()
            log(f"  {c}: warm compile {st.seconds:.2f} s")
    else:
        for c in compiled:
            warm = warm_in_child(spec.name, c, args)
            res["compile"][c].update({f"warm_{k}": v for k, v in warm.items()})
            if "seconds" in warm:
                res["compile"][c]["warm_s"] = warm["seconds"]
            log(f"  {c}: warm compile (new process) {warm}")
    return compiled


def bench_model(
    spec: ModelSpec[Any], args: argparse.Namespace, ember: H.EmberHandle
) -> dict[str, Any]:
    res: dict[str, Any] = {
        "model": spec.name,
        "description": spec.description,
        "small": args.small,
        "batch": args.batch,
        "threads": args.threads,
        "mode": args.mode or "default",
        "compile": {},
        "latency": {},
        "accuracy": {},
        "errors": {},
    }
    torch._dynamo.reset()
    ember.reset()
    gc.collect()
    inputs = spec.example_inputs(args.batch, args.small)
    with torch.inference_mode():
        eager = spec.build(args.small)
        ref = eager(*inputs)
        compiled = compile_cold_and_warm(spec, args, ember, inputs, res)
        for c, fn in list(compiled.items()):
            try:
                err, scale = H.max_abs_error(fn(*inputs), ref)
                res["accuracy"][c] = {"max_abs_err": err, "eager_max_abs": scale}
            except Exception as e:  # noqa: BLE001
                res["errors"][c] = H.error_text(e)
                del compiled[c]
        contenders: dict[str, H.Fn] = {"eager": eager, **compiled}
        stats, errors = H.measure_interleaved(
            contenders, inputs, args.repeat, args.min_time, args.warmup
        )
    res["errors"].update(errors)
    for c, st in stats.items():
        res["latency"][c] = st.as_dict()
    lat = {c: st.median_ms for c, st in stats.items()}
    if "ember" in lat:
        res["speedup_vs_eager"] = lat["eager"] / lat["ember"] if "eager" in lat else None
        res["speedup_vs_inductor"] = lat["inductor"] / lat["ember"] if "inductor" in lat else None
    if "inductor" in lat and "eager" in lat:
        res["inductor_speedup_vs_eager"] = lat["eager"] / lat["inductor"]
    return res


# --------------------------------------------------------------------------- subprocesses


def child_argv(args: argparse.Namespace, models: str) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--models", models]
    argv += ["--threads", str(args.threads), "--batch", str(args.batch)]
    argv += ["--repeat", str(args.repeat), "--warmup", str(args.warmup)]
    argv += ["--min-time", str(args.min_time), "--backends", ",".join(args.backend_names)]
    if args.mode:
        argv += ["--mode", args.mode]
    argv += ["--warm-mode", args.warm_mode, "--ember-backend", args.ember_backend]
    if args.small:
        argv.append("--small")
    if args.keep_cache:
        argv.append("--keep-cache")
    return argv


def warm_in_child(model: str, contender: str, args: argparse.Namespace) -> dict[str, Any]:
    """Time the first compiled call in a new process that shares our cache dirs."""
    argv = child_argv(args, model) + ["--warm-child", contender]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
    except subprocess.TimeoutExpired:
        return {"error": "warm-compile process timed out"}
    for line in proc.stdout.splitlines():
        if line.startswith(WARM_TAG):
            result: dict[str, Any] = json.loads(line[len(WARM_TAG) :])
            return result
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"error": f"warm-compile process exited with {proc.returncode}: {' | '.join(tail)}"}


def run_warm_child(args: argparse.Namespace) -> int:
    """Child side of --warm-mode process: the caches come through the environment."""
    contender: str = args.warm_child
    configure_torch(args.threads)
    out: dict[str, Any] = {}
    try:
        ember = H.EmberHandle(None, "not needed")
        if contender == "ember":
            ember = H.import_ember()
            if ember.error and args.ember_backend == "ember":
                raise RuntimeError(ember.error)
            ember.set_num_threads(args.threads)
        # Like the parent: one-time process costs are not charged to the model.
        args.backend_names = [contender]
        warm_up_backends(args, ember)
        spec = MODELS[args.model_names[0]]
        model = spec.build(args.small)
        inputs = spec.example_inputs(args.batch, args.small)
        with torch.inference_mode():
            ember.reset_cache_stats()
            _, st = H.compile_first_call(model, backend_name(contender, args), inputs, args.mode)
        out = {"seconds": st.seconds, "graphs": st.graphs, "kernel_cache": ember.cache_stats()}
    except Exception as e:  # noqa: BLE001
        out = {"error": H.error_text(e, 500)}
    print(WARM_TAG + json.dumps(out), flush=True)
    return 0


def run_isolated(args: argparse.Namespace) -> int:
    """One subprocess per model (fresh caches each, and a crash loses only that model)."""
    meta: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ember-bench-iso-") as tmp:
        for name in args.model_names:
            out = Path(tmp) / f"{name}.json"
            argv = [*child_argv(args, name), "--json", str(out), "--no-table"]
            proc = subprocess.run(argv, check=False)
            if proc.returncode == 0 and out.exists():
                data = json.loads(out.read_text())
                meta = meta or data["meta"]
                results += data["models"]
                continue
            why = f"benchmark process for {name} exited with code {proc.returncode}"
            if proc.returncode < 0:
                why = f"benchmark process for {name} was killed by signal {-proc.returncode}"
            results.append(
                {"model": name, "errors": dict.fromkeys(["eager", *args.backend_names], why)}
            )
    meta["isolated"] = True
    report(meta, results, args)
    return 0


# --------------------------------------------------------------------------- report


def header_lines(meta: dict[str, Any]) -> list[str]:
    ember_threads = "yes" if meta.get("ember_set_num_threads") else "not exposed"
    return [
        f"ember benchmark  torch {meta.get('torch')}  CPU {meta.get('cpu')}  "
        f"load avg {meta.get('loadavg_start', '?')} -> {meta.get('loadavg_end', '?')}",
        f"float32, batch {meta.get('batch')}, {'small' if meta.get('small') else 'full'} "
        f"configs, threads {meta.get('threads')} (ember.set_num_threads: {ember_threads}), "
        f"warm compile: {meta.get('warm_mode')}, torch.compile mode: {meta.get('mode')}",
        f"latency: ms per forward, median of {meta.get('repeat')} interleaved rounds; "
        "speedup = eager_ms / ember_ms, vs_ind = inductor_ms / ember_ms (> 1: ember faster)",
        "compile: seconds for the first call, cold = empty disk cache, warm = filled disk "
        "cache; err = max |out - eager|",
    ]


def table_row(r: dict[str, Any], footnotes: list[str]) -> list[str]:
    """One table row for a model result; appends full error lines to ``footnotes``."""
    lat, comp, acc, errs = (r.get(k, {}) for k in ("latency", "compile", "accuracy", "errors"))
    notes: list[str] = []
    by_text: dict[str, list[str]] = {}  # one note per distinct error
    for c, text in errs.items():
        by_text.setdefault(text, []).append(c)
    for text, who in by_text.items():
        footnotes.append(f"{r['model']} / {', '.join(who)}: {H.short_error(text, 300)}")
        notes.append(f"{', '.join(who)}: {H.short_error(text, 60)}")
    for c, info in comp.items():
        if info.get("graphs", 1) != 1 or info.get("graph_breaks", 0):
            notes.append(f"{c}: {info.get('graphs')} graphs")
        if info.get("warnings"):
            notes.append(f"{c}: {len(info['warnings'])} warning(s)")
        warm_cache = info.get("warm_kernel_cache") or {}
        if warm_cache.get("builds"):
            notes.append(f"{c} warm: built {warm_cache['builds']} kernel(s)")
        if "warm_error" in info:
            notes.append(f"{c} warm: {H.short_error(info['warm_error'], 40)}")
    noisy = max((v.get("spread", 0.0) for v in lat.values()), default=0.0)
    if noisy > 0.1:
        notes.append(f"noisy (IQR {noisy:.0%})")

    def ms(c: str) -> str:
        return "ERROR" if c in errs else H.fmt_ms(lat.get(c, {}).get("median_ms"))

    def cs(c: str, key: str) -> str:
        return H.fmt_s(comp.get(c, {}).get(key))

    def err(c: str) -> str:
        return H.fmt_err(acc.get(c, {}).get("max_abs_err"))

    return [
        r["model"], str(r.get("threads", "-")), ms("eager"), ms("ember"), ms("inductor"),
        H.fmt_ratio(r.get("speedup_vs_eager")), H.fmt_ratio(r.get("speedup_vs_inductor")),
        cs("ember", "cold_s"), cs("ember", "warm_s"), cs("inductor", "cold_s"),
        cs("inductor", "warm_s"), err("ember"), err("inductor"), "; ".join(notes),
    ]  # fmt: skip


TABLE_HEADER = [
    "model", "thr", "eager_ms", "ember_ms", "ind_ms", "speedup", "vs_ind",
    "ember_cold_s", "ember_warm_s", "ind_cold_s", "ind_warm_s", "ember_err", "ind_err", "notes",
]  # fmt: skip


def report(meta: dict[str, Any], results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    footnotes: list[str] = []
    rows = [table_row(r, footnotes) for r in results]
    print()
    print("\n".join(header_lines(meta)))
    print()
    print(H.format_table(TABLE_HEADER, rows, left={0, len(TABLE_HEADER) - 1}))
    if footnotes:
        print("\nerrors:")
        print("\n".join(f"  {f}" for f in footnotes))
    if args.json:
        write_json(args.json, meta, results)
        print(f"\nJSON written to {args.json}")


def write_json(path: Path, meta: dict[str, Any], results: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps({"meta": meta, "models": results}, indent=2) + "\n")
    tmp.replace(path)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, spec in MODELS.items():
            print(f"{name:14s} {spec.description}")
        return 0
    if args.warm_child:
        return run_warm_child(args)
    if args.isolate:
        return run_isolated(args)

    cache_root = fresh_cache_dirs()  # before ember is imported
    configure_torch(args.threads)
    ember = H.EmberHandle(None, "ember was not requested (--backends)")
    if "ember" in args.backend_names:
        ember = H.import_ember()
    meta: dict[str, Any] = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cpus_available": len(os.sched_getaffinity(0)),
        "loadavg_start": round(os.getloadavg()[0], 2),
        "threads": args.threads,
        "ember_set_num_threads": ember.set_num_threads(args.threads),
        "ember_version": ember.version(),
        "ember_import_error": ember.error,
        "ember_cache_dir": ember.cache_dir(),
        "ember_backend": args.ember_backend,
        "mode": args.mode or "default",
        "batch": args.batch,
        "small": args.small,
        "repeat": args.repeat,
        "warmup": args.warmup,
        "min_batch_s": args.min_time,
        "warm_mode": args.warm_mode,
        "cache_dir": str(cache_root),
    }
    log(f"caches under {cache_root}; warming up backends ...")
    meta["backend_startup"] = warm_up_backends(args, ember)
    log(f"backend startup: {meta['backend_startup']}")
    results: list[dict[str, Any]] = []
    try:
        for i, name in enumerate(args.model_names, 1):
            log(f"[{i}/{len(args.model_names)}] {name}")
            try:
                results.append(bench_model(MODELS[name], args, ember))
            except Exception as e:  # noqa: BLE001 - e.g. eager itself failed: record, go on
                text = f"benchmark harness failed: {H.error_text(e)}"
                log(f"  {H.short_error(text, 200)}")
                errors = dict.fromkeys(["eager", *args.backend_names], text)
                results.append({"model": name, "threads": args.threads, "errors": errors})
            meta["loadavg_end"] = round(os.getloadavg()[0], 2)
            if args.json:
                write_json(args.json, meta, results)
    finally:
        if not args.keep_cache:
            shutil.rmtree(cache_root, ignore_errors=True)
    if args.no_table:
        if args.json:
            write_json(args.json, meta, results)
    else:
        report(meta, results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
