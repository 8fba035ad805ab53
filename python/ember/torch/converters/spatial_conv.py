"""Converters for 3-d and transposed convolutions, on the helpers of spatial.py (whose
spatial sizes, too, must be known at compile time).

- conv3d is one conv2d over (H, W) with the depth taps stacked into the channels and the
  output depths moved into the batch. A transposed convolution with stride == kernel (no
  overlapping windows, the usual upsampling layer) is one matrix product and a reshape;
  otherwise it is the convolution of the zero-inserted, padded input with the flipped,
  transposed weight.
"""

from __future__ import annotations

import builtins
import itertools
import math
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.converters.common import (
    constant,
    dtype_name,
    full,
    is_const,
    is_float_dtype,
    ops,
    rank,
    shape_of,
    specialized,
    static_int,
    unsupported,
    zeros_in_graph,
)
from ember.torch.converters.functions import register
from ember.torch.converters.spatial import _batched, _per_dim, _spatial_sizes, conv_padding


# ---- convolutions --------------------------------------------------------------------------
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
    weight = specialized(weight, "a conv3d weight's size")
    x, pad = conv_padding(x, padding, weight, dil, 3)
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
    return ops.flip(t, [2 + axis for axis, kk in enumerate(kernel) if kk > 1])


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
    weight = specialized(weight, f"a {what} weight's size")
    kernel = [static_int(v, "a kernel size") for v in weight.shape[2:]]
    cin, cog = (static_int(v, "a weight size") for v in weight.shape[:2])
    outs = [(n - 1) * st - 2 * pp + dd * (kk - 1) + o + 1
            for n, st, pp, dd, kk, o in zip(sizes, s, p, d, kernel, op, strict=True)]
    if builtins.min(outs) <= 0 or builtins.min(sizes) == 0:
        raise unsupported(f"{what} with an empty input or output")
    # The padding that gives torch's output straight away: the full convolution's, d * (K - 1),
    # less p on each side, with output_padding's rows of zeros after the input.
    trimmed = [dd * (kk - 1) - pp for dd, kk, pp in zip(d, kernel, p, strict=True)]
    if list(s) == kernel and all(v == 1 for v in d) and g == 1:
        y = _transpose_by_matmul(x, weight, k, sizes, kernel, cin, cog)
        full_sizes = [n * kk for n, kk in zip(sizes, kernel, strict=True)]
    elif builtins.max(s) > 1 and all(v == 1 for v in d):
        y = _transpose_by_phases(x, weight, s, p, g, sizes, outs, kernel, dt)
        return _bias_unbatched(y, bias, unbatched)
    elif builtins.min(trimmed) >= 0:
        x = _zeros_between(x, s, dt)
        for axis, o in enumerate(op):
            x = _pad_zeros(x, 2 + axis, 0, o, dt)
        y = _conv_nd(x, _flipped_transposed(weight, g), (1,) * k, tuple(trimmed), d, g)
        return _bias_unbatched(y, bias, unbatched)
    else:
        x = _zeros_between(x, s, dt)
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
        y = _pad_zeros(y, ax, 0, outs[axis] - (stop - p[axis]), dt)
    return _bias_unbatched(y, bias, unbatched)


