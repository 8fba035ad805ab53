"""Phase 4, convert: each segment's FX graph to an ember trace (interpreter.FxConverter).
The whole graph keeps the analyze phase's trial conversion; a segment of a split graph is
converted on its own, and one that fails runs eagerly (strict mode raises instead)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch.fx

from ember.torch.config import Settings
from ember.torch.interpreter import Conversion, FxConverter
from ember.torch.phases.partition import Partition

__all__ = ["convert", "convert_graph"]


def convert_graph(gm: torch.fx.GraphModule, example_inputs: list[Any],
                  settings: Settings) -> Conversion:
    """One graph as an ember trace; raises ConversionFailure at a node it cannot convert."""
    return FxConverter(gm, example_inputs, settings).run()


def convert(parts: Partition, settings: Settings) -> Partition:
    segments = []
    for segment in parts.segments:
        if segment.conversion is None:
            try:
                conversion = convert_graph(segment.graph, segment.example_inputs, settings)
                segment = dataclasses.replace(segment, conversion=conversion)
            except Exception as e:  # this segment runs eagerly; the others stay compiled
                if settings.strict:
                    raise
                segment = dataclasses.replace(segment, error=e)
        segments.append(segment)
    return dataclasses.replace(parts, segments=segments)
