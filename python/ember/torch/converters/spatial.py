"""Converters for N-d pooling (return_indices, adaptive max), ``unfold`` (im2col), ``fold``
(col2im) and gathers at tensor indices (``take``, ``take_along_dim``), and the helpers of the
spatial converters (spatial_conv.py: 3-d and transposed convolutions; spatial_resample.py:
every mode of ``interpolate`` and grid sampling). ``_unsafe_masked_index`` is not converted
(it runs in eager PyTorch); ``embedding_bag`` is in nn_functions.py.

The spatial sizes must be known at compile time: the converters build their index and
weight tables with torch then. Symbolic spatial sizes are fixed by Dynamo guards (one graph
per spatial size, the batch and channels stay symbolic), or raise ``unsupported`` (eager
fallback) where no guard can be added.

- Pooling windows: the input's spatial dimensions are flattened, one fill slot (the identity
  of the reduction: -inf / the dtype's lowest for max, 0 for sums) is appended, and one
  gather (``composite_math.take``) of a constant [outputs, window] table of positions gives
  every window; a reduction over the window finishes (max, argmax for return_indices, sum
  divided by torch's divisor). Windows of different sizes (adaptive pooling) are padded with
  the fill slot.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import torch_dtype
from ember.torch.converters.common import (
    cast,
    constant,
    dtype_name,
    fixed_shape,
    full,
    is_float_dtype,
    is_tensor,
    norm_dim,
    ops,
    pair,
    rank,
    shape_of,
    static_int,
    unsupported,
    zeros_in_graph,
)
from ember.torch.converters.composite_math import int_constant, take
from ember.torch.converters.functions import register
from ember.torch.registry import builtin_registrations, register_method


# ---- shared helpers ------------------------------------------------------------------------
def _spatial_sizes(x: Any, k: int, what: str) -> list[int]:
    """x's last k sizes as ints: symbolic ones are fixed by guards (fixed_shape; a call with
    other spatial sizes compiles again, the batch and channels stay symbolic)."""
    return fixed_shape(x, what, range(rank(x) - k, rank(x)))


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


def conv_padding(x: Any, padding: Any, weight: Any, dilation: Sequence[int],
                 k: int) -> tuple[Any, tuple[int, ...]]:
    """x and the padding (per spatial dimension, the same before and after) of a k-d
    convolution of x by weight [O, I, *K]: numbers, "valid", or "same" (at stride 1 the
    output as large as the input: d * (K - 1) zeros per dimension, half before; where that
    is odd, torch puts the extra zero after, which x gets here explicitly)."""
    if not isinstance(padding, str):
        return x, _per_dim(padding, k, "padding")
    if padding == "valid":
        return x, (0,) * k
    if padding != "same":
        raise unsupported(f"padding={padding!r}")
    total = [d * (static_int(kk, "a kernel size") - 1)
             for d, kk in zip(dilation, weight.shape[2:], strict=True)]
    for a, t in enumerate(total):
        if t % 2:
            shape = shape_of(x)
            axis = rank(x) - k + a
            zeros = zeros_in_graph(shape[:axis] + [1] + shape[axis + 1:], dtype_name(x))
            x = ops.concat([x, zeros], axis)
    return x, tuple(t // 2 for t in total)


def _batched(input: Any, k: int, what: str) -> tuple[Any, bool]:
    _check_rank(input, k, what)
    if rank(input) == k + 1:
        return ops.unsqueeze(input, [0]), True
    return input, False


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
    arg = ops.argmax(windows, axis, False)  # [..., O]: the first maximum, the first NaN
    # torch's pooling kernels take an element when it is larger or NaN: of several NaNs in a
    # window, the last one's index (argmax, and torch.argmax, give the first).
    nans = ops.cast(ops.isnan(windows), "float32")
    last_nan = ops.sub(int_constant(torch.tensor(shape_of(windows)[axis] - 1)),
                       ops.argmax(ops.flip(nans, [axis]), axis, False))
    arg = ops.where(ops.greater(ops.max(nans, [axis], False), 0.0), last_nan, arg)
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


def fold(input: Any, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Any:
    """torch.nn.functional.fold (col2im) of [N, C*K, L] or [C*K, L], the adjoint of unfold:
    each column's window elements added into [N, C, H, W] at their positions (padding
    dropped). One scatter-add over the flat image with kernel offsets outside the window
    positions, so each pixel adds its terms in the order torch's col2im does."""
    if rank(input) not in (2, 3):
        raise unsupported(f"fold of a rank-{rank(input)} tensor (expects 2 or 3)")
    dt = dtype_name(input)
    if dt not in ("float32", "float64"):
        raise unsupported(f"fold of a {dt} tensor")
    unbatched = rank(input) == 2
    x = ops.unsqueeze(input, [0]) if unbatched else input
    sizes = list(_per_dim(output_size, 2, "output_size"))
    kernel, dil = _per_dim(kernel_size, 2, "kernel_size"), _per_dim(dilation, 2, "dilation")
    pads, strides = _per_dim(padding, 2, "padding"), _per_dim(stride, 2, "stride")
    outs = [_pool_out(*a, False) for a in zip(sizes, kernel, strides, pads, dil, strict=True)]
    n = shape_of(x)[0]
    ck, cols = fixed_shape(x, "fold", [1, 2])
    kk, positions = kernel[0] * kernel[1], outs[0] * outs[1]
    if (builtins.min(outs) <= 0 or builtins.min(sizes) <= 0 or ck % kk != 0
            or cols != positions):
        raise unsupported(f"fold of {shape_of(input)} into {sizes} with {kernel} windows")
    c = ck // kk
    pixels = math.prod(sizes)
    if n == 0 or c == 0:
        return zeros_in_graph(([] if unbatched else [n]) + [c] + sizes, dt)
    table = _window_table(sizes, [_sliding(*a) for a in zip(
        sizes, outs, kernel, strides, pads, dil, strict=True)])  # [L, K], pixels outside
    index = int_constant(table.t().contiguous().reshape(1, 1, kk * positions))
    values = ops.reshape(x, [n, c, kk * positions])
    index = ops.expand(index, [n, c, kk * positions])
    image = zeros_in_graph([n, c, pixels + 1], dt)  # the last slot takes the padding's terms
    image = ops.scatter(image, 2, index, values, "sum")
    y = ops.reshape(ops.slice(image, [2], [0], [pixels], [1]), [n, c] + sizes)
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
    if out is not None:
        raise unsupported("out= arguments")
    if not is_tensor(indices) or dtype_name(indices) not in ("int64", "int32"):
        raise unsupported("take_along_dim with indices that are not an integer tensor")
    if dim is None:
        flat_in = ops.reshape(input, [-1]) if rank(input) != 1 else input
        flat_idx = ops.reshape(indices, [-1]) if rank(indices) != 1 else indices
        return _take_along(flat_in, flat_idx, 0, wrap=False)  # torch's gather: no wrapping
    return _take_along(input, indices, dim, wrap=True)


def _take_along(input: Any, indices: Any, dim: Any, wrap: bool) -> Any:
    from ember.torch.converters.composites import gather

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
    if wrap:  # with a dim, torch's take_along_dim counts negative indices from the end
        idx = cast(idx, "int64")
        idx = ops.where(ops.less(idx, 0), ops.add(idx, a[axis]), idx)
    return gather(x, axis, idx)


def _register_all() -> None:
    register(unfold, F.unfold)
    register(fold, F.fold, torch._C._nn.col2im)
    register(take_flat, torch.take)
    register(take_along_dim, torch.take_along_dim)
    with builtin_registrations():
        register_method("take")(take_flat)
        register_method("take_along_dim")(take_along_dim)
    register(max_pool3d, F.max_pool3d, torch.max_pool3d)
    register(avg_pool3d, F.avg_pool3d, torch._C._nn.avg_pool3d)
    register(adaptive_avg_pool3d, F.adaptive_avg_pool3d, torch._C._nn.adaptive_avg_pool3d)
    register(adaptive_max_pool1d, F.adaptive_max_pool1d)
    register(adaptive_max_pool2d, F.adaptive_max_pool2d)
    register(adaptive_max_pool3d, F.adaptive_max_pool3d)


_register_all()
