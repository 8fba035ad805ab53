"""PyTorch's operator database (OpInfo ``op_db``) through ``torch.compile(backend="ember")``.

As PyTorch's inductor tests do: for each OpInfo that supports float32 on the CPU, its sample
inputs are run eagerly and through the compiled ``lambda *a, **k: op(*a, **k)`` under
``torch.no_grad()``, and the results must match (float32 within rtol = atol = 1e-4, integers
and booleans exactly, NaN where eager has NaN). A sample that ember cannot convert must fall
back cleanly (ember's warning, not an exception). Samples that eager itself rejects are
skipped; random operators are not run.

Each operator ends as one of::

    converted  every sample compiled by ember, no fallback warning, results match
    fallback   results match, some operators ran in eager PyTorch (ember warned)
    no_graph   Dynamo gave ember no graph with an operator (it ran the op itself)
    skipped    no sample that eager accepts (or its samples cannot be made)
    mismatch   a compiled result differs from eager
    error      the compiled call raised (eager did not)
    crash      the worker process died (a segfault, an abort)
    hang       no progress for TIMEOUT seconds

Operators run in worker processes (one per core), so a crash or a hang is reported with the
operator's name; the worker is replaced and the run goes on. A mismatch, error, crash or hang
of an operator missing from KNOWN_MISMATCHES fails the test; so does a listed operator that
now passes (the list may only shrink).

The default run (CI) takes a fixed subset: every operator with its first sample that eager
accepts, then its first later sample with other shapes (Dynamo compiles that call again with
symbolic sizes, as when a user calls a compiled function with new shapes: the path most
mismatches that the first sample missed were on); the operators of KNOWN_MISMATCHES run all
their samples (up to the first failure), so a fixed gap is noticed in either mode.
``pytest --opinfo-all`` runs every sample.

Summary and the KNOWN list as Python (from the repository root)::

    python -m tests.python.test_opinfo --summary [--all | --first] [--known]
        [--ops add,sin ...] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

TIMEOUT = 60.0  # seconds without progress (one sample) before an operator counts as a hang
FAILING = ("mismatch", "error", "crash", "hang")
OUTCOMES = ("converted", "fallback", "no_graph", "skipped") + FAILING
_RANDOM_WORDS = ("rand", "normal", "bernoulli", "dropout", "multinomial", "uniform",
                 "exponential", "cauchy", "geometric", "poisson")
_MARK = "@@opinfo@@ "
# Outputs of uninitialized memory: only their shape and dtype are compared.
_UNINITIALIZED = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty",
                  "new_empty_strided"}

# Operators (OpInfo name, ".variant" when it has one) that fail today, with why.
# Regenerate with `python -m tests.python.test_opinfo --all --known`.
KNOWN_MISMATCHES: dict[str, str] = {
    # Dynamo's own errors (the same with backend="eager"): after earlier samples made the
    # shapes dynamic, Dynamo fails to run the node on fake tensors; ember never sees a graph.
    "cov": "error (Dynamo, also backend='eager'): sample 29: TorchRuntimeError: Dynamo failed "
           "to run FX node with fake tensors: torch.cov",
    "max_pool2d_with_indices_backward": "error (Dynamo, also backend='eager'): sample 4: "
           "TorchRuntimeError: Dynamo failed to run FX node with fake tensors",
}


# ---- the operators -----------------------------------------------------------------------
def op_key(op: Any) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def is_random(op: Any) -> bool:
    if getattr(op, "nondeterministic_seeded", False):
        return True
    name = op_key(op).lower()
    return any(w in name for w in _RANDOM_WORDS)


def selected_ops() -> dict[str, Any]:
    """The OpInfos run here, by key, in op_db's order: float32 on the CPU, not random."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    ops: dict[str, Any] = {}
    for op in op_db:
        if is_random(op) or torch.float32 not in op.supported_dtypes("cpu"):
            continue
        ops.setdefault(op_key(op), op)
    return ops


# ---- one operator, in a worker -----------------------------------------------------------
@dataclass
class Stats:
    graphs: int = 0  # graphs ember got with at least one operator
    fallback: list[str] = field(default_factory=list)  # ember's warnings


_STATS = Stats()


def _counting_backend(gm: Any, example_inputs: list[Any]) -> Any:
    """backend="ember", counting the graphs Dynamo hands it."""
    import torch._dynamo

    if any(n.op.startswith("call_") for n in gm.graph.nodes):
        _STATS.graphs += 1
    return torch._dynamo.lookup_backend("ember")(gm, example_inputs)


