"""Converters for resampling: every mode of ``interpolate``, ``upsample_*``, antialiased
bilinear and grid sampling (``grid_sample``: bilinear, nearest and bicubic), on the
helpers of spatial.py (whose spatial sizes, too, must be known at compile time, or are
fixed by guards).

- Resampling is separable: along each spatial axis, the output is a weighted sum of a few
  gathered input rows. The weights are torch's own: the matching 1-d (or 2-d) ATen
  resampling operator applied at compile time to an identity matrix, which gives the
  [out, in] matrix of the axis (its nonzero entries are the taps).
"""

from __future__ import annotations

import builtins
import itertools
import math
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import expected_value, sym_size, torch_dtype
from ember.torch.converters.common import (
    constant,
    dtype_name,
    fixed_number,
    is_float_dtype,
    is_tensor,
    ops,
    py_value,
    rank,
    shape_of,
    size_product,
    size_value,
    static_int,
    unsupported,
)
from ember.torch.converters.composite_math import int_constant, take, take_along
from ember.torch.converters.functions import register
from ember.torch.converters.spatial import _empty, _spatial_sizes

# ---- resampling ----------------------------------------------------------------------------
_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _axis_matrix(mode: str, n: int, m: int, align_corners: bool, scale: Any, antialias: bool,
                 dtype: torch.dtype) -> torch.Tensor:
    """torch's [m, n] resampling matrix along one axis: its operator applied to eye(n)."""
    eye = torch.eye(n, dtype=dtype).unsqueeze(0)  # [1, n (one-hot sources), n]
    eye2 = eye.unsqueeze(2)  # [1, n, 1, n]
    s = None if scale is None else float(fixed_number(scale, "a scale factor"))
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


def _positions_at_run_time(n: int | str, m: int | str, scale: Any, mode: str,
                           corners: bool, ft: str) -> tuple[Any, Any, Any]:
    """The source positions of the m outputs along an axis of n inputs, computed in the
    graph as torch's CPU kernels compute them (in `ft`, their math type): (i0, None, None)
    for the nearest modes; (i0, i1, weight of i1) for linear interpolation."""
    dst = ops.cast(ops.arange(0, m, 1, "int64"), ft)
    last = size_value(n, "int64") - 1

    def number(size: int | str, less: int) -> Any:  # size - less, in ft
        if isinstance(size, int):
            return torch.tensor(size - less, dtype=torch_dtype(ft))
        return ops.cast(size_value(size, "int64") - less, ft)

    def ratio() -> Any:  # n / m, or (n - 1) / (m - 1) with align_corners
        a, b = number(n, int(corners)), number(m, int(corners))
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            return float(a / b)
        return (float(a) if isinstance(a, torch.Tensor) else a) / (
            float(b) if isinstance(b, torch.Tensor) else b)

    if corners:  # the scale factor is not used
        step: Any = 0.0 if m == 1 else ratio()
    elif is_tensor(scale):  # a scale factor known at run time: 1 / scale if > 0
        inverse = ops.cast(1.0 / ops.cast(scale, "float64"), ft)
        step = ops.where(ops.greater(scale, 0.0), inverse, ratio())
    elif scale is not None and scale > 0:
        step = float(torch.tensor(1.0 / scale, dtype=torch_dtype(ft)))
    else:
        step = ratio()
    if mode in ("nearest", "nearest-exact"):
        src = (dst + 0.5) * step if mode == "nearest-exact" else dst * step
        return ops.minimum(ops.cast(ops.floor(src), "int64"), last), None, None
    src = dst * step if corners else ops.maximum((dst + 0.5) * step - 0.5, 0.0)
    i0 = ops.minimum(ops.cast(ops.floor(src), "int64"), last)
    weight = ops.minimum(ops.maximum(src - ops.cast(i0, ft), 0.0), 1.0)
    return i0, ops.minimum(i0 + 1, last), weight


