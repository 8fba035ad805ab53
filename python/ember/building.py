"""Optimizing and building a FlowGraph with progress bars and a dump directory: what every
front end (the torch backend, ember.compile of an ONNX file) does with a graph it
converted. Torch-free."""

from __future__ import annotations

import os
import sys
from typing import Any

import ember

__all__ = ["PhaseBars", "build", "progress_bar"]


def progress_bar(enabled: bool, total: int, desc: str, unit: str = "it") -> Any:
    """A tqdm bar for a phase, or a silent stand-in when bars are off, stderr is not a
    terminal, or the phase ends before half a second has passed (tqdm's delay)."""
    if enabled and total > 0 and _stderr_is_terminal():
        try:
            from tqdm.auto import tqdm

            return tqdm(total=total, desc=desc, unit=unit, delay=0.5, leave=False)
        except Exception:
            pass
    return _NoBar()


def build(graph: Any, *, label: str, search_space: int = 0, parallel_k: Any = "default",
          dump_dir: str | None = None, progress: bool = True,
          symbol_values: dict[str, int] | None = None) -> Any:
    """`graph` optimized (ember.graph.optimize) and built into a CompiledGraph; `label`
    names it in the bars and under `dump_dir` (flow_graph.txt, each pass, the kernels)."""
    dump = os.path.join(dump_dir, label) if dump_dir else None
    if dump:
        os.makedirs(dump, exist_ok=True)
        with open(os.path.join(dump, "flow_graph.txt"), "w") as f:
            f.write(str(graph))
    phases = PhaseBars(progress, label)
    try:
        with progress_bar(progress, len(ember.graph.pass_names()), f"ember {label}: fusing",
                          "pass") as bar:
            optimized, timings = ember.graph.optimize(
                graph, dump_dir=dump, return_timings=True, search_space=search_space,
                symbol_values=symbol_values or {})
            bar.update(len(timings))
        return optimized.build(search_space=search_space, parallel_k=parallel_k, dump_dir=dump,
                               progress=phases if progress else None,
                               symbol_values=symbol_values or {})
    finally:
        phases.close()


class PhaseBars:
    """Progress of the core's build, one bar per phase it reports (generating kernels,
    tuning, compiling), fed by FlowGraph.build's ``progress(phase, done, total)``."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled, self.label = enabled, label
        self.bars: dict[str, tuple[Any, list[int]]] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase not in self.bars:
            bar = progress_bar(self.enabled, int(total), f"ember {self.label}: {phase}")
            self.bars[phase] = (bar, [0])
        bar, seen = self.bars[phase]
        bar.update(max(int(done) - seen[0], 0))
        seen[0] = max(seen[0], int(done))

    def close(self) -> None:
        for bar, _ in self.bars.values():
            bar.close()


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except Exception:
        return False


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass
