"""Converters for the masked reductions and normalizations of ``torch.masked`` (sum, prod,
amax, amin, argmax, argmin, mean, norm, var, std, logsumexp, logaddexp, softmax,
log_softmax, softmin): as torch does, a masked-out element is replaced by the reduction's
identity (the mask broadcast to the input), so a fully masked-out row gives what eager
gives: NaN for mean, var and softmax, -inf for logsumexp.
"""

from __future__ import annotations

from typing import Any

import torch

from ember.torch.context import ember_dtype, torch_dtype
from ember.torch.converters import functions as fn
from ember.torch.converters.common import (
    cast,
    dtype_name,
    full,
    is_float_dtype,
    is_tensor,
    norm_dim,
    norm_dims,
    ops,
    py_value,
    rank,
    shape_of,
    unsupported,
)
from ember.torch.converters.composites import logsumexp
from ember.torch.converters.functions import register
from ember.torch.converters.nn_extra import float_input
from ember.torch.converters.norms_losses import _norm


def _identity(name: str, x: Any) -> Any:
    dt = dtype_name(x)
    if dt == "bool" or dt.startswith("complex"):
        raise unsupported(f"masked {name} of a {dt} tensor")
    if name in ("sum", "norm"):
        return 0
    if name == "prod":
        return 1
    info = torch.finfo if is_float_dtype(dt) else torch.iinfo
    if name in ("amax", "argmax", "logsumexp", "logaddexp", "softmax"):
        return float("-inf") if is_float_dtype(dt) else info(torch_dtype(dt)).min
    if name in ("amin", "argmin", "softmin", "norm_ninf"):
        return float("inf") if is_float_dtype(dt) else info(torch_dtype(dt)).max
    raise unsupported(f"masked {name}")


def _mask(input: Any, mask: Any) -> Any:
    if not is_tensor(mask):
        raise unsupported("a masked operation with a mask that is not a tensor")
    if rank(mask) > rank(input):
        raise unsupported("a mask of higher rank than the input")
    m = cast(mask, "bool")
    if shape_of(m) != shape_of(input):
        m = ops.expand(m, shape_of(input))
    return m


def _fill(name: str, input: Any, mask: Any) -> Any:
    if mask is None:
        return input
    value = _identity(name, input)
    return ops.where(_mask(input, mask), input, ops.scalar(value, dtype_name(input)))


def _sum_dtype(input: Any, dtype: Any) -> str:
    if dtype is not None:
        return ember_dtype(dtype)
    dt = dtype_name(input)
    return "int64" if dt in ("bool", "uint8", "int8", "int16", "int32") else dt


def _dims(dim: Any, n: int) -> list[int]:
    """The reduced dims (none of a 0-d tensor); a dim known only at run time is refused."""
    if isinstance(dim, (tuple, list)):
        dim = [py_value(d) for d in dim]
    elif dim is not None:
        dim = py_value(dim)
    return norm_dims(None if dim == () else dim, n) if n else []


def masked_sum(input: Any, dim: Any = None, *, keepdim: Any = False, dtype: Any = None,
               mask: Any = None) -> Any:
    x = cast(_fill("sum", input, mask), _sum_dtype(input, dtype))
    return ops.sum(x, _dims(dim, rank(x)), bool(keepdim))


def masked_prod(input: Any, dim: Any = None, *, keepdim: Any = False, dtype: Any = None,
                mask: Any = None) -> Any:
    x = cast(_fill("prod", input, mask), _sum_dtype(input, dtype))
    return ops.prod(x, _dims(dim, rank(x)), bool(keepdim))


def _masked_extreme(name: str, reduce: Any) -> Any:
    def convert(input: Any, dim: Any = None, *, keepdim: Any = False, dtype: Any = None,
                mask: Any = None) -> Any:
        x = _fill(name, input, mask)
        dims = _dims(dim, rank(x))
        if any(x.shape[d] == 0 for d in dims):
            raise unsupported(f"masked {name} over an empty dimension")
        y = reduce(x, dims, bool(keepdim))
        return cast(y, ember_dtype(dtype)) if dtype is not None else y

    convert.__name__ = convert.__qualname__ = f"masked_{name}"
    return convert


masked_amax, masked_amin = _masked_extreme("amax", ops.max), _masked_extreme("amin", ops.min)


def _masked_arg(name: str, arg: Any) -> Any:
    def convert(input: Any, dim: Any = None, *, keepdim: Any = False, dtype: Any = None,
                mask: Any = None) -> Any:
        x = _fill(name, input, mask)
        y = arg(x, dim, bool(keepdim))
        return cast(y, ember_dtype(dtype) if dtype is not None else dtype_name(input))

    convert.__name__ = convert.__qualname__ = f"masked_{name}"
    return convert


masked_argmax = _masked_arg("argmax", fn.argmax)
masked_argmin = _masked_arg("argmin", fn.argmin)


def _count(input: Any, mask: Any, dims: list[int], keepdim: bool) -> Any:
    present = full(shape_of(input), 1, "int64") if mask is None else cast(
        _mask(input, mask), "int64")
    return ops.sum(present, dims, keepdim)


def masked_mean(input: Any, dim: Any = None, *, keepdim: Any = False, dtype: Any = None,
                mask: Any = None) -> Any:
    dt = ember_dtype(dtype) if dtype is not None else dtype_name(input)
    if not is_float_dtype(dt):
        raise unsupported("masked mean of a non-float tensor")
    dims = _dims(dim, rank(input))
    total = ops.sum(cast(_fill("sum", input, mask), dt), dims, bool(keepdim))
    return total / cast(_count(input, mask, dims, bool(keepdim)), dt)


