"""Rewrites of the FX graph before and around conversion, and its partition into ember
segments and eager nodes.

1. ``functionalize``: in-place updates (``x += y``, ``relu_``, ``inplace=True``) become
   values: later uses of the updated tensor read the in-place node instead, and a graph
   input that is updated gets an explicit ``copy_`` back into it at the end (run eagerly).
   ``x[index] = v`` becomes the value ``functional.setitem(x, index, v)``, and an update
   of a basic view of a tensor (``x[:, 0].fill_(2)``, ``x.narrow(1, 0, 2).copy_(z)``) is
   written back into the tensor with one. Any other update through a view of something
   still used makes the graph run eagerly. (``x[tensor]`` copies: an update of it stays in
   the copy.)
2. ``collapse_module_calls``: Dynamo inlines every module call; for a module class with a
   module converter, the nodes of one call become one ``call_module`` node again.
3. ``partition``: the nodes ember converts are grouped into segments (no segment depends on
   itself through an eager node); segments smaller than ``min_block_size`` run eagerly.
   Each segment becomes a submodule of a new GraphModule, which calls segments and eager
   nodes in order.
"""

from __future__ import annotations

import copy
import inspect
import operator
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from ember.torch import functional

__all__ = ["collapse_module_calls", "copy_graph_module", "functionalize", "partition"]

_INPLACE_OPERATORS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift, operator.imatmul,
}
_VIEW_NAMES = {
    "view", "view_as", "reshape", "reshape_as", "transpose", "permute", "t", "flatten",
    "unflatten", "squeeze", "unsqueeze", "expand", "expand_as", "narrow", "select", "split",
    "split_with_sizes", "chunk", "unbind", "contiguous", "detach", "as_strided", "diagonal",
    "swapaxes", "swapdims", "movedim", "unfold", "to", "type", "type_as", "float", "half",
    "double", "bfloat16", "int", "long", "bool", "getitem", "alias", "real", "imag",
}
_NOT_INPLACE = {"requires_grad_", "share_memory_", "retain_grad_"}


