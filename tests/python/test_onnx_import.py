"""ember.onnx: ONNX models exported by torch and hand-built ONNX graphs, imported, built and
run, against onnxruntime (and eager torch for the exported models)."""

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
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
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


# ---- hand-built graphs ------------------------------------------------------------------------
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

UNARY = ["Relu", "Sigmoid", "Tanh", "Exp", "Erf", "Neg", "Abs", "Floor", "Ceil", "Sin", "Cos",
         "Atan", "Softplus", "Sign", "Softsign", "HardSwish"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op: str) -> None:
    _check(N(op, ["x"], ["y"]), {"x": _f(3, 5)})


def test_unary_positive_domain() -> None:
    x = np.abs(_f(4, 4)) + 0.1
    _check([N("Sqrt", ["x"], ["a"]), N("Log", ["a"], ["b"]), N("Reciprocal", ["b"], ["y"])],
           {"x": x})


@pytest.mark.parametrize(("op", "attrs"), [
    ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.3}), ("Elu", {"alpha": 0.5}),
    ("Selu", {}), ("Celu", {"alpha": 2.0}), ("HardSigmoid", {}),
    ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}), ("ThresholdedRelu", {"alpha": 0.2}),
])
def test_activation_attributes(op: str, attrs: dict[str, Any]) -> None:
    _check(N(op, ["x"], ["y"], **attrs), {"x": _f(3, 7)})


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate: str) -> None:
    _check(N("Gelu", ["x"], ["y"], approximate=approximate), {"x": _f(4, 6)}, opset=20)


def test_prelu_broadcast_slope() -> None:
    _check(N("PRelu", ["x", "s"], ["y"]), {"x": _f(2, 3, 4)}, {"s": _f(3, 1)})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"])
def test_binary_broadcast(op: str) -> None:
    a = np.abs(_f(2, 3, 4)) + 0.5 if op == "Pow" else _f(2, 3, 4)
    _check(N(op, ["a", "b"], ["y"]), {"a": a, "b": _f(3, 1)})


def test_variadic_three_inputs() -> None:
    _check([N("Sum", ["a", "b", "c"], ["s"]), N("Max", ["s", "a", "c"], ["y"])],
           {"a": _f(2, 3), "b": _f(3), "c": _f(2, 1)})


def test_integer_div_truncates_and_mod() -> None:
    a = _i(7, -7, 7, -7, 9, 0).reshape(2, 3)
    b = _i(2, 2, -2, -2, 4, 3).reshape(2, 3)
    _check([N("Div", ["a", "b"], ["q"]), N("Mod", ["a", "b"], ["r"]),
            N("Mod", ["a", "b"], ["f"], fmod=1)], {"a": a, "b": b}, outputs=["q", "r", "f"])


def test_pow_integer_exponent() -> None:
    _check(N("Pow", ["a", "e"], ["y"]), {"a": _f(3, 3)}, {"e": np.array(2, dtype=np.int64)})


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_comparisons(op: str) -> None:
    a = RNG.integers(0, 3, (3, 4)).astype(np.float32)
    _check(N(op, ["a", "b"], ["y"]), {"a": a, "b": np.array([1.0], dtype=np.float32)})


def test_logic_and_where() -> None:
    _check([N("Greater", ["a", "z"], ["p"]), N("Less", ["b", "z"], ["q"]),
            N("And", ["p", "q"], ["r1"]), N("Or", ["p", "q"], ["r2"]), N("Not", ["r1"], ["r3"]),
            N("Xor", ["r2", "r3"], ["m"]), N("Where", ["m", "a", "b"], ["y"])],
           {"a": _f(3, 4), "b": _f(4)}, {"z": np.zeros((), np.float32)})


@pytest.mark.parametrize(("to", "src"), [
    (TensorProto.INT64, "f"), (TensorProto.FLOAT, "i"), (TensorProto.BOOL, "f"),
    (TensorProto.INT32, "i"), (TensorProto.FLOAT16, "f")])
def test_cast(to: int, src: str) -> None:
    x = _f(3, 4) * 4 if src == "f" else RNG.integers(-5, 5, (3, 4)).astype(np.int64)
    _check(N("Cast", ["x"], ["y"], to=to), {"x": x}, tol=1e-3)


