"""ember.compile for torch models: the whole model captured by Dynamo's export, converted
completely by the torch backend's compile path (strict), and wrapped in an
ember.CompiledModel that can be saved.

Dynamo's export gives one FX graph whose placeholders are the model's arguments flattened
(``torch.utils._pytree``: positional and keyword arguments, nested tuples, lists and dicts)
and whose parameters and buffers are attributes; the compile path captures those as
constants of the ember graph, so the saved file holds the weights. The argument and output
structures are kept as pytree specs in the model's metadata, so the compiled model is
called like the original one.
"""

from __future__ import annotations

import inspect
import json
import warnings
from typing import Any

import torch
from torch.utils import _pytree as pytree

import ember
from ember.deploy import CompiledModel
from ember.torch.config import resolve_settings
from ember.torch.phases.wrap import CompiledSegment
from ember.torch.pipeline import compile_graph

__all__ = ["compile_module"]


def compile_module(model: Any, example_inputs: tuple, example_kwargs: dict[str, Any], *,
                   dynamic: Any = None, options: dict[str, Any] | None = None) -> CompiledModel:
    """See ember.compile."""
    settings = resolve_settings(None, {**(options or {}), "strict": True})
    if settings.dryrun:
        raise ember.EmberError("ember.compile: dryrun compiles nothing; use "
                               "torch.compile(model, backend='ember', options={'dryrun': True}) "
                               "to see what ember would convert")
    gm = _export(model, example_inputs, example_kwargs, dynamic)
    flat, in_spec = pytree.tree_flatten((example_inputs, example_kwargs))
    with torch.no_grad():
        segment = compile_graph(gm, list(flat), settings, 0)
    if not isinstance(segment, CompiledSegment) or segment.compiled is None:
        raise ember.EmberError("ember.compile: the model computes no tensor ember could "
                               "compile (it returns its inputs or constants only)")
    if segment.carrier_sources or segment.scalars:
        raise ember.EmberError("ember.compile: the model's graph takes sizes or numbers that "
                               "are not dimensions of its tensor inputs; a compiled model "
                               "takes tensors only")
    if segment.seeds:
        raise ember.EmberError("ember.compile: the model draws random numbers (dropout in "
                               "training mode); call model.eval() before compiling it")
    arg_names = _leaf_names((example_inputs, example_kwargs),
                            _parameter_names(model, len(example_inputs)))
    out_spec = getattr(gm, "_out_spec", None)
    order, output_names = _outputs(segment, out_spec)
    meta = {
        "frontend": "torch",
        "in_spec": pytree.treespec_dumps(in_spec),
        "out_spec": pytree.treespec_dumps(out_spec) if out_spec is not None else None,
        "flat_inputs": len(flat),
        "input_index": list(segment.input_index),
        "output_order": order,
        "signature": ", ".join(arg_names),
    }
    input_names = [arg_names[i] for i in segment.input_index]
    model_c = ember._C.CompiledModel(segment.compiled, input_names, output_names,
                                     json.dumps(meta))
    return CompiledModel(model_c, meta, profile=settings.profile)


def _export(model: Any, example_inputs: tuple, example_kwargs: dict[str, Any],
            dynamic: Any) -> torch.fx.GraphModule:
    """The model as one FX graph (Dynamo's export at torch level, not ATen)."""
    kwargs: dict[str, Any] = {"assume_static_by_default": True}
    if dynamic is True:
        kwargs["assume_static_by_default"] = False
    elif dynamic not in (None, False):
        kwargs["dynamic_shapes"] = dynamic
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            exported = torch._dynamo.export(model, **kwargs)(*example_inputs, **example_kwargs)
        except Exception as e:
            hint = ""
            if "pytree-flattenable" in str(e):
                hint = (" (An output of a type torch's pytree does not know: a HuggingFace "
                        "model's cache object, for one, goes away with use_cache=False.)")
            raise ember.EmberError(
                f"ember.compile could not capture the model as one graph "
                f"({type(e).__name__}: {_first_line(e)}).{hint} A compiled model has no eager "
                "PyTorch to fall back to, so the model must trace whole (no graph breaks, "
                "no data-dependent Python control flow); torch.compile(model, "
                "backend='ember') runs such models with graph breaks.") from e
    return exported.graph_module


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def _parameter_names(model: Any, n: int) -> list[str]:
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:n]]
    return names + [f"input_{i}" for i in range(len(names), n)]


def _key_text(key: Any) -> str:
    for attr in ("key", "idx", "name"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def _leaf_names(tree: Any, positional: list[str]) -> list[str]:
    """One name per leaf of (args, kwargs): the parameter's name, then the keys inside it
    ('x', 'batch.ids', 'past.0')."""
    names = []
    for path, _ in pytree.tree_flatten_with_path(tree)[0]:
        head, rest = path[0], path[1:]
        if _key_text(head) == "0":  # positional arguments
            i = int(_key_text(rest[0]))
            parts = [positional[i] if i < len(positional) else f"input_{i}"]
            rest = rest[1:]
        else:
            parts = [_key_text(rest[0])]
            rest = rest[1:]
        parts += [_key_text(k) for k in rest]
        names.append(".".join(parts))
    return names


def _outputs(segment: CompiledSegment, out_spec: Any) -> tuple[list[int], list[str]]:
    """For each output leaf, the graph output holding it; and a name per graph output."""
    spec = segment.spec  # (container type, [leaf specs]): Dynamo's graphs return a flat list
    leaves = spec[1] if isinstance(spec[0], type) else [spec]
    order = []
    for i, leaf in enumerate(leaves):
        if not (isinstance(leaf, tuple) and leaf[0] == "out"):
            what = {"arg": "one of its inputs, returned unchanged", "const": "a constant",
                    "value": "a Python value", "sym": "a size",
                    "complex": "a complex tensor (saved models hold real tensors only)",
                    }.get(str(leaf[0]), "not a tensor")
            raise ember.EmberError(f"ember.compile: output {i} of the model is {what}; every "
                                   "output of a compiled model must be a tensor it computes")
        order.append(int(leaf[1]))
    n_graph = len(segment.conversion.outputs)
    leaf_names = [f"output_{i}" for i in range(len(order))]
    if out_spec is not None:
        tree = pytree.tree_unflatten(list(range(len(order))), out_spec)
        paths = pytree.tree_flatten_with_path(tree)[0]
        if len(paths) == len(order):  # a bare tensor's path is empty: output_0
            leaf_names = [".".join(_key_text(k) for k in p) or f"output_{i}"
                          for i, (p, _) in enumerate(paths)]
    names = [f"output_{k}" for k in range(n_graph)]
    for leaf, k in reversed(list(enumerate(order))):
        names[k] = leaf_names[leaf]
    if len(set(names)) != len(names):
        names = [f"output_{k}" for k in range(n_graph)]
    return order, names
