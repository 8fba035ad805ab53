#!/usr/bin/env python
"""Saved models: compile each benchmark model with ember.compile, save it, and load it in
fresh processes; print file size against the model's weights and load time.

    python benchmarks/deploy.py [--models a,b] [--small] [--loads N] [--run-saved PATH]
                                [--json out.json]
    python benchmarks/deploy.py --latency [--models a,b] [--threads N]
    python benchmarks/deploy.py --onnx [--models a,b] [--small]

For every model: compile (wall time), save, then N fresh Python processes each time
``ember.load`` (and the first run after it) and write their outputs; the outputs must equal
the in-process compiled model's bit for bit. With --run-saved (the C++ example
examples/cpp/run_saved, linked against ember's runtime library only) the same file is
loaded and run from C++ too, and its outputs are compared the same way. Load times are
medians over the processes (the file is in the page cache after the save: a warm load).

With --latency: the steady-state latency of the same model run three ways, interleaved in
one process (benchmarks/harness.py): torch.compile(backend="ember"), the saved model loaded
with ember.load, and the model exported with torch.onnx.export and compiled by
ember.compile (what `ember compile` / `ember bench` run). Ratios are against
torch.compile's latency (above 1: slower).

With --onnx: every model exported with torch.onnx.export (the TorchScript exporter, as
--latency and `ember compile` users get it) is imported and built by ember.compile and run
beside onnxruntime's CPU session of the same file and eager PyTorch, on the example inputs;
it prints the largest error of each output relative to the reference's largest magnitude
(max |ember - ref| / max |ref|; the goal is 1e-4 against onnxruntime) and exits 1 when a
model misses it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ember  # noqa: E402
from benchmarks import harness as H  # noqa: E402
from benchmarks.models import MODELS  # noqa: E402

_CHILD = r"""
import sys, time, json
import numpy as np
t0 = time.perf_counter()
import ember
t1 = time.perf_counter()
m = ember.load(sys.argv[1])
t2 = time.perf_counter()
ins = np.load(sys.argv[2])
outs = m.run([ins[f"arr_{i}"] for i in range(len(ins.files))])
t3 = time.perf_counter()
np.savez(sys.argv[3], *outs)
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "first_run": t3 - t2}))
"""


def _weights(model: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size()
               for t in list(model.parameters()) + list(model.buffers()))


def _same(path: Path, expected: list[np.ndarray]) -> bool:
    got = np.load(path)
    return len(got.files) == len(expected) and all(
        np.array_equal(got[f"arr_{i}"], e) for i, e in enumerate(expected))


def measure(name: str, small: bool, loads: int, run_saved: str | None,
            work: Path) -> dict[str, Any]:
    spec = MODELS[name]
    model, inputs = spec.build(small=small), spec.example_inputs(small=small)
    t = time.perf_counter()
    compiled = ember.compile(model, inputs, options={"progress": False})
    compile_s = time.perf_counter() - t
    flat = [x.numpy() for x in inputs]
    expected = compiled.run(flat)
    path = work / f"{name}.ember"
    t = time.perf_counter()
    compiled.save(path)
    save_s = time.perf_counter() - t
    np.savez(work / "in.npz", *flat)
    rows = []
    same = True
    for _ in range(loads):
        r = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(work / "in.npz"),
                            str(work / "out.npz")], capture_output=True, text=True, check=True)
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
        same = same and _same(work / "out.npz", expected)
    result = {
        "model": name,
        "weights_bytes": _weights(model),
        "file_bytes": path.stat().st_size,
        "ember_weight_bytes": compiled.info()["weight_bytes"],
        "kernels": compiled.info()["kernels"],
        "compile_s": compile_s,
        "save_s": save_s,
        "load_ms": 1e3 * statistics.median(r["load"] for r in rows),
        "first_run_ms": 1e3 * statistics.median(r["first_run"] for r in rows),
        "python_equal": same,
    }
    if run_saved:
        out_dir = work / "cpp"
        out_dir.mkdir(exist_ok=True)
        in_files = []
        for i, x in enumerate(flat):
            np.save(work / f"in_{i}.npy", x)
            in_files += ["-i", str(work / f"in_{i}.npy")]
        r = subprocess.run([run_saved, str(path), *in_files, "-o", str(out_dir)],
                           capture_output=True, text=True)
        ok = r.returncode == 0
        for spec, e in zip(compiled.outputs, expected, strict=True):
            f = out_dir / f"{spec.name}.npy"  # run_saved names the files after the outputs
            ok = ok and f.exists() and np.array_equal(np.load(f), e)
        result["cpp_equal"] = ok
    return result


def latency(name: str, work: Path, rounds: int, small: bool) -> dict[str, Any]:
    import ember.torch  # noqa: F401  (registers backend="ember")

    spec = MODELS[name]
    model, inputs = spec.build(small=small), spec.example_inputs(small=small)
    with torch.no_grad():
        backend = torch.compile(model, backend="ember", options={"progress": False})
        backend(*inputs)
    ember.compile(model, inputs, options={"progress": False}).save(work / "m.ember")
    loaded = ember.load(work / "m.ember")
    onnx_path = work / "m.onnx"
    with torch.no_grad():
        torch.onnx.export(model, inputs, str(onnx_path), dynamo=False)
    from_onnx = ember.compile(onnx_path, options={"progress": False})

    def no_grad(fn: Any) -> Any:
        def call(*args: Any) -> Any:
            with torch.no_grad():
                return fn(*args)
        return call

    stats, errors = H.measure_interleaved(
        {"torch.compile": no_grad(backend), "ember.load": loaded, "onnx": from_onnx},
        inputs, rounds=rounds, min_batch_s=0.2, warmup=1)
    row: dict[str, Any] = {"model": name, "errors": errors}
    for k, v in stats.items():
        row[k] = v.median_ms
    return row


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    """max |got - ref| / max |ref| (integers and booleans: 0 when equal, else 1)."""
    ref = np.asarray(ref)
    if ref.dtype == bool or ref.dtype.kind in "iu":
        return 0.0 if np.array_equal(got, ref) else 1.0
    if not ref.size:
        return 0.0
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    return float(np.max(np.abs(np.asarray(got, np.float64) - ref))) / scale


ONNX_TOL = 1e-4


def onnx_accuracy(name: str, work: Path, small: bool) -> dict[str, Any]:
    import onnxruntime as ort

    spec = MODELS[name]
    model, inputs = spec.build(small=small), spec.example_inputs(small=small)
    path = work / f"{name}.onnx"
    with torch.no_grad():
        torch.onnx.export(model, inputs, str(path), dynamo=False)
        eager = model(*inputs)
    eager_flat = [eager] if isinstance(eager, torch.Tensor) else list(eager)
    t = time.perf_counter()
    compiled = ember.compile(path, options={"progress": False})
    compile_s = time.perf_counter() - t
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    # The exporter may drop an input the model never reads: feed the ones the file names.
    by_name = dict(zip((f.name for f in compiled.inputs), (x.numpy() for x in inputs),
                       strict=False))
    feeds = {i.name: by_name[i.name] for i in sess.get_inputs()}
    ref = sess.run(None, feeds)
    got = compiled.run([by_name[s.name] for s in compiled.inputs])
    if not len(got) == len(ref) == len(eager_flat):
        raise RuntimeError(f"{len(got)} outputs, onnxruntime {len(ref)}, eager {len(eager_flat)}")
    return {
        "model": name,
        "onnx_mib": path.stat().st_size / (1 << 20),
        "compile_s": compile_s,
        "vs_ort": max(_rel_err(g, r) for g, r in zip(got, ref, strict=True)),
        "vs_eager": max(_rel_err(g, e.numpy()) for g, e in zip(got, eager_flat, strict=True)),
        "ort_vs_eager": max(_rel_err(r, e.numpy()) for r, e in zip(ref, eager_flat,
                                                                       strict=True)),
    }


def _onnx_main(args: argparse.Namespace) -> int:
    print("| model | ONNX MiB | ember.compile s | ember vs onnxruntime | ember vs eager "
          "| onnxruntime vs eager |")
    print("|---|---|---|---|---|---|")
    ok = True
    with tempfile.TemporaryDirectory(prefix="ember-deploy-") as d:
        for name in args.models.split(","):
            try:
                r = onnx_accuracy(name, Path(d), args.small)
            except Exception as e:  # one model's failure is a row, not the end of the run
                print(f"| {name} | error: {type(e).__name__}: {str(e)[:200]} |", flush=True)
                ok = False
                continue
            ok = ok and r["vs_ort"] <= ONNX_TOL
            print(f"| {name} | {r['onnx_mib']:.1f} | {r['compile_s']:.1f} | {r['vs_ort']:.1e} "
                  f"| {r['vs_eager']:.1e} | {r['ort_vs_eager']:.1e} |", flush=True)
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--small", action="store_true", help="reduced model sizes (quick checks)")
    p.add_argument("--loads", type=int, default=5, help="fresh processes per model")
    p.add_argument("--run-saved", help="the run_saved example program, to load from C++ too")
    p.add_argument("--json", type=Path)
    p.add_argument("--latency", action="store_true",
                   help="compare the latency of the three ways to run a model (see above)")
    p.add_argument("--rounds", type=int, default=7, help="--latency: interleaved rounds")
    p.add_argument("--threads", type=int, default=0, help="--latency: threads (0: all)")
    p.add_argument("--onnx", action="store_true",
                   help="check ember.compile of each model's ONNX export against onnxruntime")
    args = p.parse_args(argv)
    if args.latency:
        return _latency_main(args)
    if args.onnx:
        return _onnx_main(args)
    results = []
    with tempfile.TemporaryDirectory(prefix="ember-deploy-") as d:
        for name in args.models.split(","):
            torch._dynamo.reset()
            try:
                results.append(measure(name, args.small, args.loads, args.run_saved, Path(d)))
            except Exception as e:  # one model's failure is a row, not the end of the run
                results.append({"model": name, "error": f"{type(e).__name__}: {e}"[:300]})
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
    cpp = args.run_saved is not None
    print(f"| model | weights MiB | file MiB | file / weights | load ms | first run ms | "
          f"compile s | same in a new process{' | same from C++' if cpp else ''} |")
    print(f"|---|---|---|---|---|---|---|---|{'---|' if cpp else ''}")
    for r in results:
        if "error" in r:
            print(f"| {r['model']} | error: {r['error']} |")
            continue
        mib = 1 << 20
        line = (f"| {r['model']} | {r['weights_bytes'] / mib:.1f} | {r['file_bytes'] / mib:.1f} "
                f"| {r['file_bytes'] / r['weights_bytes']:.2f}x | {r['load_ms']:.1f} "
                f"| {r['first_run_ms']:.1f} | {r['compile_s']:.1f} | "
                f"{'yes' if r['python_equal'] else 'NO'} |")
        if cpp:
            line += f" {'yes' if r.get('cpp_equal') else 'NO'} |"
        print(line)
    return 0 if all(r.get("python_equal") and r.get("cpp_equal", True) for r in results) else 1


def _ms(r: dict[str, Any], k: str) -> str:
    return f"{r[k]:.3f}" if k in r else f"error: {r['errors'].get(k, '?')[:60]}"


def _ratio(r: dict[str, Any], k: str) -> str:
    base = r.get("torch.compile")
    return f"{r[k] / base:.2f}" if k in r and base else "n/a"


def _latency_main(args: argparse.Namespace) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
        ember.set_num_threads(args.threads)
    print("| model | torch.compile ms | ember.load ms | ONNX via ember.compile ms | "
          "load / torch.compile | ONNX / torch.compile |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="ember-deploy-") as d:
        for name in args.models.split(","):
            torch._dynamo.reset()
            r = latency(name, Path(d), args.rounds, args.small)
            cells = [_ms(r, k) for k in ("torch.compile", "ember.load", "onnx")]
            cells += [_ratio(r, k) for k in ("ember.load", "onnx")]
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