def _resample_at_run_time(input: Any, k: int, scales: list[Any], mode: str,
                          corners: bool) -> Any:
    """interpolate where a spatial size or a scale factor (a 0-d tensor: a float Dynamo
    did not specialize) is known only at run time: per axis, gathers of
    the positions computed in the graph (nearest) or the weighted sum of two gathers
    (linear); the output sizes are torch's (Dynamo's record)."""
    meta = expected_value()
    if not isinstance(meta, torch.Tensor) or meta.dim() != rank(input):
        raise unsupported("interpolate without torch's output shape")
    dt = dtype_name(input)
    if not is_float_dtype(dt) and mode in _LINEAR:
        raise unsupported(f"interpolate mode={mode!r} of a {dt} tensor")
    ft = "float64" if dt == "float64" else "float32"
    x = input
    for i in range(k):
        axis = 2 + i
        n, m = shape_of(x)[axis], sym_size(meta.shape[axis], of_tensor=True)
        if n == m and (scales[i] is None or corners or (
                not is_tensor(scales[i]) and scales[i] == 1.0)):
            continue
        i0, i1, w = _positions_at_run_time(n, m, scales[i], mode, corners, ft)
        if i1 is None:
            x = take_along(x, axis, i0)
            continue
        view = [m] + [1] * (rank(x) - axis - 1)
        w = ops.reshape(ops.cast(w, dt), view)
        a, b = take_along(x, axis, i0), take_along(x, axis, i1)
        x = a * (1.0 - w) + b * w  # torch's x0 * lambda0 + x1 * lambda1
    return x


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
    if (size is None) == (scale_factor is None):
        raise unsupported("interpolate needs exactly one of size and scale_factor")
    corners = bool(align_corners) if mode in ("linear", "bilinear", "bicubic", "trilinear") \
        else False
    each = [] if scale_factor is None else (
        list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * k)
    # nearest and linear modes follow symbolic sizes and run-time scale factors; the others
    # (area, bicubic, antialiased) fix symbolic sizes by guards (_spatial_sizes)
    at_run_time = not antialias and (mode in ("nearest", "nearest-exact") or mode in _LINEAR)
    if not at_run_time:  # a scale factor read from a tensor is fixed by a guard
        each = [fixed_number(f, f"interpolate mode={mode!r} with a scale factor")
                for f in each]
    if at_run_time and (any(not isinstance(d, int) for d in shape_of(input)[2:]) or any(
            is_tensor(f) for f in each)):
        factors: list[Any] = [None] * k
        if each and not recompute_scale_factor:
            factors = [f if is_tensor(f) else float(py_value(f)) for f in each]
        return _resample_at_run_time(input, k, factors, mode, corners)
    sizes = _spatial_sizes(input, k, "interpolate")
    if size is not None:
        out = [static_int(s, "an output size") for s in (
            size if isinstance(size, (tuple, list)) else [size] * k)]
        scales: list[Any] = [None] * k
    else:
        factors = [float(fixed_number(f, "a scale factor")) for f in each]
        out = [int(math.floor(float(s * f))) for s, f in zip(sizes, factors, strict=True)]
        scales = [None] * k if recompute_scale_factor else list(factors)
    if len(out) != k:
        raise unsupported(f"interpolate to {len(out)} sizes of a rank-{rank(input)} tensor")
    if mode == "area":
        scales = [None] * k
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
            factors = [float(fixed_number(f, "a scale factor")) for f in factors]
            out = [int(math.floor(s * f)) for s, f in zip(sizes, factors, strict=True)]
            return resample(input, 2, out, factors, "bilinear", bool(align_corners), True)
        scales_h = None
    out = [static_int(s, "an output size") for s in output_size]
    return resample(input, 2, out, [scales_h, scales_w], "bilinear", bool(align_corners), True)


# ---- grid sampling -------------------------------------------------------------------------
_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def _reflect(c: Any, twice_low: int, twice_high: Any) -> Any:
    """torch's reflect_coordinates: c reflected into [twice_low / 2, twice_high / 2]
    (twice_high a number, or a 0-d tensor for a symbolic size)."""
    low = twice_low * 0.5
    span = (twice_high - twice_low) * 0.5
    d = ops.abs(c - low)
    extra = ops.fmod(d, span)
    even = ops.equal(ops.fmod(ops.floor(d / span), 2.0), 0.0)
    return ops.where(even, extra + low, span - extra + low)


def _size_number(size: Any, like: Any) -> Any:
    return size_value(size, dtype_name(like)) if isinstance(size, str) else float(size)


def _unnormalized(g: Any, size: Any, corners: bool) -> Any:
    """A normalized grid coordinate in [-1, 1] as a position along an axis of `size`."""
    n = _size_number(size, g)
    return (g + 1.0) * 0.5 * (n - 1.0) if corners else ((g + 1.0) * n - 1.0) * 0.5


def _padded_coordinate(c: Any, size: Any, padding: str, corners: bool) -> Any:
    """A position clipped (border) or reflected and clipped (reflection) into the input, as
    torch's compute_coordinates; unchanged for zeros padding."""
    n = _size_number(size, c)
    if padding == "reflection":
        if isinstance(size, int) and size <= 1:
            c = c * 0.0  # twice_low == twice_high: every coordinate reflects to 0
        elif corners:
            c = _reflect(c, 0, 2.0 * (n - 1.0))
        else:
            c = _reflect(c, -1, 2.0 * n - 1.0)
    if padding in ("border", "reflection"):
        c = ops.minimum(ops.maximum(c, 0.0), n - 1.0)
    return c


