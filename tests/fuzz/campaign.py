"""Campaigns: run many seeds, classify, minimize the failures and write repro scripts."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.fuzz.generate import generate, prune
from tests.fuzz.program import Op, Program, TensorSpec
from tests.fuzz.runner import FINDINGS, Worker

_KIND_OF_DTYPE = {"float32": "randn", "int64": "randint", "bool": "mask"}


def _dtype_of(prog: Program, name: str) -> tuple[tuple[list[int], list[int]], str] | None:
    for t in prog.tensors:
        if t.name == name:
            dtype = {"randn": "float32", "pos": "float32", "mask": "bool"}.get(t.kind, "int64")
            return t.shapes, dtype
    for op in prog.ops:
        if op.out == name:
            return op.shapes, op.dtype
    return None


def _replace_uses(prog: Program, old: str, new: str) -> Program:
    ops = [dataclasses.replace(op, args=[new if a == old else a for a in op.args])
           for op in prog.ops]
    outputs = list(dict.fromkeys(new if o == old else o for o in prog.outputs))
    return Program(prog.seed, list(prog.tensors), ops, outputs, prog.converted_only)


def _size(prog: Program) -> tuple[int, int, int]:
    return (len(prog.ops), len(prog.outputs), len(prog.tensors))


def candidates(prog: Program) -> Iterator[Program]:
    """Smaller variants of prog, smallest first: fewer outputs, an operation cut into a fresh
    input (dropping everything only it used), an operation bypassed (its uses read one of
    its arguments of the same shape and dtype instead)."""
    out: list[Program] = []
    if len(prog.outputs) > 1:
        out += [prune(dataclasses.replace(prog, outputs=[o])) for o in prog.outputs]
    for op in prog.ops:
        kind = _KIND_OF_DTYPE.get(op.dtype)
        if kind is not None:
            spec = TensorSpec(f"c{len(prog.tensors)}_{op.out}", op.shapes, kind,
                              (prog.seed * 7919 + len(prog.ops)) % 2**31 + 1)
            ops = [o for o in prog.ops if o is not op]
            cut = _replace_uses(Program(prog.seed, prog.tensors + [spec], ops, prog.outputs,
                                        prog.converted_only), op.out, spec.name)
            if any(o.args for o in cut.ops):
                out.append(prune(cut))
        for a in op.args:
            if _dtype_of(prog, a) == (op.shapes, op.dtype):
                by = _replace_uses(prog, op.out, a)
                by.ops = [o for o in by.ops if o is not op and o.out != op.out]
                out.append(prune(by))
                break
    seen: set[str] = set()
    for c in sorted(out, key=_size):
        key = c.to_source()
        if key not in seen and c.ops and _size(c) < _size(prog):
            seen.add(key)
            yield c


def _same_failure(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a["class"] != b["class"]:
        return False
    if a["class"] == "strict":  # the same unconverted operator, for the same reason
        return _signature(a) == _signature(b)
    if a["class"] == "exception":
        return a["detail"].split(":", 1)[0] == b["detail"].split(":", 1)[0]
    return True


def minimize(prog: Program, result: dict[str, Any], run: Callable[[Program], dict[str, Any]],
             max_runs: int) -> tuple[Program, dict[str, Any], int]:
    """Greedy: take the first smaller variant that fails alike, until none does."""
    runs = 0
    progress = True
    while progress and runs < max_runs:
        progress = False
        for cand in candidates(prog):
            if runs >= max_runs:
                break
            runs += 1
            res = run(cand)
            if _same_failure(res, result):
                prog, result, progress = cand, res, True
                break
    return prog, result, runs


def _signature(res: dict[str, Any]) -> str:
    lines = res["detail"].splitlines() or [""]
    # A strict error's first reason ("  v5 = torch.var: why"), else the first line.
    reasons = [x for x in lines if re.match(r"^\s+\w+ = [\w.]+: ", x)]
    first = re.sub(r"^\s*\w+ = ", "", reasons[0]) if reasons else lines[0]
    return f"{res['class']}|{re.sub(r'[0-9]+', 'N', first)[:120]}"


@dataclasses.dataclass
class Summary:
    programs: int = 0
    classes: Counter[str] = dataclasses.field(default_factory=Counter)
    fallback_programs: int = 0
    eager_ops: int = 0
    graph_ops: int = 0
    ops: int = 0
    seconds: float = 0.0
    findings: list[tuple[int, dict[str, Any], Path | None]] = dataclasses.field(
        default_factory=list)

    def text(self, title: str) -> str:
        judged = self.programs - self.classes["invalid"]
        rate = 100.0 * self.fallback_programs / judged if judged else 0.0
        op_rate = 100.0 * self.eager_ops / self.graph_ops if self.graph_ops else 0.0
        lines = [f"== {title}: {self.programs} programs ({self.ops} operations) in "
                 f"{self.seconds:.0f} s",
                 "   " + "  ".join(f"{k} {v}" for k, v in sorted(self.classes.items())),
                 f"   eager fallback: {self.fallback_programs} of {judged} programs "
                 f"({rate:.1f}%); in those graphs {self.eager_ops} of {self.graph_ops} "
                 f"operators ({op_rate:.1f}%) ran eagerly"]
        for seed, res, path in self.findings:
            first = res["detail"].splitlines()[0][:150] if res["detail"] else ""
            where = f" -> {path}" if path else ""
            lines.append(f"   seed {seed}: {res['class']} ({res['mode']}) {first}{where}")
        return "\n".join(lines)


def _header(prog: Program, res: dict[str, Any], original: Program, strict: bool) -> str:
    flag = " --converted-only" if original.converted_only else ""
    return (f"ember fuzz repro: {res['class']} ({res['mode']}), seed {original.seed}"
            f"{' [strict]' if strict else ''}\n\n"
            f"Regenerate the original ({len(original.ops)} operations) with\n"
            f"    python -m tests.fuzz --seed {original.seed} --programs 1{flag}\n"
            f"Minimized to {len(prog.ops)} operations: {', '.join(prog.op_names())}\n\n"
            + res["detail"][:2500])


def run_campaign(seeds: list[int], *, converted_only: bool = False,
                 modes: tuple[str, ...] = ("static", "dynamic"), out_dir: Path | None = None,
                 timeout: float = 120.0, minimize_runs: int = 40, jobs: int = 1,
                 log: Callable[[str], None] = print) -> Summary:
    """Runs each seed's program; findings are written to out_dir (if given) as repro
    scripts, minimized (unless minimize_runs is 0) once per distinct signature. With jobs > 1
    the seeds run in that many worker processes at once (the results are the same; the log's
    order is the order they finish in)."""
    own_cache = None
    env = {}
    if not os.environ.get("EMBER_CACHE_DIR"):
        own_cache = tempfile.mkdtemp(prefix="ember-fuzz-cache-")
        env["EMBER_CACHE_DIR"] = own_cache
    summary = Summary()
    minimized: set[str] = set()
    lock = threading.Lock()
    start = time.monotonic()
    strict = converted_only

    def one(seed: int, worker: Worker) -> None:
        prog = generate(seed, converted_only)
        t0 = time.monotonic()
        res = worker.run(prog, list(modes), strict, timeout)
        with lock:
            summary.programs += 1
            summary.ops += len(prog.ops)
            summary.classes[res["class"]] += 1
            if res["class"] != "invalid":
                summary.fallback_programs += int(res["fallback"])
                summary.eager_ops += res["eager_ops"]
                summary.graph_ops += res["graph_ops"]
            log(f"seed {seed}: {res['class']:9s} {len(prog.ops):2d} ops "
                f"{time.monotonic() - t0:5.1f} s"
                + (f"  eager {res['eager_ops']}/{res['graph_ops']}" if res["fallback"] else "")
                + (f"  [{res['mode']}] {res['detail'].splitlines()[0][:160]}"
                   if res["class"] != "ok" and res["detail"] else ""))
        if res["class"] not in FINDINGS and res["class"] != "invalid":
            return
        path = None
        if out_dir is not None:
            small, small_res = prog, res
            sig = _signature(res)
            with lock:
                first = minimize_runs and sig not in minimized and res["class"] != "invalid"
                if first:
                    minimized.add(sig)
            if first:
                mode = res["mode"] if res["mode"] in ("static", "dynamic") else None
                run_modes = [mode] if mode else list(modes)

                def rerun(p: Program, run_modes: list[str] = run_modes) -> dict[str, Any]:
                    return worker.run(p, run_modes, strict, timeout)
                small, small_res, runs = minimize(prog, res, rerun, minimize_runs)
                with lock:
                    log(f"  seed {seed}: minimized {len(prog.ops)} -> {len(small.ops)} "
                        f"operations in {runs} runs")
            out_dir.mkdir(parents=True, exist_ok=True)
            tag = "co-" if converted_only else ""
            path = out_dir / f"{res['class']}-{tag}seed{seed}.py"
            run_modes = [small_res["mode"]] if small_res["mode"] in (
                "static", "dynamic") else list(modes)
            path.write_text(small.to_script(run_modes, strict,
                                            _header(small, small_res, prog, strict)))
        with lock:
            summary.findings.append((seed, res, path))

    def shard(part: list[int]) -> None:
        worker = Worker(env)
        try:
            for seed in part:
                one(seed, worker)
        finally:
            worker.stop()

    jobs = max(1, min(jobs, len(seeds)))
    try:
        threads = [threading.Thread(target=shard, args=(seeds[k::jobs],), daemon=True)
                   for k in range(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        summary.findings.sort(key=lambda f: f[0])
        summary.seconds = time.monotonic() - start
        if own_cache is not None:
            shutil.rmtree(own_cache, ignore_errors=True)
    return summary


__all__ = ["Summary", "candidates", "minimize", "run_campaign", "Op"]
