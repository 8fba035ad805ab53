"""In-place updates as values, the first rewrite of the prepare phase (phases/prepare.py).

``functionalize``: in-place updates (``x += y``, ``relu_``, ``inplace=True``) become values:
later uses of the updated tensor read the in-place node instead, and a graph input that is
updated gets an explicit ``copy_`` back into it at the end (run eagerly); so does a tensor
attribute of the graph (``get_attr``: Dynamo puts an optimizer's parameters and state there),
which the copy_ updates where it lives. The in-place ``_foreach_*_`` operators update each
tensor of their first argument, a list: the node's value is the list of updated tensors,
and later uses of the i-th tensor read ``node[i]``. ``x[index] = v``
becomes the value ``functional.setitem(x, index, v)``, a batch norm in training mode that
updates its running statistics becomes the norm and two ``functional.running_stat`` updates
of them, and an update of a basic view of a
tensor (``x[:, 0].fill_(2)``, ``x.narrow(1, 0, 2).copy_(z)``) is written back into the
tensor with one. Any other update through a view of something still used makes the graph
run eagerly. (``x[tensor]`` copies: an update of it stays in the copy.)
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

import torch
import torch.fx

from ember.torch import functional
from ember.torch.fx_nodes import INPLACE_OPERATORS, fetch_attr

__all__ = ["functionalize", "is_inplace"]

_VIEW_NAMES = {
    "view", "view_as", "reshape", "reshape_as", "transpose", "permute", "t", "flatten",
    "unflatten", "squeeze", "unsqueeze", "expand", "expand_as", "narrow", "select", "split",
    "split_with_sizes", "chunk", "unbind", "contiguous", "detach", "as_strided", "diagonal",
    "swapaxes", "swapdims", "movedim", "unfold", "to", "type", "type_as", "float", "half",
    "double", "bfloat16", "int", "long", "bool", "getitem", "alias", "real", "imag",
    "moveaxis", "linalg_diagonal", "ravel", "positive", "conj", "resolve_conj", "resolve_neg",
    "tensor_split", "hsplit", "vsplit", "dsplit", "unsafe_split", "unsafe_chunk",
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "broadcast_tensors", "meshgrid",
}
_NOT_INPLACE = {"requires_grad_", "share_memory_", "retain_grad_"}


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
    if node.target in (functional.setitem, functional.running_stat):
        return True  # a write into its first argument, as far as functionalize is concerned
    if node.target in INPLACE_OPERATORS:
        first = node.args[0] if node.args else None
        meta = first.meta.get("example_value") if isinstance(first, torch.fx.Node) else None
        return isinstance(meta, torch.Tensor) or meta is None and isinstance(first, torch.fx.Node)
    if getattr(node.target, "__module__", None) in ("_operator", "operator"):
        return False  # the others of Python's operators (``operator.and_`` is ``a & b``)
    schema = getattr(node.target, "_schema", None)
    if schema is not None:
        return bool(schema.is_mutable) and not _name(node).startswith("_")
    name = _name(node)
    if name.startswith("_foreach_"):
        return _is_foreach_update(node)
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
        # x[tensor] (advanced indexing) copies; ints, slices, None and Ellipsis give a view.
        # A result picked from a multi-output node is a view when that node makes views
        # (split, chunk, unbind), a tensor of its own otherwise (_foreach_add, topk); one
        # picked from a node of unknown value is taken for a view.
        source = node.args[0]
        if not _is_tensor_value(source):
            meta = source.meta.get("example_value") if isinstance(source, torch.fx.Node) else None
            return not isinstance(meta, (list, tuple)) or _is_view(source)
        return _basic_index(node.args[1])
    return _name(node) in _VIEW_NAMES


def _is_foreach_update(node: torch.fx.Node) -> bool:
    """An in-place _foreach_*_ operator: it updates each tensor of its first argument."""
    return (node.op == "call_function" and _name(node).startswith("_foreach_")
            and _name(node).endswith("_") and bool(node.args)
            and isinstance(node.args[0], (list, tuple)))


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


def _updated(n: torch.fx.Node) -> torch.fx.Node | None:
    """The tensor n updates in place (its first argument; for node[i] of a _foreach_*_
    update, the i-th tensor of the list), or None when n updates nothing."""
    target = _foreach_target(n)
    if target is not None:
        return target
    if is_inplace(n) and n.args and isinstance(n.args[0], torch.fx.Node):
        return n.args[0]
    return None


def _storage(n: torch.fx.Node) -> torch.fx.Node:
    """The node whose tensor n updated in place (through a chain of in-place updates)."""
    while True:
        updated = _foreach_target(n)
        if updated is not None:
            n = updated
        elif is_inplace(n) and n.args and isinstance(n.args[0], torch.fx.Node):
            n = n.args[0]
        else:
            return n


def _attribute_values(gm: torch.fx.GraphModule) -> bool:
    """Gives the get_attr nodes of tensors their value as example_value (Dynamo leaves it
    out), so that their updates are followed like those of inputs; a second get_attr of the
    same attribute becomes the first, so that it reads the updates the first one gets.
    Returns whether it removed one."""
    first: dict[str, torch.fx.Node] = {}
    removed = False
    for n in list(gm.graph.find_nodes(op="get_attr")):
        value = fetch_attr(gm, n.target)
        if not isinstance(value, torch.Tensor):
            continue
        if n.target in first:
            n.replace_all_uses_with(first[n.target])
            gm.graph.erase_node(n)
            removed = True
            continue
        first[n.target] = n
        n.meta.setdefault("example_value", value)
    return removed


def _foreach_target(n: torch.fx.Node) -> torch.fx.Node | None:
    """For ``node[i]`` of a _foreach_*_ update (see _split_foreach_updates), the tensor it
    updated; None for any other node."""
    if not n.meta.get("ember_foreach_item"):
        return None
    target = n.args[0].args[0][n.args[1]]  # type: ignore[union-attr,index]
    return target if isinstance(target, torch.fx.Node) else None


def _split_foreach_updates(gm: torch.fx.GraphModule) -> None:
    """Gives each tensor a _foreach_*_ node updates a node of its own, ``node[i]`` (marked
    with the tensor it updates), and makes the node's value the list of updated tensors."""
    for n in list(gm.graph.nodes):
        if not _is_foreach_update(n) or not all(isinstance(t, torch.fx.Node)
                                               for t in n.args[0]):
            continue
        targets = list(n.args[0])
        n.meta["example_value"] = [t.meta.get("example_value") for t in targets]
        at = n
        for i, t in enumerate(targets):
            with gm.graph.inserting_after(at):
                at = gm.graph.call_function(operator.getitem, (n, i))
            at.meta["example_value"] = t.meta.get("example_value")
            at.meta["ember_foreach_item"] = True
            at.meta["nn_module_stack"] = n.meta.get("nn_module_stack", {})


