"""Measurement helpers for benchmarks/run.py: compiling, timing, errors, tables.

Nothing here knows about particular models; run.py wires these pieces together.
"""

from __future__ import annotations

import gc
import importlib
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

Fn = Callable[..., Any]


# --------------------------------------------------------------------------- errors


def innermost(exc: BaseException) -> BaseException:
    """Unwrap Dynamo's BackendCompilerFailed wrappers to the backend's own error."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "inner_exception", None)
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


def error_text(exc: BaseException, limit: int = 4000) -> str:
    """Full text of the original error: 'Type: message' (truncated to ``limit``)."""
    inner = innermost(exc)
    text = f"{type(inner).__name__}: {str(inner).strip()}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_error(text: str, limit: int = 80) -> str:
    """First line of an error text, for table cells."""
    line = text.strip().splitlines()[0] if text.strip() else "error"
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --------------------------------------------------------------------------- ember


@dataclass
class EmberHandle:
    """The imported ember package (or why it could not be imported)."""

    module: ModuleType | None
    error: str | None

    def _call(self, owner: Any, name: str, *args: Any) -> tuple[bool, Any]:
        """Call ``owner.name(*args)`` if it exists; a failure is reported, never raised."""
        fn = getattr(owner, name, None)
        if not callable(fn):
            return False, None
        try:
            return True, fn(*args)
        except Exception as e:  # noqa: BLE001 - the benchmark run must go on
            print(f"[ember] {name}() failed: {error_text(e, 300)}", file=sys.stderr)
            return False, None

    def reset(self) -> bool:
        """Forget compiled graphs and kernels held in memory (ember.torch.reset and
        ember.clear_memory_cache, where they exist); the disk cache stays. False when
        ember exposes neither."""
        a, _ = self._call(getattr(self.module, "torch", None), "reset")
        b, _ = self._call(self.module, "clear_memory_cache")
        return a or b

    def reset_cache_stats(self) -> None:
        self._call(self.module, "reset_cache_stats")

    def cache_stats(self) -> dict[str, Any] | None:
        """ember's kernel-cache counters since the last reset_cache_stats, if exposed."""
        ok, stats = self._call(self.module, "cache_stats")
        return dict(stats) if ok and stats is not None else None

    def cache_dir(self) -> str | None:
        ok, path = self._call(self.module, "cache_dir")
        return str(path) if ok else None

    def set_num_threads(self, n: int) -> bool:
        ok, _ = self._call(self.module, "set_num_threads", n)
        return ok

    def version(self) -> str | None:
        return getattr(self.module, "__version__", None)


def import_ember() -> EmberHandle:
    """Import ember and its torch frontend (which registers backend="ember").

    EMBER_CACHE_DIR must already be set: ember may read it at import time.
    """
    try:
        module = importlib.import_module("ember")
    except Exception as e:  # noqa: BLE001 - any import failure is reported, not raised
        return EmberHandle(None, error_text(e))
    try:
        importlib.import_module("ember.torch")
    except ModuleNotFoundError as e:
        if e.name != "ember.torch":  # a dependency of ember.torch is missing
            return EmberHandle(None, error_text(e))
    except Exception as e:  # noqa: BLE001
        return EmberHandle(None, error_text(e))
    return EmberHandle(module, None)


# --------------------------------------------------------------------------- compiling


@dataclass
class CompileStats:
    seconds: float
    graphs: int
    graph_breaks: int
    warnings: list[str] = field(default_factory=list)


def compile_first_call(
    model: torch.nn.Module,
    backend: str,
    inputs: Sequence[Any],
    mode: str | None = None,
    options: dict[str, Any] | None = None,
) -> tuple[Fn, CompileStats]:
    """torch.compile ``model`` (with torch.compile's ``mode`` or ``options``) and time its
    first call (tracing + compiling + one run).

    Raises whatever the backend raises. Warnings raised while compiling (for example a
    backend announcing an eager fallback) are recorded and echoed to stderr.
    """
    counters = torch._dynamo.utils.counters
    counters.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        fn = torch.compile(model, backend=backend, mode=mode, options=options)
        fn(*inputs)
        seconds = time.perf_counter() - t0
    messages: list[str] = []
    for w in caught:
        msg = f"{w.category.__name__}: {w.message}"
        if msg not in messages:
            messages.append(msg)
            print(f"[{backend}] {msg}", file=sys.stderr)
    stats = CompileStats(
        seconds=seconds,
        graphs=int(counters["stats"]["unique_graphs"]),
        graph_breaks=int(sum(counters["graph_break"].values())),
        warnings=messages,
    )
    return fn, stats


