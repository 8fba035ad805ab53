"""Phase 5, build: each converted segment optimized (ember.graph.optimize) and built into
a CompiledGraph, with progress bars and dump_dir. A segment of a split graph that fails to
build runs eagerly (strict mode raises instead); for a whole graph the error reaches the
pipeline, which runs the graph eagerly."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ember import building
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
    """ember.building.build with the settings' search space, parallel_k, dump_dir and
    progress bars."""
    return building.build(graph, label=label, search_space=settings.search_space,
                          parallel_k=settings.parallel_k, dump_dir=settings.dump_dir,
                          progress=settings.progress, symbol_values=symbol_values)


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
