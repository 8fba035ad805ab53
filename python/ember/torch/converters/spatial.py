"""Converters for N-d pooling, 3-d and transposed convolutions, resampling (every mode of
``interpolate``, antialiased bilinear), ``unfold`` (im2col) and gathers at tensor indices
(``take``, ``take_along_dim``). Grid sampling, ``embedding_bag`` and
``_unsafe_masked_index`` are not converted (they run in eager PyTorch).

The spatial sizes must be known at compile time: the converters build their index and
weight tables with torch then, and raise ``unsupported`` (eager fallback) for symbolic ones.

- Pooling windows: the input's spatial dimensions are flattened, one fill slot (the identity
  of the reduction: -inf / the dtype's lowest for max, 0 for sums) is appended, and one
  gather (``composite_math.take``) of a constant [outputs, window] table of positions gives
  every window; a reduction over the window finishes (max, argmax for return_indices, sum
  divided by torch's divisor). Windows of different sizes (adaptive pooling) are padded with
  the fill slot.
- Resampling is separable: along each spatial axis, the output is a weighted sum of a few
  gathered input rows. The weights are torch's own: the matching 1-d (or 2-d) ATen
  resampling operator applied at compile time to an identity matrix, which gives the
  [out, in] matrix of the axis (its nonzero entries are the taps).
- conv3d is one conv2d over (H, W) with the depth taps stacked into the channels and the
  output depths moved into the batch. A transposed convolution with stride == kernel (no
  overlapping windows, the usual upsampling layer) is one matrix product and a reshape;
  otherwise it is the convolution of the zero-inserted, padded input with the flipped,
  transposed weight.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import torch_dtype
from ember.torch.converters.common import (
    cast,
    constant,
    dtype_name,
    full,
    is_const,
    is_float_dtype,
    is_tensor,
    norm_dim,
    ops,
    pair,
    py_value,
    rank,
    shape_of,
    static_int,
    unsupported,
)
from ember.torch.converters.composite_math import int_constant, take
from ember.torch.converters.functions import register
from ember.torch.registry import builtin_registrations, register_method


# ---- shared helpers ------------------------------------------------------------------------
def _spatial_sizes(x: Any, k: int, what: str) -> list[int]:
    sizes = list(x.shape[rank(x) - k:])
    if any(not isinstance(s, int) for s in sizes):
        raise unsupported(f"{what} of a tensor with symbolic spatial sizes {sizes}")
    return sizes


def _check_rank(x: Any, k: int, what: str) -> None:
    if rank(x) not in (k + 1, k + 2):
        raise unsupported(f"{what} of a rank-{rank(x)} tensor (expects {k + 1} or {k + 2})")


def _empty(shape: list[Any], dtype: str) -> Any | None:
    """A constant of zeros when `shape` (static) has no elements, else None: ember's gathers
    need a non-empty table."""
    if all(isinstance(s, int) for s in shape) and math.prod(shape) == 0:
        return constant(torch.zeros(shape, dtype=torch_dtype(dtype)))
    return None


def _lowest(dtype: str) -> float | int:
    t = torch_dtype(dtype)
    if t.is_floating_point:
        return float("-inf")
    return int(torch.iinfo(t).min)


def _per_dim(v: Any, k: int, what: str) -> tuple[int, ...]:
    vals = pair(v, k)
    if len(vals) != k:
        raise unsupported(f"{what} {vals} for {k} spatial dimensions")
    return vals


# ---- pooling -------------------------------------------------------------------------------
def _gather_windows(x: Any, sizes: list[int], table: torch.Tensor, fill: Any) -> Any:
    """x [..., *sizes] -> [..., O, K]: x at the flat spatial positions of table [O, K];
    the position prod(sizes) reads `fill`."""
    k = len(sizes)
    lead = shape_of(x)[:rank(x) - k]
    flat = ops.reshape(x, lead + [math.prod(sizes)])
    slot = full(lead + [1], fill, dtype_name(x))
    flat = ops.concat([flat, slot], len(lead))
    return take(flat, len(lead), int_constant(table.contiguous()))


def _window_table(sizes: list[int], windows: list[torch.Tensor]) -> torch.Tensor:
    """The flat positions of the product of per-dimension windows (windows[d]: [O_d, K_d]
    positions along dimension d, -1 outside the input) as [prod O_d, prod K_d], with
    prod(sizes) for a position outside the input."""
    pos = torch.zeros(1, 1, dtype=torch.int64)
    valid = torch.ones(1, 1, dtype=torch.bool)
    for size, w in zip(sizes, windows, strict=True):
        o, kk = pos.shape
        od, kd = w.shape
        pos = (pos.view(o, 1, kk, 1) * size + w.view(1, od, 1, kd)).reshape(o * od, kk * kd)
        valid = (valid.view(o, 1, kk, 1) & (w >= 0).view(1, od, 1, kd)).reshape(o * od, kk * kd)
    return torch.where(valid, pos, torch.tensor(math.prod(sizes)))


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling output size (pooling_output_shape)."""
    span = d * (k - 1) + 1
    num = size + 2 * p - span + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _sliding(size: int, out: int, k: int, s: int, p: int, d: int) -> torch.Tensor:
    pos = torch.arange(out).view(-1, 1) * s - p + torch.arange(k).view(1, -1) * d
    return torch.where((pos >= 0) & (pos < size), pos, -1)


