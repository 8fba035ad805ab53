"""The ONNX graph walk: read the model, check every operator before converting any, make
symbolic inputs, turn initializers into values, convert node by node (folding with numpy
what is known at import time) and trace the outputs into an ember FlowGraph."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
from ember.onnx import ops_data, ops_elementwise, ops_nn, ops_shape  # noqa: F401 (fill TABLE)
from ember.onnx.errors import (
    InvalidOnnxError,
    NodeUnsupported,
    UnsupportedOnnxError,
    unsupported,
)
from ember.onnx.registry import MAX_OPSET, MIN_OPSET, TABLE, NotFoldable
from ember.onnx.values import ember_dtype, is_symbolic_array, simplify, to_tensor


@dataclass
class Imported:
    """An imported ONNX model: its graph (traced from symbolic inputs, not optimized), the
    ONNX names of its inputs and outputs in order, and its default-domain opset."""

    graph: ember.FlowGraph
    input_names: list[str]
    output_names: list[str]
    opset: int


class NodeContext:
    """What a converter sees of its node: attributes with defaults, the opset, the helpers
    that turn values into ember tensors or static ints."""

    def __init__(self, node: Any, opset: int, constants: dict[int, Any]) -> None:
        import onnx

        self.node = node
        self._constants = constants
        self.op_type: str = node.op_type
        self.opset = opset
        self.attrs: dict[str, Any] = {}
        for a in node.attribute:
            v = onnx.helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [x.decode() for x in v]
            self.attrs[a.name] = v

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def tensor(self, v: Any) -> Any:
        """v as an ember tensor (numpy arrays become constants, one per array: a weight
        used twice is one constant)."""
        if v is None or isinstance(v, ember.Tensor):
            return v
        if is_symbolic_array(v):
            return to_tensor(v)
        if id(v) not in self._constants:
            self._constants[id(v)] = (v, to_tensor(v))  # the array is kept: ids stay unique
        return self._constants[id(v)][1]

    def ints(self, v: Any, what: str) -> list[int]:
        """A 1-d (or 0-d) value known at import time as ints."""
        if v is None:
            return []
        if not isinstance(v, np.ndarray) or is_symbolic_array(v):
            raise unsupported(f"{what} must be known when the model is imported")
        return [int(x) for x in v.reshape(-1)]


def _model_name(model: Any) -> str:
    if isinstance(model, (str, os.PathLike)):
        return os.path.basename(os.fspath(model))
    return "the model"


def load_proto(model: Any, name: str) -> Any:
    import onnx
    from google.protobuf.message import DecodeError

    try:
        if isinstance(model, onnx.ModelProto):
            proto = model
        elif isinstance(model, (bytes, bytearray)):
            proto = onnx.load_model_from_string(bytes(model))
        elif isinstance(model, (str, os.PathLike)):
            if not os.path.isfile(model):
                raise InvalidOnnxError(f"ember cannot import {name}: no such file {model}")
            proto = onnx.load(os.fspath(model))
        else:
            raise InvalidOnnxError(
                f"ember.onnx.import_model takes a path, bytes or an onnx.ModelProto, "
                f"not {type(model).__name__}")
    except (DecodeError, ValueError, RuntimeError, OSError) as e:
        raise InvalidOnnxError(f"ember cannot import {name}: not a readable ONNX model "
                               f"({type(e).__name__}: {e})") from e
    if not proto.HasField("graph") or not proto.opset_import:
        raise InvalidOnnxError(f"ember cannot import {name}: not an ONNX model (no graph or "
                               f"no opset); the file may be damaged or truncated")
    if proto.functions:
        try:
            proto = onnx.inliner.inline_local_functions(proto)
        except Exception as e:  # noqa: BLE001 (onnx raises several kinds)
            raise InvalidOnnxError(f"ember cannot import {name}: its local functions do not "
                                   f"inline ({e})") from e
    return proto


def _opset(proto: Any, name: str) -> int:
    versions = [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise UnsupportedOnnxError(f"ember cannot import {name}: it imports no default-domain "
                                   f"ONNX opset")
    opset = int(versions[0])
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise UnsupportedOnnxError(
            f"ember cannot import {name}: ONNX opset {opset} is not supported; ember imports "
            f"opsets {MIN_OPSET} to {MAX_OPSET} (onnx.version_converter can convert a model)")
    return opset


def _check_operators(graph: Any, opset: int, name: str) -> None:
    """Every unsupported operator type with its count, in one error, before any conversion."""
    missing: Counter[str] = Counter()
    for node in graph.node:
        if node.domain not in ("", "ai.onnx"):
            missing[f"{node.domain}.{node.op_type}"] += 1
            continue
        entry = TABLE.get(node.op_type)
        if entry is None or not entry.supports(opset):
            missing[node.op_type] += 1
    if missing:
        listed = ", ".join(f"{op} (x{n})" for op, n in sorted(missing.items()))
        raise UnsupportedOnnxError(
            f"ember cannot import {name}: unsupported ONNX operators: {listed}")


_SYMBOL_BAD = re.compile(r"[^A-Za-z0-9_]")


class _Symbols:
    """Symbol names of input dimensions: a sanitized dim_param, or d<i> for an unnamed one."""

    def __init__(self) -> None:
        self.by_param: dict[str, str] = {}
        self.used: set[str] = set()
        self.fresh = 0

    def _unique(self, base: str) -> str:
        out, k = base, 1
        while out in self.used:
            out, k = f"{base}_{k}", k + 1
        self.used.add(out)
        return out

    def named(self, param: str) -> str:
        if param not in self.by_param:
            s = _SYMBOL_BAD.sub("_", param).lstrip("_") or "d"
            if s[0].isdigit() or s in ("min", "max"):
                s = "d_" + s
            self.by_param[param] = self._unique(s)
        return self.by_param[param]

    def unnamed(self) -> str:
        while f"d{self.fresh}" in self.used:
            self.fresh += 1
        return self._unique(f"d{self.fresh}")


def _input_shape(vi: Any, symbols: _Symbols, override: list[int | str] | None) -> list[Any]:
    if override is not None:
        return [d if isinstance(d, int) else symbols.named(str(d)) for d in override]
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        raise unsupported(f"input {vi.name!r} has no shape (give it with shapes=)")
    dims: list[Any] = []
    for d in t.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param:
            dims.append(symbols.named(d.dim_param))
        else:
            dims.append(symbols.unnamed())
    return dims


def _fold_by_reference(node: Any, inputs: list[Any], opset: int) -> list[Any]:
    """A node whose inputs are all numeric numpy arrays, computed by onnx's numpy reference
    implementation."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"i{k}" if v is not None else "" for k, v in enumerate(inputs)]
    outs = [f"o{k}" if o else "" for k, o in enumerate(node.output)]
    n = helper.make_node(node.op_type, names, outs, domain=node.domain)
    n.attribute.extend(node.attribute)
    g = helper.make_graph([n], "fold", [helper.make_value_info(x, helper.TypeProto())
                                        for x in names if x],
                          [helper.make_value_info(x, helper.TypeProto()) for x in outs if x])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    feeds = {x: v for x, v in zip(names, inputs, strict=True) if x}
    results = ReferenceEvaluator(m).run(None, feeds)
    it = iter(results)
    return [np.asarray(next(it)) if o else None for o in outs]