def _transpose_by_phases(x: Any, weight: Any, s: list[int], p: list[int], g: int,
                         sizes: list[int], outs: list[int], kernel: list[int], dt: str) -> Any:
    """A strided transposed convolution (no dilation) as one stride-1 convolution per output
    phase, without the zeros between the inputs (which made 3/4 of a stride-2 layer's work).
    Output position o = j * s + r gathers the taps t = t0 + m * s with t0 = (r + p) mod s:
    out[j * s + r] = sum over m of x[j + c - m] w[t0 + m * s], c = (r + p) // s, which is the
    convolution of x, padded by taps - 1 - c before it, with those taps flipped. The phases'
    outputs are interleaved into torch's."""
    k = len(s)
    lead = shape_of(x)[:2]
    o_channels = static_int(weight.shape[1], "a weight size") * g
    steps = [-(-n // st) for n, st in zip(outs, s, strict=True)]  # positions per phase, at most

    def phase(r: tuple[int, ...]) -> Any:
        xr, wr = x, weight
        lengths = []
        for a in range(k):
            ax, st = 2 + a, s[a]
            t0 = (r[a] + p[a]) % st
            taps = len(range(t0, kernel[a], st))
            length = -(-(outs[a] - r[a]) // st)  # the j with j * s + r < out
            lengths.append(length)
            if taps == 0 or length <= 0:
                return None
            c = (r[a] + p[a]) // st
            before, after = taps - 1 - c, (length - 1 + c) - (sizes[a] - 1)
            if before < 0 or after < 0:  # crop: the first or last inputs reach no output
                start = builtins.max(-before, 0)
                stop = shape_of(xr)[ax] - builtins.max(-after, 0)
                if stop <= start:  # only padding reaches this phase: zeros
                    return None
                xr = ops.slice(xr, [ax], [start], [stop], [1])
            xr = _pad_zeros(xr, ax, before, after, dt)
            if st > 1 or t0 > 0:
                wr = ops.slice(wr, [ax], [t0], [kernel[a]], [st])
        y = _conv_nd(xr, _flipped_transposed(wr, g), (1,) * k, (0,) * k, (1,) * k, g)
        for a in range(k):  # every phase to the longest one's length
            y = _pad_zeros(y, 2 + a, 0, steps[a] - lengths[a], dt)
        return y

    # [N, O, steps_0, s_0, steps_1, s_1, ...], phase r at (..., j_a, r_a, ...): each phase's
    # output with a unit axis after each spatial one, concatenated along those, last first.
    spread = lead[:1] + [o_channels] + [v for n in steps for v in (n, 1)]
    parts: dict[tuple[int, ...], Any] = {}
    for r in itertools.product(*[range(st) for st in s]):
        y = phase(r)
        parts[r] = (zeros_in_graph(spread, dt) if y is None else ops.reshape(y, spread))
    for a in reversed(range(k)):
        merged: dict[tuple[int, ...], Any] = {}
        for r in itertools.product(*[range(st) for st in s[:a]]):
            merged[r] = ops.concat([parts[r + (v,)] for v in range(s[a])], 3 + 2 * a)
        parts = merged
    y = parts[()]
    y = ops.reshape(y, lead[:1] + [o_channels] + [n * st for n, st in zip(steps, s, strict=True)])
    for a in range(k):
        if steps[a] * s[a] != outs[a]:
            y = ops.slice(y, [2 + a], [0], [outs[a]], [1])
    return y


def _pad_zeros(x: Any, axis: int, before: int, after: int, dt: str) -> Any:
    """x with `before` zeros ahead of it and `after` behind it along `axis` (none where a count
    is not positive), the zeros traced into the graph (zeros_in_graph)."""
    if before <= 0 and after <= 0:
        return x
    shape = shape_of(x)
    zeros = [zeros_in_graph(shape[:axis] + [n] + shape[axis + 1:], dt) if n > 0 else None
             for n in (before, after)]
    return ops.concat([v for v in (zeros[0], x, zeros[1]) if v is not None], axis)


def _bias_unbatched(y: Any, bias: Any, unbatched: bool) -> Any:
    y = _bias(y, bias)
    return ops.squeeze(y, [0]) if unbatched else y


def _zeros_between(x: Any, stride: list[int], dt: str) -> Any:
    """x [N, C, *S] with stride - 1 zeros between neighbours along each spatial axis:
    x[..., i] at i * stride."""
    for axis, st in enumerate(stride):
        if st > 1:
            shape = shape_of(x)
            ax = 2 + axis
            n = shape[ax]
            z = ops.unsqueeze(x, [ax + 1])
            zshape = shape[:ax + 1] + [st - 1] + shape[ax + 1:]
            z = ops.concat([z, zeros_in_graph(zshape, dt)], ax + 1)
            shape[ax] = n * st
            x = ops.slice(ops.reshape(z, shape), [ax], [0], [(n - 1) * st + 1], [1])
    return x


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


def _register_all() -> None:
    register(conv3d, F.conv3d, torch.conv3d)
    register(conv_transpose1d, F.conv_transpose1d, torch.conv_transpose1d)
    register(conv_transpose2d, F.conv_transpose2d, torch.conv_transpose2d)
    register(conv_transpose3d, F.conv_transpose3d, torch.conv_transpose3d)


_register_all()