def _is_ember_warning(w: warnings.WarningMessage) -> bool:
    from ember.torch.report import EagerFallbackWarning

    if issubclass(w.category, EagerFallbackWarning):
        return True
    return issubclass(w.category, UserWarning) and str(w.message).startswith(("ember ", "ember:"))


_CAUSE_LINE = re.compile(r"^    (.+?) \(([^()]*)\): (.*)$")
_BUG_WORDS = ("raised", "bug in ember", "failed to", "could not compile", "the converter's result",
              "the converter returned")


def fallback_causes(message: str) -> list[str]:
    """Why ember ran operators eagerly, from one of its warnings: `operator: reason` for each
    operator it cannot convert, or the warning's first line (graph numbers removed)."""
    lines = message.splitlines()
    causes = []
    for line in lines:
        m = _CAUSE_LINE.match(line)
        if m:
            causes.append(f"{m.group(1)}: {_short(m.group(3), 200)}")
        elif "segments smaller than min_block_size" in line:
            causes.append("segments smaller than min_block_size")
    if not causes and lines and "run in eager PyTorch" not in lines[0]:
        causes.append(_short(re.sub(r"graph_?\d+(/segment_\d+)?", "graph", lines[0]), 200))
    return causes


def is_bug(cause: str) -> bool:
    """A fallback cause that is an ember bug (a converter or the compiler failed), not a
    missing converter."""
    return any(w in cause for w in _BUG_WORDS)


def _clone(value: Any) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, value)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _compare(actual: Any, expected: Any, what: str, values: bool = True) -> str | None:
    """None when actual matches expected (only in shape and dtype unless values), else the
    difference."""
    import torch
    from torch.utils._pytree import tree_flatten

    a_leaves, a_spec = tree_flatten(actual)
    e_leaves, e_spec = tree_flatten(expected)
    if len(a_leaves) != len(e_leaves):
        return f"{what}: structure {a_spec} != eager {e_spec}"
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves, strict=True)):
        where = f"{what}[{i}]" if len(e_leaves) > 1 else what
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                return f"{where}: {type(a).__name__} where eager gives a tensor"
            if not values:
                if (a.shape, a.dtype) != (e.shape, e.dtype):
                    return f"{where}: {a.dtype}{list(a.shape)} != eager {e.dtype}{list(e.shape)}"
                continue
            exact = not (e.dtype.is_floating_point or e.dtype.is_complex)
            tol = 0.0 if exact else 1e-4
            try:
                torch.testing.assert_close(a, e, rtol=tol, atol=tol, equal_nan=True,
                                           check_stride=False, check_device=True)
            except AssertionError as err:
                return f"{where}: {_short(str(err), 400)}"
        elif isinstance(e, (bool, int, float, complex)) and not isinstance(a, torch.Tensor):
            try:
                torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-4, equal_nan=True)
            except AssertionError as err:
                return f"{where}: {_short(str(err), 400)}"
        elif a is not e and a != e:
            return f"{where}: {a!r} != eager {e!r}"
    return None


def _shapes(args: Any, kwargs: Any) -> list[Any]:
    import torch

    leaves = list(args) + list(kwargs.values())
    return [tuple(v.shape) if isinstance(v, torch.Tensor) else None for v in leaves]


