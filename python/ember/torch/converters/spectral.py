"""Converters for the discrete Fourier transforms: every ``torch.fft`` transform (``fft``,
``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` and their 2-d and n-d forms) and
``torch.stft`` (the operators of the complex values they make are in complex_ops.py).

Complex values are pairs of real tensors (ember.torch.complex_values). A transform along one
axis of static length n is a product with constant matrices of cosines and sines (computed
in float64, with torch's scaling for ``norm`` folded in): a dense DFT of O(n^2) work per row,
the same sums as torch's FFT up to rounding. An axis longer than MAX_DFT runs in eager
PyTorch. ``stft`` is a strided 1-d convolution of the (padded) signal with the windowed
cosines and sines.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from ember._sizes import size_value
from ember.torch.complex_values import ComplexValue
from ember.torch.context import current_node, expected_value, sym_size
from ember.torch.converters.common import (
    constant,
    dtype_name,
    full,
    is_tensor,
    no_out,
    norm_dim,
    ops,
    py_value,
    rank,
    shape_of,
    slice_axis,
    static_int,
    unsupported,
)
from ember.torch.converters.composites import flip
from ember.torch.converters.composites import pad as pad_converter
from ember.torch.registry import (
    builtin_registrations,
    register_function,
)
from ember.torch.shape_guards import guarded_int

# The longest axis a transform converts: its matrices take 2 * n * n elements.
MAX_DFT = 1024


# ---- values --------------------------------------------------------------------------------
def _real_part_dtype(x: Any, what: str) -> str:
    """The real dtype a transform of x computes in: float32 and float64 as they are,
    integers and bools as float32 (torch's default dtype)."""
    dt = dtype_name(x)
    if dt in ("float32", "float64"):
        return dt
    if dt.startswith(("int", "uint", "bool")):
        return "float32"
    raise unsupported(f"{what} of a {dt} tensor")


def _parts(x: Any, what: str) -> tuple[Any, Any]:
    """(real, imag) of a complex or real input (imag None for a real one), in a float dtype."""
    if isinstance(x, ComplexValue):
        if x.part_dtype not in ("float32", "float64"):
            raise unsupported(f"{what} of a {x.dtype} tensor")
        return x.real, x.imag
    if not is_tensor(x):
        raise unsupported(f"{what} of a {type(x).__name__}")
    dt = _real_part_dtype(x, what)
    return (x if dtype_name(x) == dt else ops.cast(x, dt)), None


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else ops.add(a, b)


def _neg(a: Any) -> Any:
    return None if a is None else ops.neg(a)


# ---- one axis ------------------------------------------------------------------------------
# A transform's length n is an int, or a torch.SymInt under dynamic shapes (its tables are
# then computed in the graph, and Dynamo's guards keep it at most MAX_DFT).
Length = Any


def _text(n: Length) -> int | str:
    """A length as ember's shapes spell it."""
    return n if isinstance(n, int) else sym_size(n)


@functools.lru_cache(maxsize=64)
def _constant_tables(kind: str, rows: int, n: int, cols: int, scale: float, dtype: str
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """(C, S) [rows, cols]: scale * cos and scale * sin of 2 pi r c / n (r the input index,
    c the output index), exact at multiples of pi / 2; for kind "c2r" each row k of the
    half spectrum weighted as it counts in the full one (1 for 0 and n / 2, else 2) and the
    sines of those two rows zero (their imaginary parts do not count, as in torch)."""
    r = torch.arange(rows, dtype=torch.int64).reshape(-1, 1)
    c = torch.arange(cols, dtype=torch.int64).reshape(1, -1)
    residue = (r * c) % n
    angle = residue.double() * (2 * math.pi / n)
    cos, sin = torch.cos(angle), torch.sin(angle)
    quarter = (4 * residue) % n == 0
    q = ((4 * residue) // n) % 4
    cos = torch.where(quarter, torch.tensor([1.0, 0.0, -1.0, 0.0], dtype=torch.float64)[q], cos)
    sin = torch.where(quarter, torch.tensor([0.0, 1.0, 0.0, -1.0], dtype=torch.float64)[q], sin)
    if kind == "c2r":
        edge = ((r == 0) | (2 * r == n)).double()
        cos = cos * (2.0 - edge)
        sin = sin * (2.0 - 2.0 * edge)
    dt = getattr(torch, dtype)
    return (cos * scale).to(dt).contiguous(), (sin * scale).to(dt).contiguous()


def _graph_tables(kind: str, rows: Any, n: Length, cols: Any, norm: Any, inverse: bool,
                  dtype: str) -> tuple[Any, Any]:
    """_constant_tables computed in the graph, for a length known only at run time."""
    f64 = "float64"
    r = ops.reshape(ops.arange(0, rows, 1, "int64"), [rows, 1])
    c = ops.reshape(ops.arange(0, cols, 1, "int64"), [1, cols])
    n_int = size_value(_text(n), "int64")
    n_float = size_value(_text(n), f64)
    residue = ops.remainder(ops.mul(r, c), n_int)
    angle = ops.div(ops.mul(ops.cast(residue, f64), 2 * math.pi), n_float)
    # exact at multiples of pi / 2 (quarter q of the circle), as the constant tables are
    four = ops.mul(residue, 4)
    quarter = ops.equal(ops.remainder(four, n_int), 0)
    q = ops.floor_divide(four, n_int)

    def at(k: int) -> Any:
        return ops.cast(ops.equal(q, k), f64)

    cos = ops.where(quarter, ops.sub(at(0), at(2)), ops.cos(angle))
    sin = ops.where(quarter, ops.sub(at(1), at(3)), ops.sin(angle))
    if kind == "c2r":
        edge = ops.cast(ops.logical_or(ops.equal(r, 0), ops.equal(ops.mul(r, 2), n_int)), f64)
        cos = ops.mul(cos, ops.add(ops.neg(edge), 2.0))
        sin = ops.mul(sin, ops.add(ops.mul(edge, -2.0), 2.0))
    how = _scaling(norm, inverse)
    if how == "n":
        cos, sin = ops.div(cos, n_float), ops.div(sin, n_float)
    elif how == "sqrt":
        root = ops.sqrt(n_float)
        cos, sin = ops.div(cos, root), ops.div(sin, root)
    return ops.cast(cos, dtype), ops.cast(sin, dtype)


def _scaling(norm: Any, inverse: bool) -> str:
    """torch's normalization: "backward" (the default) divides the inverse transform by n,
    "forward" the forward one, "ortho" both by sqrt(n). "1", "n" or "sqrt"."""
    norm = "backward" if norm is None else norm
    if norm not in ("backward", "forward", "ortho"):
        raise unsupported(f"norm={norm!r}")
    if norm == "ortho":
        return "sqrt"
    return "n" if inverse == (norm == "backward") else "1"


def _tables(kind: str, rows: Any, n: Length, cols: Any, norm: Any, inverse: bool,
            dtype: str) -> tuple[Any, Any]:
    if all(isinstance(v, int) for v in (rows, n, cols)):
        scale = {"1": 1.0, "n": 1.0 / n, "sqrt": 1.0 / math.sqrt(n)}[_scaling(norm, inverse)]
        cos, sin = _constant_tables(kind, rows, n, cols, scale, dtype)
        return constant(cos), constant(sin)
    return _graph_tables(kind, rows, n, cols, norm, inverse, dtype)


def _along(x: Any, axis: int, mat: Any) -> Any:
    """x times the matrix mat [length of axis, k] along axis."""
    if x is None:
        return None
    last = rank(x) - 1
    moved = x if axis == last else ops.transpose(x, axis, last)
    y = ops.matmul(moved, mat)
    return y if axis == last else ops.transpose(y, axis, last)


def _input_length(axis: int) -> Length:
    """The length of the converted node's input along axis: an int, or its SymInt."""
    node = current_node()
    source = node.args[0] if node is not None and node.args else None
    meta = expected_value(source) if isinstance(source, torch.fx.Node) else None
    if not isinstance(meta, torch.Tensor):
        raise unsupported("a Fourier transform of an input without a recorded shape")
    size = meta.shape[axis]
    known = guarded_int(size)
    return known if known is not None else (int(size) if isinstance(size, int) else size)


def _checked(n: Any, what: str) -> Length:
    """A transform length as given (an int or a SymInt), at least 1 and at most MAX_DFT (a
    symbolic one under Dynamo's guards, so a longer one recompiles)."""
    if isinstance(n, torch.SymInt):
        known = guarded_int(n)
        n = known if known is not None else n
    if not isinstance(n, (int, torch.SymInt)):
        n = static_int(n, f"the length of {what}")
    if not bool(n >= 1):
        raise unsupported(f"{what} of length {n}")
    if not bool(n <= MAX_DFT):
        raise unsupported(f"{what} of length {n} (ember converts lengths up to {MAX_DFT}; it "
                          "computes the transform as a dense product)")
    return n


def _cut(x: Any, axis: int, length: Length) -> tuple[Any, int | str]:
    """x along axis to at most `length` (the rows a transform reads; rows beyond the input
    are zero padding, which a product simply leaves out), and its rows. Under dynamic shapes
    the comparison is a guard of Dynamo's."""
    have = _input_length(axis)
    if bool(have <= length):
        return x, _text(have)
    if x is None:
        return None, _text(length)
    return ops.slice(x, [axis], [0], [_text(length)], [1], clamp=False), _text(length)


def _c2c(re: Any, im: Any, axis: int, n: Length, sign: int, inverse: bool, norm: Any
         ) -> tuple[Any, Any]:
    """sum_t x[t] exp(sign * 2 pi i t k / n), k < n, x cut or zero-padded to n, scaled."""
    re, rows = _cut(re, axis, n)
    im, _ = _cut(im, axis, n)
    cos, sin = _tables("c2c", rows, n, _text(n), norm, inverse, dtype_name(re))
    nsin = ops.neg(sin)
    out_re = _add(_along(re, axis, cos), _along(im, axis, sin if sign < 0 else nsin))
    out_im = _add(_along(im, axis, cos), _along(re, axis, nsin if sign < 0 else sin))
    return out_re, out_im


def _r2c(re: Any, axis: int, n: Length, sign: int, inverse: bool, norm: Any
         ) -> tuple[Any, Any]:
    """The first n // 2 + 1 outputs of _c2c of a real x."""
    re, rows = _cut(re, axis, n)
    cos, sin = _tables("r2c", rows, n, _text(n // 2 + 1), norm, inverse, dtype_name(re))
    return _along(re, axis, cos), _along(re, axis, ops.neg(sin) if sign < 0 else sin)


def _c2r(re: Any, im: Any, axis: int, n: Length, sign: int, inverse: bool, norm: Any) -> Any:
    """The real signal of length n whose half spectrum (n // 2 + 1 bins, conjugate-symmetric
    beyond) x is: sum_k x[k] exp(sign * 2 pi i t k / n) over the full spectrum, scaled."""
    re, rows = _cut(re, axis, n // 2 + 1)
    im, _ = _cut(im, axis, n // 2 + 1)
    cos, sin = _tables("c2r", rows, n, _text(n), norm, inverse, dtype_name(re))
    return _add(_along(re, axis, cos), _along(im, axis, ops.neg(sin) if sign > 0 else sin))


# ---- the transforms ------------------------------------------------------------------------
def _dims(x: Any, s: Any, dim: Any, default: Any) -> tuple[list[int], list[Any]]:
    """torch's dims and lengths of an n-d transform: dim as given (or the last len(s) dims,
    or `default`: None for all), s per dim (None or -1: the input's length)."""
    n = rank(x)
    if dim is not None:
        dims = [dim] if isinstance(dim, (int, torch.SymInt)) else list(dim)
        dims = [norm_dim(py_value(d), n) for d in dims]
    elif s is not None:
        dims = list(range(n - len(s), n))
    else:
        dims = list(range(n)) if default is None else [norm_dim(d, n) for d in default]
    if len(set(dims)) != len(dims) or not dims:
        raise unsupported(f"a Fourier transform over the dims {dims}")
    if s is None:
        return dims, [None] * len(dims)
    sizes = [None if isinstance(v, int) and v == -1 else v for v in s]
    if len(sizes) != len(dims):
        raise unsupported("s and dim of different lengths")
    return dims, sizes


def _length(axis: int, size: Any, what: str) -> Length:
    return _checked(_input_length(axis) if size is None else size, what)


def _complex_nd(x: Any, dims: list[int], sizes: list[Any], sign: int, inverse: bool,
                norm: Any, what: str) -> ComplexValue:
    re, im = _parts(x, what)
    for axis, size in zip(dims, sizes, strict=True):
        re, im = _c2c(re, im, axis, _length(axis, size, what), sign, inverse, norm)
    return ComplexValue(re, im)


def _real_to_half(x: Any, dims: list[int], sizes: list[Any], sign: int, inverse: bool,
                  norm: Any, what: str) -> ComplexValue:
    """rfftn (sign -1) and ihfftn (sign +1, the conjugate): the half spectrum along the last
    dim, then full transforms along the others."""
    if isinstance(x, ComplexValue):
        raise unsupported(f"{what} of a complex tensor (torch expects a real input)")
    re, _ = _parts(x, what)
    re, im = _r2c(re, dims[-1], _length(dims[-1], sizes[-1], what), sign, inverse, norm)
    for axis, size in zip(dims[:-1], sizes[:-1], strict=True):
        re, im = _c2c(re, im, axis, _length(axis, size, what), sign, inverse, norm)
    return ComplexValue(re, im)


def _half_to_real(x: Any, dims: list[int], sizes: list[Any], sign: int, inverse: bool,
                  norm: Any, what: str) -> Any:
    """irfftn (sign +1) and hfftn (sign -1): full transforms along all dims but the last,
    then the real signal from the half spectrum along the last (default length
    2 * (bins - 1))."""
    re, im = _parts(x, what)
    last = dims[-1]
    n = _checked(2 * (_input_length(last) - 1) if sizes[-1] is None else sizes[-1], what)
    for axis, size in zip(dims[:-1], sizes[:-1], strict=True):
        re, im = _c2c(re, im, axis, _length(axis, size, what), sign, inverse, norm)
    return _c2r(re, im, last, n, sign, inverse, norm)


def _one_dim(input: Any, n: Any, dim: Any) -> tuple[list[int], list[Any]]:
    """The dims and lengths of a 1-d transform (n None: the input's length)."""
    return _dims(input, None if n is None else [n], [dim], None)


def _1d(kind: Any, sign: int, inverse: bool, what: str) -> Any:
    def convert(input: Any, n: Any = None, dim: Any = -1, norm: Any = None, *,
                out: Any = None) -> Any:
        no_out(out)
        dims, sizes = _one_dim(input, n, dim)
        return kind(input, dims, sizes, sign, inverse, norm, what)

    convert.__name__ = convert.__qualname__ = what
    return convert


def _nd(kind: Any, sign: int, inverse: bool, default: Any, what: str) -> Any:
    def convert(input: Any, s: Any = None, dim: Any = default, norm: Any = None, *,
                out: Any = None) -> Any:
        no_out(out)
        dims, sizes = _dims(input, s, dim, default)
        return kind(input, dims, sizes, sign, inverse, norm, what)

    convert.__name__ = convert.__qualname__ = what.replace(".", "_")
    return convert


fft = _1d(_complex_nd, -1, False, "fft")
ifft = _1d(_complex_nd, 1, True, "ifft")
rfft = _1d(_real_to_half, -1, False, "rfft")
ihfft = _1d(_real_to_half, 1, True, "ihfft")
irfft = _1d(_half_to_real, 1, True, "irfft")
hfft = _1d(_half_to_real, -1, False, "hfft")
_ALL = None
_LAST_TWO = (-2, -1)
fft2 = _nd(_complex_nd, -1, False, _LAST_TWO, "fft2")
fftn = _nd(_complex_nd, -1, False, _ALL, "fftn")
ifft2 = _nd(_complex_nd, 1, True, _LAST_TWO, "ifft2")
ifftn = _nd(_complex_nd, 1, True, _ALL, "ifftn")
rfft2 = _nd(_real_to_half, -1, False, _LAST_TWO, "rfft2")
rfftn = _nd(_real_to_half, -1, False, _ALL, "rfftn")
ihfft2 = _nd(_real_to_half, 1, True, _LAST_TWO, "ihfft2")
ihfftn = _nd(_real_to_half, 1, True, _ALL, "ihfftn")
irfft2 = _nd(_half_to_real, 1, True, _LAST_TWO, "irfft2")
irfftn = _nd(_half_to_real, 1, True, _ALL, "irfftn")
hfft2 = _nd(_half_to_real, -1, False, _LAST_TWO, "hfft2")
hfftn = _nd(_half_to_real, -1, False, _ALL, "hfftn")


# ---- stft ----------------------------------------------------------------------------------
def stft(input: Any, n_fft: Any, hop_length: Any = None, win_length: Any = None,
         window: Any = None, center: bool = True, pad_mode: str = "reflect",
         normalized: bool = False, onesided: Any = None, return_complex: Any = None,
         align_to_window: Any = None) -> Any:
    """torch.stft of a real signal [L] or [B, L]: frames of n_fft samples every hop_length,
    each times the window (centred in n_fft), transformed; [B?, bins, frames]."""
    if isinstance(input, ComplexValue) or isinstance(window, ComplexValue):
        raise unsupported("stft of a complex signal or with a complex window")
    if return_complex is None:
        raise unsupported("stft of a real signal without return_complex (torch raises)")
    if align_to_window:
        raise unsupported("stft with align_to_window=True")
    if rank(input) not in (1, 2):
        raise unsupported(f"stft of a rank-{rank(input)} signal")
    n_fft = _checked(py_value(n_fft), "stft")
    hop = n_fft // 4 if hop_length is None else static_int(hop_length, "hop_length")
    win = n_fft if win_length is None else static_int(win_length, "win_length")
    if hop < 1 or not 0 < win <= n_fft:
        raise unsupported(f"stft with hop_length={hop}, win_length={win}")
    x, _ = _parts(input, "stft")
    dt = dtype_name(x)
    batch = x if rank(x) == 2 else ops.unsqueeze(x, [0])
    signal = ops.unsqueeze(batch, [1])  # [B, 1, L]
    length = _input_length(rank(x) - 1)
    if center:
        signal = _center_pad(signal, length, n_fft // 2, pad_mode)
        length = length + 2 * (n_fft // 2)
    if not bool(length >= n_fft):
        raise unsupported(f"stft of a signal shorter than n_fft={n_fft}")
    bins = n_fft // 2 + 1 if onesided is None or onesided else n_fft
    scale = 1.0 / math.sqrt(n_fft) if normalized else 1.0
    cos, sin = _constant_tables("c2c", n_fft, n_fft, bins, scale, dt)
    basis = torch.cat([cos.t(), -sin.t()]).unsqueeze(1)  # [2 * bins, 1, n_fft]
    left = (n_fft - win) // 2
    if window is None:
        taper = torch.zeros(n_fft, dtype=basis.dtype)
        taper[left:left + win] = 1.0
        weight = constant((basis * taper).contiguous())
    else:
        if rank(window) != 1 or window.shape[0] != win:
            raise unsupported(f"stft with a window of shape {shape_of(window)}")
        w = window if dtype_name(window) == dt else ops.cast(window, dt)
        if win < n_fft:
            w = ops.concat([full([left], 0.0, dt), w, full([n_fft - win - left], 0.0, dt)], 0)
        weight = ops.mul(constant(basis), ops.reshape(w, [1, 1, n_fft]))
    frames = ops.conv1d(signal, weight, stride=hop)  # [B, 2 * bins, frames]
    re, im = slice_axis(frames, 1, 0, bins), slice_axis(frames, 1, bins, 2 * bins)
    if rank(x) == 1:
        re, im = ops.squeeze(re, [0]), ops.squeeze(im, [0])
    value = ComplexValue(re, im)
    return value if return_complex else value.stacked()


def _center_pad(signal: Any, length: Length, p: int, mode: str) -> Any:
    """signal [B, 1, L] padded by p on both sides in `mode`, as F.pad would; for a length
    known only at run time, from slices of the signal (its ends, flipped for reflect)."""
    if isinstance(length, int) or p == 0:
        return pad_converter(signal, [p, p], mode)
    text = _text(length)

    def part(start: Any, stop: Any) -> Any:
        return ops.slice(signal, [2], [start], [stop], [1], clamp=False)

    if mode == "reflect" and bool(length > p):
        left, right = flip(part(1, p + 1), [2]), flip(part(f"({text} - {p + 1})",
                                                            f"({text} - 1)"), [2])
    elif mode == "circular" and bool(length >= p):
        left, right = part(f"({text} - {p})", text), part(0, p)
    elif mode == "replicate":
        shape = [signal.shape[0], 1, p]
        left = ops.expand(part(0, 1), shape)
        right = ops.expand(part(f"({text} - 1)", text), shape)
    elif mode == "constant":
        zeros = full([signal.shape[0], 1, p], 0.0, dtype_name(signal))
        left = right = zeros
    else:
        raise unsupported(f"stft with pad_mode={mode!r} of a signal of length {length}")
    return ops.concat([left, signal, right], 2)


# ---- registrations -------------------------------------------------------------------------
def _registrations() -> None:
    transforms = (
        (fft, torch.fft.fft), (ifft, torch.fft.ifft), (rfft, torch.fft.rfft),
        (irfft, torch.fft.irfft), (hfft, torch.fft.hfft), (ihfft, torch.fft.ihfft),
        (fft2, torch.fft.fft2), (fftn, torch.fft.fftn), (ifft2, torch.fft.ifft2),
        (ifftn, torch.fft.ifftn), (rfft2, torch.fft.rfft2), (rfftn, torch.fft.rfftn),
        (ihfft2, torch.fft.ihfft2), (ihfftn, torch.fft.ihfftn), (irfft2, torch.fft.irfft2),
        (irfftn, torch.fft.irfftn), (hfft2, torch.fft.hfft2), (hfftn, torch.fft.hfftn),
        (stft, torch.stft),
    )
    with builtin_registrations():
        for fn, target in transforms:
            register_function(target, complex_inputs=True)(fn)


_registrations()
