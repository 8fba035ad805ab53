"""Helpers of the ONNX import tests (test_onnx_import.py, test_onnx_ops.py): build an
ONNX graph by hand, import and build it with ember.onnx, and compare ember's outputs with
onnxruntime's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402

TOL = 1e-4


def _build(path_or_model: Any, **kw: Any) -> tuple[Any, Any]:
    imp = ember.onnx.import_model(path_or_model, **kw)
    return imp, ember.graph.optimize(imp.graph).build()


def _rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    ref = np.asarray(ref)
    if ref.dtype == bool or ref.dtype.kind in "iu":
        return 0.0 if np.array_equal(got, ref) else 1.0
    scale = max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30)
    return float(np.max(np.abs(got.astype(np.float64) - ref))) / scale if ref.size else 0.0


def _ort(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    data = model if isinstance(model, (str, bytes)) else model.SerializeToString()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


_ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
               np.dtype(np.int32): TensorProto.INT32, np.dtype(bool): TensorProto.BOOL,
               np.dtype(np.float16): TensorProto.FLOAT16}


def _model(nodes: list[Any], feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
           outputs: list[str], opset: int = 17, dims: dict[str, list[Any]] | None = None) -> Any:
    dims = dims or {}
    ins = [helper.make_tensor_value_info(n, _ONNX_TYPES[a.dtype], dims.get(n, list(a.shape)))
           for n, a in feeds.items()]
    graph = helper.make_graph(
        nodes, "g", ins, [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializer=[onnx.numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _check(nodes: Any, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray] | None = None,
           outputs: list[str] | None = None, opset: int = 17, tol: float = TOL,
           dims: dict[str, list[Any]] | None = None) -> list[np.ndarray]:
    nodes = nodes if isinstance(nodes, list) else [nodes]
    outputs = outputs or [o for o in nodes[-1].output if o]
    model = _model(nodes, feeds, inits or {}, outputs, opset, dims)
    ref = _ort(model, feeds)
    imp, compiled = _build(model)
    got = [g.numpy() for g in compiled.run([ember.asarray(feeds[n]) for n in imp.input_names])]
    for g, r in zip(got, ref, strict=True):
        assert g.shape == r.shape, (g.shape, r.shape)
        assert g.dtype == r.dtype, (g.dtype, r.dtype)
        assert _rel_err(g, r) <= tol, (g, r)
    return got


RNG = np.random.default_rng(0)


def _f(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _i(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


N = helper.make_node