def _functional_setitems(gm: torch.fx.GraphModule) -> None:
    """``x[index] = value`` (operator.setitem, a statement without a result) becomes the
    value ``functional.setitem(x, index, value)``, an update of x like any in-place op."""
    for n in gm.graph.nodes:
        if (n.op == "call_function" and n.target is operator.setitem and len(n.args) == 3
                and _is_tensor_value(n.args[0]) and not n.kwargs):
            n.target = functional.setitem
            n.meta["example_value"] = n.args[0].meta["example_value"]


# Norms that update their running statistics in training mode: target -> the names of its
# arguments in order (to bind positional ones), and the argument saying it uses the batch's
# statistics (None: always).
_NORMS_WITH_STATS: dict[Any, tuple[tuple[str, ...], str | None]] = {
    torch.nn.functional.batch_norm: (("input", "running_mean", "running_var", "weight", "bias",
                                      "training", "momentum", "eps"), "training"),
    torch.batch_norm: (("input", "weight", "bias", "running_mean", "running_var", "training",
                        "momentum", "eps", "cudnn_enabled"), "training"),
    torch.native_batch_norm: (("input", "weight", "bias", "running_mean", "running_var",
                               "training", "momentum", "eps"), "training"),
    torch._native_batch_norm_legit: (("input", "weight", "bias", "running_mean", "running_var",
                                      "training", "momentum", "eps"), "training"),
    torch.ops.aten._batch_norm_with_update.default: (
        ("input", "weight", "bias", "running_mean", "running_var", "momentum", "eps"), None),
    torch.nn.functional.instance_norm: (("input", "running_mean", "running_var", "weight",
                                         "bias", "use_input_stats", "momentum", "eps"),
                                        "use_input_stats"),
}
_NORMS_WITH_STATS[torch.ops.aten._batch_norm_with_update] = _NORMS_WITH_STATS[
    torch.ops.aten._batch_norm_with_update.default]