@pytest.mark.parametrize("bounds", ["both", "min", "max", "none"])
def test_clip(bounds: str) -> None:
    inits = {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}
    ins = {"both": ["x", "lo", "hi"], "min": ["x", "lo"], "max": ["x", "", "hi"],
           "none": ["x"]}[bounds]
    _check(N("Clip", ins, ["y"]), {"x": _f(4, 5)}, inits)


def test_clip_tensor_bound() -> None:
    _check(N("Clip", ["x", "lo"], ["y"]), {"x": _f(4, 5), "lo": np.array(0.1, np.float32)})


# ---- products, convolutions, normalizations ---------------------------------------------------
@pytest.mark.parametrize(("ta", "tb", "alpha", "beta", "c"), [
    (0, 0, 1.0, 1.0, "row"), (0, 1, 1.0, 1.0, "full"), (1, 0, 0.5, 2.0, "row"),
    (1, 1, 2.0, 0.0, "row"), (0, 1, 1.0, 1.0, None)])
def test_gemm(ta: int, tb: int, alpha: float, beta: float, c: str | None) -> None:
    a = _f(5, 3) if ta else _f(3, 5)
    b = _f(4, 5) if tb else _f(5, 4)
    inits = {"b": b}
    ins = ["a", "b"]
    if c:
        inits["c"] = _f(4) if c == "row" else _f(3, 4)
        ins.append("c")
    _check(N("Gemm", ins, ["y"], transA=ta, transB=tb, alpha=alpha, beta=beta), {"a": a}, inits)


@pytest.mark.parametrize(("sa", "sb"), [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)),
                                        ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 3))])
def test_matmul(sa: tuple, sb: tuple) -> None:
    _check(N("MatMul", ["a", "b"], ["y"]), {"a": _f(*sa), "b": _f(*sb)})


