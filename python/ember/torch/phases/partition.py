"""Phase 3, partition: the graph as the ember segments to compile and the nodes left to
eager PyTorch.

A graph whose every node converts is one segment, the whole graph (its conversion is the
analyze phase's trial). Otherwise the nodes ember converts are grouped into segments (no
segment depends on itself through an eager node); segments smaller than
``min_block_size`` run eagerly. Each segment becomes a submodule ``ember_segment_<k>`` of a
new GraphModule, which calls segments and eager nodes in order.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from ember.torch import report
from ember.torch.config import Settings
from ember.torch.fx_nodes import copy_graph_module
from ember.torch.interpreter import Conversion
from ember.torch.phases.analyze import Analyzed

__all__ = ["Partition", "Segment", "partition"]


@dataclasses.dataclass
class Segment:
    """One part of the graph ember compiles; the later phases fill in what they make."""

    name: str | None  # its submodule in Partition.graph; None for the whole graph
    graph: torch.fx.GraphModule
    example_inputs: list[Any]  # None where an input is computed by an eager node
    label: str  # graph_<i> or graph_<i>/segment_<k>: in messages and under dump_dir
    operators: list[str]  # its operators' node names (they run eagerly if it fails)
    conversion: Conversion | None = None  # the ember trace (convert phase)
    compiled: Any = None  # its CompiledGraph (build phase); None when it has no outputs
    error: Exception | None = None  # why it failed to convert or build (it runs eagerly)


@dataclasses.dataclass
class Partition:
    graph: torch.fx.GraphModule  # split: calls the segments and the eager nodes in order
    example_inputs: list[Any]
    split: bool  # False: one segment, the whole graph
    segments: list[Segment]
    analysis: report.Analysis  # with the segments and the nodes of dropped ones filled in
    reference: torch.fx.GraphModule | None  # the graph unsplit, for the correctness report


def partition(analyzed: Analyzed, example_inputs: list[Any], settings: Settings) -> Partition:
    work, trial, analysis = analyzed.graph, analyzed.trial, analyzed.analysis
    reference = copy_graph_module(work) if settings.correctness_report else None
    if not trial.failures:
        whole = Segment(None, work, list(example_inputs), f"graph_{analysis.graph_index}",
                        [], conversion=trial)
        return Partition(work, list(example_inputs), False, [whole], analysis, reference)
    supported = {n for n in work.graph.nodes
                 if n.op.startswith("call_") and n in trial.converted}
    placeholders = {n.name: i for i, n in enumerate(work.graph.find_nodes(op="placeholder"))}
    # Writing updated inputs back is the only eager work when nothing else failed: the graph
    # still counts as converted whole, whatever its size.
    min_block = settings.min_block_size if analysis.failures else 1
    by_name = {n.name: n for n in work.graph.nodes}  # before fusing erases the fused nodes
    fused, names, dropped = _fuse_segments(work, supported, min_block)
    node_names = [
        [n.name for n in fused.get_submodule(name).graph.nodes if n.op.startswith("call_")]
        for name in names
    ]
    small = [n.name for nodes in dropped for n in nodes
             if report.is_operator(n, trial.converted.get(n))]
    segments = []
    for k, name in enumerate(names):
        sub = fused.get_submodule(name)
        sub_inputs = [
            example_inputs[placeholders[p.name]] if p.name in placeholders else None
            for p in sub.graph.find_nodes(op="placeholder")
        ]
        operators = [n for n in node_names[k] if n in by_name and
                     report.is_operator(by_name[n], trial.converted.get(by_name[n]))]
        segments.append(Segment(name, sub, sub_inputs,
                                f"graph_{analysis.graph_index}/segment_{k}", operators))
    analysis = dataclasses.replace(analysis, segments=node_names, small=small)
    return Partition(fused, list(example_inputs), True, segments, analysis, reference)


class _Support(OperatorSupportBase):
    def __init__(self, supported: set) -> None:
        self.supported = supported

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return node in self.supported


def _picks_result(n: torch.fx.Node) -> bool:
    """operator.getitem picking one result of a multi-output node (a tuple or list), as
    opposed to indexing a tensor."""
    if n.op != "call_function" or n.target is not operator.getitem or not n.args:
        return False
    source = n.args[0]
    meta = source.meta.get("example_value") if isinstance(source, torch.fx.Node) else None
    return isinstance(source, torch.fx.Node) and not isinstance(meta, torch.Tensor)


def _compute_count(nodes: Any) -> int:
    """Operators in a segment: every node but getitem picking a result of a multi-output
    node."""
    return sum(1 for n in nodes if not _picks_result(n))


def _getitem_stand_in(obj: Any, index: Any) -> Any:
    """operator.getitem under another name, while CapabilityBasedPartitioner looks at the
    graph (see _propose)."""
    return obj[index]


def _propose(gm: torch.fx.GraphModule, supported: set) -> list[dict[torch.fx.Node, Any]]:
    """The groups of supported nodes CapabilityBasedPartitioner forms (no group depends on
    itself through a node outside it), each in graph order.

    The partitioner ends with a pass that moves every getitem user of a node whose users
    are all getitems into that node's group, repeated until nothing moves. It moves
    unsupported getitems (tensor indexing ember did not convert) into segments, and a
    getitem indexing one such node with another (``relu(x)[:, idx]``, where idx's only
    user is the getitem too) is moved back and forth forever. So the partitioner sees the
    getitems under another target, which that pass does not recognize, and
    ``_follow_producers`` places the getitems that pick a result of a multi-output node."""
    getitems = [n for n in gm.graph.nodes
                if n.op == "call_function" and n.target is operator.getitem]
    for n in getitems:
        n.target = _getitem_stand_in
    try:
        partitioner = CapabilityBasedPartitioner(
            gm, _Support(supported), allows_single_node_partition=True)
        proposed = partitioner.propose_partitions()
    finally:
        for n in getitems:
            n.target = operator.getitem
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    groups = [dict.fromkeys(sorted(p.nodes, key=order.__getitem__)) for p in proposed]
    return [g for g in _follow_producers(gm, groups) if g]


def _follow_producers(gm: torch.fx.GraphModule, groups: list[dict[torch.fx.Node, Any]]
                      ) -> list[dict[torch.fx.Node, Any]]:
    """Puts each supported getitem that picks a result of a multi-output node (its only
    input) into its producer's group, or leaves it out of every group when its producer
    runs eagerly. Neither move can make a group depend on itself: the getitem's only input
    is the producer, and its users already depended on the producer through it. Tensor
    indexing is left where the partitioner put it (in a group only if ember converts it)."""
    group_of = {n: i for i, g in enumerate(groups) for n in g}
    for n in gm.graph.nodes:  # in graph order: a nested getitem follows its source's move
        if n not in group_of or not _picks_result(n) or n.all_input_nodes != [n.args[0]]:
            continue
        target = group_of.get(n.args[0])
        if target == group_of[n]:
            continue
        del groups[group_of.pop(n)][n]
        if target is not None:
            groups[target][n] = None
            group_of[n] = target
    return groups


def _fuse_segments(
    gm: torch.fx.GraphModule, supported: set, min_block_size: int
) -> tuple[torch.fx.GraphModule, list[str], list[list[torch.fx.Node]]]:
    """Groups the supported nodes into segments, drops segments smaller than min_block_size,
    and fuses each remaining one into a submodule named ``ember_segment_<k>`` (each returns
    a tuple). Returns the new GraphModule (gm is modified), the segment names, and the
    nodes of the dropped segments (which run eagerly)."""
    kept, dropped = [], []
    for nodes in _propose(gm, supported):
        if _compute_count(nodes) >= min_block_size:
            kept.append(nodes)
        else:
            dropped.append(sorted(nodes, key=lambda n: n.name))
    if not kept:
        return gm, [], dropped
    fused = fuse_by_partitions(gm, kept, prefix="ember_segment_", always_return_tuple=True)
    names = [n.target for n in fused.graph.nodes
             if n.op == "call_module" and str(n.target).startswith("ember_segment_")]
    return fused, names, dropped
