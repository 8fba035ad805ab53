"""Converters for ATen overloads (the operators of graphs from torch.export and
aot_autograd), and the links between torch-level functions and their ATen forms.

Each ATen converter adapts the overload's schema to the shared converter of functions.py
or nn_functions.py. ``link_aten_form`` declares that a torch function has the same
argument layout as an ATen overload, so a converter a user registers for the overload
(``torch.ops.aten.gelu.default``, say) also converts the torch-level calls that Dynamo
records (``torch.nn.functional.gelu``).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import current_node, expected_value
from ember.torch.converters import composites as cmp
from ember.torch.converters import functions as fn
from ember.torch.converters import indexing as ix
from ember.torch.converters import nn_functions as nn_fn
from ember.torch.converters import tensors as tn
from ember.torch.converters.common import (
    END,
    constant,
    full,
    norm_dim,
    ops,
    py_value,
    rank,
    shape_of,
    unsupported,
)
from ember.torch.registry import builtin_registrations, link_aten_form, register_function

aten = torch.ops.aten


def _overload(path: str) -> Any:
    name, _, overload = path.partition(".")
    packet = getattr(aten, name, None)
    return getattr(packet, overload or "default", None) if packet is not None else None


def output_used(index: int) -> bool:
    """Whether a node reads output `index` of the multi-output ATen operator being
    converted."""
    node = current_node()
    return node is not None and any(
        user.target is operator.getitem and user.args[1] == index for user in node.users)


def _unused_output_stand_in(index: int) -> Any:
    """A constant standing for output `index` of a multi-output ATen operator, allowed only
    when nothing reads that output (e.g. the indices of max_pool2d_with_indices)."""
    node = current_node()
    if output_used(index):
        raise unsupported(f"output {index} of {node.target} is used")
    meta = expected_value(node) if node is not None else None
    if meta is None or not isinstance(meta, (tuple, list)):
        return None
    ref = meta[index]
    shape = [int(d) if isinstance(d, int) else 0 for d in ref.shape]
    return constant(torch.zeros(shape, dtype=ref.dtype))


def _native_layer_norm(input: Any, normalized_shape: Any, weight: Any, bias: Any, eps: float):
    dims = list(range(rank(input) - len(normalized_shape), rank(input)))
    mean = ops.mean(input, dims, True)
    centered = input - mean
    rstd = ops.rsqrt(ops.mean(centered * centered, dims, True) + float(eps))
    out = nn_fn.layer_norm(input, normalized_shape, weight, bias, eps)
    return out, mean, rstd


def _native_group_norm(input: Any, weight: Any, bias: Any, n: Any, c: Any, hw: Any,
                       group: int, eps: float) -> Any:
    """The output and the per-(sample, group) mean and reciprocal standard deviation that
    the backward reads."""
    rows = ops.reshape(input, [shape_of(input)[0], int(group), -1])
    mean = ops.mean(rows, [2], True)
    centered = rows - mean
    rstd = ops.rsqrt(ops.mean(centered * centered, [2], True) + float(eps))
    out = nn_fn.group_norm(input, int(group), weight, bias, eps)
    return out, ops.squeeze(mean, [2]), ops.squeeze(rstd, [2])


def _bn_no_training(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                    momentum: Any, eps: Any) -> Any:
    out = nn_fn.batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    return out, _unused_output_stand_in(1), _unused_output_stand_in(2)


def _batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                training: bool, momentum: Any, eps: Any, cudnn_enabled: bool = True) -> Any:
    return nn_fn.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                            eps)


def _slice(self: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Any:
    index = [slice(None)] * rank(self)
    index[norm_dim(dim, rank(self))] = slice(start, end if end is None or end < END else None,
                                             step)
    return ix.getitem(self, tuple(index))


def _to_copy(self: Any, *, dtype: Any = None, device: Any = None, **kwargs: Any) -> Any:
    return tn.to(self, dtype=dtype, device=device)


def _arange(*args: Any, dtype: Any = None, **kwargs: Any) -> Any:
    return tn.arange(*args, dtype=dtype)


def _sdpa_cpu(query: Any, key: Any, value: Any, dropout_p: float = 0.0, is_causal: bool = False,
              *, attn_mask: Any = None, scale: Any = None) -> Any:
    out = nn_fn.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
                                             scale)
    return out, _unused_output_stand_in(1)


def _upsample_nearest_vec(input: Any, output_size: Any, scale_factors: Any) -> Any:
    return nn_fn.interpolate(input, output_size, scale_factors, "nearest")


def _upsample_bilinear_vec(input: Any, output_size: Any, align_corners: bool,
                           scale_factors: Any) -> Any:
    return nn_fn.interpolate(input, output_size, scale_factors, "bilinear", align_corners)


def _max_pool_with_indices(self: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
                           dilation: Any = 1, ceil_mode: bool = False) -> Any:
    if output_used(1):  # the indices, which a backward graph reads
        return nn_fn.max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode, True)
    out = nn_fn.max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode)
    return out, _unused_output_stand_in(1)


def _native_dropout(input: Any, p: float, train: Any) -> Any:
    p = float(py_value(p))
    if (train is not None and not train) or p == 0:  # the identity; every element kept
        keep = full(shape_of(input), True, "bool") if output_used(1) else None
        return input, _unused_output_stand_in(1) if keep is None else keep
    return tn.dropout_train(input, p)


def _var_correction(self: Any, dim: Any = None, *, correction: Any = None,
                    keepdim: bool = False) -> Any:
    return fn.var(self, dim, None, keepdim, correction=correction)


def _var_mean_correction(self: Any, dim: Any = None, *, correction: Any = None,
                         keepdim: bool = False) -> Any:
    return (fn.var(self, dim, None, keepdim, correction=correction),
            fn.mean(self, dim, keepdim))


def _softmax(self: Any, dim: int, half_to_float: bool = False) -> Any:
    return fn.softmax(self, dim)


def _log_softmax(self: Any, dim: int, half_to_float: bool = False) -> Any:
    return fn.log_softmax(self, dim)


def _embedding(weight: Any, indices: Any, padding_idx: int = -1,
               scale_grad_by_freq: bool = False, sparse: bool = False) -> Any:
    return nn_fn.embedding(indices, weight)


def _squeeze_dims(self: Any, dim: Any) -> Any:
    return tn.squeeze(self, list(dim) if isinstance(dim, (tuple, list)) else dim)


def _constant_pad(self: Any, pad: Any, value: Any = 0) -> Any:
    return cmp.pad(self, pad, "constant", value)


def _expand(self: Any, size: Any, *, implicit: bool = False) -> Any:
    return tn.expand(self, list(size))


_TABLE: dict[str, Any] = {
    "relu": fn.relu, "gelu": fn.gelu, "silu": fn.silu,
    "hardtanh": fn.hardtanh, "hardswish": fn.hardswish, "hardsigmoid": fn.hardsigmoid,
    "leaky_relu": fn.leaky_relu, "clamp": fn.clamp, "clamp_min": fn.clamp_min,
    "clamp_max": fn.clamp_max,
    "add.Tensor": fn.add, "add.Scalar": fn.add, "sub.Tensor": fn.sub, "sub.Scalar": fn.sub,
    "mul.Tensor": fn.mul, "mul.Scalar": fn.mul, "div.Tensor": fn.div, "div.Scalar": fn.div,
    "div.Tensor_mode": fn.div, "rsub.Scalar": fn.rsub, "rsub.Tensor": fn.rsub,
    "pow.Tensor_Scalar": fn.pow, "pow.Tensor_Tensor": fn.pow,
    "where.self": fn.where, "masked_fill.Scalar": fn.masked_fill,
    "masked_fill.Tensor": fn.masked_fill,
    "sum.dim_IntList": fn.sum_, "sum.default": fn.sum_, "mean.dim": fn.mean,
    "mean.default": fn.mean, "amax": fn.amax, "amin": fn.amin, "argmax": fn.argmax,
    "argmin": fn.argmin, "prod.default": fn.prod, "var.correction": _var_correction,
    "var_mean.correction": _var_mean_correction,
    "_softmax": _softmax, "softmax.int": fn.softmax, "_log_softmax": _log_softmax,
    "log_softmax.int": fn.log_softmax,
    "mm": fn.matmul, "bmm": fn.matmul, "matmul": fn.matmul, "addmm": fn.addmm,
    "baddbmm": fn.baddbmm, "linear": fn.linear,
    "t": tn.t, "transpose.int": tn.transpose, "permute": tn.permute,
    "view": tn.reshape, "_unsafe_view": tn.reshape, "reshape": tn.reshape,
    "flatten.using_ints": tn.flatten, "unsqueeze": tn.unsqueeze, "squeeze.dim": tn.squeeze,
    "squeeze.dims": _squeeze_dims, "squeeze.default": tn.squeeze, "expand": _expand,
    "clone": tn.identity, "alias": tn.identity, "detach": tn.identity,
    "lift_fresh_copy": tn.identity, "contiguous": tn.identity,
    "cat": tn.cat, "stack": tn.stack, "split.Tensor": tn.split,
    "split_with_sizes": tn.split, "chunk": tn.chunk, "unbind.int": tn.unbind,
    "slice.Tensor": _slice, "select.int": ix.select, "narrow": tn.narrow,
    "_to_copy": _to_copy, "to.dtype": tn.to, "type_as": tn.type_as,
    "full": tn.full_fn, "ones": tn.filled["ones"], "zeros": tn.filled["zeros"],
    "full_like": tn.filled_like["full"], "ones_like": tn.filled_like["ones"],
    "zeros_like": tn.filled_like["zeros"], "scalar_tensor": tn.scalar_tensor,
    "arange.default": _arange, "arange.start": _arange, "arange.start_step": _arange,
    "tril": tn.tril, "triu": tn.triu,
    "embedding": _embedding, "native_layer_norm": _native_layer_norm,
    "layer_norm": nn_fn.layer_norm, "group_norm": nn_fn.group_norm,
    "native_group_norm": _native_group_norm,
    "_native_batch_norm_legit_no_training": _bn_no_training, "batch_norm": _batch_norm,
    "any.dim": fn.any_, "any.default": fn.any_, "any.dims": fn.any_, "all.dim": fn.all_,
    "all.default": fn.all_,
    "convolution": nn_fn.convolution, "conv2d": nn_fn.conv2d, "conv1d": nn_fn.conv1d,
    "max_pool2d": nn_fn.max_pool2d, "max_pool2d_with_indices": _max_pool_with_indices,
    "avg_pool2d": nn_fn.avg_pool2d, "_adaptive_avg_pool2d": nn_fn.adaptive_avg_pool2d,
    "adaptive_avg_pool2d": nn_fn.adaptive_avg_pool2d,
    "upsample_nearest2d.vec": _upsample_nearest_vec,
    "upsample_nearest2d.default": nn_fn.upsample_nearest2d,
    "upsample_bilinear2d.vec": _upsample_bilinear_vec,
    "upsample_bilinear2d.default": nn_fn.upsample_bilinear2d,
    "scaled_dot_product_attention": nn_fn.scaled_dot_product_attention,
    "_scaled_dot_product_flash_attention_for_cpu": _sdpa_cpu,
    "dropout": tn.dropout, "native_dropout": _native_dropout,
    "constant_pad_nd": _constant_pad,
}

# torch-level functions (and Tensor method names) whose arguments are laid out as in these
# ATen overloads.
_FORMS: list[tuple[Any, str]] = [
    (torch.relu, "relu"), (F.relu, "relu"), ("relu", "relu"),
    (F.gelu, "gelu"), (F.silu, "silu"), (F.hardswish, "hardswish"),
    (F.hardsigmoid, "hardsigmoid"), (F.hardtanh, "hardtanh"),
    (F.linear, "linear"), (torch.conv2d, "conv2d"), (F.conv2d, "conv2d"),
    (torch.conv1d, "conv1d"), (F.conv1d, "conv1d"), (F.layer_norm, "layer_norm"),
    (torch.matmul, "matmul"), ("matmul", "matmul"), (torch.bmm, "bmm"), ("bmm", "bmm"),
    (torch.mm, "mm"), (torch.addmm, "addmm"), (torch.baddbmm, "baddbmm"),
    (torch.tril, "tril"), ("tril", "tril"), (torch.triu, "triu"), ("triu", "triu"),
    (F.scaled_dot_product_attention, "scaled_dot_product_attention"),
    (torch.cat, "cat"), (torch.where, "where.self"), ("masked_fill", "masked_fill.Scalar"),
]


def _register_all() -> None:
    with builtin_registrations():
        for path, converter in _TABLE.items():
            overload = _overload(path)
            if overload is not None:
                register_function(overload)(converter)
    for target, path in _FORMS:
        overload = _overload(path)
        if overload is not None:
            link_aten_form(target, overload)


_register_all()
