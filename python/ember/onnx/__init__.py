"""Importing ONNX models into ember.

``import ember.onnx`` (``import ember`` does not import onnx), then
``ember.onnx.import_model("model.onnx")`` gives an ``Imported``: the model as an ember
``FlowGraph`` traced from symbolic inputs, with the ONNX names of its inputs and outputs.
Optimize and build it as any graph::

    imp = ember.onnx.import_model("model.onnx")
    compiled = ember.graph.optimize(imp.graph).build()

docs/onnx.md lists the operators and their limits.
"""

from __future__ import annotations

from typing import Any

from ember.onnx.compile import compile_onnx
from ember.onnx.errors import InvalidOnnxError, OnnxImportError, UnsupportedOnnxError
from ember.onnx.importer import Imported, import_model
from ember.onnx.registry import MAX_OPSET, MIN_OPSET, TABLE


def load(path: str, *, dynamic: bool | None = None,
         options: dict[str, Any] | None = None) -> Any:
    """The ONNX file compiled into an ember.CompiledModel: ember.compile(path)."""
    return compile_onnx(path, dynamic=dynamic, options=options)


def supported_operators() -> dict[str, tuple[int, int]]:
    """Every ONNX operator type ember imports, with the opsets (first, last) it supports."""
    return {op: (e.since, e.until) for op, e in sorted(TABLE.items()) if e.convert is not None}


__all__ = [
    "MAX_OPSET",
    "MIN_OPSET",
    "Imported",
    "InvalidOnnxError",
    "OnnxImportError",
    "UnsupportedOnnxError",
    "compile_onnx",
    "import_model",
    "load",
    "supported_operators",
]
