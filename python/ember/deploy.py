"""Compiled models: compile once, save one file, load and run it anywhere.

``ember.compile(model, example_inputs)`` compiles a torch module or function (captured
whole by Dynamo's export, converted completely: there is no eager PyTorch to fall back to
in a saved file) or an ONNX file (``ember.compile("model.onnx")``) into a
:class:`CompiledModel`. ``model.save(path)`` writes one file (docs/deploy.md);
``ember.load(path)`` loads it in another process without compiling, from Python or from C++
(``ember::load``). Nothing here imports torch: a loaded model runs on numpy arrays and ember
tensors without it, and returns torch tensors when it is called with torch tensors.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ember import _C, profiling

__all__ = ["CompiledModel", "TensorSpec", "compile", "load"]

_ONNX_SUFFIXES = (".onnx",)


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a compiled model: its name, shape (ints, and symbol names or
    size expressions for dynamic dimensions) and dtype (numpy's name, e.g. 'float32')."""

    name: str
    shape: tuple[int | str, ...]
    dtype: str

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.shape)}]"


def _spec(name: str, t: Any) -> TensorSpec:
    return TensorSpec(name, tuple(t.shape), str(t.dtype))


class CompiledModel:
    """A whole model compiled by ember: call it with torch tensors, numpy arrays or ember
    tensors (outputs come back as the same kind), save it, inspect it.

    ``inputs`` and ``outputs`` list the compiled graph's tensors with their names. Called
    with the arguments the original model took (a torch model compiled by ember.compile
    keeps its argument and output structure, e.g. a dict of outputs), or with the flat list
    of ``inputs`` in order.
    """

    def __init__(self, model: Any, metadata: dict[str, Any] | None = None,
                 profile: bool = False) -> None:
        self._model = model
        self._trees: dict[str, Any] = {}  # pytree specs parsed from the metadata
        self._meta: dict[str, Any] = dict(metadata or {})
        if metadata is None and model.metadata:
            try:
                self._meta = json.loads(model.metadata)
            except ValueError:
                self._meta = {}
        # Profiled on its second call with profile=True or EMBER_PROFILE=1.
        self._auto_profile = profiling.AutoProfile("ember compiled model", profile)

    # ---- what it is ------------------------------------------------------------------------
    @property
    def inputs(self) -> list[TensorSpec]:
        return [_spec(name, t) for name, t in self._model.inputs]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [_spec(name, t) for name, t in self._model.outputs]

    @property
    def graph(self) -> Any:
        """The ember.CompiledGraph that runs it."""
        return self._model.graph

    def info(self) -> dict[str, Any]:
        """{'format_version', 'ember_version', 'kernel_abi', 'isa', 'cpu_features',
        'file_bytes' (None until saved or loaded), 'weight_bytes', 'prepared_weight_bytes' (the
        part of the weights prepared for the kernels: packed GEMM weights, Winograd filters),
        'kernels', 'launches', 'symbols', 'rebuilt' (why load() compiled the kernels again, or
        None), 'frontend'}."""
        info = dict(self._model.info())
        info["frontend"] = self._meta.get("frontend", "ember")
        return info

    def __repr__(self) -> str:
        info = self.info()
        lines = [f"ember.CompiledModel ({info['frontend']}, {info['isa'] or 'no kernels'}, "
                 f"{info['kernels']} kernels, {info['launches']} launches per run, "
                 f"{_bytes(info['weight_bytes'])} of weights, "
                 f"{_bytes(info['prepared_weight_bytes'])} of them prepared for the kernels)"]
        lines.append("  inputs:")
        lines += [f"    {s}" for s in self.inputs]
        lines.append("  outputs:")
        lines += [f"    {s}" for s in self.outputs]
        ops = list(self.graph.launch_ops)
        if ops:
            lines.append("  kernels, in launch order:")
            lines += [f"    {i:3d}  {op}" for i, op in enumerate(ops)]
        return "\n".join(lines)

    # ---- running ---------------------------------------------------------------------------
    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """The flat outputs as numpy arrays, for the flat inputs (numpy arrays or anything
        numpy converts) in the order of ``inputs``."""
        tensors = [_C.asarray(np.ascontiguousarray(np.asarray(x))) for x in inputs]
        return [t.numpy() for t in self._model.run(tensors)]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        flat, kind = self._flat_inputs(args, kwargs)
        inputs = [_to_ember(x) for x in flat]
        outs = self._model.run(inputs)
        if self._auto_profile.due():
            self._auto_profile.run(self._model.graph, inputs)
        order = self._meta.get("output_order")
        if order is not None:
            outs = [outs[k] for k in order]
        if kind == "torch":
            results: list[Any] = [o.torch() for o in outs]
            out_tree = self._tree("out_spec")
            if out_tree is not None:
                from torch.utils import _pytree as pytree

                return pytree.tree_unflatten(results, out_tree)
        elif kind == "numpy":
            results = [o.numpy() for o in outs]
        else:
            results = list(outs)
        return results[0] if len(results) == 1 else tuple(results)

    def _tree(self, key: str) -> Any:
        """The pytree spec stored as JSON under `key` (parsed once), or None."""
        if key not in self._trees:
            text = self._meta.get(key)
            if text is None:
                self._trees[key] = None
            else:
                from torch.utils import _pytree as pytree

                self._trees[key] = pytree.treespec_loads(text)
        return self._trees[key]

    def _flat_inputs(self, args: tuple, kwargs: dict) -> tuple[list[Any], str]:
        """The graph's inputs from a call's arguments, and what kind of tensors they are."""
        spec = self._meta.get("in_spec")
        kind = "ember"
        if any(_is_torch(x) for x in list(args) + list(kwargs.values())) or (
                spec is not None and kwargs):
            kind = "torch"
        elif any(isinstance(x, np.ndarray) for x in args):
            kind = "numpy"
        n_graph = len(self._model.inputs)
        if spec is not None and kind == "torch":
            from torch.utils import _pytree as pytree

            leaves, given = pytree.tree_flatten((tuple(args), dict(kwargs)))
            index = self._meta["input_index"]
            if given != self._tree("in_spec"):
                flat = not kwargs and len(args) == n_graph and not any(
                    isinstance(a, (list, tuple, dict)) for a in args)
                if flat:  # the graph's inputs, in order
                    return list(args), kind
                raise TypeError(
                    f"this compiled model takes the arguments it was compiled with "
                    f"({self._meta.get('signature', '?')}), or its {n_graph} inputs as a flat "
                    f"list; got {len(args)} positional and {sorted(kwargs)} keyword arguments")
            return [leaves[i] for i in index], kind
        if kwargs:
            raise TypeError("this compiled model takes positional inputs only: "
                            + ", ".join(s.name for s in self.inputs))
        index = self._meta.get("input_index")
        if index is not None and len(args) == self._meta.get("flat_inputs") and \
                len(args) != n_graph:
            return [args[i] for i in index], kind
        if len(args) != n_graph:
            raise TypeError(f"this compiled model takes {n_graph} inputs ("
                            + ", ".join(str(s) for s in self.inputs) + f"); got {len(args)}")
        return list(args), kind

    def set_num_threads(self, n: int) -> None:
        """Threads the model's kernels may use (default: ember.get_num_threads())."""
        self._model.graph.set_num_threads(n)

    # ---- saving and profiling --------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the model to one file (atomically: a reader sees the old file or the new
        one). Load it with ember.load, or ember::load in C++."""
        self._model.save(os.fspath(path))

    def profile(self, inputs: Sequence[Any], runs: int = 20) -> dict[str, Any]:
        """CompiledGraph.profile on numpy inputs (flat, in the order of ``inputs``)."""
        tensors = [_C.asarray(np.ascontiguousarray(np.asarray(x))) for x in inputs]
        return dict(self._model.graph.profile(tensors, runs))

    def profile_table(self, inputs: Sequence[Any], runs: int = 20) -> str:
        """The profile of every kernel launch (medians over `runs`), slowest first, with
        GFLOP/s and GB/s against this machine's peaks (ember.profiling): what ``ember bench``
        prints."""
        tensors = [_C.asarray(np.ascontiguousarray(np.asarray(x))) for x in inputs]
        return profiling.profile_table(self._model.graph, tensors, runs)


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "is_contiguous")


def _to_ember(x: Any) -> Any:
    if isinstance(x, _C.Tensor):
        return x
    if _is_torch(x):
        if x.is_neg() or x.is_conj():
            x = x.resolve_neg().resolve_conj()
        return _C.from_torch(x.detach() if x.is_contiguous() else x.detach().contiguous())
    return _C.asarray(np.ascontiguousarray(np.asarray(x)))


# ---- entry points --------------------------------------------------------------------------
def load(path: str | os.PathLike[str]) -> CompiledModel:
    """Loads a model saved by CompiledModel.save, without compiling when this CPU runs the
    saved machine code (else its kernels are rebuilt from the saved sources). Raises
    ember.ArtifactError for a file it cannot load, saying why."""
    return CompiledModel(_C.load(os.fspath(path)))


def compile(model: Any, example_inputs: Sequence[Any] | None = None, *,  # noqa: A001
            example_kwargs: dict[str, Any] | None = None, dynamic: Any = None,
            options: dict[str, Any] | None = None) -> CompiledModel:
    """Compiles a whole model ahead of time.

    ``model``: a torch.nn.Module or function, called as
    ``model(*example_inputs, **example_kwargs)``; or the path of an ONNX file (the examples
    are then unused). ``dynamic``: None or False for
    the example inputs' shapes, True for every dimension symbolic, or torch.export's
    ``dynamic_shapes`` spec (torch models). ``options``: the settings of
    ``torch.compile(backend="ember", options=...)`` (search_space, parallel_k, dump_dir,
    progress, use_fp16, use_bf16, ...; docs/torch-backend.md). A model ember cannot convert
    completely is an error that lists what it cannot convert.
    """
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not path.endswith(_ONNX_SUFFIXES):
            raise ValueError(f"ember.compile({path!r}): a path must be an ONNX file (.onnx); "
                             "to load a saved ember model use ember.load")
        from ember.onnx import compile_onnx

        return compile_onnx(path, dynamic=dynamic, options=options)
    if example_inputs is None and example_kwargs is None:
        raise TypeError("ember.compile(model, example_inputs): a torch model needs example "
                        "inputs (a tuple of the arguments it is called with, and/or "
                        "example_kwargs)")
    from ember.torch.export import compile_module

    return compile_module(model, tuple(example_inputs or ()), dict(example_kwargs or {}),
                          dynamic=dynamic, options=options)
