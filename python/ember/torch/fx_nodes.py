"""Facts about FX nodes that the phases share: their public names, whether the user forced
them to eager, whether they update a tensor in place, create tensors or carry shapes, the
check of a converter's result against the shape and dtype Dynamo recorded, and a copy of a
graph module."""

from __future__ import annotations

import copy
import operator
from typing import Any

import torch
import torch.fx

import ember
from ember.torch import registry
from ember.torch.context import (
    ConversionFailure,
    expected_value,
    sym_dim,
)
from ember.torch.shape_guards import guarded_int, sym_dim_free

# Python's in-place operators (``x += y``): a target that updates its first argument.
INPLACE_OPERATORS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift, operator.imatmul,
}


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


def is_shape_value(meta: Any) -> bool:
    if isinstance(meta, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(meta, torch.Size):
        return True
    if isinstance(meta, (tuple, list)) and meta and all(
        isinstance(m, (int, torch.SymInt)) and not isinstance(m, bool) for m in meta
    ):
        return True
    return isinstance(meta, (int, float)) and not isinstance(meta, bool)


_CREATION_NAMES = {
    "arange", "ones", "zeros", "full", "tensor", "scalar_tensor", "eye", "linspace",
    "ones_like", "zeros_like", "full_like", "tril_indices", "triu_indices",
}


def is_creation(node: torch.fx.Node) -> bool:
    if node.op != "call_function":
        return False
    name = getattr(node.target, "__name__", "")
    return name in _CREATION_NAMES or name.split(".")[0] in _CREATION_NAMES


# A fill (torch.zeros, ones, full) of a static shape this large or larger is computed in the
# graph where it is read (ember.ops.full(in_graph=True), converters/common.full): as a
# constant, the compiled graph would keep it in memory for its lifetime (a training
# backward's zeros that an embedding's gradient is scattered into: 147 MiB for GPT-2's), and
# its readers would stream it from memory at every run instead of writing the value. Smaller
# ones stay constants, which constant folding computes with.
IN_GRAPH_FILL_BYTES = 1 << 20
_FILL_NAMES = {"ones", "zeros", "full"}


def is_large_fill(node: torch.fx.Node) -> bool:
    """Whether `node` creates a fill of IN_GRAPH_FILL_BYTES or more (not folded into a
    constant: its converter computes it in the graph)."""
    if node.op != "call_function":
        return False
    name = getattr(node.target, "__name__", "")
    meta = node.meta.get("example_value", node.meta.get("val"))
    return (name.split(".")[0] in _FILL_NAMES and isinstance(meta, torch.Tensor)
            and meta.numel() * meta.element_size() >= IN_GRAPH_FILL_BYTES)


def fetch_attr(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def node_target(gm: torch.fx.GraphModule, node: torch.fx.Node) -> tuple[str, Any]:
    if node.op == "call_method":
        return "method", node.target
    if node.op == "call_module":
        return "module", type(fetch_attr(gm, node.target))
    return "function", node.target


def node_public_name(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    kind, key = node_target(gm, node)
    return registry.public_name(key, kind=kind)


def forced_keys(items: tuple) -> set:
    keys: set = set()
    for item in items:
        if isinstance(item, str):
            if item.startswith("torch.Tensor."):
                keys.add(("method", item[len("torch.Tensor."):]))
            keys.add(item)
        elif isinstance(item, type):
            keys.add(("module", item))
        else:
            keys.add(("function", item))
            if registry.is_tensor_method(item):
                keys.add(("method", item.__name__))
    return keys


def is_forced(gm: torch.fx.GraphModule, node: torch.fx.Node, forced: set) -> bool:
    kind, key = node_target(gm, node)
    return (kind, key) in forced or node_public_name(gm, node) in forced


def is_dynamic(node: torch.fx.Node) -> bool:
    def dynamic(v: Any) -> bool:
        if isinstance(v, torch.Tensor):
            return any(not isinstance(d, int) for d in v.shape)
        if isinstance(v, (tuple, list)):
            return any(dynamic(x) for x in v)
        return isinstance(v, torch.SymInt) and sym_dim_free(v)

    if dynamic(expected_value(node)):
        return True
    return any(dynamic(expected_value(n)) for n in node.all_input_nodes)


def check_shape(result: Any, meta: torch.Tensor) -> None:
    got = tuple(result.shape)
    want = tuple(meta.shape)
    ok = len(got) == len(want)
    if ok:
        for g, w in zip(got, want, strict=True):
            try:
                wd = sym_dim(w)
            except ConversionFailure:
                continue  # an expression: not checked
            if isinstance(wd, int) and isinstance(g, int):
                ok = ok and g == wd
            elif isinstance(wd, str) and isinstance(g, str) and g.isidentifier():
                ok = ok and g == wd
    if not ok:
        raise ConversionFailure(
            "mismatch",
            f"the converter's result has shape {list(got)}, torch's has {[str(d) for d in want]}",
        )


def refine_known_dims(result: Any, meta: torch.Tensor) -> Any:
    """result with each symbolic dimension that torch's record (under Dynamo's guards) fixes
    to a constant made that constant: an exact slice of the whole dimension, which inlines
    into the consumers. Later operators then see the size Dynamo guarantees (a broadcast
    against a constant size, a reshape to fixed sizes) instead of an expression ember cannot
    prove equal to it."""
    axes, stops = [], []
    for axis, (g, w) in enumerate(zip(result.shape, meta.shape, strict=True)):
        if isinstance(g, str):
            known = w if isinstance(w, int) else guarded_int(w)
            if known is None:
                continue
            # ember's size must have that value in the traced call; anything else is a
            # converter computing another shape (a mismatch, never narrowed away). A size
            # whose traced value is unknown (a symbol of ember's own) is left as it is.
            traced = _traced_value(g, meta)
            if traced is None:
                continue
            if traced != int(known):
                raise ConversionFailure(
                    "mismatch", f"the converter's result has size {g} (= {traced} when "
                    f"traced) in dimension {axis}, torch's is {known}")
            axes.append(axis)
            stops.append(int(known))
    if not axes:
        return result
    return ember.ops.slice(result, axes, [0] * len(axes), stops, None, clamp=False)


def _traced_value(size: str, meta: Any) -> int | None:
    """The value an ember size expression (its text) had in the traced call: its symbols
    are the shape environment's, whose traced values it records."""
    import sympy
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env = getattr(getattr(meta, "fake_mode", None), "shape_env", None)
    if not isinstance(env, ShapeEnv):
        return None
    # (torch 2.13 names the table backed_var_to_val; var_to_val is deprecated there.)
    table = getattr(env, "backed_var_to_val", None)
    if table is None:
        table = env.var_to_val
    values = {str(k): int(v) for k, v in table.items()}
    try:
        expr = sympy.sympify(size, locals={n: sympy.Symbol(n)
                                                               for n in values})
        value = expr.subs({sympy.Symbol(n): v for n, v in values.items()})
        return int(value) if value.is_Integer else None
    except (sympy.SympifyError, TypeError, ValueError):
        return None


def call_text(node: torch.fx.Node) -> str:
    def show(v: Any) -> str:
        if isinstance(v, torch.fx.Node):
            meta = expected_value(v)
            if isinstance(meta, torch.Tensor):
                return f"Tensor{list(meta.shape)}"
            return v.name
        return repr(v)

    parts = [show(a) for a in node.args] + [f"{k}={show(v)}" for k, v in node.kwargs.items()]
    target = node.target if isinstance(node.target, str) else getattr(
        node.target, "__name__", str(node.target))
    return f"{target}({', '.join(parts)})"
