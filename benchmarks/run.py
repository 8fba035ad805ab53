#!/usr/bin/env python
"""Benchmark ember against the runtimes a CPU user would pick, measured in the same run.

    python benchmarks/run.py [--models a,b] [--threads N] [--repeat R] [--json out.json]
                             [--small] [--isolate] [--warm-mode reset|process]
                             [--backends ember,inductor,inductor-frozen,ort,openvino]
    python benchmarks/run.py --profile MODEL

For every model, in one process: build it (one instance per contender, identical weights),
compile it with torch.compile(backend="ember"), torch.compile(backend="inductor") and
inductor with freezing, export it to ONNX Runtime and convert it to OpenVINO; time the
first compiled call with empty on-disk caches (cold) and again after forgetting everything
held in memory (warm, served by the now-filled disk caches), check every output against
eager, then time all contenders with the same thread count in interleaved rounds. A
failure of one backend on one model is recorded in the table and the run goes on; a
runtime that is not installed, or cannot take the model, shows as n/a.

See benchmarks/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
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
from benchmarks import peers  # noqa: E402
from benchmarks.models import MODELS, ModelSpec  # noqa: E402
from benchmarks.report import report, write_json  # noqa: E402

COMPILED = ("ember", "inductor", "inductor-frozen")  # contenders made by torch.compile
BACKENDS = (*COMPILED, *peers.PEERS)
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
    p.add_argument("--settle-ms", type=float, default=50.0,
                   help="sleep before each contender's turn, so threads another runtime left "
                        "spinning are asleep before it runs")
    p.add_argument("--backends", default=",".join(BACKENDS),
                   help="contenders besides eager (default: all)")
    p.add_argument("--profile", metavar="MODEL",
                   help="compile MODEL with ember under EMBER_PROFILE=1, call it a few times "
                        "and exit (the per-kernel table goes to stderr)")
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
    if args.profile:
        args.model_names = [args.profile]
    unknown = [m for m in args.model_names if m not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; valid: {', '.join(MODELS)}")
    names = {b.strip() for b in args.backends.split(",") if b.strip()}
    bad = sorted(names - set(BACKENDS))
    if bad:
        p.error(f"unknown backend(s) {', '.join(bad)}; valid: {', '.join(BACKENDS)}")
    args.backend_names = [b for b in BACKENDS if b in names]  # always in the same order
    if args.threads < 1 or args.repeat < 1 or args.batch < 1:
        p.error("--threads, --repeat and --batch must be >= 1")
    if args.settle_ms < 0:
        p.error("--settle-ms must be >= 0")
    return args


def fresh_cache_dirs() -> Path:
    """Point ember and inductor at empty cache dirs. Must run before ember is imported."""
    root = Path(tempfile.mkdtemp(prefix="ember-bench-"))
    os.environ["EMBER_CACHE_DIR"] = str(root / "ember")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(root / "inductor")
    return root


def quiet_ember_pool() -> str:
    """EMBER_SPIN_US=0 unless the user set it: ember's idle workers then sleep at once
    instead of spinning into the next contender's timed batch. Must run before ember is
    imported. Returns what the variable is and who set it, for the header."""
    if "EMBER_SPIN_US" in os.environ:
        return f"EMBER_SPIN_US={os.environ['EMBER_SPIN_US']} (set by the user)"
    os.environ["EMBER_SPIN_US"] = "0"
    return "EMBER_SPIN_US=0 (set by the runner)"


def spinning_policy(ember_spin: str, settle_ms: float) -> str:
    """What the runner does so that no contender's idle threads spin into another's timed
    batch, in words (the header line and meta.spinning)."""
    omp = os.environ.get("OMP_WAIT_POLICY")
    threads = "ember's kernels on its own pool (inference)"
    return (
        f"{ember_spin}; {threads}; ONNX Runtime session.intra_op.allow_spinning=0; torch's "
        f"OpenMP (OMP_WAIT_POLICY {'=' + omp if omp else 'unset'}) and OpenVINO's threads keep "
        f"their defaults; the runner sleeps {settle_ms:g} ms before each contender's turn"
    )


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def configure_torch(threads: int) -> None:
    torch.set_num_threads(threads)
    # A backend error must surface, not silently fall back to eager.
    torch._dynamo.config.suppress_errors = False
    # Several compiled copies of the same forward() live at once; never hit the limit.
    torch._dynamo.config.recompile_limit = 64


def backend_name(contender: str, args: argparse.Namespace) -> str:
    if contender == "inductor-frozen":
        return "inductor"
    return args.ember_backend if contender == "ember" else contender


def compile_contender(
    model: torch.nn.Module, contender: str, args: argparse.Namespace, inputs: tuple[Any, ...]
) -> tuple[H.Fn, H.CompileStats]:
    """torch.compile ``model`` for ``contender`` and time its first call.

    inductor-frozen is inductor with ``torch._inductor.config.freezing`` set (a config
    patch) while this contender compiles, that is during its first call: Dynamo reads the
    flag while tracing, inductor while compiling, and the other contenders never see it.
    Its timed calls run outside the patch (which costs ~0.1 ms a call); bench_model notes
    any recompile while timing, which would have traced without freezing. The flag is also
    passed as torch.compile's ``options``, so that Dynamo keeps this contender's compiled
    code apart from plain inductor's (with equal options, a second instance of the same
    model class reuses the first one's compiled code)."""
    if contender != "inductor-frozen":
        return H.compile_first_call(model, backend_name(contender, args), inputs, args.mode)
    options: dict[str, Any] = {"freezing": True}
    if args.mode:  # torch.compile takes mode or options, not both
        options = {**torch._inductor.list_mode_options(args.mode), **options}
    with torch._inductor.config.patch(freezing=True):
        return H.compile_first_call(model, "inductor", inputs, options=options)


