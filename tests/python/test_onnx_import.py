"""ember.onnx: ONNX models exported by torch, imported, built and run against onnxruntime and
eager torch; symbolic sizes and the folding of shape subgraphs; import errors. The hand-built
graph of each operator is in test_onnx_ops.py."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from _helpers_onnx import RNG, TOL, N, _build, _check, _f, _i, _model, _ort, _rel_err  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


# ---- exported benchmark models -----------------------------------------------------------------
def _models() -> Any:
    sys.path.insert(0, str(REPO))
    torch = pytest.importorskip("torch")
    from benchmarks.models import MODELS

    return torch, MODELS


def _export(torch: Any, model: Any, inputs: tuple, path: Path, dynamo: bool,
            dynamic_batch: bool = False) -> None:
    names = [f"in{i}" for i in range(len(inputs))]
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        if dynamo:
            pytest.importorskip("onnxscript")
            shapes = None
            if dynamic_batch:
                batch = torch.export.Dim("batch")
                shapes = tuple({0: batch} for _ in inputs)
            torch.onnx.export(model, inputs, str(path), dynamo=True, dynamic_shapes=shapes)
        else:
            axes = {n: {0: "batch"} for n in names} if dynamic_batch else None
            torch.onnx.export(model, inputs, str(path), dynamo=False, input_names=names,
                              dynamic_axes=axes, opset_version=17)


def _check_model(torch: Any, spec: Any, model: Any, path: Path, batch: int) -> None:
    imp, compiled = _build(path)
    inputs = spec.example_inputs(batch_size=batch, small=True)
    feeds = {n: t.numpy() for n, t in zip(imp.input_names, inputs, strict=True)}
    ref_ort = _ort(str(path), feeds)
    got = [g.numpy() for g in compiled.run([ember.asarray(feeds[n]) for n in imp.input_names])]
    with torch.no_grad():
        eager = model(*inputs)
    eager = [eager] if isinstance(eager, torch.Tensor) else list(eager)
    assert len(got) == len(ref_ort) == len(eager)
    for g, r, e in zip(got, ref_ort, eager, strict=True):
        assert g.shape == r.shape
        assert _rel_err(g, r) < TOL
        assert _rel_err(g, e.numpy()) < TOL


MODEL_CASES = [
    ("mlp", False), ("resnet18", False), ("mobilenet_v2", False), ("bert", False),
    ("gpt2", False), ("gpt2_sdpa", False), ("conv1d_net", False), ("unet_block", False),
    ("bert", True), ("gpt2", True),  # resnet18 exported by dynamo: test_dynamic_batch
]


@pytest.mark.parametrize(("name", "dynamo"), MODEL_CASES,
                         ids=[f"{n}-{'dynamo' if d else 'torchscript'}" for n, d in MODEL_CASES])
def test_benchmark_model(tmp_path: Path, name: str, dynamo: bool) -> None:
    torch, models = _models()
    if name not in models:
        pytest.skip(f"no benchmark model {name}")
    spec = models[name]
    model = spec.build(small=True)
    path = tmp_path / f"{name}.onnx"
    _export(torch, model, spec.example_inputs(batch_size=2, small=True), path, dynamo)
    _check_model(torch, spec, model, path, 2)


@pytest.mark.parametrize(("name", "dynamo"), [("bert", False), ("resnet18", True)])
def test_dynamic_batch(tmp_path: Path, name: str, dynamo: bool) -> None:
    torch, models = _models()
    spec = models[name]
    model = spec.build(small=True)
    path = tmp_path / f"{name}.onnx"
    _export(torch, model, spec.example_inputs(batch_size=2, small=True), path, dynamo, True)
    imp = ember.onnx.import_model(path)
    for t in imp.graph.inputs:
        assert isinstance(t.shape[0], str)  # the batch stays symbolic
    for batch in (1, 3):
        _check_model(torch, spec, model, path, batch)


# ---- folding and symbolic sizes ---------------------------------------------------------------
def test_shape_subgraph_folds_with_symbolic_dims() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape on a dim_param input: a symbolic
    reshape, the inputs symbolic, two sizes run right."""
    nodes = [
        N("Shape", ["x"], ["s"]), N("Gather", ["s", "zero"], ["n"], axis=0),
        N("Shape", ["x"], ["tail"], start=1), N("ReduceProd", ["tail"], ["m"], keepdims=1),
        N("Unsqueeze", ["n", "ax"], ["n1"]), N("Concat", ["n1", "m"], ["shape"], axis=0),
        N("Reshape", ["x", "shape"], ["flat"]),
        N("ConstantOfShape", ["shape"], ["ones"],
          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        N("Add", ["flat", "ones"], ["y"]),
        N("Size", ["x"], ["size"]), N("Cast", ["size"], ["sizef"], to=TensorProto.FLOAT),
        N("Mul", ["y", "sizef"], ["z"]),
    ]
    inits = {"zero": np.array(0, np.int64), "ax": _i(0)}
    for n in (2, 5):
        _check(nodes, {"x": _f(n, 3, 4)}, inits, outputs=["z"], dims={"x": ["batch", 3, 4]})
    imp = ember.onnx.import_model(_model(nodes, {"x": _f(2, 3, 4)}, inits, ["z"],
                                         dims={"x": ["batch size", 3, None]}))
    assert list(imp.graph.inputs[0].shape) == ["batch_size", 3, "d0"]


def test_range_and_symbolic_range() -> None:
    nodes = [N("Shape", ["x"], ["s"]), N("Gather", ["s", "one"], ["n"], axis=0),
             N("Range", ["zero", "n", "step"], ["r"]),
             N("Cast", ["r"], ["rf"], to=TensorProto.FLOAT), N("Add", ["x", "rf"], ["y"])]
    inits = {"one": np.array(1, np.int64), "zero": np.array(0, np.int64),
             "step": np.array(1, np.int64)}
    for n in (3, 6):
        _check(nodes, {"x": _f(2, n)}, inits, dims={"x": [2, "len"]})


def test_shapes_override() -> None:
    m = _model([N("Relu", ["x"], ["y"])], {"x": _f(2, 3)}, {}, ["y"], dims={"x": ["a", 3]})
    imp = ember.onnx.import_model(m, shapes={"x": [4, "k"]})
    assert list(imp.graph.inputs[0].shape) == [4, "k"]
    assert imp.input_names == ["x"] and imp.output_names == ["y"] and imp.opset == 17


def test_int64_and_bool_inputs() -> None:
    _check([N("Gather", ["table", "ids"], ["e"]), N("Where", ["mask", "e", "zero"], ["y"])],
           {"ids": RNG.integers(0, 10, (2, 5)).astype(np.int64),
            "mask": RNG.integers(0, 2, (2, 5, 1)).astype(bool)},
           {"table": _f(10, 4), "zero": np.zeros((), np.float32)})


def test_float16_model() -> None:
    _check([N("Add", ["x", "b"], ["a"]), N("Relu", ["a"], ["y"])],
           {"x": _f(3, 4).astype(np.float16)}, {"b": _f(4).astype(np.float16)}, tol=1e-3)


# ---- errors -----------------------------------------------------------------------------------
def test_unsupported_operators_listed_with_counts() -> None:
    nodes = [N("NonMaxSuppression", ["x"], ["a"]), N("RoiAlign", ["a"], ["b"]),
             N("NonMaxSuppression", ["b"], ["c"]), N("Relu", ["c"], ["d"]),
             N("FusedGemm", ["d"], ["y"], domain="com.microsoft")]
    model = _model(nodes, {"x": _f(2, 3)}, {}, ["y"])
    with pytest.raises(ember.onnx.UnsupportedOnnxError) as info:
        ember.onnx.import_model(model)
    assert str(info.value) == (
        "ember cannot import the model: unsupported ONNX operators: NonMaxSuppression (x2), "
        "RoiAlign (x1), com.microsoft.FusedGemm (x1)")
    assert isinstance(info.value, ember.EmberError)


def test_unsupported_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    onnx.save(_model([N("Einsum", ["x"], ["y"], equation="ii->i")], {"x": _f(3, 3)}, {}, ["y"]),
              str(path))
    with pytest.raises(ember.onnx.UnsupportedOnnxError,
                       match=r"^ember cannot import model.onnx: unsupported ONNX operators: "
                             r"Einsum \(x1\)$"):
        ember.onnx.import_model(path)


def test_unsupported_attribute_names_the_node() -> None:
    model = _model([N("Resize", ["x", "", "s"], ["y"], mode="cubic")], {"x": _f(1, 1, 2, 2)},
                   {"s": np.array([1, 1, 2, 2], np.float32)}, ["y"])
    with pytest.raises(ember.onnx.UnsupportedOnnxError, match=r"\(Resize\): Resize mode 'cubic'"):
        ember.onnx.import_model(model)


@pytest.mark.parametrize("opset", [11, 22])
def test_opset_out_of_range(opset: int) -> None:
    model = _model([N("Relu", ["x"], ["y"])], {"x": _f(2)}, {}, ["y"], opset=opset)
    with pytest.raises(ember.onnx.UnsupportedOnnxError,
                       match=rf"ONNX opset {opset} is not supported; ember imports opsets 13 to "
                             r"21"):
        ember.onnx.import_model(model)


def test_damaged_files(tmp_path: Path) -> None:
    model = _model([N("Relu", ["x"], ["y"])], {"x": _f(2)}, {}, ["y"])
    data = model.SerializeToString()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 2])
    text = tmp_path / "text.onnx"
    text.write_bytes(b"this is not an onnx model\n" * 4)
    for bad in (truncated, text, b"", b"\x00\x01\x02"):
        with pytest.raises(ember.onnx.InvalidOnnxError, match="ember cannot import"):
            ember.onnx.import_model(bad)
    with pytest.raises(ember.onnx.InvalidOnnxError, match="no such file"):
        ember.onnx.import_model(tmp_path / "missing.onnx")
    with pytest.raises(ember.onnx.InvalidOnnxError, match="takes a path, bytes"):
        ember.onnx.import_model(42)


def test_import_ember_does_not_import_onnx() -> None:
    import subprocess

    code = "import sys, ember; assert 'onnx' not in sys.modules and 'ember.onnx' not in " \
           "sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_supported_operator_table() -> None:
    table = ember.onnx.supported_operators()
    assert table["Gelu"] == (20, 21)
    assert table["Conv"] == (13, 21)
    assert "NonMaxSuppression" not in table
