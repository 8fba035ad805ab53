"""ember.compile of an ONNX file: imported (importer.py), optimized and built, wrapped in an
ember.CompiledModel with the ONNX names of the graph's inputs and outputs."""

from __future__ import annotations

import json
import os
from typing import Any

import ember
from ember import building
from ember.deploy import CompiledModel
from ember.onnx.importer import import_model, load_proto

__all__ = ["OPTIONS", "compile_onnx"]

# What ember.compile(path.onnx, options=...) accepts, with what each does.
OPTIONS = {
    "search_space": "0, 1 or 2: the analytic GEMM blocking, or a small / large measured search",
    "parallel_k": "'default', 'disabled', 'search' or a number of parts: GEMMs split over K",
    "dump_dir": "a directory for the graph after each pass, the kernels and tuning decisions",
    "progress": "progress bars on a terminal (default True)",
    "profile": "True: print the profile table on the model's second call (as EMBER_PROFILE=1)",
    "shapes": "{input name: [sizes]}: replaces an input's shape (ints or symbol names)",
}


def compile_onnx(path: str | os.PathLike[str], *, dynamic: Any = None,
                 options: dict[str, Any] | None = None) -> CompiledModel:
    """See ember.compile. ``dynamic=True`` makes the first dimension of every input the
    symbol ``batch`` (when it is not symbolic already); dimensions the file names
    (dim_param) or leaves unknown are symbolic in any case."""
    opts = dict(options or {})
    unknown = sorted(set(opts) - set(OPTIONS))
    if unknown:
        valid = "\n".join(f"  {k}: {v}" for k, v in OPTIONS.items())
        raise ember.EmberError(f"ember.compile of an ONNX file: unknown options {unknown}; "
                               f"it accepts:\n{valid}")
    if dynamic not in (None, False, True):
        raise ember.EmberError("ember.compile of an ONNX file: dynamic must be None, False or "
                               "True (symbolic dimensions come from the file or from "
                               "options={'shapes': ...})")
    path = os.fspath(path)
    shapes = dict(opts.get("shapes") or {})
    model: Any = path
    if dynamic is True:
        model = load_proto(path, os.path.basename(path))
        for vi in model.graph.input:
            dims = vi.type.tensor_type.shape.dim
            if vi.name in shapes or not dims or dims[0].dim_param or not dims[0].HasField(
                    "dim_value"):
                continue
            shapes[vi.name] = ["batch"] + [d.dim_param or d.dim_value for d in dims[1:]]
    imported = import_model(model, shapes=shapes or None)
    compiled = building.build(imported.graph, label=os.path.basename(path),
                              search_space=opts.get("search_space", 0),
                              parallel_k=opts.get("parallel_k", "default"),
                              dump_dir=opts.get("dump_dir"), progress=opts.get("progress", True))
    meta = {"frontend": "onnx", "source": os.path.basename(path), "opset": imported.opset}
    model_c = ember._C.CompiledModel(compiled, list(imported.input_names),
                                     list(imported.output_names), json.dumps(meta))
    return CompiledModel(model_c, meta, profile=bool(opts.get("profile", False)))

