"""Phase 1, prepare: a copy of Dynamo's graph that ember may rewrite, with its in-place
updates made values (inplace.functionalize) and the inlined calls of modules that have a
user's module converter put back together (module_calls.collapse_module_calls)."""

from __future__ import annotations

import dataclasses

import torch.fx

from ember.torch import registry
from ember.torch.fx_nodes import copy_graph_module
from ember.torch.inplace import functionalize
from ember.torch.module_calls import collapse_module_calls

__all__ = ["Prepared", "prepare"]


@dataclasses.dataclass
class Prepared:
    graph: torch.fx.GraphModule  # the rewritten copy (Dynamo's graph is left as it was)
    eager_reason: str | None  # why the whole graph must run eagerly, or None


def prepare(gm: torch.fx.GraphModule) -> Prepared:
    work = copy_graph_module(gm)
    reason = functionalize(work)
    if reason is not None:
        return Prepared(work, reason)
    collapse_module_calls(
        work, lambda cls, key: registry.has_module_converter(cls, user_only=True))
    return Prepared(work, None)