@pytest.mark.parametrize("attrs", [
    {}, {"pads": [1, 1, 1, 1]}, {"strides": [2, 2], "pads": [1, 0, 1, 0]},
    {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, {"group": 2, "pads": [1, 1, 1, 1]},
    {"pads": [0, 1, 2, 1]}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER"}, {"auto_pad": "VALID"}])
def test_conv2d(attrs: dict[str, Any]) -> None:
    group = attrs.get("group", 1)
    _check(N("Conv", ["x", "w", "b"], ["y"], **attrs), {"x": _f(2, 4, 9, 8)},
           {"w": _f(6, 4 // group, 3, 3), "b": _f(6)})


def test_conv1d_depthwise_no_bias() -> None:
    _check(N("Conv", ["x", "w"], ["y"], group=4, pads=[2, 1], strides=[2]),
           {"x": _f(2, 4, 17)}, {"w": _f(4, 1, 5)})


def test_batch_normalization() -> None:
    _check(N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3),
           {"x": _f(2, 3, 4, 5)},
           {"s": _f(3), "b": _f(3), "m": _f(3), "v": np.abs(_f(3)) + 0.5})


@pytest.mark.parametrize(("op", "axis", "opset"), [
    ("Softmax", -1, 13), ("Softmax", 1, 17), ("LogSoftmax", -1, 13), ("LogSoftmax", 0, 18)])
def test_softmax(op: str, axis: int, opset: int) -> None:
    _check(N(op, ["x"], ["y"], axis=axis), {"x": _f(3, 4, 5) * 3}, opset=opset)


@pytest.mark.parametrize(("axis", "scale_shape"), [(-1, (6,)), (1, (4, 6)), (-1, None)])
def test_layer_normalization(axis: int, scale_shape: tuple | None) -> None:
    ins, inits = ["x"], {}
    if scale_shape:
        ins += ["s", "b"]
        inits = {"s": _f(*scale_shape), "b": _f(*scale_shape)}
    else:
        ins += ["s"]
        inits = {"s": _f(6)}
    _check(N("LayerNormalization", ins, ["y"], axis=axis, epsilon=1e-5), {"x": _f(2, 4, 6)},
           inits)


@pytest.mark.parametrize(("op", "attrs"), [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("MaxPool", {"kernel_shape": [2, 2], "ceil_mode": 1, "strides": [2, 2]}),
    ("MaxPool", {"kernel_shape": [3, 3], "dilations": [2, 2]}),
    ("MaxPool", {"kernel_shape": [2, 2], "pads": [0, 0, 1, 1]}),
    ("MaxPool", {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    ("MaxPool", {"kernel_shape": [3], "strides": [2]}),
])
def test_pools(op: str, attrs: dict[str, Any]) -> None:
    rank = len(attrs["kernel_shape"])
    x = _f(2, 3, 9) if rank == 1 else _f(2, 3, 9, 8)
    _check(N(op, ["x"], ["y"], **attrs), {"x": x})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools(op: str) -> None:
    _check(N(op, ["x"], ["y"]), {"x": _f(2, 3, 5, 4)})


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                "ReduceProd", "ReduceL2", "ReduceLogSumExp"])
@pytest.mark.parametrize(("opset", "axes", "keepdims"), [
    (13, [1], 1), (18, [0, -1], 0), (18, None, 1)])
def test_reductions(op: str, opset: int, axes: list[int] | None, keepdims: int) -> None:
    x = (np.abs(_f(3, 4, 5)) + 0.5) if op == "ReduceProd" else _f(3, 4, 5)
    by_input = op == "ReduceSum" or opset >= 18
    attrs: dict[str, Any] = {"keepdims": keepdims}
    ins, inits = ["x"], {}
    if axes is not None:
        if by_input:
            ins.append("axes")
            inits["axes"] = _i(*axes)
        else:
            attrs["axes"] = axes
    _check(N(op, ins, ["y"], **attrs), {"x": x}, inits, opset=opset)


def test_reduce_noop_with_empty_axes() -> None:
    _check(N("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1), {"x": _f(3, 4)})


@pytest.mark.parametrize(("op", "attrs"), [
    ("ArgMax", {"axis": 1}), ("ArgMin", {"axis": -1, "keepdims": 0}),
    ("ArgMax", {"axis": 0, "select_last_index": 1})])
def test_arg(op: str, attrs: dict[str, Any]) -> None:
    x = RNG.integers(0, 3, (4, 5)).astype(np.float32)  # ties
    _check(N(op, ["x"], ["y"], **attrs), {"x": x})


@pytest.mark.parametrize("largest", [1, 0])
def test_topk(largest: int) -> None:
    x = RNG.permutation(40).astype(np.float32).reshape(4, 10)
    _check(N("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest), {"x": x},
           {"k": _i(3)})


# ---- shapes and data movement -----------------------------------------------------------------
@pytest.mark.parametrize(("shape", "allowzero"), [
    ([0, -1], 0), ([-1, 5, 2], 0), ([2, 0, 5], 0), ([4, 10], 1)])
def test_reshape(shape: list[int], allowzero: int) -> None:
    _check(N("Reshape", ["x", "s"], ["y"], allowzero=allowzero), {"x": _f(2, 4, 5)},
           {"s": _i(*shape)}, opset=14)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(axis: int) -> None:
    _check(N("Flatten", ["x"], ["y"], axis=axis), {"x": _f(2, 3, 4)})


@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1]])
def test_transpose(perm: list[int] | None) -> None:
    attrs = {"perm": perm} if perm else {}
    _check(N("Transpose", ["x"], ["y"], **attrs), {"x": _f(2, 3, 4)})


def test_concat_and_split() -> None:
    _check([N("Concat", ["a", "b"], ["c"], axis=1),
            N("Split", ["c", "s"], ["p", "q", "r"], axis=1)],
           {"a": _f(2, 3, 4), "b": _f(2, 5, 4)}, {"s": _i(2, 4, 2)}, outputs=["p", "q", "r"])


def test_split_num_outputs() -> None:
    _check(N("Split", ["x"], ["p", "q", "r"], axis=-1, num_outputs=3), {"x": _f(2, 7)},
           opset=18, outputs=["p", "q", "r"])


@pytest.mark.parametrize(("starts", "ends", "axes", "steps"), [
    ([1], [3], [0], None), ([0, -3], [2, 100], [1, 2], None), ([-1], [-100], [1], [-1]),
    ([5, 0], [0, 8], [2, 0], [-2, 3]), ([1], [2**63 - 1], [-1], [2])])
def test_slice(starts: list[int], ends: list[int], axes: list[int], steps: list[int] | None
               ) -> None:
    inits = {"s": _i(*starts), "e": _i(*ends), "a": _i(*axes)}
    ins = ["x", "s", "e", "a"]
    if steps:
        inits["t"] = _i(*steps)
        ins.append("t")
    _check(N("Slice", ins, ["y"]), {"x": _f(4, 5, 6)}, inits)


def test_squeeze_unsqueeze() -> None:
    _check([N("Unsqueeze", ["x", "a"], ["u"]), N("Squeeze", ["u", "b"], ["v"]),
            N("Squeeze", ["v"], ["y"])],
           {"x": _f(3, 1, 4)}, {"a": _i(0, -1), "b": _i(0)})


@pytest.mark.parametrize("shape", [[2, 3, 4], [3, 1], [1, 1, 4], [2, 1, 1]])
def test_expand(shape: list[int]) -> None:
    _check(N("Expand", ["x", "s"], ["y"]), {"x": _f(3, 1)}, {"s": _i(*shape)})


def test_tile() -> None:
    _check(N("Tile", ["x", "r"], ["y"]), {"x": _f(2, 3)}, {"r": _i(2, 3)})


@pytest.mark.parametrize(("index", "axis"), [
    (np.array(1), 0), (_i(0, 2, -1), 1), (np.array([[0, 1], [3, 2]]), -1)])
def test_gather_constant_indices(index: np.ndarray, axis: int) -> None:
    _check(N("Gather", ["x", "i"], ["y"], axis=axis), {"x": _f(3, 4, 4)},
           {"i": index.astype(np.int64)})


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_runtime_indices(axis: int) -> None:
    idx = RNG.integers(-3, 3, (2, 3)).astype(np.int64)
    _check(N("Gather", ["x", "i"], ["y"], axis=axis), {"x": _f(3, 4, 5), "i": idx})


def test_gather_elements() -> None:
    idx = RNG.integers(-4, 4, (3, 2)).astype(np.int64)
    _check(N("GatherElements", ["x", "i"], ["y"], axis=1), {"x": _f(3, 4), "i": idx})


@pytest.mark.parametrize(("mode", "pads"), [
    ("constant", [0, 1, 2, 0, 2, 1]), ("constant", [1, -1, 0, 0, 1, 2]),
    ("edge", [0, 2, 1, 0, 1, 2]), ("reflect", [0, 2, 1, 0, 1, 2]),
    ("wrap", [0, 1, 1, 0, 2, 1])])
def test_pad(mode: str, pads: list[int]) -> None:
    _check(N("Pad", ["x", "p", "v"], ["y"], mode=mode), {"x": _f(2, 4, 5)},
           {"p": _i(*pads), "v": np.array(1.5, np.float32)}, opset=19)


def test_pad_axes() -> None:
    _check(N("Pad", ["x", "p", "", "a"], ["y"]), {"x": _f(2, 4, 5)},
           {"p": _i(1, 2, 3, 0), "a": _i(-1, 0)}, opset=18)


@pytest.mark.parametrize(("upper", "k"), [(1, 0), (0, 0), (1, 1), (0, -1)])
def test_trilu(upper: int, k: int) -> None:
    _check(N("Trilu", ["x", "k"], ["y"], upper=upper), {"x": _f(2, 4, 5)}, {"k": _i(k)})


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(exclusive: int, reverse: int) -> None:
    _check(N("CumSum", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse),
           {"x": _f(3, 5)}, {"a": _i(1)})


def test_dropout_identity_constant() -> None:
    c = helper.make_tensor("c", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    _check([N("Constant", [], ["k"], value=c), N("Dropout", ["x"], ["d"]),
            N("Identity", ["d"], ["e"]), N("Add", ["e", "k"], ["y"])], {"x": _f(2, 3)})


@pytest.mark.parametrize("mode", ["nearest", "linear", "linear_align"])
def test_resize(mode: str) -> None:
    attrs: dict[str, Any] = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                             "nearest_mode": "floor"}
    if mode != "nearest":
        attrs = {"mode": "linear", "coordinate_transformation_mode":
                 "align_corners" if mode == "linear_align" else "half_pixel"}
    _check(N("Resize", ["x", "", "s"], ["y"], **attrs), {"x": _f(1, 2, 4, 5)},
           {"s": np.array([1, 1, 2, 3], np.float32)})


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