def _adaptive(size: int, out: int) -> torch.Tensor:
    """torch's adaptive windows [floor(i * in / out), ceil((i + 1) * in / out)), padded
    with -1 to the longest."""
    starts = [(i * size) // out for i in range(out)]
    ends = [-((-(i + 1) * size) // out) for i in range(out)]
    width = builtins.max(e - s for s, e in zip(starts, ends, strict=True))
    rows = [list(range(s, e)) + [-1] * (width - (e - s)) for s, e in zip(starts, ends, strict=True)]
    return torch.tensor(rows, dtype=torch.int64).view(out, width)


def _finish(x: Any, k: int, windows: Any, outs: list[int], reduce: str, table: torch.Tensor,
            count: torch.Tensor | None = None) -> Any:
    """Reduce [..., O, K] windows and give [..., *outs] (and the indices for 'argmax')."""
    lead = shape_of(x)[:rank(x) - k]
    axis = len(lead) + 1
    if reduce == "sum":
        total = ops.sum(windows, [axis], False)
        assert count is not None
        y = ops.div(total, constant(count.to(torch_dtype(dtype_name(x))).contiguous()))
        return ops.reshape(y, lead + outs)
    y = ops.reshape(ops.max(windows, [axis], False), lead + outs)
    if reduce == "max":
        return y
    arg = ops.argmax(windows, axis, False)  # [..., O]
    o, kk = table.shape
    # Flat position of the window element: table[o, arg]; the fill slot never wins unless
    # every element of the window is the fill value, where torch's first-element rule is
    # the window's first position inside the input.
    first_inside = torch.where(table < math.prod(_spatial_sizes(x, k, "pooling")), table,
                               torch.iinfo(torch.int64).max).min(dim=1, keepdim=True).values
    positions = torch.where(table < math.prod(_spatial_sizes(x, k, "pooling")), table,
                            first_inside)
    flat = ops.add(arg, int_constant(torch.arange(o) * kk))
    index = ops.embedding(int_constant(positions.reshape(o * kk, 1)), flat)
    return y, ops.reshape(index, lead + outs)


def max_pool(input: Any, k: int, kernel_size: Any, stride: Any = None, padding: Any = 0,
             dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """max_pool{k}d of [N, C, *S] or [C, *S] by window gathers (any k, return_indices)."""
    what = f"max_pool{k}d"
    _check_rank(input, k, what)
    dt = dtype_name(input)
    if dt == "bool" or dt.startswith("complex"):
        raise unsupported(f"{what} of a {dt} tensor")
    kernel = _per_dim(kernel_size, k, "kernel_size")
    strides = _per_dim(stride, k, "stride") if stride not in (None, [], ()) else kernel
    pads, dils = _per_dim(padding, k, "padding"), _per_dim(dilation, k, "dilation")
    sizes = _spatial_sizes(input, k, what)
    if any(p > (d * (kk - 1) + 1) // 2 for p, d, kk in zip(pads, dils, kernel, strict=True)):
        raise unsupported(f"{what} with padding more than half the dilated kernel")
    outs = [_pool_out(*a, bool(ceil_mode))
            for a in zip(sizes, kernel, strides, pads, dils, strict=True)]
    if builtins.min(sizes) == 0 or builtins.min(outs) <= 0:
        raise unsupported(f"{what} of an empty spatial dimension")
    out_shape = shape_of(input)[:rank(input) - k] + outs
    empty = _empty(out_shape, dt)
    if empty is not None:
        return (empty, _empty(out_shape, "int64")) if return_indices else empty
    table = _window_table(sizes, [_sliding(*a) for a in zip(
        sizes, outs, kernel, strides, pads, dils, strict=True)])
    windows = _gather_windows(input, sizes, table, _lowest(dt))
    return _finish(input, k, windows, outs, "argmax" if return_indices else "max", table)


def avg_pool_windows(input: Any, k: int, kernel_size: Any, stride: Any = None,
                     padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                     divisor_override: Any = None) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """avg_pool{k}d's output sizes, window table ([O, K] flat positions, see _window_table)
    and torch's divisor of each output position ([O], float64)."""
    what = f"avg_pool{k}d"
    _check_rank(input, k, what)
    dt = dtype_name(input)
    if not is_float_dtype(dt):
        raise unsupported(f"{what} of a {dt} tensor")
    kernel = _per_dim(kernel_size, k, "kernel_size")
    strides = _per_dim(stride, k, "stride") if stride not in (None, [], ()) else kernel
    pads = _per_dim(padding, k, "padding")
    sizes = _spatial_sizes(input, k, what)
    if any(p > kk // 2 for p, kk in zip(pads, kernel, strict=True)):
        raise unsupported(f"{what} with padding more than half the kernel")
    outs = [_pool_out(s, kk, st, p, 1, bool(ceil_mode))
            for s, kk, st, p in zip(sizes, kernel, strides, pads, strict=True)]
    if builtins.min(sizes) == 0 or builtins.min(outs) <= 0:
        raise unsupported(f"{what} of an empty spatial dimension")
    windows = [_sliding(s, o, kk, st, p, 1)
               for s, o, kk, st, p in zip(sizes, outs, kernel, strides, pads, strict=True)]
    table = _window_table(sizes, windows)
    if divisor_override is not None:
        count = torch.full((len(table),), float(static_int(divisor_override, "a divisor")))
    else:
        per_dim = []
        for s, o, kk, st, p in zip(sizes, outs, kernel, strides, pads, strict=True):
            start = torch.arange(o) * st - p
            end = torch.clamp(start + kk, max=s + p)
            if not count_include_pad:
                start, end = torch.clamp(start, min=0), torch.clamp(end, max=s)
            per_dim.append((end - start).to(torch.float64))
        count = per_dim[0]
        for c in per_dim[1:]:
            count = (count.view(-1, 1) * c.view(1, -1)).reshape(-1)
    return outs, table, count


def avg_pool(input: Any, k: int, kernel_size: Any, stride: Any = None, padding: Any = 0,
             ceil_mode: bool = False, count_include_pad: bool = True,
             divisor_override: Any = None) -> Any:
    """avg_pool{k}d by window gathers: the window sums divided by torch's divisor."""
    outs, table, count = avg_pool_windows(input, k, kernel_size, stride, padding, ceil_mode,
                                          count_include_pad, divisor_override)
    out_shape = shape_of(input)[:rank(input) - k] + outs
    empty = _empty(out_shape, dtype_name(input))
    if empty is not None:
        return empty
    sizes = _spatial_sizes(input, k, f"avg_pool{k}d")
    gathered = _gather_windows(input, sizes, table, 0.0)
    return _finish(input, k, gathered, outs, "sum", table, count)


def adaptive_avg_windows(input: Any, k: int, output_size: Any) -> tuple[list[int],
                                                                       torch.Tensor,
                                                                       torch.Tensor]:
    """adaptive_avg_pool{k}d's output sizes, window table and window sizes (as
    avg_pool_windows)."""
    sizes, outs = _adaptive_sizes(input, k, output_size, f"adaptive_avg_pool{k}d")
    table = _window_table(sizes, [_adaptive(s, o) for s, o in zip(sizes, outs, strict=True)])
    count = (table < math.prod(sizes)).sum(dim=1).to(torch.float64)
    return outs, table, count


def _adaptive_sizes(input: Any, k: int, output_size: Any, what: str) -> tuple[list, list]:
    sizes = _spatial_sizes(input, k, what)
    outs = list(output_size) if isinstance(output_size, (tuple, list)) else [output_size] * k
    if len(outs) != k:
        raise unsupported(f"{what} with output_size {outs}")
    outs = [s if o is None else static_int(o, "an output size") for s, o in zip(
        sizes, outs, strict=True)]
    if builtins.min(sizes) == 0 or builtins.min(outs) <= 0:
        raise unsupported(f"{what} of an empty spatial dimension")
    return sizes, outs


def adaptive_pool(input: Any, k: int, output_size: Any, maximum: bool,
                  return_indices: bool = False) -> Any:
    what = f"adaptive_{'max' if maximum else 'avg'}_pool{k}d"
    _check_rank(input, k, what)
    dt = dtype_name(input)
    if not is_float_dtype(dt):
        raise unsupported(f"{what} of a {dt} tensor")
    sizes, outs = _adaptive_sizes(input, k, output_size, what)
    out_shape = shape_of(input)[:rank(input) - k] + outs
    empty = _empty(out_shape, dt)
    if empty is not None:
        return (empty, _empty(out_shape, "int64")) if return_indices else empty
    if not maximum:
        outs, table, count = adaptive_avg_windows(input, k, output_size)
        gathered = _gather_windows(input, sizes, table, 0.0)
        return _finish(input, k, gathered, outs, "sum", table, count)
    windows = [_adaptive(s, o) for s, o in zip(sizes, outs, strict=True)]
    table = _window_table(sizes, windows)
    gathered = _gather_windows(input, sizes, table, _lowest(dt))
    return _finish(input, k, gathered, outs, "argmax" if return_indices else "max", table)


def max_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Any = None) -> Any:
    return avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override)


def adaptive_avg_pool3d(input: Any, output_size: Any) -> Any:
    return adaptive_pool(input, 3, output_size, False)


def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return adaptive_pool(input, 1, output_size, True, bool(return_indices))


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return adaptive_pool(input, 2, output_size, True, bool(return_indices))


def adaptive_max_pool3d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return adaptive_pool(input, 3, output_size, True, bool(return_indices))


# ---- convolutions --------------------------------------------------------------------------
def _batched(input: Any, k: int, what: str) -> tuple[Any, bool]:
    _check_rank(input, k, what)
    if rank(input) == k + 1:
        return ops.unsqueeze(input, [0]), True
    return input, False


def _conv_nd(x: Any, w: Any, stride: tuple, padding: tuple, dilation: tuple, groups: int) -> Any:
    """The convolution of batched x [N, C, *S] with w [O, C / groups, *K], no bias."""
    k = rank(x) - 2
    if k == 1:
        return ops.conv1d(x, w, list(stride), list(padding), list(dilation), groups)
    if k == 2:
        return ops.conv2d(x, w, list(stride), list(padding), list(dilation), groups)
    if k != 3:
        raise unsupported(f"a {k}-d convolution")
    return _conv3d(x, w, stride, padding, dilation, groups)


def _conv3d(x: Any, w: Any, stride: tuple, padding: tuple, dilation: tuple, groups: int) -> Any:
    """conv3d as one conv2d: the KD depth taps of each output depth stacked into the
    channels (group by group), the output depths moved into the batch."""
    n, c = shape_of(x)[:2]
    d, h, wd = _spatial_sizes(x, 3, "conv3d")
    o, cg, kd, kh, kw = (static_int(v, "a weight size") for v in w.shape)
    sd, pd, dd = stride[0], padding[0], dilation[0]
    od = (d + 2 * pd - dd * (kd - 1) - 1) // sd + 1
    if od <= 0:
        raise unsupported("conv3d of an input smaller than the kernel")
    if pd:
        zeros = full([n, c, pd, h, wd], 0.0, dtype_name(x))
        x = ops.concat([zeros, x, zeros], 2)
    taps = [ops.slice(x, [2], [t * dd], [t * dd + (od - 1) * sd + 1], [sd]) for t in range(kd)]
    x = ops.concat([ops.unsqueeze(t, [2]) for t in taps], 2)  # [N, C, KD, OD, H, W]
    x = ops.reshape(x, [n, groups, cg, kd, od, h, wd])
    x = ops.permute(x, [0, 4, 1, 3, 2, 5, 6])  # [N, OD, G, KD, Cg, H, W]
    x = ops.reshape(x, [-1, groups * kd * cg, h, wd])
    w2 = ops.reshape(ops.permute(w, [0, 2, 1, 3, 4]), [o, kd * cg, kh, kw])
    y = ops.conv2d(x, w2, list(stride[1:]), list(padding[1:]), list(dilation[1:]), groups)
    oh, ow = shape_of(y)[2:]
    y = ops.reshape(y, [n, od, o, oh, ow])
    return ops.permute(y, [0, 2, 1, 3, 4])


def _padding_arg(padding: Any, w: Any, dilation: tuple, k: int) -> tuple[int, ...]:
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * k
        if padding == "same":
            total = [d * (static_int(kk, "a kernel size") - 1)
                     for d, kk in zip(dilation, w.shape[2:], strict=True)]
            if any(t % 2 for t in total):
                raise unsupported("padding='same' with an even kernel (asymmetric padding)")
            return tuple(t // 2 for t in total)
        raise unsupported(f"padding={padding!r}")
    return _per_dim(padding, k, "padding")


def _bias(y: Any, bias: Any) -> Any:
    if bias is None:
        return y
    return ops.add(y, ops.reshape(bias, [-1] + [1] * (rank(y) - 2)))


def conv3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    x, unbatched = _batched(input, 3, "conv3d")
    if not is_float_dtype(dtype_name(x)) or dtype_name(x) != dtype_name(weight):
        raise unsupported("conv3d of non-float or mixed dtypes")
    dil = _per_dim(dilation, 3, "dilation")
    pad = _padding_arg(padding, weight, dil, 3)
    y = _bias(_conv3d(x, weight, _per_dim(stride, 3, "stride"), pad, dil, int(groups)), bias)
    return ops.squeeze(y, [0]) if unbatched else y


def _flipped_transposed(w: Any, groups: int) -> Any:
    """w [C_in, C_out / g, *K] as a convolution weight [C_out, C_in / g, *K], flipped
    spatially: computed once at compile time for a constant weight."""
    if is_const(w):
        t = w.torch()
        cin, cog = t.shape[:2]
        t = t.reshape(groups, cin // groups, cog, *t.shape[2:]).transpose(1, 2)
        t = t.reshape(groups * cog, cin // groups, *t.shape[3:])
        return constant(t.flip(list(range(2, t.dim()))).contiguous())
    cin, cog, *kernel = (static_int(v, "a weight size") for v in w.shape)
    t = ops.reshape(w, [groups, cin // groups, cog] + kernel)
    t = ops.permute(t, [0, 2, 1] + list(range(3, 3 + len(kernel))))
    t = ops.reshape(t, [groups * cog, cin // groups] + kernel)
    for axis, kk in enumerate(kernel):
        if kk > 1:
            t = take(t, 2 + axis, int_constant(list(range(kk - 1, -1, -1))))
    return t


def conv_transpose(input: Any, k: int, weight: Any, bias: Any = None, stride: Any = 1,
                   padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                   dilation: Any = 1) -> Any:
    what = f"conv_transpose{k}d"
    x, unbatched = _batched(input, k, what)
    dt = dtype_name(x)
    if not is_float_dtype(dt) or dt != dtype_name(weight):
        raise unsupported(f"{what} of non-float or mixed dtypes")
    if isinstance(padding, str):
        raise unsupported(f"{what} with padding={padding!r}")
    s, p = _per_dim(stride, k, "stride"), _per_dim(padding, k, "padding")
    op, d = _per_dim(output_padding, k, "output_padding"), _per_dim(dilation, k, "dilation")
    g = int(groups)
    sizes = _spatial_sizes(x, k, what)
    kernel = [static_int(v, "a kernel size") for v in weight.shape[2:]]
    cin, cog = (static_int(v, "a weight size") for v in weight.shape[:2])
    outs = [(n - 1) * st - 2 * pp + dd * (kk - 1) + o + 1
            for n, st, pp, dd, kk, o in zip(sizes, s, p, d, kernel, op, strict=True)]
    if builtins.min(outs) <= 0 or builtins.min(sizes) == 0:
        raise unsupported(f"{what} with an empty input or output")
    if list(s) == kernel and all(v == 1 for v in d) and g == 1:
        y = _transpose_by_matmul(x, weight, k, sizes, kernel, cin, cog)
        full_sizes = [n * kk for n, kk in zip(sizes, kernel, strict=True)]
    else:
        # zero insertion: x[..., i] at i * s, s - 1 zeros between
        for axis, st in enumerate(s):
            if st > 1:
                shape = shape_of(x)
                ax = 2 + axis
                n = shape[ax]
                z = ops.unsqueeze(x, [ax + 1])
                zshape = shape[:ax + 1] + [st - 1] + shape[ax + 1:]
                z = ops.concat([z, full(zshape, 0.0, dt)], ax + 1)
                shape[ax] = n * st
                x = ops.slice(ops.reshape(z, shape), [ax], [0], [(n - 1) * st + 1], [1])
        y = _conv_nd(x, _flipped_transposed(weight, g), (1,) * k,
                     tuple(dd * (kk - 1) for dd, kk in zip(d, kernel, strict=True)), d, g)
        full_sizes = [(n - 1) * st + dd * (kk - 1) + 1
                      for n, st, dd, kk in zip(sizes, s, d, kernel, strict=True)]
    # torch's output is the full one from p on; output_padding may reach past its end
    # (zeros there, before the bias)
    for axis in range(k):
        ax = 2 + axis
        stop = builtins.min(full_sizes[axis], p[axis] + outs[axis])
        if p[axis] or stop != full_sizes[axis]:
            y = ops.slice(y, [ax], [p[axis]], [stop], [1])
        extra = outs[axis] - (stop - p[axis])
        if extra > 0:
            shape = shape_of(y)
            shape[ax] = extra
            y = ops.concat([y, full(shape, 0.0, dt)], ax)
    y = _bias(y, bias)
    return ops.squeeze(y, [0]) if unbatched else y


def _transpose_by_matmul(x: Any, weight: Any, k: int, sizes: list[int], kernel: list[int],
                         cin: int, cout: int) -> Any:
    """stride == kernel, no dilation or groups: every input element spreads over its own
    block, out[n, o, i * K + j] = sum_c x[n, c, i] w[c, o, j]: one matrix product."""
    n = shape_of(x)[0]
    xs = ops.reshape(x, [n, cin, math.prod(sizes)])
    if is_const(weight):
        w2 = constant(weight.torch().reshape(cin, cout * math.prod(kernel)).T.contiguous())
    else:
        w2 = ops.transpose(ops.reshape(weight, [cin, cout * math.prod(kernel)]), 0, 1)
    y = ops.matmul(w2, xs)  # [N, O * prod K, prod S]
    y = ops.reshape(y, [n, cout] + kernel + sizes)
    order = [0, 1] + [d for i in range(k) for d in (2 + k + i, 2 + i)]
    y = ops.permute(y, order)  # [N, O, S0, K0, S1, K1, ...]
    return ops.reshape(y, [n, cout] + [s * kk for s, kk in zip(sizes, kernel, strict=True)])


def conv_transpose1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    return conv_transpose(input, 1, weight, bias, stride, padding, output_padding, groups,
                          dilation)


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    return conv_transpose(input, 2, weight, bias, stride, padding, output_padding, groups,
                          dilation)


def conv_transpose3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    return conv_transpose(input, 3, weight, bias, stride, padding, output_padding, groups,
                          dilation)


# ---- im2col and gathers at tensor indices --------------------------------------------------
def unfold(input: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Any:
    """torch.nn.functional.unfold (im2col) of [N, C, H, W] or [C, H, W]: the windows'
    elements (channel-major, then kernel rows and columns) over the window positions."""
    x, unbatched = _batched(input, 2, "unfold")
    kernel, dil = _per_dim(kernel_size, 2, "kernel_size"), _per_dim(dilation, 2, "dilation")
    pads, strides = _per_dim(padding, 2, "padding"), _per_dim(stride, 2, "stride")
    sizes = _spatial_sizes(x, 2, "unfold")
    outs = [_pool_out(*a, False) for a in zip(sizes, kernel, strides, pads, dil, strict=True)]
    if builtins.min(outs) <= 0 or builtins.min(sizes) == 0:
        raise unsupported("unfold with no window position")
    n, c = shape_of(x)[:2]
    kk = kernel[0] * kernel[1]
    out_shape = [n, c * kk if isinstance(c, int) else -1, outs[0] * outs[1]]
    empty = _empty(out_shape, dtype_name(x))
    if empty is None:
        table = _window_table(sizes, [_sliding(*a) for a in zip(
            sizes, outs, kernel, strides, pads, dil, strict=True)])
        windows = _gather_windows(x, sizes, table, 0)  # [N, C, L, K]
        y = ops.reshape(ops.permute(windows, [0, 1, 3, 2]), [n, -1, outs[0] * outs[1]])
    else:
        y = empty
    return ops.squeeze(y, [0]) if unbatched else y


def take_flat(input: Any, index: Any, *, out: Any = None) -> Any:
    """torch.take: input flattened, at `index` (negative positions count from the end)."""
    if out is not None:
        raise unsupported("out= arguments")
    if not is_tensor(index) or dtype_name(index) not in ("int64", "int32"):
        raise unsupported("take with an index that is not an integer tensor")
    shape = shape_of(index)
    empty = _empty(shape, dtype_name(input))
    if empty is not None:
        return empty
    numel = math.prod(_spatial_sizes(input, rank(input), "take"))
    if numel == 0:
        raise unsupported("take from a tensor with no elements")
    idx = cast(index, "int64")
    idx = ops.where(ops.less(idx, 0), ops.add(idx, numel), idx)
    rows = ops.embedding(ops.reshape(input, [numel, 1]), idx)
    return ops.reshape(rows, shape)


def take_along_dim(input: Any, indices: Any, dim: Any = None, *, out: Any = None) -> Any:
    """torch.take_along_dim: gather along dim after broadcasting input and indices off it
    (dim=None: the flattened input)."""
    from ember.torch.converters.composites import gather

    if out is not None:
        raise unsupported("out= arguments")
    if not is_tensor(indices) or dtype_name(indices) not in ("int64", "int32"):
        raise unsupported("take_along_dim with indices that are not an integer tensor")
    if dim is None:
        flat_in = ops.reshape(input, [-1]) if rank(input) != 1 else input
        flat_idx = ops.reshape(indices, [-1]) if rank(indices) != 1 else indices
        return take_along_dim(flat_in, flat_idx, 0)
    n = rank(input)
    if rank(indices) != n or n == 0:
        raise unsupported("take_along_dim with indices whose rank differs from the input's")
    axis = norm_dim(dim, n)
    a = _spatial_sizes(input, n, "take_along_dim")
    b = _spatial_sizes(indices, n, "take_along_dim")
    common = [builtins.max(x, y) for x, y in zip(a, b, strict=True)]
    if any((x not in (1, m) or y not in (1, m)) and d != axis
           for d, (x, y, m) in enumerate(zip(a, b, common, strict=True))):
        raise unsupported(f"take_along_dim of shapes {a} and {b} that do not broadcast")
    x_shape = [a[d] if d == axis else common[d] for d in range(n)]
    i_shape = [b[d] if d == axis else common[d] for d in range(n)]
    x = ops.expand(input, x_shape) if x_shape != a else input
    idx = ops.expand(indices, i_shape) if i_shape != b else indices
    empty = _empty(i_shape, dtype_name(input))
    if empty is not None:
        return empty
    return gather(x, axis, idx)


# ---- resampling ----------------------------------------------------------------------------
_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _axis_matrix(mode: str, n: int, m: int, align_corners: bool, scale: Any, antialias: bool,
                 dtype: torch.dtype) -> torch.Tensor:
    """torch's [m, n] resampling matrix along one axis: its operator applied to eye(n)."""
    eye = torch.eye(n, dtype=dtype).unsqueeze(0)  # [1, n (one-hot sources), n]
    eye2 = eye.unsqueeze(2)  # [1, n, 1, n]
    s = None if scale is None else float(py_value(scale))
    nn = torch._C._nn
    if mode == "nearest":
        y = nn.upsample_nearest1d(eye, [m], s)
    elif mode == "nearest-exact":
        y = nn._upsample_nearest_exact1d(eye, [m], s)
    elif mode in _LINEAR and antialias:
        y = nn._upsample_bilinear2d_aa(eye2, [1, m], align_corners, None, s)[:, :, 0]
    elif mode in _LINEAR:
        y = nn.upsample_linear1d(eye, [m], align_corners, s)
    elif mode == "bicubic" and antialias:
        y = nn._upsample_bicubic2d_aa(eye2, [1, m], align_corners, None, s)[:, :, 0]
    elif mode == "bicubic":
        y = nn.upsample_bicubic2d(eye2, [1, m], align_corners, None, s)[:, :, 0]
    elif mode == "area":
        y = F.adaptive_avg_pool1d(eye, m)
    else:
        raise unsupported(f"interpolate with mode={mode!r}")
    return y[0].T.contiguous()


def _resample_axis(x: Any, axis: int, matrix: torch.Tensor) -> Any:
    """x along `axis` resampled by matrix [m, n]: a sum of weighted gathers of its taps."""
    m, n = matrix.shape
    if m == n and torch.equal(matrix, torch.eye(n, dtype=matrix.dtype)):
        return x
    nonzero = matrix != 0
    taps = int(nonzero.sum(dim=1).max())
    order = torch.argsort((~nonzero).to(torch.int8), dim=1, stable=True)[:, :taps]
    weights = torch.gather(matrix, 1, order)
    order = torch.where(weights != 0, order, order[:, :1])  # padding taps: weight 0
    tail = [1] * (rank(x) - axis - 1)
    if taps == 1 and bool((weights == 1).all()):
        return take(x, axis, int_constant(order[:, 0].contiguous()))
    if not is_float_dtype(dtype_name(x)):
        raise unsupported(f"resampling a {dtype_name(x)} tensor with weights")
    total = None
    for t in range(taps):
        w = constant(weights[:, t].reshape([m] + tail).contiguous())
        term = ops.mul(take(x, axis, int_constant(order[:, t].contiguous())), w)
        total = term if total is None else ops.add(total, term)
    return total


def resample(input: Any, k: int, out: list[int], scales: list[Any], mode: str,
             align_corners: bool, antialias: bool = False) -> Any:
    """input [N, C, *S] (k spatial dims) resampled to [N, C, *out] as torch's interpolate,
    with the per-axis scales torch's operators receive (None: in / out)."""
    sizes = _spatial_sizes(input, k, "interpolate")
    dt = dtype_name(input)
    out_shape = shape_of(input)[:2] + list(out)
    if builtins.min(sizes) == 0:
        raise unsupported("interpolate of an empty spatial dimension")
    empty = _empty(out_shape, dt)
    if empty is not None:
        return empty
    compute = torch.float64 if dt == "float64" else torch.float32
    x = input
    for i, (n, m, s) in enumerate(zip(sizes, out, scales, strict=True)):
        matrix = _axis_matrix(mode, n, m, align_corners, s, antialias, compute)
        if not is_float_dtype(dt) and mode not in ("nearest", "nearest-exact"):
            raise unsupported(f"interpolate mode={mode!r} of a {dt} tensor")
        x = _resample_axis(x, 2 + i, matrix.to(torch_dtype(dt)) if is_float_dtype(dt) else matrix)
    return x


_MODE_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def interpolate_nd(input: Any, size: Any = None, scale_factor: Any = None,
                   mode: str = "nearest", align_corners: Any = None,
                   recompute_scale_factor: Any = None, antialias: bool = False) -> Any:
    """torch.nn.functional.interpolate of any rank (3: 1-d, 4: 2-d, 5: 3-d) and mode."""
    k = rank(input) - 2
    if k not in (1, 2, 3):
        raise unsupported(f"interpolate of a rank-{rank(input)} tensor")
    if mode in _MODE_RANK and _MODE_RANK[mode] != k:
        raise unsupported(f"interpolate mode={mode!r} of a rank-{rank(input)} tensor")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise unsupported(f"interpolate with antialias and mode={mode!r}")
    sizes = _spatial_sizes(input, k, "interpolate")
    if (size is None) == (scale_factor is None):
        raise unsupported("interpolate needs exactly one of size and scale_factor")
    if size is not None:
        out = [static_int(s, "an output size") for s in (
            size if isinstance(size, (tuple, list)) else [size] * k)]
        scales: list[Any] = [None] * k
    else:
        factors = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else (
            [scale_factor] * k)
        factors = [float(py_value(f)) for f in factors]
        out = [int(math.floor(float(s * f))) for s, f in zip(sizes, factors, strict=True)]
        scales = [None] * k if recompute_scale_factor else list(factors)
    if len(out) != k:
        raise unsupported(f"interpolate to {len(out)} sizes of a rank-{rank(input)} tensor")
    if mode == "area":
        scales = [None] * k
    corners = bool(align_corners) if mode in ("linear", "bilinear", "bicubic", "trilinear") \
        else False
    return resample(input, k, out, scales, mode, corners, bool(antialias))


def upsample_bilinear(input: Any, size: Any = None, scale_factor: Any = None) -> Any:
    return interpolate_nd(input, size, scale_factor, "bilinear", True)


def upsample_nearest(input: Any, size: Any = None, scale_factor: Any = None) -> Any:
    return interpolate_nd(input, size, scale_factor, "nearest")


def upsample_bilinear2d_aa(input: Any, output_size: Any, align_corners: bool,
                           scales_h: Any = None, scales_w: Any = None,
                           scale_factors: Any = None) -> Any:
    """aten._upsample_bilinear2d_aa: its default overload (output_size, scales_h, scales_w)
    and its .vec overload (output_size or the sizes from a list of scale factors)."""
    if rank(input) != 4:
        raise unsupported("_upsample_bilinear2d_aa of a tensor of rank other than 4")
    if scale_factors is not None:
        if scales_h is not None or scales_w is not None:
            raise unsupported("_upsample_bilinear2d_aa with both scale factors and scales")
        scales_h = list(scale_factors)
    if isinstance(scales_h, (tuple, list)) or (output_size is None and scales_w is None):
        if scales_w is not None:
            raise unsupported("_upsample_bilinear2d_aa with both scale factors and scales")
        factors = scales_h
        if output_size is None:
            if factors is None:
                raise unsupported("_upsample_bilinear2d_aa without sizes or scales")
            sizes = _spatial_sizes(input, 2, "_upsample_bilinear2d_aa")
            factors = [float(py_value(f)) for f in factors]
            out = [int(math.floor(s * f)) for s, f in zip(sizes, factors, strict=True)]
            return resample(input, 2, out, factors, "bilinear", bool(align_corners), True)
        scales_h = None
    out = [static_int(s, "an output size") for s in output_size]
    return resample(input, 2, out, [scales_h, scales_w], "bilinear", bool(align_corners), True)


def _register_all() -> None:
    register(unfold, F.unfold)
    register(take_flat, torch.take)
    register(take_along_dim, torch.take_along_dim)
    with builtin_registrations():
        register_method("take")(take_flat)
        register_method("take_along_dim")(take_along_dim)
    register(conv3d, F.conv3d, torch.conv3d)
    register(conv_transpose1d, F.conv_transpose1d, torch.conv_transpose1d)
    register(conv_transpose2d, F.conv_transpose2d, torch.conv_transpose2d)
    register(conv_transpose3d, F.conv_transpose3d, torch.conv_transpose3d)
    register(max_pool3d, F.max_pool3d, torch.max_pool3d)
    register(avg_pool3d, F.avg_pool3d, torch._C._nn.avg_pool3d)
    register(adaptive_avg_pool3d, F.adaptive_avg_pool3d, torch._C._nn.adaptive_avg_pool3d)
    register(adaptive_max_pool1d, F.adaptive_max_pool1d)
    register(adaptive_max_pool2d, F.adaptive_max_pool2d)
    register(adaptive_max_pool3d, F.adaptive_max_pool3d)
    register(upsample_bilinear, F.upsample_bilinear)
    register(upsample_nearest, F.upsample_nearest)
    aa = torch.ops.aten._upsample_bilinear2d_aa
    register(upsample_bilinear2d_aa, aa, aa.default, aa.vec, torch._C._nn._upsample_bilinear2d_aa)


_register_all()
