"""Module calls put back together, the second rewrite of the prepare phase.

``collapse_module_calls``: Dynamo inlines every module call; for a module class with a module
converter, the nodes of one call become one ``call_module`` node again. The prepare phase
collapses the classes with a user's converter; the analyze phase, the classes with a built-in
converter whose inlined nodes ember cannot convert one by one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

__all__ = ["collapse_module_calls"]

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


