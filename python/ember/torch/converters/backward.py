"""Converters for the backward operators of training graphs (AOTAutograd's ATen graphs;
see ember.torch.training) that torch's core ATen decompositions leave whole:

- ``convolution_backward``: the input's gradient is the transposed convolution of the
  output's gradient (spatial_conv.conv_transpose, output_padding chosen to give back the
  input's size); the weight's gradient, in float32, ember's ``conv2d_weight_grad`` (a GEMM
  reading the input in place, or over chunks of output rows' windows; for a depthwise
  convolution one reduction), else one batched matrix product per group of the output's
  gradient and the input's im2col windows (spatial.unfold), summed over the batch inside
  the product; the bias's gradient a sum;
- ``max_pool2d_with_indices_backward``: the output's gradient added at the indices the
  forward returned (a scatter-add into each plane);
- ``avg_pool2d_backward`` and ``_adaptive_avg_pool2d_backward``: each output's gradient,
  divided by torch's divisor, added at every position of its window (the window table of
  the forward, spatial.avg_pool_windows / adaptive_avg_windows);
- ``index_put`` with integer indices (accumulate or not), which the decomposition of
  ``embedding_dense_backward`` produces: scatters.index_put, whose accumulation adds the
  repeated indices in order (exact and deterministic).

A gradient the operator's ``output_mask`` does not ask for is not computed.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ember.torch.context import torch_dtype
from ember.torch.converters import scatters, spatial, spatial_conv
from ember.torch.converters.aten import output_used
from ember.torch.converters.common import (
    constant,
    dtype_name,
    ops,
    rank,
    shape_of,
    static_int,
    unsupported,
    zeros_in_graph,
)
from ember.torch.converters.composite_math import int_constant
from ember.torch.registry import HIGH, builtin_registrations, register_function

aten = torch.ops.aten


def _wanted(output_mask: Any, index: int) -> bool:
    return bool(output_mask[index]) and output_used(index)


def _ints(v: Any, k: int, what: str) -> list[int]:
    vals = list(v) if isinstance(v, (list, tuple)) else [v]
    vals = [static_int(x, what) for x in vals]
    return vals * k if len(vals) == 1 else vals


def convolution_backward(grad_output: Any, input: Any, weight: Any, bias_sizes: Any,
                         stride: Any, padding: Any, dilation: Any, transposed: bool,
                         output_padding: Any, groups: int, output_mask: Any) -> Any:
    k = rank(input) - 2
    if transposed:
        raise unsupported("convolution_backward of a transposed convolution")
    if k not in (1, 2) or rank(input) != rank(grad_output):
        raise unsupported(f"convolution_backward of a rank-{rank(input)} input")
    s, p = _ints(stride, k, "a stride"), _ints(padding, k, "a padding")
    d = _ints(dilation, k, "a dilation")
    g = static_int(groups, "groups")
    kernel = [static_int(v, "a kernel size") for v in weight.shape[2:]]
    sizes = [static_int(v, "a spatial size") for v in input.shape[2:]]
    outs = [static_int(v, "a spatial size") for v in grad_output.shape[2:]]
    grad_input = grad_weight = grad_bias = None
    if _wanted(output_mask, 0):
        extra = [n - ((o - 1) * st - 2 * pp + dd * (kk - 1) + 1)
                 for n, o, st, pp, dd, kk in zip(sizes, outs, s, p, d, kernel, strict=True)]
        grad_input = spatial_conv.conv_transpose(grad_output, k, weight, None, s, p, extra, g, d)
    if _wanted(output_mask, 1):
        grad_weight = _conv_weight_grad(grad_output, input, weight, k, kernel, s, p, d, g)
    if _wanted(output_mask, 2):
        grad_bias = ops.sum(grad_output, [0] + list(range(2, rank(grad_output))), False)
    return grad_input, grad_weight, grad_bias


def _conv_weight_grad(grad_output: Any, input: Any, weight: Any, k: int, kernel: list[int],
                      s: list[int], p: list[int], d: list[int], g: int) -> Any:
    """dW[o, c, kk] = sum over n, l of dY[n, o, l] * im2col(X)[n, c * K + kk, l]. float32:
    ember's conv2d_weight_grad, whose scratch is far below the im2col (a copy of the input
    read in place, or the windows of a chunk of output rows at a time; a depthwise
    convolution's is one reduction over n and l, without windows); otherwise, for each group
    one matrix product [O/g, N*L] @ [N*L, C/g*K] on the whole im2col."""
    x, dy = input, grad_output
    if k == 1:  # as a 2-d convolution of height 1
        x, dy = ops.unsqueeze(x, [2]), ops.unsqueeze(dy, [2])
        kernel, s, p, d = [1] + kernel, [1] + s, [0] + p, [1] + d
    if dtype_name(x) == "float32":
        dw = ops.conv2d_weight_grad(dy, x, kernel, s, p, d, g)
        return ops.reshape(dw, shape_of(weight)) if k == 1 else dw
    cols = spatial.unfold(x, kernel, d, p, s)  # [N, C*K, L]
    o = static_int(weight.shape[0], "a weight size")
    cg_k = static_int(weight.shape[1], "a weight size") * math.prod(kernel)
    n = shape_of(x)[0]
    length = math.prod(static_int(v, "a spatial size") for v in shape_of(dy)[2:])
    dy = ops.reshape(dy, [n, g, o // g, length])
    cols = ops.reshape(cols, [n, g, cg_k, length])
    a = ops.reshape(ops.permute(dy, [1, 2, 0, 3]), [g, o // g, -1])  # [g, O/g, N*L]
    b = ops.reshape(ops.permute(cols, [1, 0, 3, 2]), [g, -1, cg_k])  # [g, N*L, C/g*K]
    return ops.reshape(ops.matmul(a, b), shape_of(weight))


def max_pool2d_with_indices_backward(grad_output: Any, self: Any, kernel_size: Any,
                                     stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
                                     indices: Any) -> Any:
    """The output's gradient added into each plane at the positions `indices` gives (flat
    positions within the plane, as the forward returned them)."""
    if rank(self) not in (3, 4):
        raise unsupported(f"max_pool2d_with_indices_backward of a rank-{rank(self)} input")
    src = ops.reshape(grad_output, [-1, _plane_size(grad_output)])
    index = ops.reshape(indices, [-1, _plane_size(indices)])
    zeros = zeros_in_graph([src.shape[0], _plane_size(self)], dtype_name(self))
    out = scatters._scatter(zeros, 1, index, src, "sum")
    return ops.reshape(out, shape_of(self))


def _plane_size(x: Any) -> int:
    return math.prod(static_int(v, "a spatial size") for v in shape_of(x)[-2:])


def _windows_backward(grad_output: Any, self: Any, table: torch.Tensor,
                      count: torch.Tensor) -> Any:
    """Each output position's gradient divided by its divisor, added at every input
    position of its window (table [O, K]; position prod(sizes) is outside the input)."""
    plane = _plane_size(self)
    o, kk = table.shape
    dt = dtype_name(self)
    dy = ops.reshape(grad_output, [-1, o, 1])
    dy = ops.div(dy, constant(count.to(torch_dtype(dt)).reshape(o, 1).contiguous()))
    rows = dy.shape[0]
    src = ops.reshape(ops.expand(dy, [rows, o, kk]), [rows, o * kk])
    index = ops.expand(int_constant(table.reshape(1, o * kk)), [rows, o * kk])
    zeros = zeros_in_graph([rows, plane + 1], dt)
    out = scatters._scatter(zeros, 1, index, src, "sum")
    out = ops.slice(out, [1], [0], [plane], [1])
    return ops.reshape(out, shape_of(self))


def avg_pool2d_backward(grad_output: Any, self: Any, kernel_size: Any, stride: Any,
                        padding: Any, ceil_mode: bool, count_include_pad: bool,
                        divisor_override: Any) -> Any:
    if rank(self) not in (3, 4):
        raise unsupported(f"avg_pool2d_backward of a rank-{rank(self)} input")
    _, table, count = spatial.avg_pool_windows(self, 2, kernel_size, stride, padding,
                                               ceil_mode, count_include_pad, divisor_override)
    return _windows_backward(grad_output, self, table, count)


def adaptive_avg_pool2d_backward(grad_output: Any, self: Any) -> Any:
    if rank(self) not in (3, 4):
        raise unsupported(f"_adaptive_avg_pool2d_backward of a rank-{rank(self)} input")
    out_size = [static_int(v, "an output size") for v in shape_of(grad_output)[-2:]]
    _, table, count = spatial.adaptive_avg_windows(self, 2, out_size)
    return _windows_backward(grad_output, self, table, count)


def _register_all() -> None:
    with builtin_registrations():
        register_function(aten.convolution_backward.default)(convolution_backward)
        register_function(aten.max_pool2d_with_indices_backward.default)(
            max_pool2d_with_indices_backward)
        register_function(aten.avg_pool2d_backward.default)(avg_pool2d_backward)
        register_function(aten._adaptive_avg_pool2d_backward.default)(
            adaptive_avg_pool2d_backward)
        register_function(aten.index_put.default, priority=HIGH,
                          capability_validator=scatters._integer_indices)(scatters.index_put)


_register_all()