def run_op(op: Any, mode: str, progress: Callable[[], None]) -> dict[str, Any]:
    """Runs one OpInfo's samples eagerly and compiled; returns its outcome record. mode:
    "first" (the first sample eager accepts), "reshaped" (that one, then the first later one
    whose tensors have other shapes: Dynamo compiles it again with symbolic sizes, as for a
    user who calls a compiled function with new shapes) or "all"."""
    import torch
    import torch._dynamo

    import ember.torch

    torch._dynamo.reset()
    ember.torch.reset()
    _STATS.graphs, _STATS.fallback = 0, []
    result: dict[str, Any] = {"outcome": "skipped", "samples": 0, "skipped": 0, "detail": ""}
    torch.manual_seed(0)
    try:
        samples = iter(op.sample_inputs("cpu", torch.float32, requires_grad=False))
    except Exception as e:
        result["detail"] = f"sample_inputs: {type(e).__name__}: {_short(str(e))}"
        return result
    compiled = torch.compile(lambda *a, **k: op(*a, **k), backend=_counting_backend)
    first_shapes = None
    index = -1
    while True:
        index += 1
        try:
            sample = next(samples)
        except StopIteration:
            break
        except Exception as e:
            result["detail"] = f"sample_inputs: {type(e).__name__}: {_short(str(e))}"
            break
        args = (sample.input, *sample.args)
        if mode == "reshaped" and first_shapes is not None and _shapes(
                args, sample.kwargs) == first_shapes:
            continue  # the same shapes again: not what this mode runs
        eager_args, eager_kwargs = _clone(args), _clone(sample.kwargs)
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = op(*eager_args, **eager_kwargs)
        except Exception:
            result["skipped"] += 1
            continue
        comp_args, comp_kwargs = _clone(args), _clone(sample.kwargs)
        where = f"sample {index}"
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                actual = compiled(*comp_args, **comp_kwargs)
            except Exception as e:
                result.update(outcome="error",
                              detail=f"{where}: {type(e).__name__}: {_short(str(e), 500)}")
                return result
        _STATS.fallback += [str(w.message) for w in caught if _is_ember_warning(w)]
        result["samples"] += 1
        progress()
        diff = _compare(actual, expected, "output", values=op.name not in _UNINITIALIZED)
        if diff is None:
            diff = _compare((comp_args, comp_kwargs), (eager_args, eager_kwargs), "inputs")
        if diff is not None:
            result.update(outcome="mismatch", detail=f"{where}: {diff}")
            return result
        if mode == "first" or (mode == "reshaped" and first_shapes is not None):
            break
        first_shapes = _shapes(args, sample.kwargs)
    if result["samples"]:
        if _STATS.fallback:
            causes = sorted({c for m in _STATS.fallback for c in fallback_causes(m)})
            result.update(outcome="fallback", detail="; ".join(causes), causes=causes)
        elif _STATS.graphs == 0:
            result["outcome"] = "no_graph"
        else:
            result["outcome"] = "converted"
    return result


def _worker_main() -> None:
    """Reads `KEY ALL` lines from stdin and answers each with progress and result lines."""
    import torch
    import torch._dynamo

    import ember.torch  # noqa: F401  (registers backend="ember")

    torch._dynamo.config.cache_size_limit = 1024
    torch._dynamo.config.accumulated_cache_size_limit = 4096
    torch.set_num_threads(1)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # prints of the operators go to the log, not to the protocol
    ops = selected_ops()

    def send(kind: str, payload: Any) -> None:
        out.write(_MARK + json.dumps([kind, payload]) + "\n")
        out.flush()

    send("ready", None)
    selftest = os.environ.get("EMBER_OPINFO_SELFTEST") == "1"
    for line in sys.stdin:
        key, mode = line.split()
        if selftest and key == "selftest.crash":
            os.abort()
        if selftest and key == "selftest.hang":
            time.sleep(3600)
        try:
            record = run_op(ops[key], mode, lambda k=key: send("progress", k))
        except BaseException as e:  # noqa: B036  (report it, keep the worker)
            record = {"outcome": "error", "samples": 0, "skipped": 0,
                      "detail": f"harness: {type(e).__name__}: {_short(str(e))}"}
        send("result", record)


# ---- the parent: a pool of workers with timeouts -----------------------------------------
class _Worker:
    def __init__(self, log_dir: str) -> None:
        fd, self.log_path = tempfile.mkstemp(prefix="worker-", suffix=".log", dir=log_dir)
        self.log = os.fdopen(fd, "wb")
        env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
        code = "import sys; sys.path.insert(0, %r); import test_opinfo; test_opinfo._worker_main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code % os.path.dirname(os.path.abspath(__file__))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        os.set_blocking(self.stdout.fileno(), False)
        self.buffer = b""
        self.key: str | None = None
        self.ready = False
        self.deadline = time.monotonic() + 300.0  # startup: importing torch and op_db

    def send(self, key: str, mode: str, timeout: float) -> None:
        self.key = key
        self.deadline = time.monotonic() + timeout
        self.log.write(f"\n==== {key}\n".encode())
        self.log.flush()
        self.stdin.write(f"{key} {mode}\n".encode())
        self.stdin.flush()

    def messages(self) -> tuple[list[tuple[str, Any]], bool]:
        """Complete messages read so far, and whether the worker's output has ended."""
        eof = False
        try:
            chunk = os.read(self.stdout.fileno(), 1 << 16)
            eof = not chunk
            self.buffer += chunk
        except BlockingIOError:
            pass
        found = []
        *lines, self.buffer = self.buffer.split(b"\n")
        for raw in lines:
            text = raw.decode(errors="replace")
            if text.startswith(_MARK):
                kind, payload = json.loads(text[len(_MARK):])
                found.append((kind, payload))
        return found, eof

    def log_tail(self, n: int = 600) -> str:
        try:
            with open(self.log_path, "rb") as f:
                data = f.read().decode(errors="replace")
        except OSError:
            return ""
        return _short(data[data.rfind("\n==== "):][-n:], n)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.stdin, self.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.log.close()


