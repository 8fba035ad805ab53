"""Training: graphs that need gradients, compiled forward and backward through AOTAutograd.

``compile_training`` hands Dynamo's graph to torch's ``aot_autograd`` with ember's
decomposition table (``decompositions()``) and the min-cut rematerialization partitioner.
AOTAutograd traces the joint forward and backward at the ATen level, functionalizes it
(an input updated in place, such as BatchNorm's running statistics, becomes an output of
the forward graph that its runtime wrapper copies back), and splits it into a forward
graph, which returns the activations the backward saves, and a backward graph. Each goes
through the inference pipeline (pipeline.compile_graph) as graph ``<i>_forward`` and
``<i>_backward``: what ember cannot convert runs eagerly per operator, with the same
warning, ``strict``, ``min_block_size``, ``dryrun``, ``correctness_report`` and
``dump_dir`` behaviour as inference.

Both compiled functions use the boxed calling convention: they take the list of their
arguments and empty it. A graph ember compiled whole runs with CompiledSegment.call_boxed,
which drops each input after the last kernel that reads it, so the saved activations the
backward receives are freed during the backward, as eager PyTorch frees them; a graph split
into ember segments and eager operators frees them when it returns. Parameters reach the graphs as
runtime inputs (never as captured constants): the optimizer updates them in place between
steps, and a compiled graph reads the new values without converting again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from ember.torch import report
from ember.torch.config import Settings
from ember.torch.phases.wrap import CompiledSegment
from ember.torch.pipeline import compile_graph

__all__ = ["compile_training", "decompositions"]

aten = torch.ops.aten


@functools.lru_cache(maxsize=1)
def decompositions() -> dict[Any, Callable[..., Any]]:
    """ember's decomposition table for AOTAutograd: torch's core ATen decompositions and
    _ADDED. The backward operators the core table leaves whole (convolution and pooling
    backward) have ember converters (converters/backward.py)."""
    from torch._decomp import core_aten_decompositions, get_decompositions

    table = dict(core_aten_decompositions())
    table.update(get_decompositions(_ADDED))
    return table


# Decomposed although torch's core table keeps them: BatchNorm's training-mode forward
# (its statistics and the new running statistics, as var_mean and elementwise math).
_ADDED: list[Any] = [aten._native_batch_norm_legit_functional]


class _Boxed:
    """A compiled graph with the boxed calling convention: called with the list of its
    arguments, which it empties before running (see the module docstring)."""

    def __init__(self, gm: torch.fx.GraphModule, settings: Settings, index: str) -> None:
        self.gm, self.settings, self.index = gm, settings, index
        # An attribute of the instance: torch's wrappers (torch._dynamo.disable) copy the
        # wrapped callable's __dict__, where AOTAutograd looks for it.
        self._boxed_call = True
        self.compiled: Callable[..., Any] | None = None

    def __call__(self, args: list[Any]) -> Any:
        if self.compiled is None:
            examples = [v.detach() if isinstance(v, torch.Tensor) else v for v in args]
            self.compiled = compile_graph(self.gm, examples, self.settings, self.index)
            del examples
        if isinstance(self.compiled, CompiledSegment):
            return self.compiled.call_boxed(args)
        values = list(args)
        args.clear()
        return self.compiled(*values)


def compile_training(gm: torch.fx.GraphModule, example_inputs: list[Any], settings: Settings,
                     index: int) -> Callable[..., Any]:
    """The callable for Dynamo's graph number `index` when it needs gradients."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.exc import RestartAnalysis
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    def compiler(kind: str) -> Callable[..., Any]:
        def compile_fn(graph: torch.fx.GraphModule, inputs: list[Any]) -> Any:
            return _Boxed(graph, settings, f"{index}_{kind}")

        return compile_fn

    backend = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                           inference_compiler=compiler("forward"),
                           decompositions=decompositions(),
                           partition_fn=min_cut_rematerialization_partition)
    try:
        return backend(gm, example_inputs)
    except RestartAnalysis:  # Dynamo's signal to trace again, not a failure
        raise
    except Exception as e:  # AOTAutograd could not trace the graph: eager, as in inference
        if settings.strict:
            raise
        report.warn_once(f"failed-{index}", f"ember could not compile graph {index} for "
                         f"training ({type(e).__name__}: {e}); it runs in eager PyTorch "
                         f"instead.{report.blame(e)}")
        return gm.forward