def _masked_var(take_sqrt: bool) -> Any:
    def convert(input: Any, dim: Any = None, unbiased: Any = None, *, correction: Any = None,
                keepdim: Any = False, dtype: Any = None, mask: Any = None) -> Any:
        if unbiased is not None and correction is not None:
            raise unsupported("masked var with both unbiased and correction")
        c = 1.0
        if unbiased is not None:
            c = 1.0 if unbiased else 0.0
        if correction is not None:  # a 0-d tensor where Dynamo passes it as a graph input
            c = correction if is_tensor(correction) else float(py_value(correction))
        dt = ember_dtype(dtype) if dtype is not None else dtype_name(input)
        if not is_float_dtype(dt):
            raise unsupported("masked var of a non-float result")
        dims = _dims(dim, rank(input))
        count = cast(_count(input, mask, dims, True), dt)
        mean = ops.sum(cast(_fill("sum", input, mask), dt), dims, True) / count
        centered = cast(input, dt) - mean
        total = ops.sum(_fill("sum", centered * centered, mask), dims, bool(keepdim))
        if not keepdim:
            count = ops.squeeze(count, dims)
        if is_tensor(c):
            count = ops.maximum(count - cast(c, dt), 0.0)
        elif c != 0:
            count = ops.maximum(count - c, 0.0)
        out = total / count
        return ops.sqrt(out) if take_sqrt else out

    convert.__name__ = convert.__qualname__ = "masked_std" if take_sqrt else "masked_var"
    return convert


masked_var, masked_std = _masked_var(False), _masked_var(True)


def masked_norm(input: Any, ord: Any = 2.0, dim: Any = None, *, keepdim: Any = False,
                dtype: Any = None, mask: Any = None) -> Any:
    o = 2.0 if ord is None else ord
    name = "norm_ninf" if o == float("-inf") else "norm"
    x = _fill(name, input, mask)
    x = cast(x, ember_dtype(dtype)) if dtype is not None else x
    if not is_float_dtype(dtype_name(x)):
        raise unsupported("masked norm of a non-float tensor")
    dims = _dims(dim, rank(x))
    if o in (float("inf"), float("-inf")) and any(x.shape[d] == 0 for d in dims):
        raise unsupported("an inf-norm over an empty dimension")
    return _norm(x, o, dims, bool(keepdim))


def masked_logsumexp(input: Any, dim: Any = None, *, keepdim: Any = False, dtype: Any = None,
                     mask: Any = None) -> Any:
    x = _fill("logsumexp", float_input(input, "masked logsumexp"), mask)
    y = logsumexp(x, list(_dims(dim, rank(x))), bool(keepdim))
    return cast(y, ember_dtype(dtype)) if dtype is not None else y


def masked_logaddexp(input: Any, other: Any, *, dtype: Any = None, input_mask: Any = None,
                     other_mask: Any = None) -> Any:
    from ember.torch.converters.elementwise_extra import logaddexp

    a = _fill("logaddexp", float_input(input, "masked logaddexp"), input_mask)
    b = _fill("logaddexp", float_input(other, "masked logaddexp"), other_mask)
    y = logaddexp(a, b)
    return cast(y, ember_dtype(dtype) if dtype is not None else dtype_name(input))


def _masked_softmax(kind: str) -> Any:
    def convert(input: Any, dim: Any, *, dtype: Any = None, mask: Any = None) -> Any:
        x = _fill("softmin" if kind == "softmin" else "softmax",
                  float_input(input, f"masked {kind}"), mask)
        dt = ember_dtype(dtype) if dtype is not None else dtype_name(input)
        x = cast(x, dt)
        d = norm_dim(py_value(dim), rank(x))
        if 0 in shape_of(x):
            raise unsupported(f"masked {kind} of an empty tensor")
        flat = rank(x) == 0
        if flat:
            x = ops.reshape(x, [1])
        if kind == "log_softmax":
            y = fn.log_softmax(x, d)
        else:
            y = ops.softmax(ops.neg(x) if kind == "softmin" else x, d)
        return ops.reshape(y, []) if flat else y

    convert.__name__ = convert.__qualname__ = f"masked_{kind}"
    return convert


masked_softmax = _masked_softmax("softmax")
masked_log_softmax = _masked_softmax("log_softmax")
masked_softmin = _masked_softmax("softmin")


def masked_median(input: Any, dim: Any = -1, *, keepdim: Any = False, dtype: Any = None,
                  mask: Any = None) -> Any:
    """torch.masked.median: nanmedian with the masked-out elements NaN (torch's own
    definition). Integer inputs run eagerly (torch raises there for a fully masked row)."""
    from ember.torch.converters.scans_sorts import nanmedian

    dt = dtype_name(input)
    if not is_float_dtype(dt) or (dtype is not None and ember_dtype(dtype) != dt):
        raise unsupported(f"masked median of a {dt} tensor or to another dtype")
    x = input if mask is None else ops.where(_mask(input, mask), input,
                                             ops.scalar(float("nan"), dt))
    values, _ = nanmedian(x, py_value(dim), bool(keepdim))
    return values


def _register_all() -> None:
    import torch.masked._ops as masked

    for name, converter in (
        ("sum", masked_sum), ("prod", masked_prod), ("amax", masked_amax),
        ("amin", masked_amin), ("argmax", masked_argmax), ("argmin", masked_argmin),
        ("mean", masked_mean), ("norm", masked_norm), ("var", masked_var), ("std", masked_std),
        ("softmax", masked_softmax), ("log_softmax", masked_log_softmax),
        ("softmin", masked_softmin), ("logsumexp", masked_logsumexp),
        ("logaddexp", masked_logaddexp), ("median", masked_median),
    ):
        register(converter, getattr(masked, name))


_register_all()
