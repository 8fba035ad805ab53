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

from ember.torch.context import torch_dtype
from ember.torch.converters.common import (
    constant,
    dtype_name,
    is_float_dtype,
    ops,
    py_value,
    rank,
    shape_of,
    static_int,
    unsupported,
)
from ember.torch.converters.composite_math import int_constant, take
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
    register(upsample_bilinear, F.upsample_bilinear)
    register(upsample_nearest, F.upsample_nearest)
    aa = torch.ops.aten._upsample_bilinear2d_aa
    register(upsample_bilinear2d_aa, aa, aa.default, aa.vec, torch._C._nn._upsample_bilinear2d_aa)


_register_all()
