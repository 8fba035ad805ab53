"""ember.onnx operator by operator: hand-built ONNX graphs of one or a few nodes (elementwise,
products, convolutions, normalizations, reductions, shapes and data movement), imported,
built and run against onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from _helpers_onnx import RNG, N, _check, _f, _i  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

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
