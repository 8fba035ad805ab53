"""Converters for torch.nn.functional's layers: convolution, pooling, normalization,
embedding, resampling and attention (inference only).

Where ember has a dedicated operator (ember.ops.conv2d, layer_norm, ...) the converter
uses it; the others (group norm, attention, resampling by a scale factor torch does not
derive from the sizes) are compositions of basic ember operators.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
import torch.nn.functional as F

import ember
from ember.torch.context import torch_dtype
from ember.torch.converters import spatial, spatial_resample
from ember.torch.converters.common import (
    cast,
    constant,
    cut,
    dtype_name,
    fixed_int,
    float_param,
    full,
    is_tensor,
    ops,
    pair,
    py_value,
    rank,
    shape_of,
    size_plus,
    size_product,
    size_value,
    specialized,
    static_int,
    transposed_constant,
    unsupported,
    zeros_in_graph,
)
from ember.torch.converters.functions import register
from ember.torch.converters.scatters import scatter_rows


# ---- convolution ---------------------------------------------------------------------------
def _add_channel_bias(y: Any, bias: Any) -> Any:
    if bias is None:
        return y
    return y + ops.reshape(bias, [-1] + [1] * (rank(y) - 2))


def _unbatched(conv: Any, spatial: int) -> Any:
    """conv on an input without its batch dim ([C, L] / [C, H, W], as torch accepts): as a
    batch of one."""

    @functools.wraps(conv)  # the registry binds calls to conv's signature
    def convert(input: Any, *args: Any, **kwargs: Any) -> Any:
        if rank(input) == spatial + 1:
            y = conv(ops.unsqueeze(input, [0]), *args, **kwargs)
            return ops.squeeze(y, [0])
        return conv(input, *args, **kwargs)

    return convert


def conv2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    dil = pair(dilation)
    weight = specialized(weight, "a conv2d weight's size")
    input = specialized(input, "a conv2d input's channel count", [1])
    input, pad = spatial.conv_padding(input, padding, weight, dil, 2)
    y = ops.conv2d(input, weight, pair(stride), pad, dil, int(groups))
    return _add_channel_bias(y, bias)


def conv1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    dil = pair(dilation, 1)
    weight = specialized(weight, "a conv1d weight's size")
    input = specialized(input, "a conv1d input's channel count", [1])
    input, pad = spatial.conv_padding(input, padding, weight, dil, 1)
    y = ops.conv1d(input, weight, pair(stride, 1), pad, dil, int(groups))
    return _add_channel_bias(y, bias)


def convolution(input: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
                transposed: bool, output_padding: Any, groups: int) -> Any:
    if transposed:
        raise unsupported("transposed convolution")
    n = rank(weight) - 2
    if n == 2:
        return conv2d(input, weight, bias, stride, padding, dilation, groups)
    if n == 1:
        return conv1d(input, weight, bias, stride, padding, dilation, groups)
    raise unsupported(f"{n}-d convolution")


# ---- pooling -------------------------------------------------------------------------------
def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    if rank(input) not in (3, 4):
        return spatial.max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                                return_indices)
    kernel = pair(kernel_size)
    strides = pair(stride) if stride not in (None, [], ()) else kernel
    pad, dil = pair(padding), pair(dilation)
    y = ops.max_pool2d(input, kernel, strides, pad, dil, bool(ceil_mode))
    if not return_indices:
        return y
    return y, ops.max_pool2d_indices(input, kernel, strides, pad, dil, bool(ceil_mode))


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Any = None) -> Any:
    if divisor_override is not None or rank(input) not in (3, 4):
        return spatial.avg_pool(input, 2, kernel_size, stride, padding, ceil_mode,
                                count_include_pad, divisor_override)
    kernel = pair(kernel_size)
    strides = pair(stride) if stride not in (None, [], ()) else kernel
    pad = pair(padding)
    return ops.avg_pool2d(input, kernel, strides, pad, bool(ceil_mode), bool(count_include_pad))


def adaptive_avg_pool2d(input: Any, output_size: Any) -> Any:
    size = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * 2
    h, w = input.shape[-2], input.shape[-1]
    size = [h if s is None else s for s in size[:1]] + [w if s is None else s for s in size[1:]]
    oh, ow = (fixed_int(s, "adaptive_avg_pool2d's output size") for s in size)
    if (oh, ow) == (1, 1):
        return ops.mean(input, [rank(input) - 2, rank(input) - 1], True)
    return ops.adaptive_avg_pool2d(input, [oh, ow])  # the input's sizes may be symbolic


def _one(v: Any) -> int:
    return pair(v, 1)[0]


def max_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    if return_indices:
        return spatial.max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                                return_indices)
    k = _one(kernel_size)
    s = _one(stride) if stride not in (None, [], ()) else k
    y = max_pool2d(ops.unsqueeze(input, [rank(input) - 1]), (1, k), (1, s), (0, _one(padding)),
                   (1, _one(dilation)), ceil_mode, return_indices)
    return ops.squeeze(y, [rank(input) - 1])


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Any:
    k = _one(kernel_size)
    s = _one(stride) if stride not in (None, [], ()) else k
    y = avg_pool2d(ops.unsqueeze(input, [rank(input) - 1]), (1, k), (1, s), (0, _one(padding)),
                   ceil_mode, count_include_pad)
    return ops.squeeze(y, [rank(input) - 1])


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Any:
    size = _one(output_size)
    if size == 1:
        return ops.mean(input, [rank(input) - 1], True)
    y = adaptive_avg_pool2d(ops.unsqueeze(input, [rank(input) - 1]), (1, size))
    return ops.squeeze(y, [rank(input) - 1])


# ---- normalization -------------------------------------------------------------------------
def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5, cudnn_enable: bool = True) -> Any:
    n = len(normalized_shape)
    if not is_tensor(eps) and float(py_value(eps)) >= 0:
        return ops.layer_norm(input, n, weight, bias, float(py_value(eps)))
    # eps known only at run time (a float Dynamo passes as a 0-d tensor), or negative (torch
    # accepts it; ember's layer_norm does not): the same two passes
    dims = list(range(rank(input) - n, rank(input)))
    centered = input - ops.mean(input, dims, True)
    var = ops.mean(centered * centered, dims, True)
    shift = float_param(eps, dtype_name(input)) if is_tensor(eps) else float(py_value(eps))
    y = centered * ops.rsqrt(var + shift)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None,
               bias: Any = None, training: bool = False, momentum: Any = 0.1,
               eps: Any = 1e-5) -> Any:
    if training or running_mean is None or running_var is None:
        raise unsupported("batch_norm in training mode without gradients (with gradients, "
                          "the training graph computes its statistics)")
    eps = float(py_value(eps)) if not is_tensor(eps) else eps
    return ops.batch_norm(input, running_mean, running_var, weight, bias, eps)


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    shape = shape_of(input)
    g = int(num_groups)
    # [N, G, (C // G) * rest]: the division is exact (torch requires it), which ember's
    # reshape takes from a floor division even when C is symbolic.
    per_group = shape[1] // g if isinstance(shape[1], int) else f"({shape[1]} // {g})"
    grouped = ops.reshape(input, [shape[0], g, size_product([per_group, *shape[2:]])])
    centered = grouped - ops.mean(grouped, [2], True)
    var = ops.mean(centered * centered, [2], True)
    y = ops.reshape(centered * ops.rsqrt(var + float_param(eps, dtype_name(input))), shape)
    channel_shape = [-1] + [1] * (len(shape) - 2)
    if weight is not None:
        y = y * ops.reshape(weight, channel_shape)
    if bias is not None:
        y = y + ops.reshape(bias, channel_shape)
    return y


# ---- embedding and resampling -----------------------------------------------------------
def embedding(input: Any, weight: Any, padding_idx: Any = None, max_norm: Any = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Any:
    if max_norm is not None:
        raise unsupported("embedding with max_norm (it renormalizes the weights in place)")
    return ops.embedding(weight, input)


def embedding_bag(input: Any, weight: Any, offsets: Any = None, max_norm: Any = None,
                  norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights: Any = None,
                  include_last_offset: bool = False, padding_idx: Any = None) -> Any:
    """F.embedding_bag: the rows weight[input] reduced per bag (sum, mean or max). Bags are
    the rows of a 2-d input, or the runs of a 1-d input that start at `offsets`. Each index
    is scattered into its bag's row of the result, in order; indices equal to padding_idx,
    and with include_last_offset those past the last offset, go to a spare row that is cut
    off. An empty bag (or one of padding only) is zeros, as in torch."""
    if max_norm is not None:
        raise unsupported("embedding_bag with max_norm (it renormalizes the weights in place)")
    if mode not in ("sum", "mean", "max"):
        raise unsupported(f"embedding_bag with mode={mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise unsupported("embedding_bag with per_sample_weights and a mode other than sum "
                          "(torch refuses it)")
    if rank(weight) != 2 or rank(input) not in (1, 2):
        raise unsupported("embedding_bag of a weight that is not 2-d or an input that is not "
                          "1-d or 2-d")
    idx = ops.reshape(cast(input, "int64"), [-1])
    n = shape_of(idx)[0]
    position = ops.arange(0, n, 1, "int64")
    valid = None
    if rank(input) == 2:
        if offsets is not None:
            raise unsupported("embedding_bag of a 2-d input with offsets (torch refuses it)")
        bags, per_bag = shape_of(input)
        if isinstance(per_bag, int) and per_bag == 0:
            return full([bags, shape_of(weight)[1]], 0.0, dtype_name(weight))
        bag = ops.floor_divide(position, per_bag if isinstance(per_bag, int)
                               else size_value(per_bag, "int64"))
    else:
        if offsets is None or rank(offsets) != 1:
            raise unsupported("embedding_bag of a 1-d input without 1-d offsets")
        starts = cast(offsets, "int64")
        bags = shape_of(starts)[0]
        if include_last_offset:
            count, bags = bags, size_plus(bags, -1)
            valid = ops.less(position, cut(starts, 0, bags, count))
            starts = cut(starts, 0, 0, bags)
        bag = ops.sub(ops.searchsorted(starts, position, True), 1)
    # mean divides the last bag's sum by its length up to the end of the input, as torch
    # does when the last offset falls short of it
    counted = bag
    spare = size_value(bags, "int64")
    if padding_idx is not None:
        pad = int(py_value(padding_idx))
        if pad < 0:  # counted from the end, as torch does
            pad += static_int(shape_of(weight)[0], "embedding_bag's number of embeddings")
        keep = ops.not_equal(idx, ops.scalar(pad, "int64"))
        counted = ops.where(keep, bag, spare)
        valid = keep if valid is None else ops.logical_and(valid, keep)
    if valid is not None:
        bag = ops.where(valid, bag, spare)
    dim = shape_of(weight)[1]
    dt = dtype_name(weight)
    rows = ops.embedding(weight, idx)
    if per_sample_weights is not None:
        rows = ops.mul(rows, ops.unsqueeze(cast(ops.reshape(per_sample_weights, [-1]), dt), [1]))
    target = ops.expand(ops.unsqueeze(bag, [1]), [n, dim])
    zeros = zeros_in_graph([size_plus(bags, 1), dim], dt)
    if mode == "max":
        out = scatter_rows(zeros, target, rows, "amax", include_self=False)
    else:
        out = scatter_rows(zeros, target, rows, "sum")
    if mode == "mean":
        ones = cast(ops.unsqueeze(ops.less(counted, spare), [1]), dt)
        count = scatter_rows(zeros_in_graph([size_plus(bags, 1), 1], dt),
                             ops.unsqueeze(counted, [1]), ones, "sum")
        out = ops.div(out, ops.maximum(count, ops.scalar(1.0, dt)))
    return cut(out, 0, 0, bags)


def _spatial(input: Any, what: str) -> list[int]:
    """The (static) height and width of [N, C, H, W]; the batch and channels may be
    symbolic."""
    return [static_int(d, f"{what}'s spatial size") for d in shape_of(input)[2:]]


def _output_size(input: Any, size: Any, scale_factor: Any) -> list[int]:
    h, w = _spatial(input, "interpolate")
    if size is not None:
        return list(pair(size))
    sh, sw = _scale_pair(scale_factor)
    return [int(math.floor(h * float(sh))), int(math.floor(w * float(sw)))]


def _scale_pair(scale_factor: Any) -> tuple[Any, Any]:
    if not isinstance(scale_factor, (tuple, list)):
        return scale_factor, scale_factor
    return scale_factor[0], scale_factor[-1]


def interpolate(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: Any = None, recompute_scale_factor: Any = None,
                antialias: bool = False) -> Any:
    factors = scale_factor if isinstance(scale_factor, (tuple, list)) else [scale_factor]
    if rank(input) != 4 or antialias or mode not in ("nearest", "bilinear") or any(
            not isinstance(d, int) for d in shape_of(input)[2:]) or any(
            is_tensor(f) for f in factors):
        return spatial_resample.interpolate_nd(input, size, scale_factor, mode, align_corners,
                                      recompute_scale_factor, antialias)
    out = _output_size(input, size, scale_factor)
    # torch maps output to input coordinates with 1 / scale_factor when it is given and
    # not recomputed from the sizes (which differs from in / out when in * scale is not whole).
    scales: tuple[Any, Any] = (None, None)
    if size is None and scale_factor is not None and recompute_scale_factor is not True:
        scales = _scale_pair(scale_factor)
    if mode == "nearest":
        return upsample_nearest2d(input, out, *scales)
    return upsample_bilinear2d(input, out, bool(align_corners), *scales)


def _scale_value(scale: Any, size_in: int, size_out: int, dtype: torch.dtype) -> float:
    """torch's compute_scales_value: 1 / scale when one is given (> 0), else in / out, in
    dtype."""
    s = None if scale is None else float(py_value(scale))
    value = 1.0 / s if s is not None and s > 0 else None
    if value is None:
        return (torch.tensor(float(size_in), dtype=dtype) / size_out).item()
    return torch.tensor(value, dtype=dtype).item()


def _sizes_say_it_all(sizes_in: list[int], sizes_out: list[int], scales: tuple[Any, Any],
                      dtype: torch.dtype) -> bool:
    """Whether torch's coordinate scale is in / out along both dims (what ember's resize
    operators use)."""
    return all(
        _scale_value(s, i, o, dtype) == _scale_value(None, i, o, dtype)
        for i, o, s in zip(sizes_in, sizes_out, scales, strict=True))


def _gather(x: Any, axis: int, index: list[int]) -> Any:
    """x at the given positions along axis 2 or 3 of [N, C, H, W] (an embedding lookup)."""
    order = [axis] + [d for d in range(4) if d != axis]
    moved = ops.permute(x, order)
    dims = shape_of(moved)  # [the gathered size (static), the others (maybe symbolic)]
    table = ops.reshape(moved, [dims[0], -1])
    rows = ops.embedding(table, constant(torch.tensor(index, dtype=torch.int64)))
    rows = ops.reshape(rows, [len(index), *dims[1:]])
    back = [order.index(d) for d in range(4)]
    return ops.permute(rows, back)


def _nearest_by_gather(input: Any, out: list[int], scales: tuple[Any, Any]) -> Any:
    """torch's nearest: source index min(floor(o * scale), in - 1), in float32."""
    x = input
    for axis, size_out, s in zip((2, 3), out, scales, strict=True):
        size_in = x.shape[axis]
        if size_out == size_in:
            continue
        if size_out == 2 * size_in:
            index = [o // 2 for o in range(size_out)]
        else:
            scale = torch.tensor(_scale_value(s, size_in, size_out, torch.float32))
            src = torch.floor(torch.arange(size_out, dtype=torch.float32) * scale)
            index = src.to(torch.int64).clamp(max=size_in - 1).tolist()
        x = _gather(x, axis, index)
    return x


def upsample_nearest2d(input: Any, output_size: Any, scales_h: Any = None,
                       scales_w: Any = None) -> Any:
    out = [int(py_value(s)) for s in output_size]
    scales = (scales_h, scales_w)
    if any(s is not None for s in scales):
        sizes_in = _spatial(input, "nearest upsampling")
        if not _sizes_say_it_all(sizes_in, out, scales, torch.float32):
            return _nearest_by_gather(input, out, scales)
    return ops.upsample_nearest2d(input, out)


def _linear_source(size_in: int, size_out: int, scale: Any, dtype: torch.dtype) -> tuple:
    """torch's linear source indices i0, i1 and weights l0, l1 along one dim (half-pixel
    centres clamped at 0; align_corners is not on here), computed in dtype as torch does."""
    if size_in == size_out:
        index = list(range(size_out))
        return index, index, torch.ones(size_out, dtype=dtype), torch.zeros(size_out, dtype=dtype)
    ratio = torch.tensor(_scale_value(scale, size_in, size_out, dtype), dtype=dtype)
    half = torch.tensor(0.5, dtype=dtype)
    src = ratio * (torch.arange(size_out, dtype=dtype) + half) - half
    src = torch.clamp(src, min=0)
    i0 = torch.floor(src).to(torch.int64).clamp(max=size_in - 1)
    l1 = torch.clamp(src - i0.to(dtype), 0, 1)
    i1 = i0 + (i0 < size_in - 1).to(torch.int64)
    return i0.tolist(), i1.tolist(), 1 - l1, l1


def _bilinear_by_gather(input: Any, out: list[int], scales: tuple[Any, Any]) -> Any:
    """torch's bilinear interpolation with a scale_factor: gathers of the rows and columns
    around each output position, weighted in torch's order and compute dtype."""
    dt = dtype_name(input)
    compute = "float64" if dt == "float64" else "float32"
    tdt = torch_dtype(compute)
    x = cast(input, compute)
    h, w = _spatial(input, "bilinear resampling")
    h0, h1, hl0, hl1 = _linear_source(h, out[0], scales[0], tdt)
    w0, w1, wl0, wl1 = _linear_source(w, out[1], scales[1], tdt)
    wl0, wl1 = constant(wl0.contiguous()), constant(wl1.contiguous())
    hl0 = constant(hl0.reshape(-1, 1).contiguous())
    hl1 = constant(hl1.reshape(-1, 1).contiguous())

    def row(index: list[int]) -> Any:
        r = _gather(x, 2, index)
        return _gather(r, 3, w0) * wl0 + _gather(r, 3, w1) * wl1

    return cast(row(h0) * hl0 + row(h1) * hl1, dt)


def upsample_bilinear2d(input: Any, output_size: Any, align_corners: bool,
                        scales_h: Any = None, scales_w: Any = None) -> Any:
    out = [int(py_value(s)) for s in output_size]
    scales = (scales_h, scales_w)
    if not align_corners and any(s is not None for s in scales):
        sizes_in = _spatial(input, "bilinear resampling")
        compute = torch.float64 if dtype_name(input) == "float64" else torch.float32
        if not _sizes_say_it_all(sizes_in, out, scales, compute):
            return _bilinear_by_gather(input, out, scales)
    return ops.upsample_bilinear2d(input, out, bool(align_corners))


# ---- attention -----------------------------------------------------------------------------
def _causal_mask(scores: Any) -> Any:
    """True on and below the diagonal of the last two dims of `scores` (torch's is_causal):
    a constant for static lengths; for symbolic ones, the lower triangle of a mask computed
    from the scores themselves (a constant-only mask of symbolic shape has nothing to bind
    its sizes from)."""
    q_len, k_len = scores.shape[-2], scores.shape[-1]
    if isinstance(q_len, int) and isinstance(k_len, int):
        return constant(torch.ones(q_len, k_len, dtype=torch.bool).tril())
    everywhere = ops.greater_equal(ops.abs(scores), 0.0)
    return ops.tril(everywhere, 0)


def _gqa_heads(t: Any, heads: Any) -> Any:
    """k or v [..., Hk, L, E] with each head repeated for its Hq / Hk query heads (torch's
    enable_gqa: query head h reads key head h // (Hq / Hk)) -> [..., Hq, L, E]."""
    dims = shape_of(t)
    group = heads // dims[-3]
    grouped = ops.expand(ops.unsqueeze(t, [rank(t) - 2]), dims[:-2] + [group] + dims[-2:])
    return ops.reshape(grouped, dims[:-3] + [heads] + dims[-2:])


def _sdpa_fused(query: Any, key: Any, value: Any, attn_mask: Any, is_causal: bool,
                scale: Any, enable_gqa: bool) -> Any:
    """ember's attention operator (one kernel, no scores in memory) when it takes these
    arguments: float32, rank >= 2, one batch shape (key heads repeated for enable_gqa with
    static head counts); else None."""
    tensors = (query, key, value)
    if any(dtype_name(t) != "float32" for t in tensors) or len({rank(t) for t in tensors}) != 1:
        return None
    if rank(query) < 2:
        return None
    qs, ks = shape_of(query), shape_of(key)
    if enable_gqa and rank(query) >= 3 and qs[-3] != ks[-3]:
        hq, hk = qs[-3], ks[-3]
        if not (isinstance(hq, int) and isinstance(hk, int) and hk > 0 and hq % hk == 0):
            return None
        key, value = _gqa_heads(key, hq), _gqa_heads(value, hq)
    batch = shape_of(query)[:-2]
    if shape_of(key)[:-2] != batch or shape_of(value)[:-2] != batch:
        return None
    mask = attn_mask
    if mask is not None and dtype_name(mask) not in ("bool", "float32"):
        mask = cast(mask, "float32")
    factor = None if scale is None else float(py_value(scale))
    try:
        return ops.attention(query, key, value, mask, factor, bool(is_causal))
    except ember.EmberError:  # a mask the kernel cannot read (e.g. it broadcasts oddly)
        return None


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: Any = None, enable_gqa: bool = False) -> Any:
    if py_value(dropout_p) > 0:
        raise unsupported("scaled_dot_product_attention with dropout_p > 0")
    fused = _sdpa_fused(query, key, value, attn_mask, py_value(is_causal), scale,
                        bool(py_value(enable_gqa)))
    if fused is not None:
        return fused
    if enable_gqa and query.shape[-3] != key.shape[-3]:
        raise unsupported("grouped-query attention (enable_gqa with fewer key heads)")
    head_dim = query.shape[-1]
    if scale is not None:
        factor: Any = float(py_value(scale))
    elif isinstance(head_dim, int):
        factor = 1.0 / math.sqrt(head_dim)
    else:  # a symbolic head size: 1 / sqrt(E) at run time, in float64 as torch computes it
        factor = ops.cast(ops.rsqrt(size_value(head_dim, "float64")), dtype_name(query))
    scores = ops.matmul(query * factor, transposed_constant(key))
    if is_causal:
        scores = ops.where(_causal_mask(scores), scores, float("-inf"))
    if attn_mask is not None:
        if dtype_name(attn_mask) == "bool":
            scores = ops.where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + cast(attn_mask, dtype_name(scores))
    return ops.matmul(ops.softmax(scores, rank(scores) - 1), value)


def _register_all() -> None:
    register(_unbatched(conv2d, 2), F.conv2d, torch.conv2d)
    register(_unbatched(conv1d, 1), F.conv1d, torch.conv1d)
    register(max_pool2d, F.max_pool2d, torch.max_pool2d)
    register(avg_pool2d, F.avg_pool2d, torch._C._nn.avg_pool2d)
    register(max_pool1d, F.max_pool1d, torch.max_pool1d)
    register(avg_pool1d, F.avg_pool1d, torch.avg_pool1d)
    register(adaptive_avg_pool1d, F.adaptive_avg_pool1d, torch.adaptive_avg_pool1d)
    register(adaptive_avg_pool2d, F.adaptive_avg_pool2d, torch._C._nn.adaptive_avg_pool2d)
    register(layer_norm, F.layer_norm, torch.layer_norm)
    register(batch_norm, F.batch_norm)
    register(group_norm, F.group_norm)
    register(embedding, F.embedding)
    register(embedding_bag, F.embedding_bag)
    register(interpolate, F.interpolate)
    register(upsample_nearest2d, torch._C._nn.upsample_nearest2d)
    register(scaled_dot_product_attention, F.scaled_dot_product_attention)


_register_all()
