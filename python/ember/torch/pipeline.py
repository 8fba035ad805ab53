"""The torch backend's compile path: the first file to read after backend.py.

``compile_graph`` runs the phases in order, each in its own module under ``phases/``,
each taking and returning plain data. Order matters:

  1. prepare   - first: the interpreter converts values, not updates of memory, so in-place
                 updates become values; and a user's module converter matches a module
                 call only once its inlined nodes are one node again;
  2. analyze   - a trial conversion of every node, before anything is cut: the partition
                 needs to know which nodes convert, and strict mode and the dry run report
                 every operator of the graph at once;
  3. partition - the whole graph as one segment, or ember segments and eager nodes;
  4. convert   - after partition: each segment is converted on its own, with its own inputs
                 (the whole graph keeps the trial's conversion);
  5. build     - after convert: the optimizer and the code generator work on a whole ember
                 trace;
  6. wrap      - last: the callable torch calls, with the warnings about what runs eagerly
                 and the correctness report, which need to know which segments compiled.

A dry run stops after partition. Graphs off the CPU never get here (backend.py runs them
eagerly); a graph that needs gradients gets here as its forward and backward ATen graphs
(training.py), numbered "<i>_forward" and "<i>_backward". A failure in any phase never
breaks the user's program: the graph runs eagerly, with a warning (unless strict is on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.fx

from ember.torch import registry, report
from ember.torch.config import InvalidOptionError, Settings
from ember.torch.phases.analyze import analyze
from ember.torch.phases.build import build
from ember.torch.phases.convert import convert
from ember.torch.phases.partition import partition
from ember.torch.phases.prepare import prepare
from ember.torch.phases.wrap import wrap

__all__ = ["compile_graph"]


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], settings: Settings,
                  index: int | str) -> Callable[..., Any]:
    """The callable that runs graph number `index` (Dynamo's gm) with ember."""
    try:
        prepared = prepare(gm)
        if prepared.eager_reason is not None:
            report.warn_once(f"inplace-{index}", f"ember runs graph {index} in eager PyTorch: "
                             f"{prepared.eager_reason}.")
            return gm.forward
        analyzed = analyze(prepared, example_inputs, settings, index)
        parts = partition(analyzed, example_inputs, settings)
        if settings.dryrun:
            report.print_dryrun(parts.analysis)
            return gm.forward
        parts = convert(parts, settings)
        parts = build(parts, settings)
        return wrap(parts, settings)
    except (registry.UnsupportedOperatorsError, InvalidOptionError):
        raise
    except Exception as e:
        if settings.strict:
            raise
        report.warn_once(f"failed-{index}", f"ember could not compile graph {index} "
                         f"({type(e).__name__}: {e}); it runs in eager PyTorch instead."
                         f"{report.blame(e)}")
        return gm.forward