def _run_node(node: Any, inputs: list[Any], opset: int, constants: dict[int, Any]) -> list[Any]:
    entry = TABLE[node.op_type]
    ctx = NodeContext(node, opset, constants)
    known = all(v is None or isinstance(v, np.ndarray) for v in inputs)
    if known and entry.fold is not None:
        try:
            return [None if v is None else simplify(v) for v in entry.fold(ctx, inputs)]
        except NotFoldable:
            pass
    if known and inputs and not any(is_symbolic_array(v) for v in inputs if v is not None):
        try:
            return _fold_by_reference(node, inputs, opset)
        except Exception:  # noqa: BLE001 (the converter below raises the error that counts)
            pass
    assert entry.convert is not None
    return entry.convert(ctx, inputs)


def import_model(model: Any, shapes: dict[str, list[int | str]] | None = None) -> Imported:
    """Imports an ONNX model (a path, bytes or an onnx.ModelProto) as an ember FlowGraph.

    Inputs (the graph's inputs that are not initializers) become symbolic tensors; their
    dimensions named by dim_param stay symbolic (the name, sanitized), unnamed unknown ones
    are d0, d1, ...; ``shapes`` overrides an input's shape by name. Initializers become
    constants. An unsupported model raises one ``UnsupportedOnnxError`` that lists every
    unsupported operator type with its count."""
    name = _model_name(model)
    proto = load_proto(model, name)
    opset = _opset(proto, name)
    graph = proto.graph
    _check_operators(graph, opset, name)
    from onnx import numpy_helper

    env: dict[str, Any] = {}
    for init in graph.initializer:
        env[init.name] = numpy_helper.to_array(init)
    for sparse in graph.sparse_initializer:
        raise UnsupportedOnnxError(f"ember cannot import {name}: sparse initializer "
                                   f"{sparse.values.name!r}")
    symbols = _Symbols()
    inputs, input_names = [], []
    shapes = dict(shapes or {})
    try:
        for vi in graph.input:
            if vi.name in env:
                continue
            dtype = ember_dtype(vi.type.tensor_type.elem_type, f"input {vi.name!r}")
            x = ember.symbol(_input_shape(vi, symbols, shapes.pop(vi.name, None)), dtype)
            env[vi.name] = x
            inputs.append(x)
            input_names.append(vi.name)
    except NodeUnsupported as e:
        raise UnsupportedOnnxError(f"ember cannot import {name}: {e}") from e
    if shapes:
        raise UnsupportedOnnxError(f"ember cannot import {name}: shapes= names "
                                   f"{sorted(shapes)}, which are not inputs of the model")

    constants: dict[int, Any] = {}
    for i, node in enumerate(graph.node):
        args = [env[x] if x else None for x in node.input]
        where = f"node {node.name or i!r} ({node.op_type})"
        try:
            outs = _run_node(node, args, opset, constants)
        except (NodeUnsupported, NotFoldable) as e:
            raise UnsupportedOnnxError(f"ember cannot import {name}: {where}: {e}") from e
        except ember.EmberError as e:
            if isinstance(e, UnsupportedOnnxError):
                raise
            raise UnsupportedOnnxError(f"ember cannot import {name}: {where}: {e}") from e
        for out_name, v in zip(node.output, outs, strict=False):
            if out_name:
                env[out_name] = v

    outputs = [_output_tensor(env[o.name], constants) for o in graph.output]
    return Imported(graph=ember.trace_from(outputs, inputs), input_names=input_names,
                    output_names=[o.name for o in graph.output], opset=opset)


def _output_tensor(v: Any, constants: dict[int, Any]) -> Any:
    if isinstance(v, np.ndarray) and id(v) in constants:
        return constants[id(v)][1]
    return to_tensor(v)
