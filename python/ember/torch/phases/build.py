"""Phase 5, build: each converted segment optimized (ember.graph.optimize) and built into
a CompiledGraph, with progress bars and dump_dir. A segment of a split graph that fails to
build runs eagerly (strict mode raises instead); for a whole graph the error reaches the
pipeline, which runs the graph eagerly."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import torch

import ember
from ember.torch.config import Settings, progress_bar
from ember.torch.interpreter import Conversion
from ember.torch.phases.partition import Partition, Segment

__all__ = ["build", "build_flow_graph", "build_graph"]


def build(parts: Partition, settings: Settings) -> Partition:
    if not parts.split:  # the whole graph: a failure reaches the pipeline
        whole = [_build_segment(s, settings) for s in parts.segments]
        return dataclasses.replace(parts, segments=whole)
    segments = []
    with progress_bar(settings, len(parts.segments), "ember: compiling segments",
                      "segment") as bar:
        for segment in parts.segments:
            bar.update(1)
            try:
                segment = _build_segment(segment, settings)
            except Exception as e:  # this segment runs eagerly; the others stay compiled
                if settings.strict:
                    raise
                segment = dataclasses.replace(segment, error=e)
            segments.append(segment)
    return dataclasses.replace(parts, segments=segments)


def _build_segment(segment: Segment, settings: Settings) -> Segment:
    conversion = segment.conversion
    if segment.error is not None or conversion is None or not conversion.outputs:
        return segment
    compiled = build_graph(conversion, settings, segment.label, segment.example_inputs)
    return dataclasses.replace(segment, compiled=compiled)


def build_graph(conversion: Conversion, settings: Settings, label: str,
                args: list[Any]) -> Any:
    """The CompiledGraph of one conversion; `args` (example inputs) give the sizes that
    tuning measures symbolic dimensions at."""
    return build_flow_graph(conversion.graph(), settings, label,
                            _symbol_values(conversion, args))


def build_flow_graph(graph: Any, settings: Settings, label: str,
                     symbol_values: dict[str, int] | None = None) -> Any:
    """An ember FlowGraph optimized and built with the settings' search space, parallel_k,
    dump_dir and progress bars (`label` names the graph in bars and under dump_dir)."""
    dump = os.path.join(settings.dump_dir, label) if settings.dump_dir else None
    if dump:
        os.makedirs(dump, exist_ok=True)
        with open(os.path.join(dump, "flow_graph.txt"), "w") as f:
            f.write(str(graph))
    phases = _PhaseBars(settings, label)
    try:
        with progress_bar(settings, len(ember.graph.pass_names()), f"ember {label}: fusing",
                          "pass") as bar:
            optimized, timings = ember.graph.optimize(graph, dump_dir=dump, return_timings=True)
            bar.update(len(timings))
        return optimized.build(
            search_space=settings.search_space, parallel_k=settings.parallel_k, dump_dir=dump,
            progress=phases if settings.progress else None,
            symbol_values=symbol_values or {})
    finally:
        phases.close()


class _PhaseBars:
    """Progress of the core's build, one tqdm bar per phase it reports (generating kernels,
    tuning, compiling), fed by FlowGraph.build's ``progress(phase, done, total)``."""

    def __init__(self, settings: Settings, label: str) -> None:
        self.settings, self.label = settings, label
        self.bars: dict[str, tuple[Any, list[int]]] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase not in self.bars:
            bar = progress_bar(self.settings, int(total), f"ember {self.label}: {phase}")
            self.bars[phase] = (bar, [0])
        bar, seen = self.bars[phase]
        bar.update(max(int(done) - seen[0], 0))
        seen[0] = max(seen[0], int(done))

    def close(self) -> None:
        for bar, _ in self.bars.values():
            bar.close()


def _symbol_values(conversion: Conversion, args: list[Any]) -> dict[str, int]:
    """The sizes the symbolic dimensions have in `args` (the example inputs), for tuning."""
    values = {}
    for name, (i, axis) in conversion.symbol_sources.items():
        if i >= len(args):
            continue
        v = args[i] if axis is None else getattr(args[i], "shape", [None] * (axis + 1))[axis]
        if isinstance(v, torch.SymInt):  # its example value, read without adding a guard
            v = getattr(v.node, "hint", None)
        # A scalar argument may be negative (a diagonal offset read at run time, not a
        # size): only sizes are hints.
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            values[name] = v
    return values
