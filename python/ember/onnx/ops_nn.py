"""Neural-network ONNX operators: Conv, BatchNormalization, Gemm, MatMul, Softmax,
LogSoftmax, LayerNormalization, pools, reductions, ArgMax/ArgMin, TopK, Resize."""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np

import ember
from ember.onnx.errors import unsupported
from ember.onnx.ops_data import _pad_constant
from ember.onnx.ops_shape import _axis, take
from ember.onnx.registry import NotFoldable, converter, folder
from ember.onnx.values import FLOAT_DTYPES, dtype_of, is_symbolic_array, shape_of

ops = ember.ops


# ---- convolutions and pools ------------------------------------------------------------------
def _window(ctx: Any, x: Any, kernel: list[int],
            pad_value: float | None) -> tuple[Any, list[int], list[int], list[int]]:
    """x with any asymmetric padding applied, and the symmetric pads, strides and dilations
    left for ember's operator (ONNX pads are [begin..., end...]; auto_pad SAME_* pads by
    the input sizes)."""
    k = len(kernel)
    strides = [int(s) for s in ctx.attr("strides", [1] * k)]
    dilations = [int(d) for d in ctx.attr("dilations", [1] * k)]
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    spatial = shape_of(x)[2:]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if any(not isinstance(s, int) for s in spatial):
            raise unsupported(f"auto_pad={auto_pad} with symbolic spatial sizes")
        pads = [0] * (2 * k)
        for i in range(k):
            out = -(-spatial[i] // strides[i])
            total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - spatial[i], 0)
            small, big = total // 2, total - total // 2
            pads[i], pads[i + k] = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
    elif auto_pad == "VALID":
        pads = [0] * (2 * k)
    elif auto_pad == "NOTSET":
        pads = [int(p) for p in ctx.attr("pads", [0] * (2 * k))]
    else:
        raise unsupported(f"auto_pad={auto_pad!r}")
    sym = [min(pads[i], pads[i + k]) for i in range(k)]
    for i in range(k):
        before, after = pads[i] - sym[i], pads[i + k] - sym[i]
        if before or after:
            if pad_value is None:
                raise unsupported("asymmetric pads with count_include_pad=0")
            x = _pad_constant(x, 2 + i, before, after, pad_value)
    return x, sym, strides, dilations


def _as_2d(x: Any, k: int) -> Any:
    """A 1-d spatial input [N, C, L] as [N, C, 1, L] for the 2-d operators."""
    if k == 1:
        return ops.unsqueeze(x, [2])
    if k != 2:
        raise unsupported(f"a {k}-d window (ember has 1-d and 2-d)")
    return x


def _back_1d(y: Any, k: int) -> Any:
    return ops.squeeze(y, [2]) if k == 1 else y


@converter("Conv")
def _conv(ctx: Any, xs: list[Any]) -> list[Any]:
    x, w = ctx.tensor(xs[0]), ctx.tensor(xs[1])
    kernel = [int(d) for d in shape_of(w)[2:]]
    k = len(kernel)
    if k not in (1, 2):
        raise unsupported(f"a {k}-d Conv (ember has 1-d and 2-d)")
    x, pads, strides, dilations = _window(ctx, x, kernel, 0.0)
    group = int(ctx.attr("group", 1))
    conv = ops.conv1d if k == 1 else ops.conv2d
    y = conv(x, w, strides, pads, dilations, group)
    if len(xs) > 2 and xs[2] is not None:
        y = ops.add(y, ops.reshape(ctx.tensor(xs[2]), [-1] + [1] * k))
    return [y]


def _pool(ctx: Any, xs: list[Any], maximum: bool) -> list[Any]:
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        raise unsupported("MaxPool's Indices output")
    x = ctx.tensor(xs[0])
    kernel = [int(d) for d in ctx.attr("kernel_shape")]
    k = len(kernel)
    include_pad = bool(ctx.attr("count_include_pad", 0))
    fill = (-math.inf if dtype_of(x) in FLOAT_DTYPES else np.iinfo(dtype_of(x)).min) if maximum \
        else (0.0 if include_pad else None)
    x, pads, strides, dilations = _window(ctx, x, kernel, fill)
    ceil_mode = bool(ctx.attr("ceil_mode", 0))
    x = _as_2d(x, k)
    if k == 1:
        kernel, pads, strides, dilations = [1] + kernel, [0] + pads, [1] + strides, [1] + dilations
    if maximum:
        y = ops.max_pool2d(x, kernel, strides, pads, dilations, ceil_mode)
    else:
        if any(d != 1 for d in dilations):
            raise unsupported("AveragePool with dilations")
        y = ops.avg_pool2d(x, kernel, strides, pads, ceil_mode, include_pad)
    return [_back_1d(y, k)]