def copy_graph_module(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A GraphModule with a copy of gm's graph (node metadata shared shallowly) and the same
    submodules and attributes."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    out = graph.graph_copy(gm.graph, env)
    graph.output(out)
    for old, new in env.items():
        new.meta = copy.copy(old.meta)
    for node in graph.nodes:
        if node.op == "output":
            orig = next(n for n in gm.graph.nodes if n.op == "output")
            node.meta = copy.copy(orig.meta)
    return torch.fx.GraphModule(gm, graph)


# ---- in-place updates ----------------------------------------------------------------------
def _name(node: torch.fx.Node) -> str:
    if node.op == "call_method":
        return node.target
    return getattr(node.target, "__name__", "")


def is_inplace(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        name = node.target
        return name.endswith("_") and not name.endswith("__") and name not in _NOT_INPLACE
    if node.op != "call_function":
        return False
    if node.target is functional.setitem:
        return True  # a write into its first argument, as far as the splitter is concerned
    if node.target in _INPLACE_OPERATORS:
        first = node.args[0] if node.args else None
        meta = first.meta.get("example_value") if isinstance(first, torch.fx.Node) else None
        return isinstance(meta, torch.Tensor) or meta is None and isinstance(first, torch.fx.Node)
    schema = getattr(node.target, "_schema", None)
    if schema is not None:
        return bool(schema.is_mutable) and not _name(node).startswith("_")
    name = _name(node)
    if name.endswith("_") and not name.endswith("__") and name not in _NOT_INPLACE:
        return True
    return _inplace_flag(node)


def _inplace_flag(node: torch.fx.Node) -> bool:
    if node.kwargs.get("inplace") is True:
        return True
    try:
        params = list(inspect.signature(node.target).parameters)
    except (TypeError, ValueError):
        return False
    if "inplace" in params:
        i = params.index("inplace")
        return i < len(node.args) and node.args[i] is True
    return False


def _is_view(node: torch.fx.Node) -> bool:
    if node.op not in ("call_method", "call_function"):
        return False
    if node.target is operator.getitem:
        # x[tensor] (advanced indexing) copies; picking a result of a multi-output node, or
        # ints, slices, None and Ellipsis, give a view.
        return not _is_tensor_value(node.args[0]) or _basic_index(node.args[1])
    return _name(node) in _VIEW_NAMES


def _is_tensor_value(v: Any) -> bool:
    return isinstance(v, torch.fx.Node) and isinstance(v.meta.get("example_value"), torch.Tensor)


def _basic_index(index: Any) -> bool:
    """An index of ints (or sizes), slices, None and Ellipsis only: x[index] is a view."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if item is None or item is Ellipsis:
            continue
        if isinstance(item, slice):
            if any(_is_tensor_value(b) or isinstance(b, torch.Tensor)
                   for b in (item.start, item.stop, item.step)):
                return False
            continue
        if isinstance(item, bool) or not isinstance(item, (int, torch.fx.Node)):
            return False  # a list, a tensor, a bool
        if _is_tensor_value(item):
            return False
    return True


def _view_index(view: torch.fx.Node, base: torch.fx.Node) -> Any:
    """The basic index that makes `view` from `base` (`base[index]`), when view is such a
    view of a tensor: a getitem with a basic index, narrow or select with constant
    arguments. None otherwise."""
    if not _is_tensor_value(base) or not view.args or view.args[0] is not base:
        return None
    if view.target is operator.getitem:
        return view.args[1] if len(view.args) == 2 and _basic_index(view.args[1]) else None
    name = _name(view) if view.op in ("call_method", "call_function") else ""
    if name not in ("narrow", "select") or view.kwargs:
        return None
    args = view.args[1:]
    if len(args) != (3 if name == "narrow" else 2):
        return None
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return None
    rank = base.meta["example_value"].dim()
    dim = args[0] + rank if args[0] < 0 else args[0]
    if not 0 <= dim < rank:
        return None
    lead = (slice(None),) * dim
    if name == "select":
        return (*lead, args[1])
    start, length = args[1], args[2]
    stop = start + length
    if start < 0:  # narrow counts a negative start from the end
        return (*lead, slice(start, stop if stop < 0 else None))
    return (*lead, slice(start, stop))


def _storage(n: torch.fx.Node) -> torch.fx.Node:
    """The node whose tensor n updated in place (through a chain of in-place updates)."""
    while is_inplace(n) and n.args and isinstance(n.args[0], torch.fx.Node):
        n = n.args[0]
    return n


def _functional_setitems(gm: torch.fx.GraphModule) -> None:
    """``x[index] = value`` (operator.setitem, a statement without a result) becomes the
    value ``functional.setitem(x, index, value)``, an update of x like any in-place op."""
    for n in gm.graph.nodes:
        if (n.op == "call_function" and n.target is operator.setitem and len(n.args) == 3
                and _is_tensor_value(n.args[0]) and not n.kwargs):
            n.target = functional.setitem
            n.meta["example_value"] = n.args[0].meta["example_value"]


def functionalize(gm: torch.fx.GraphModule) -> str | None:
    """Rewrites gm in place (see the module docstring). Returns None, or why the graph must
    run eagerly as a whole."""
    _functional_setitems(gm)
    nodes = list(gm.graph.nodes)
    order: dict[torch.fx.Node, float] = {n: i for i, n in enumerate(nodes)}
    base: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in nodes:
        if (_is_view(n) or is_inplace(n)) and n.args and isinstance(n.args[0], torch.fx.Node):
            base[n] = n.args[0]

    def root(n: torch.fx.Node) -> torch.fx.Node:
        while n in base:
            n = base[n]
        return n

    written: dict[torch.fx.Node, torch.fx.Node] = {}
    aliases = list(nodes)  # and the write-backs added below
    changed = False
    for n in nodes:
        if not is_inplace(n) or not n.args or not isinstance(n.args[0], torch.fx.Node):
            continue
        if "out" in n.kwargs:
            return f"{n.name} writes into an out= tensor"
        target = n.args[0]
        r = root(target)
        # An update of a basic view of a tensor (y[:, 0].fill_(2), y.narrow(...).copy_(z),
        # y[:, 0][1] = 5) is written back into that tensor with a functional setitem.
        owner = target.args[0] if _is_view(target) and target.args else None
        index = _view_index(target, owner) if isinstance(owner, torch.fx.Node) else None
        if index is not None and _is_view(_storage(owner)):
            index = None  # a view of a view: not followed
        for m in aliases:
            if m is target or m is n or order[m] > order[n] or root(m) is not r:
                continue
            if index is not None and m is owner:
                continue  # its later users read the write-back
            if any(order[u] > order[n] for u in m.users):
                return (f"{n.name} updates {target.name} in place while {m.name}, which shares "
                        "its memory, is still used")
        for user in list(target.users):
            if order[user] > order[n]:
                user.replace_input_with(target, n)
        updated = n
        if index is not None:
            with gm.graph.inserting_after(n):
                back = gm.graph.call_function(functional.setitem, (owner, index, n))
            back.meta["example_value"] = owner.meta["example_value"]
            back.meta["nn_module_stack"] = n.meta.get("nn_module_stack", {})
            order[back] = order[n] + 0.5
            base[back] = owner
            aliases.append(back)
            for user in list(owner.users):
                if user is not back and order.get(user, -1) > order[n]:
                    user.replace_input_with(owner, back)
            updated, target, changed = back, owner, True
        if r.op == "placeholder":
            if _storage(target) is not r:
                return f"{n.name} updates a view of the graph input {r.name} in place"
            written[r] = updated
    output = next(n for n in gm.graph.nodes if n.op == "output")
    for placeholder, value in written.items():
        placeholder.meta["ember_mutated"] = True
        with gm.graph.inserting_before(output):
            node = gm.graph.call_method("copy_", (placeholder, value))
            node.meta["ember_writeback"] = True
            node.meta["example_value"] = placeholder.meta.get("example_value")
    if written or changed:
        gm.recompile()
    return None


# ---- inlined module calls ------------------------------------------------------------------
_PATH_CLEANUP = re.compile(r"\._(?:modules|parameters|buffers)\[(['\"])([^'\"\]]+)\1\]")
_PATH_ROOT = re.compile(r"^(L|G)\[(['\"])([^'\"]+)\2\]")
_PATH_PART = re.compile(r"^(?:\.([A-Za-z_0-9]+)|\[(\d+)\]|\[(['\"])([^'\"]+)\3\])")


def _resolve(path: str, tx: Any) -> Any:
    """The object a Dynamo source path (``L['self'].layers.0.attn``) names in the frame being
    compiled, walking attributes and items only (no evaluation)."""
    m = _PATH_ROOT.match(path)
    if m is None or tx is None:
        return None
    scope = getattr(tx, "f_locals" if m.group(1) == "L" else "f_globals", None)
    if not isinstance(scope, dict) or m.group(3) not in scope:
        return None
    obj = scope[m.group(3)]
    rest = path[m.end():]
    while rest:
        p = _PATH_PART.match(rest)
        if p is None:
            return None
        try:
            if p.group(1) is not None:
                obj = getattr(obj, p.group(1))
            elif p.group(2) is not None:
                obj = obj[int(p.group(2))]
            else:
                obj = obj[p.group(4)]
        except (AttributeError, IndexError, KeyError, TypeError):
            return None
        rest = rest[p.end():]
    return obj


def _current_tx() -> Any:
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        return InstructionTranslator.current_tx()
    except Exception:
        return None


def _source_path(node: torch.fx.Node) -> str | None:
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", None)
    if callable(name):
        name = name()
    return _PATH_CLEANUP.sub(r".\2", name) if isinstance(name, str) else None


def collapse_module_calls(gm: torch.fx.GraphModule, wanted: Callable[[type, str], bool]) -> int:
    """Turns the inlined nodes of each call of a module whose class is ``wanted(cls, key)``
    back into one call_module node (the outermost such module wins). A call is collapsed
    when its module can be found, it takes one tensor and gives one value, and nothing
    outside it sits between its nodes. Returns how many calls were collapsed."""
    tx = _current_tx()
    regions: dict[str, list[torch.fx.Node]] = {}
    owners: dict[str, tuple[str, type]] = {}
    for n in gm.graph.nodes:
        stack = n.meta.get("nn_module_stack") if n.op.startswith("call_") else None
        for key, (path, cls) in (stack or {}).items():
            if isinstance(cls, type) and wanted(cls, key):
                regions.setdefault(key, []).append(n)
                owners[key] = (path, cls)
                break
    collapsed = 0
    for key, members in regions.items():
        path, cls = owners[key]
        module = _resolve(path, tx)
        if isinstance(module, cls) and _collapse(gm, members, module, path, key, collapsed):
            collapsed += 1
    if collapsed:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return collapsed


def _collapse(gm: torch.fx.GraphModule, members: list[torch.fx.Node], module: Any, path: str,
              key: str, index: int) -> bool:
    region = set(members)
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    inputs: list[torch.fx.Node] = []
    for n in members:
        for a in n.all_input_nodes:
            if a in region or a in inputs:
                continue
            own = _source_path(a)
            if a.op == "get_attr" or (own is not None and own.startswith(path + ".")):
                continue  # the module's own weights
            meta = a.meta.get("example_value")
            if isinstance(meta, (torch.SymInt, int)) and a.op == "placeholder":
                continue  # sizes: the module recomputes them from its input
            inputs.append(a)
    outputs = [n for n in members if any(u not in region for u in n.users)]
    if len(inputs) != 1 or len(outputs) != 1:
        return False
    out = outputs[0]
    if order[inputs[0]] > order[out] or not _convex(members, region, order):
        return False
    name = f"ember_module_{index}"
    gm.add_submodule(name, module)
    with gm.graph.inserting_after(out):
        call = gm.graph.call_module(name, (inputs[0],))
    call.meta = copy.copy(out.meta)
    stack = dict(out.meta.get("nn_module_stack") or {})
    keys = list(stack)
    call.meta["nn_module_stack"] = {k: stack[k] for k in keys[: keys.index(key)]} if (
        key in keys) else {}
    for user in list(out.users):
        if user not in region and user is not call:
            user.replace_input_with(out, call)
    return True


def _convex(members: list[torch.fx.Node], region: set, order: dict) -> bool:
    """No path leaves the region and comes back into it."""
    first, last = min(order[n] for n in members), max(order[n] for n in members)
    tainted: set = set()
    for n in sorted(members, key=order.get):
        for u in n.users:
            if u not in region and order[u] < last:
                tainted.add(u)
    frontier = list(tainted)
    while frontier:
        n = frontier.pop()
        for u in n.users:
            if u in region:
                return False
            if order[u] < last and u not in tainted:
                tainted.add(u)
                frontier.append(u)
    return first <= last


# ---- partitioning --------------------------------------------------------------------------
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


def partition(
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