def run_ops(keys: Iterable[str], modes: dict[str, str], jobs: int,
            echo: Callable[[str, dict[str, Any]], None] | None = None,
            timeout: float = TIMEOUT) -> dict[str, dict]:
    """Runs the operators in `jobs` workers; a key's mode is "all" (every sample), "reshaped"
    or "first" (run_op).
    An operator whose worker makes no progress for `timeout` seconds is a hang."""
    pending = list(keys)
    results: dict[str, dict] = {}
    log_dir = tempfile.mkdtemp(prefix="ember-opinfo-")
    workers: list[_Worker] = [_Worker(log_dir) for _ in range(min(jobs, len(pending)) or 1)]
    sel = selectors.DefaultSelector()
    for w in workers:
        sel.register(w.stdout, selectors.EVENT_READ, w)

    def finish(w: _Worker, record: dict[str, Any]) -> None:
        assert w.key is not None
        results[w.key] = record
        if echo is not None:
            echo(w.key, record)
        w.key = None

    def replace(w: _Worker) -> None:
        sel.unregister(w.stdout)
        w.stop()
        workers.remove(w)
        if pending:
            fresh = _Worker(log_dir)
            workers.append(fresh)
            sel.register(fresh.stdout, selectors.EVENT_READ, fresh)

    try:
        while workers and (pending or any(w.key for w in workers)):
            for w in list(workers):
                if w.ready and w.key is None and pending:
                    key = pending.pop(0)
                    w.send(key, modes.get(key, "first"), timeout)
            events = sel.select(timeout=1.0)
            for sk, _ in events:
                w = sk.data
                found, eof = w.messages()
                for kind, payload in found:
                    if kind == "ready":
                        w.ready = True
                    elif kind == "progress":
                        w.deadline = time.monotonic() + timeout
                    elif kind == "result":
                        finish(w, payload)
                if eof:
                    w.proc.wait()
                    if w.key is not None:
                        finish(w, {"outcome": "crash", "samples": 0, "skipped": 0,
                                   "detail": f"worker died (exit status {w.proc.returncode}); "
                                             f"log: {w.log_tail()}"})
                    replace(w)
            now = time.monotonic()
            for w in list(workers):
                if now > w.deadline:
                    if w.key is not None:
                        finish(w, {"outcome": "hang", "samples": 0, "skipped": 0,
                                   "detail": f"no progress for {timeout:.0f} s"})
                    elif not w.ready:
                        raise RuntimeError(f"an opinfo worker did not start: {w.log_tail()}")
                    replace(w)
            if not workers and pending:
                w = _Worker(log_dir)
                workers.append(w)
                sel.register(w.stdout, selectors.EVENT_READ, w)
    finally:
        for w in workers:
            try:
                w.stdin.close()
            except OSError:
                pass
            w.stop()
        sel.close()
        shutil.rmtree(log_dir, ignore_errors=True)
    return results


# ---- what the results mean ---------------------------------------------------------------
def check(results: dict[str, dict]) -> list[str]:
    """The problems: new failures, and known gaps that now pass."""
    problems = []
    for key, r in results.items():
        if r["outcome"] in FAILING and key not in KNOWN_MISMATCHES:
            problems.append(f"{key}: new {r['outcome']}: {r['detail']}")
        elif r["outcome"] not in FAILING and key in KNOWN_MISMATCHES:
            problems.append(f"{key}: now passes ({r['outcome']}); remove it from "
                            f"KNOWN_MISMATCHES in tests/python/test_opinfo.py")
    return problems