@converter("MaxPool")
def _max_pool(ctx: Any, xs: list[Any]) -> list[Any]:
    if int(ctx.attr("storage_order", 0)):
        raise unsupported("MaxPool with storage_order=1")
    return _pool(ctx, xs, True)


@converter("AveragePool")
def _average_pool(ctx: Any, xs: list[Any]) -> list[Any]:
    return _pool(ctx, xs, False)


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    dims = list(range(2, len(shape_of(x))))
    fn = ops.mean if ctx.op_type == "GlobalAveragePool" else ops.max
    return [fn(x, dims, True)]


@converter("BatchNormalization")
def _batch_norm(ctx: Any, xs: list[Any]) -> list[Any]:
    if ctx.attr("training_mode", 0) or any(o for o in ctx.node.output[1:]):
        raise unsupported("BatchNormalization in training mode")
    x, scale, bias, mean, var = (ctx.tensor(v) for v in xs[:5])
    return [ops.batch_norm(x, mean, var, scale, bias, float(ctx.attr("epsilon", 1e-5)))]


# ---- products --------------------------------------------------------------------------------
@converter("MatMul")
def _matmul(ctx: Any, xs: list[Any]) -> list[Any]:
    return [ops.matmul(ctx.tensor(xs[0]), ctx.tensor(xs[1]))]


