"""Phase 2, analyze: a trial conversion of every node (interpreter.FxConverter with
keep_going): the shapes and dynamic symbols of the graph, what each node converts to, and
why the others do not. When nodes inside a module call fail and the module's class has a
built-in module converter, those calls are collapsed into one node each and the trial is
run again. The coverage that results (report.Analysis) is what the dry run prints, and
strict mode's error when an operator cannot be converted."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch.fx

from ember.torch import registry, report
from ember.torch.config import Settings
from ember.torch.interpreter import Conversion, FxConverter
from ember.torch.module_calls import collapse_module_calls
from ember.torch.phases.prepare import Prepared

__all__ = ["Analyzed", "analyze"]


@dataclasses.dataclass
class Analyzed:
    graph: torch.fx.GraphModule  # the prepared graph (with the module calls collapsed here)
    trial: Conversion  # every node's conversion, or why it failed (trial.failures)
    analysis: report.Analysis  # the coverage: operators, converted, failures


def analyze(prepared: Prepared, example_inputs: list[Any], settings: Settings,
            index: int | str) -> Analyzed:
    work = prepared.graph
    trial = FxConverter(work, example_inputs, settings, keep_going=True).run()
    failing = {k for n, f in trial.failures.items() if f.kind != "forced"
               for k in (n.meta.get("nn_module_stack") or {})}
    if failing and collapse_module_calls(
            work, lambda cls, key: key in failing and registry.has_module_converter(cls)):
        trial = FxConverter(work, example_inputs, settings, keep_going=True).run()
    analysis = report.analyze(work, trial, index, settings.min_block_size)
    real_failures = [f for _, _, f in analysis.failures if f.kind != "forced"]
    if settings.strict and real_failures and not settings.dryrun:
        raise registry.UnsupportedOperatorsError(report.strict_message(analysis))
    return Analyzed(work, trial, analysis)