def summary(results: dict[str, dict]) -> str:
    counts = Counter(r["outcome"] for r in results.values())
    known = sum(1 for k, r in results.items() if r["outcome"] in FAILING and k in KNOWN_MISMATCHES)
    lines = [f"{len(results)} operators: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES),
             f"known gaps: {known} of {len(KNOWN_MISMATCHES)} listed"]
    for outcome in FAILING:
        keys = sorted(k for k, r in results.items() if r["outcome"] == outcome)
        if keys:
            lines.append(f"\n{outcome} ({len(keys)}):")
            lines += [f"  {k}: {results[k]['detail'][:240]}" for k in keys]
    by_cause: dict[str, list[str]] = {}
    for k, r in results.items():
        for cause in r.get("causes", []):
            by_cause.setdefault(cause, []).append(k)
    bugs = sorted((c for c in by_cause if is_bug(c)), key=lambda c: (-len(by_cause[c]), c))
    if bugs:
        lines.append(f"\nfallbacks where a converter or the compiler failed ({len(bugs)} causes):")
        lines += [f"  {c}  [{', '.join(sorted(by_cause[c]))}]" for c in bugs]
    unconverted = Counter(c.split(":", 1)[0] for c in by_cause if not is_bug(c)
                          for _ in by_cause[c])
    if unconverted:
        lines.append("\noperators ember runs eagerly (number of OpInfos, once per reason):")
        lines += [f"  {n:4d}  {name}" for name, n in unconverted.most_common()]
    return "\n".join(lines)


def known_as_python(results: dict[str, dict]) -> str:
    lines = ["KNOWN_MISMATCHES: dict[str, str] = {"]
    for key in sorted(results):
        r = results[key]
        if r["outcome"] in FAILING:
            reason = KNOWN_MISMATCHES.get(key) or f"{r['outcome']}: {_short(r['detail'], 120)}"
            head = f"    {key!r}: "
            parts = [reason[i:i + 70] for i in range(0, len(reason), 70)] or [""]
            lines.append(head + repr(parts[0]))
            lines += [" " * len(head) + repr(p) for p in parts[1:]]
            lines[-1] += ","
    lines.append("}")
    return "\n".join(lines)


def plan(keys: Iterable[str], all_samples: bool) -> dict[str, str]:
    return {k: "all" if all_samples or k in KNOWN_MISMATCHES else "reshaped" for k in keys}


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


# ---- pytest ------------------------------------------------------------------------------
def test_opinfo(request: pytest.FixtureRequest) -> None:
    pytest.importorskip("expecttest")  # torch.testing._internal needs it
    all_samples = bool(request.config.getoption("--opinfo-all", default=False))
    keys = list(selected_ops())
    results = run_ops(keys, plan(keys, all_samples), default_jobs())
    print(summary(results))
    stale = sorted(set(KNOWN_MISMATCHES) - set(keys))
    problems = check(results) + [f"{k}: listed in KNOWN_MISMATCHES but not in op_db's selection"
                                 for k in stale]
    assert not problems, "\n".join(problems)


def test_harness_reports_crash_and_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies or stops answering is reported with the operator's name, and the
    operators after it still run."""
    pytest.importorskip("expecttest")
    monkeypatch.setenv("EMBER_OPINFO_SELFTEST", "1")
    keys = ["selftest.crash", "mode", "selftest.hang", "linalg.eigvals"]  # no kernels to compile
    results = run_ops(keys, plan(keys, False), 1, timeout=20.0)
    assert {k: r["outcome"] for k, r in results.items()} == {
        "selftest.crash": "crash", "mode": "fallback", "selftest.hang": "hang",
        "linalg.eigvals": "fallback"}
    assert "worker died" in results["selftest.crash"]["detail"]


# ---- command line ------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--summary", action="store_true", help="print the summary (default)")
    parser.add_argument("--all", action="store_true", help="every sample of every operator")
    parser.add_argument("--first", action="store_true",
                        help="only the first sample of each operator (no reshaped call)")
    parser.add_argument("--known", action="store_true", help="print KNOWN_MISMATCHES as Python")
    parser.add_argument("--ops", help="comma-separated operator keys (default: all)")
    parser.add_argument("--jobs", type=int, default=default_jobs())
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each operator")
    args = parser.parse_args(argv)
    keys = list(selected_ops())
    if args.ops:
        wanted = args.ops.split(",")
        keys = [k for k in wanted if k in keys]
    start = time.monotonic()

    def echo(key: str, r: dict[str, Any]) -> None:
        if args.verbose:
            print(f"{key}: {r['outcome']} {r['detail'][:160]}", flush=True)

    modes = plan(keys, args.all)
    if args.first:
        modes = {k: "first" for k in keys}
    results = run_ops(keys, modes, args.jobs, echo)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    print(summary(results))
    print(f"\n{time.monotonic() - start:.0f} s")
    if args.known:
        print(known_as_python(results))
    return 1 if check(results) else 0


if __name__ == "__main__":
    sys.exit(main())