def _transposed(ctx: Any, v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ctx.tensor(np.ascontiguousarray(v.T))
    return ops.transpose(v, 0, 1)


@converter("Gemm")
def _gemm(ctx: Any, xs: list[Any]) -> list[Any]:
    a = _transposed(ctx, xs[0]) if ctx.attr("transA", 0) else ctx.tensor(xs[0])
    b = _transposed(ctx, xs[1]) if ctx.attr("transB", 0) else ctx.tensor(xs[1])
    y = ops.matmul(a, b)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if alpha != 1.0:
        y = y * alpha
    if len(xs) > 2 and xs[2] is not None and beta != 0.0:
        c = ctx.tensor(xs[2])
        y = ops.add(y, c * beta if beta != 1.0 else c)
    return [y]


# ---- normalizations --------------------------------------------------------------------------
@converter("Softmax")
def _softmax(ctx: Any, xs: list[Any]) -> list[Any]:
    return [ops.softmax(ctx.tensor(xs[0]), int(ctx.attr("axis", -1)))]


@converter("LogSoftmax")
def _log_softmax(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    axis = int(ctx.attr("axis", -1))
    y = ops.sub(x, ops.max(x, axis, True))
    return [ops.sub(y, ops.log(ops.sum(ops.exp(y), axis, True)))]


@converter("LayerNormalization", since=17)
def _layer_norm(ctx: Any, xs: list[Any]) -> list[Any]:
    if any(o for o in ctx.node.output[1:]):
        raise unsupported("LayerNormalization's Mean and InvStdDev outputs")
    x = ctx.tensor(xs[0])
    n = len(shape_of(x))
    axis = _axis(int(ctx.attr("axis", -1)), n)
    eps = float(ctx.attr("epsilon", 1e-5))
    scale = ctx.tensor(xs[1]) if len(xs) > 1 else None
    bias = ctx.tensor(xs[2]) if len(xs) > 2 else None
    normalized = shape_of(x)[axis:]
    fits = all(v is None or shape_of(v) == normalized for v in (scale, bias))
    if fits:
        return [ops.layer_norm(x, n - axis, scale, bias, eps)]
    y = ops.layer_norm(x, n - axis, None, None, eps)
    y = ops.mul(y, scale) if scale is not None else y
    return [ops.add(y, bias) if bias is not None else y]


# ---- reductions ------------------------------------------------------------------------------
def _reduce_axes(ctx: Any, xs: list[Any], n: int) -> list[int] | None:
    """The axes reduced, None for all of them, [] for none (noop_with_empty_axes)."""
    if len(xs) > 1 and xs[1] is not None:
        axes = ctx.ints(xs[1], f"{ctx.op_type}'s axes")
    else:
        axes = [int(a) for a in ctx.attr("axes", [])]
    if not axes:
        return [] if ctx.attr("noop_with_empty_axes", 0) else None
    return sorted(_axis(a, n) for a in axes)


def _reduction(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    n = len(shape_of(x))
    axes = _reduce_axes(ctx, xs, n)
    keep = bool(ctx.attr("keepdims", 1))
    if axes == []:
        return [x]
    dims = list(range(n)) if axes is None else axes
    op = ctx.op_type
    if op == "ReduceSumSquare":
        return [ops.sum(ops.mul(x, x), dims, keep)]
    if op == "ReduceL1":
        return [ops.sum(ops.abs(x), dims, keep)]
    if op == "ReduceL2":
        return [ops.sqrt(ops.sum(ops.mul(x, x), dims, keep))]
    if op == "ReduceLogSum":
        return [ops.log(ops.sum(x, dims, keep))]
    if op == "ReduceLogSumExp":
        m = ops.max(x, dims, True)
        y = ops.add(ops.log(ops.sum(ops.exp(ops.sub(x, m)), dims, True)), m)
        return [y if keep else ops.squeeze(y, dims)]
    fn = {"ReduceSum": ops.sum, "ReduceMean": ops.mean, "ReduceMax": ops.max,
          "ReduceMin": ops.min, "ReduceProd": ops.prod}[op]
    return [fn(x, dims, keep)]


@folder("ReduceSum", "ReduceProd")
def _fold_size_reduction(ctx: Any, xs: list[Any]) -> list[Any]:
    """The sum or product of sizes, some symbolic (numeric arrays fold by reference)."""
    x = xs[0]
    if not is_symbolic_array(x) or x.ndim != 1 or _reduce_axes(ctx, xs, 1) == []:
        raise NotFoldable("not a 1-d array of sizes")
    out = functools.reduce(operator.add if ctx.op_type == "ReduceSum" else operator.mul,
                           list(x), 0 if ctx.op_type == "ReduceSum" else 1)
    return [np.array([out] if ctx.attr("keepdims", 1) else out, dtype=object)]


converter("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")(_reduction)


@converter("ArgMax", "ArgMin")
def _arg(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    axis = _axis(int(ctx.attr("axis", 0)), len(shape_of(x)))
    keep = bool(ctx.attr("keepdims", 1))
    fn = ops.argmax if ctx.op_type == "ArgMax" else ops.argmin
    if not ctx.attr("select_last_index", 0):
        return [fn(x, axis, keep)]
    size = shape_of(x)[axis]
    if not isinstance(size, int):
        raise unsupported("select_last_index along a symbolic dimension")
    flipped = take(x, axis, list(range(size - 1, -1, -1)))
    return [ops.sub(size - 1, fn(flipped, axis, keep))]


@converter("TopK")
def _topk(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    k = ctx.ints(xs[1], "TopK's k")[0]
    axis = _axis(int(ctx.attr("axis", -1)), len(shape_of(x)))
    values, indices = ops.sort(x, axis, bool(ctx.attr("largest", 1)))
    return [ops.slice(values, [axis], [0], [k], [1]), ops.slice(indices, [axis], [0], [k], [1])]


# ---- resize ----------------------------------------------------------------------------------
@converter("Resize")
def _resize(ctx: Any, xs: list[Any]) -> list[Any]:
    x = ctx.tensor(xs[0])
    shape = shape_of(x)
    if len(shape) != 4 or any(not isinstance(d, int) for d in shape[2:]):
        raise unsupported("Resize of other than a [N, C, H, W] input with static H and W")
    scales = xs[2] if len(xs) > 2 else None
    out_sizes = xs[3] if len(xs) > 3 else None
    if out_sizes is not None and out_sizes.size:
        out = ctx.ints(out_sizes, "Resize's sizes")[-2:]
        if ctx.attr("axes") is None and ctx.ints(out_sizes, "Resize's sizes")[:2] != [
                d if isinstance(d, int) else -1 for d in shape[:2]]:
            raise unsupported("Resize of the batch or channel dimension")
    elif scales is not None and scales.size:
        sc = [float(s) for s in np.asarray(scales).reshape(-1)]
        if len(sc) == 4 and sc[:2] != [1.0, 1.0]:
            raise unsupported("Resize of the batch or channel dimension")
        out = [int(math.floor(n * s)) for n, s in zip(shape[2:], sc[-2:], strict=True)]
        if any(o != n * s for o, n, s in zip(out, shape[2:], sc[-2:], strict=True)):
            raise unsupported("Resize by scales that do not give whole sizes")
    else:
        raise unsupported("Resize without scales or sizes")
    mode = ctx.attr("mode", "nearest")
    coord = ctx.attr("coordinate_transformation_mode", "half_pixel")
    if ctx.attr("antialias", 0) or ctx.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise unsupported("Resize with antialias or a keep_aspect_ratio_policy")
    if mode == "nearest":
        if coord == "asymmetric" and ctx.attr("nearest_mode", "round_prefer_floor") == "floor":
            return [ops.upsample_nearest2d(x, out)]
        raise unsupported(f"nearest Resize with {coord} coordinates and nearest_mode="
                          f"{ctx.attr('nearest_mode', 'round_prefer_floor')}")
    if mode == "linear":
        if coord in ("half_pixel", "pytorch_half_pixel") and min(out) > 1:
            return [ops.upsample_bilinear2d(x, out, False)]
        if coord == "align_corners":
            return [ops.upsample_bilinear2d(x, out, True)]
        raise unsupported(f"linear Resize with {coord} coordinates")
    raise unsupported(f"Resize mode {mode!r}")