def prepare_peer(
    name: str, model: torch.nn.Module, inputs: tuple[Any, ...], threads: int
) -> tuple[H.Fn, dict[str, Any]]:
    """peers.prepare plus the first call; cold_s = export/convert + load + first call.
    Raises peers.Unavailable when the runtime cannot take the model."""
    t0 = time.perf_counter()
    peer = peers.prepare(name, model, inputs, threads)
    peer.fn(*inputs)
    return peer.fn, {**peer.info, "cold_s": time.perf_counter() - t0}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def warm_up_backends(args: argparse.Namespace, ember: H.EmberHandle) -> dict[str, Any]:
    """Compile (or export) a tiny model once per backend so one-time process costs (imports,
    compile worker pools, the ONNX exporter's start) are reported here and not charged to the
    first model."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        tiny = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    out: dict[str, Any] = {}
    x = torch.randn(8, 8)
    for contender in args.backend_names:
        if contender == "ember" and ember.error and args.ember_backend == "ember":
            out[contender] = {"error": ember.error}
            continue
        t0 = time.perf_counter()
        try:
            if contender in peers.PEERS:  # the exporter's and the runtime's first use
                prepare_peer(contender, tiny, (x,), 1)
            else:
                with torch.inference_mode():
                    compile_contender(tiny, contender, args, (x,))
            out[contender] = {"seconds": time.perf_counter() - t0}
        except Exception as e:  # noqa: BLE001 - peers.Unavailable included
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
    """The torch.compile contenders: fill res["compile"] / res["errors"]; return the warm
    compiled callables."""
    models: dict[str, torch.nn.Module] = {}
    compiled: dict[str, H.Fn] = {}
    for c in (c for c in args.backend_names if c in COMPILED):
        if c == "ember" and ember.error and args.ember_backend == "ember":
            res["errors"][c] = ember.error
            continue
        models[c] = spec.build(args.small)
        ember.reset_cache_stats()
        try:
            fn, st = compile_contender(models[c], c, args, inputs)
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
            res["compile"][c]["memory_reset"] = reset_done.get(c.removesuffix("-frozen"), False)
            ember.reset_cache_stats()
            try:
                fn, st = compile_contender(models[c], c, args, inputs)
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
        "unavailable": {},
    }
    torch._dynamo.reset()
    ember.reset()
    gc.collect()
    inputs = spec.example_inputs(args.batch, args.small)
    # The peers first: whatever their exporters trace then happens before Dynamo compiles
    # the other contenders and before its graph counters are read.
    prepared = prepare_peers(spec, args, inputs, res)
    with torch.inference_mode():
        eager = spec.build(args.small)
        ref = eager(*inputs)
        compiled = compile_cold_and_warm(spec, args, ember, inputs, res)
        contenders: dict[str, H.Fn] = {"eager": eager}
        graphs_before = graph_count()
        for c, fn in [*compiled.items(), *prepared.items()]:
            try:
                err, scale = H.max_abs_error(fn(*inputs), ref)
                res["accuracy"][c] = {"max_abs_err": err, "eager_max_abs": scale}
                contenders[c] = fn
            except Exception as e:  # noqa: BLE001
                res["errors"][c] = H.error_text(e)
        stats, errors = H.measure_interleaved(
            contenders, inputs, args.repeat, args.min_time, args.warmup,
            settle_s=args.settle_ms / 1e3,
        )  # fmt: skip
        res["recompiles_while_timing"] = graph_count() - graphs_before
    res["errors"].update(errors)
    for c, st in stats.items():
        res["latency"][c] = st.as_dict()
    res.update(ember_speedups({c: st.median_ms for c, st in stats.items()}))
    return res


def graph_count() -> int:
    """Graphs Dynamo has compiled since its counters were last cleared."""
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def ember_speedups(lat: dict[str, float]) -> dict[str, Any]:
    """ember's speed over each other contender (other_ms / ember_ms, > 1: ember faster) and
    over the fastest of them, from the median latencies of the contenders that ran."""
    if "ember" not in lat:
        return {}
    vs = {c: ms / lat["ember"] for c, ms in lat.items() if c != "ember"}
    out: dict[str, Any] = {"speedup_vs": vs}
    if vs:
        best = min(vs, key=lambda c: lat[c])
        out["vs_best"] = {"peer": best, "speedup": vs[best]}
    return out


def prepare_peers(
    spec: ModelSpec[Any],
    args: argparse.Namespace,
    inputs: tuple[torch.Tensor, ...],
    res: dict[str, Any],
) -> dict[str, H.Fn]:
    """The runtimes outside torch.compile, each from its own model instance: fill
    res["compile"] (cold_s, the exporter used, the runtime's settings), res["unavailable"]
    (not installed, export/convert failed) and res["errors"] (failed on the first call)."""
    out: dict[str, H.Fn] = {}
    for c in (c for c in args.backend_names if c in peers.PEERS):
        try:
            model = spec.build(args.small)
            out[c], res["compile"][c] = prepare_peer(c, model, inputs, args.threads)
        except peers.Unavailable as e:
            res["unavailable"][c] = str(e)
            log(f"  {c}: n/a: {H.short_error(str(e), 200)}")
            continue
        except Exception as e:  # noqa: BLE001
            res["errors"][c] = H.error_text(e)
            log(f"  {c}: failed: {H.short_error(res['errors'][c], 200)}")
            continue
        how = f" ({res['compile'][c]['exporter']} exporter)" if c == "ort" else ""
        log(f"  {c}: ready in {res['compile'][c]['cold_s']:.2f} s{how}")
    return out


# --------------------------------------------------------------------------- subprocesses


def child_argv(args: argparse.Namespace, models: str) -> list[str]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--models", models]
    argv += ["--threads", str(args.threads), "--batch", str(args.batch)]
    argv += ["--repeat", str(args.repeat), "--warmup", str(args.warmup)]
    argv += ["--min-time", str(args.min_time), "--backends", ",".join(args.backend_names)]
    argv += ["--settle-ms", str(args.settle_ms)]
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
    quiet_ember_pool()  # the parent's setting comes through the environment; this is a no-op
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
            _, st = compile_contender(model, contender, args, inputs)
        out = {"seconds": st.seconds, "graphs": st.graphs, "kernel_cache": ember.cache_stats()}
    except Exception as e:  # noqa: BLE001
        out = {"error": H.error_text(e, 500)}
    print(WARM_TAG + json.dumps(out), flush=True)
    return 0


PROFILE_CALLS = 4


def run_profile(args: argparse.Namespace) -> int:
    """--profile MODEL: compile it with ember with EMBER_PROFILE=1 set before ember is
    imported and call it PROFILE_CALLS times (ember profiles a compiled graph on its second
    call and prints the per-kernel table to stderr); nothing is timed here."""
    os.environ["EMBER_PROFILE"] = "1"
    configure_torch(args.threads)
    ember = H.import_ember()
    if ember.error and args.ember_backend == "ember":
        print(f"ember cannot be imported: {ember.error}", file=sys.stderr)
        return 1
    ember.set_num_threads(args.threads)
    spec = MODELS[args.profile]
    model, inputs = spec.build(args.small), spec.example_inputs(args.batch, args.small)
    log(f"profiling {spec.name} ({'small' if args.small else 'full'}, batch {args.batch}, "
        f"threads {args.threads}) with EMBER_PROFILE=1")
    with torch.inference_mode():
        fn, st = compile_contender(model, "ember", args, inputs)
        log(f"compiled in {st.seconds:.2f} s ({st.graphs} graph(s))")
        for _ in range(PROFILE_CALLS - 1):
            fn(*inputs)
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


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, spec in MODELS.items():
            print(f"{name:14s} {spec.description}")
        return 0
    if args.warm_child:
        return run_warm_child(args)
    if args.profile:
        return run_profile(args)
    if args.isolate:
        return run_isolated(args)

    cache_root = fresh_cache_dirs()  # before ember is imported
    ember_spin = quiet_ember_pool()  # likewise
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
        "contenders": ["eager", *args.backend_names],
        "onnxruntime": package_version("onnxruntime"),
        "openvino": package_version("openvino"),
        "settle_ms": args.settle_ms,
        "spinning": spinning_policy(ember_spin, args.settle_ms),
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