_DEFAULTS = {"training": False, "use_input_stats": True, "momentum": 0.1, "eps": 1e-5,
             "weight": None, "bias": None}


def _norm_call(n: torch.fx.Node) -> dict[str, Any] | None:
    """The arguments of a norm call that updates running statistics (by name), else None."""
    spec = _NORMS_WITH_STATS.get(n.target) if n.op == "call_function" else None
    if spec is None:
        return None
    names, flag = spec
    if len(n.args) > len(names) or set(n.kwargs) - set(names):
        return None
    call = {**_DEFAULTS, **dict(zip(names, n.args, strict=False)), **n.kwargs}
    if flag is not None and call.get(flag) is not True:
        return None
    stats = [call.get("running_mean"), call.get("running_var")]
    if not all(isinstance(s, torch.fx.Node) for s in stats):
        return None
    momentum = call["momentum"]  # a number, or a node (a float Dynamo did not specialize)
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float, torch.fx.Node)):
        return None
    return call


def _without_stats(target: Any, call: dict[str, Any]) -> tuple[Any, tuple]:
    """The norm call that uses the batch's statistics and updates none (same results)."""
    x, w, b, m, eps = (call[k] for k in ("input", "weight", "bias", "momentum", "eps"))
    if target is torch.nn.functional.batch_norm:
        return target, (x, None, None, w, b, True, m, eps)
    if target is torch.nn.functional.instance_norm:
        return target, (x, None, None, w, b, True, m, eps)
    if target is torch.batch_norm:
        return target, (x, w, b, None, None, True, m, eps, call.get("cudnn_enabled", False))
    if target is torch._native_batch_norm_legit:
        return target, (x, w, b, True, m, eps)  # its overload without running statistics
    if target is torch.native_batch_norm:
        return target, (x, w, b, None, None, True, m, eps)
    return functional.batch_norm_with_update, (x, w, b, m, eps)


def split_running_stat_updates(gm: torch.fx.GraphModule) -> bool:
    """A batch norm (or instance norm) in training mode that updates its running statistics
    becomes the norm without them (batch statistics only) followed by the two updates as
    functional.running_stat nodes, which the rest of functionalize treats as in-place
    updates of the statistics (later readers read them, graph inputs are written back).
    Returns whether it changed the graph."""
    changed = False
    for n in list(gm.graph.nodes):
        call = _norm_call(n)
        if call is None:
            continue
        instance = n.target is torch.nn.functional.instance_norm
        n.target, n.args = _without_stats(n.target, call)
        n.kwargs = {}
        at = n
        for name, kind in (("running_mean", "mean"), ("running_var", "var")):
            stat = call[name]
            with gm.graph.inserting_after(at):
                momentum = call["momentum"]
                at = gm.graph.call_function(functional.running_stat, (
                    stat, call["input"],
                    momentum if isinstance(momentum, torch.fx.Node) else float(momentum),
                    f"instance_{kind}" if instance else kind))
            at.meta["example_value"] = stat.meta.get("example_value")
            at.meta["nn_module_stack"] = n.meta.get("nn_module_stack", {})
        changed = True
    if changed:
        gm.recompile()
    return changed


def functionalize(gm: torch.fx.GraphModule) -> str | None:
    """Rewrites gm in place (see the module docstring). Returns None, or why the graph must
    run eagerly as a whole."""
    _functional_setitems(gm)
    split_running_stat_updates(gm)
    merged = _attribute_values(gm)
    _split_foreach_updates(gm)
    nodes = list(gm.graph.nodes)
    order: dict[torch.fx.Node, float] = {n: i for i, n in enumerate(nodes)}
    base: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in nodes:
        target = _updated(n)
        if target is not None or _is_view(n) and n.args and isinstance(n.args[0],
                                                                        torch.fx.Node):
            base[n] = target if target is not None else n.args[0]

    def root(n: torch.fx.Node) -> torch.fx.Node:
        while n in base:
            n = base[n]
        return n

    written: dict[torch.fx.Node, torch.fx.Node] = {}
    aliases = list(nodes)  # and the write-backs added below
    changed = merged
    for n in nodes:
        target = _updated(n)
        if target is None:
            continue
        if "out" in n.kwargs:
            return f"{n.name} writes into an out= tensor"
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
        if r.op in ("placeholder", "get_attr"):
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