def _cubic_weights(t: Any) -> list[Any]:
    """torch's cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 from floor."""
    a = -0.75

    def near(x: Any) -> Any:  # |x| <= 1
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0

    def far(x: Any) -> Any:  # 1 < |x| < 2
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def grid_sampler(input: Any, grid: Any, interpolation_mode: Any = 0, padding_mode: Any = 0,
                 align_corners: Any = False) -> Any:
    """torch.grid_sampler (2-d and 3-d, aten's integer modes): out[n, c, *o] samples
    input[n, c] at grid[n, *o] (x, y[, z] in [-1, 1], x along the last axis). Each
    sample is a gather of the flattened spatial positions, bilinear (trilinear) as the
    weighted sum of the 2^k neighbours, bicubic (2-d) of the 4 x 4 around it with torch's
    cubic weights, nearest as the neighbour torch rounds to (half to even). Neighbours
    outside the input contribute 0, as in torch."""
    mode = _GRID_MODES.get(py_value(interpolation_mode))
    padding = _GRID_PADDING.get(py_value(padding_mode))
    corners = bool(py_value(align_corners))
    k = rank(input) - 2
    dt = dtype_name(input)
    if mode is None or padding is None or (mode == "bicubic" and k != 2):
        raise unsupported(f"grid_sampler with mode {interpolation_mode} and padding "
                          f"{padding_mode}")
    if k not in (2, 3) or rank(grid) != k + 2 or shape_of(grid)[-1] != k:
        raise unsupported(f"grid_sampler of a rank-{rank(input)} input and a rank-"
                          f"{rank(grid)} grid")
    if not is_float_dtype(dt) or dtype_name(grid) != dt:
        raise unsupported(f"grid_sampler of {dt} and {dtype_name(grid)} tensors")
    shape, gshape = shape_of(input), shape_of(grid)
    spatial, outs = shape[2:], gshape[1:-1]
    if any(isinstance(v, int) and v == 0 for v in spatial + outs + shape[:2]):
        raise unsupported("grid_sampler of an empty tensor")
    nb, ch = shape[:2]
    flat = ops.reshape(input, [nb, ch, -1])
    points = ops.reshape(grid, [gshape[0], -1, k])  # [N, Q, k]
    # per spatial axis (d, h, w order): the neighbours' positions [N, Q] and weights
    corners_of: list[list[tuple[Any, Any]]] = []
    for axis in range(k):
        size = spatial[axis]
        g = ops.squeeze(ops.slice(points, [2], [k - 1 - axis], [k - axis], [1]), [2])
        c = _unnormalized(g, size, corners)
        if mode == "bicubic":  # 4 taps around floor(c), each one clipped or reflected
            lo = ops.floor(c)
            corners_of.append([(_padded_coordinate(lo + (j - 1.0), size, padding, corners), w)
                               for j, w in enumerate(_cubic_weights(c - lo))])
            continue
        c = _padded_coordinate(c, size, padding, corners)
        if mode == "nearest":
            corners_of.append([(ops.round(c), None)])
        else:
            lo = ops.floor(c)
            frac = c - lo
            corners_of.append([(lo, 1.0 - frac), (lo + 1.0, frac)])
    result = None
    for combo in itertools.product(*corners_of):
        inside = None
        index = None
        weight = None
        for axis, (pos, w) in enumerate(combo):
            size = spatial[axis]
            n = size_value(size, dt) if isinstance(size, str) else float(size)
            ok = ops.logical_and(ops.greater_equal(pos, 0.0), ops.less_equal(pos, n - 1.0))
            inside = ok if inside is None else ops.logical_and(inside, ok)
            at = ops.cast(ops.minimum(ops.maximum(pos, 0.0), n - 1.0), "int64")
            stride = size_product(spatial[axis + 1:])
            term = at if stride == 1 else at * size_value(stride, "int64")
            index = term if index is None else index + term
            if w is not None:
                weight = w if weight is None else weight * w
        assert inside is not None and index is not None
        q = shape_of(index)[1]
        picked = ops.gather(flat, 2, ops.expand(ops.unsqueeze(index, [1]), [nb, ch, q]))
        zero = ops.scalar(0.0, dt)
        scale = inside if weight is None else ops.where(inside, weight, zero)
        term = ops.where(ops.unsqueeze(inside, [1]), picked, zero) if weight is None else (
            picked * ops.unsqueeze(scale, [1]))
        result = term if result is None else result + term
    return ops.reshape(result, [nb, ch] + outs)


def grid_sample(input: Any, grid: Any, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: Any = None) -> Any:
    modes = {v: k for k, v in _GRID_MODES.items()}
    paddings = {v: k for k, v in _GRID_PADDING.items()}
    if mode not in modes or padding_mode not in paddings:
        raise unsupported(f"grid_sample with mode={mode!r}, padding_mode={padding_mode!r}")
    return grid_sampler(input, grid, modes[mode], paddings[padding_mode], bool(align_corners))


def _register_all() -> None:
    register(grid_sample, F.grid_sample)
    register(grid_sampler, torch.grid_sampler, torch.grid_sampler_2d, torch.grid_sampler_3d,
             torch.ops.aten.grid_sampler_2d.default, torch.ops.aten.grid_sampler_3d.default)
    register(upsample_bilinear, F.upsample_bilinear)
    register(upsample_nearest, F.upsample_nearest)
    aa = torch.ops.aten._upsample_bilinear2d_aa
    register(upsample_bilinear2d_aa, aa, aa.default, aa.vec, torch._C._nn._upsample_bilinear2d_aa)


_register_all()