def reset_compilers(ember: EmberHandle) -> dict[str, bool]:
    """Forget everything compiled in memory; on-disk caches stay (that is the point)."""
    torch._dynamo.reset()
    done = {"ember": ember.reset(), "inductor": False}
    clear = getattr(importlib.import_module("torch._inductor.utils"), "clear_caches", None)
    if callable(clear):
        clear()
        done["inductor"] = True
    return done


# --------------------------------------------------------------------------- accuracy


def max_abs_error(out: Any, ref: Any) -> tuple[float, float]:
    """(max |out - ref| over all output tensors, max |ref|). Raises on structure mismatch."""
    got, want = tree_leaves(out), tree_leaves(ref)
    if len(got) != len(want):
        raise ValueError(f"output has {len(got)} tensors, eager has {len(want)}")
    err, scale = 0.0, 0.0
    for g, w in zip(got, want, strict=True):
        if g.shape != w.shape:
            raise ValueError(f"output shape {tuple(g.shape)} != eager {tuple(w.shape)}")
        diff = (g.double() - w.double()).abs()
        err = max(err, float(diff.max()) if diff.numel() else 0.0)
        scale = max(scale, float(w.double().abs().max()) if w.numel() else 0.0)
    return err, scale


# --------------------------------------------------------------------------- timing


@dataclass
class LatencyStats:
    samples_ms: list[float]
    iters_per_sample: int

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def min_ms(self) -> float:
        return min(self.samples_ms)

    @property
    def spread(self) -> float:
        """Interquartile range over the median: 0.05 means the middle half is within 5%."""
        if len(self.samples_ms) < 4:
            return (max(self.samples_ms) - self.min_ms) / self.median_ms
        q = statistics.quantiles(self.samples_ms, n=4)
        return (q[2] - q[0]) / self.median_ms

    def as_dict(self) -> dict[str, Any]:
        return {
            "median_ms": self.median_ms,
            "min_ms": self.min_ms,
            "spread": self.spread,
            "iters_per_sample": self.iters_per_sample,
            "samples_ms": self.samples_ms,
        }


def _time_calls(fn: Fn, inputs: Sequence[Any], iters: int) -> float:
    """Seconds per call, averaged over ``iters`` back-to-back calls, GC paused."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(*inputs)
        return (time.perf_counter() - t0) / iters
    finally:
        if gc_was_enabled:
            gc.enable()


def measure_interleaved(
    contenders: dict[str, Fn],
    inputs: Sequence[Any],
    rounds: int,
    min_batch_s: float,
    warmup: int,
    max_iters: int = 10_000,
    settle_s: float = 0.0,
) -> tuple[dict[str, LatencyStats], dict[str, str]]:
    """Steady-state latency of every contender, measured in interleaved rounds.

    Each contender first runs ``warmup + 2`` calls, then the number of calls per batch
    is chosen so that one batch takes about ``min_batch_s``. In every round each
    contender runs ``warmup`` untimed calls and then one timed batch; the order of the
    contenders rotates from round to round. Background noise thus lands on all
    contenders alike, and the median over rounds discards most of it.

    Before each contender's turn (calibration included) the caller sleeps ``settle_s``:
    worker threads that the previous contender's runtime left spinning go to sleep by
    then instead of competing with this contender for the cores.

    Returns per-contender stats and, for contenders that raised, their error text.
    """
    errors: dict[str, str] = {}
    iters: dict[str, int] = {}
    for name, fn in list(contenders.items()):
        time.sleep(settle_s)
        try:
            for _ in range(warmup + 1):
                fn(*inputs)
            single = min(_time_calls(fn, inputs, 1) for _ in range(2))
        except Exception as e:  # noqa: BLE001
            errors[name] = error_text(e)
            continue
        iters[name] = max(1, min(max_iters, math.ceil(min_batch_s / max(single, 1e-9))))
    samples: dict[str, list[float]] = {name: [] for name in iters}
    names = list(iters)
    for r in range(rounds):
        shift = r % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            if name in errors:
                continue
            fn = contenders[name]
            time.sleep(settle_s)
            try:
                for _ in range(warmup):
                    fn(*inputs)
                samples[name].append(_time_calls(fn, inputs, iters[name]) * 1e3)
            except Exception as e:  # noqa: BLE001
                errors[name] = error_text(e)
    stats = {
        name: LatencyStats(samples[name], iters[name])
        for name in names
        if name not in errors and samples[name]
    }
    return stats, errors


# --------------------------------------------------------------------------- tables


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], left: set[int]) -> str:
    """Aligned plain-text table; columns whose index is in ``left`` are left-aligned."""
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def fmt_ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 10 else f"{x:.2f}" if x < 100 else f"{x:.1f}"


def fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def fmt_err(x: float | None) -> str:
    return "-" if x is None else f"{x:.1e}"
