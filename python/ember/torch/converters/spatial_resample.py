"""Converters for resampling: every mode of ``interpolate``, ``upsample_*`` and antialiased
bilinear, on the helpers of spatial.py (whose spatial sizes, too, must be known at compile
time).

- Resampling is separable: along each spatial axis, the output is a weighted sum of a few
  gathered input rows. The weights are torch's own: the matching 1-d (or 2-d) ATen
  resampling operator applied at compile time to an identity matrix, which gives the
  [out, in] matrix of the axis (its nonzero entries are the taps).
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import expected_value, sym_size, torch_dtype
from ember.torch.converters.common import (
    constant,
    dtype_name,
    is_float_dtype,
    is_tensor,
    ops,
    py_value,
    rank,
    shape_of,
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
    if mode not in ("nearest", "nearest-exact") and mode not in _LINEAR:
        raise unsupported(f"interpolate mode={mode!r} of symbolic spatial sizes")
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
        n, m = shape_of(x)[axis], sym_size(meta.shape[axis])
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
    if (any(not isinstance(d, int) for d in shape_of(input)[2:]) or any(
            is_tensor(f) for f in each)) and not antialias:
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
        factors = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else (
            [scale_factor] * k)
        factors = [float(py_value(f)) for f in factors]
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
            factors = [float(py_value(f)) for f in factors]
            out = [int(math.floor(s * f)) for s, f in zip(sizes, factors, strict=True)]
            return resample(input, 2, out, factors, "bilinear", bool(align_corners), True)
        scales_h = None
    out = [static_int(s, "an output size") for s in output_size]
    return resample(input, 2, out, [scales_h, scales_w], "bilinear", bool(align_corners), True)


def _register_all() -> None:
    register(upsample_bilinear, F.upsample_bilinear)
    register(upsample_nearest, F.upsample_nearest)
    aa = torch.ops.aten._upsample_bilinear2d_aa
    register(upsample_bilinear2d_aa, aa, aa.default, aa.vec, torch._C._nn._upsample_bilinear2d_aa)


_register_all()
