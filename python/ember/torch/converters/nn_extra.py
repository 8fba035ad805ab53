"""Converters composed of ember's basic operators for the less common torch.nn.functional
activations (softsign, tanhshrink, threshold, soft/hard shrink, glu, prelu, the softmax
backward), losses (margin losses, binary cross entropy, KL divergence, triplet and cosine
embedding losses), ``bilinear`` and normalizations with batch statistics
(``native_batch_norm``, ``native_group_norm``, ``native_layer_norm``,
``local_response_norm``). The masked reductions are in masked_extra.py.

Formulas follow torch's kernels (binary cross entropy clamps its logs at -100, kl_div is
``xlogy(t, t) - t * x``). A batch norm that updates its running statistics reaches these
converters split by the prepare phase (inplace.split_running_stat_updates): the norm of the
batch, and ``functional.running_stat`` for each statistic.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ember._sizes import size_product, size_value
from ember.torch import functional
from ember.torch.context import ember_dtype
from ember.torch.converters.common import (
    binary,
    cast,
    common_dtype,
    constant,
    cut,
    dtype_name,
    fixed_shape,
    float_param,
    full,
    is_float_dtype,
    is_tensor,
    norm_dim,
    ops,
    py_value,
    rank,
    shape_of,
    size_plus,
    slice_axis,
    static_int,
    unsupported,
)
from ember.torch.converters.composite_math import int_constant
from ember.torch.converters.composites import gather
from ember.torch.converters.elementwise_extra import static_float, xlogy
from ember.torch.converters.functions import register
from ember.torch.converters.norms_losses import (
    _reduce_loss,
    _reduction,
    pairwise_distance,
)
from ember.torch.registry import HIGH, builtin_registrations, register_function, register_method

aten = torch.ops.aten


def _count_of(shape: list[Any], dt: str) -> Any:
    """The number of elements of `shape` as a 0-d tensor (symbolic sizes included)."""
    if all(isinstance(d, int) for d in shape):
        n = 1
        for d in shape:
            n *= d
        return ops.scalar(float(n), dt)
    return ops.sum(full(shape, 1.0, dt), list(range(len(shape))), False)


def float_input(x: Any, what: str) -> Any:
    if not is_tensor(x) or not is_float_dtype(dtype_name(x)):
        raise unsupported(f"{what} of a non-float tensor")
    return x


# ---- activations -----------------------------------------------------------------------------
def softsign(input: Any) -> Any:
    x = float_input(input, "softsign")
    return x / (ops.abs(x) + 1.0)


def tanhshrink(input: Any) -> Any:
    x = float_input(input, "tanhshrink")
    return x - ops.tanh(x)


def threshold(input: Any, threshold: Any, value: Any, inplace: bool = False) -> Any:
    dt = dtype_name(input)
    if dt == "bool":
        raise unsupported("threshold of a boolean tensor")
    if is_float_dtype(dt):
        t, v = float_param(threshold, dt), float_param(value, dt)
    else:
        t, v = py_value(threshold), py_value(value)
        if is_tensor(t) or is_tensor(v) or float(t) != int(t) or float(v) != int(v):
            raise unsupported("threshold of an integer tensor with fractional bounds")
        t, v = int(t), int(v)
    if not is_tensor(v):
        v = ops.scalar(v, dt)
    # torch: x <= threshold ? value : x (NaN stays NaN)
    return ops.where(ops.less_equal(input, t), v, input)


def softshrink(input: Any, lambd: Any = 0.5) -> Any:
    x = float_input(input, "softshrink")
    lam = float_param(lambd, dtype_name(x))
    inner = ops.where(ops.less(x, ops.neg(lam) if is_tensor(lam) else -lam), x + lam,
                      x * 0.0)  # x * 0 keeps NaN
    return ops.where(ops.greater(x, lam), x - lam, inner)


def hardshrink(input: Any, lambd: Any = 0.5) -> Any:
    x = float_input(input, "hardshrink")
    lam = float_param(lambd, dtype_name(x))
    low = ops.neg(lam) if is_tensor(lam) else -lam
    inside = ops.logical_and(ops.greater_equal(x, low), ops.less_equal(x, lam))
    return ops.where(inside, 0.0, x)


def glu(input: Any, dim: Any = -1) -> Any:
    x = float_input(input, "glu")
    axis = norm_dim(dim, rank(x))
    n = x.shape[axis]
    if isinstance(n, int) and n % 2:
        raise unsupported("glu of an odd-sized dimension")
    if isinstance(n, int):
        shape = shape_of(x)
        pairs = ops.reshape(x, shape[:axis] + [2, n // 2] + shape[axis + 1:])
        a, b = (ops.squeeze(slice_axis(pairs, axis, i, i + 1), [axis]) for i in (0, 1))
        return a * ops.sigmoid(b)
    # A symbolic n (even: torch checks it) cannot be split by a reshape into [2, n // 2],
    # whose element count ember does not know to be n's: two cuts of n // 2 each.
    half = f"({n} // 2)"
    return cut(x, axis, 0, half) * ops.sigmoid(cut(x, axis, half, f"(2 * {half})"))


def prelu(input: Any, weight: Any) -> Any:
    x = float_input(input, "prelu")
    if dtype_name(weight) != dtype_name(x):
        raise unsupported("prelu with a weight of another dtype")
    count = shape_of(ops.reshape(weight, [-1]))[0]
    if rank(x) >= 2 and count != 1:
        w = ops.reshape(weight, [-1] + [1] * (rank(x) - 2))
    else:
        w = ops.reshape(weight, [count] if rank(x) >= 1 else [])
    return ops.where(ops.greater(x, 0.0), x, x * w)


def softmax_backward_data(grad_output: Any, output: Any, dim: Any, input_dtype: Any) -> Any:
    if dtype_name(grad_output) != dtype_name(output):
        raise unsupported("_softmax_backward_data of tensors of different dtypes")
    float_input(output, "_softmax_backward_data")
    d = norm_dim(dim, rank(output))
    g = grad_output * output
    grad = g - output * ops.sum(g, [d], True)
    return cast(grad, ember_dtype(input_dtype))


def safe_softmax(self: Any, dim: Any, dtype: Any = None) -> Any:
    """softmax, with 0 (not NaN) for a row whose elements are all -inf."""
    x = cast(self, ember_dtype(dtype)) if dtype is not None else float_input(self, "softmax")
    d = norm_dim(dim, rank(x))
    masked = ops.equal(x, float("-inf"))
    all_masked = ops.equal(ops.min(cast(masked, "int32"), [d], True), 1)
    return ops.where(all_masked, 0.0, ops.softmax(x, d))


def bilinear(input1: Any, input2: Any, weight: Any, bias: Any = None) -> Any:
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] (+ b[o]): one matmul of x1 with W
    laid out as [I, O * J], then a product with x2 summed over j."""
    dt = common_dtype(input1, input2, weight)
    if not is_float_dtype(dt) or len({dtype_name(t) for t in (input1, input2, weight)}) != 1:
        raise unsupported("bilinear of non-float tensors or of different dtypes")
    if rank(weight) != 3 or rank(input1) == 0:
        raise unsupported("bilinear with a weight that is not 3-d")
    o, i, j = shape_of(weight)  # ints, or symbolic sizes (a guard keeps them nonzero)
    if 0 in (o, i, j):
        raise unsupported("bilinear with an empty weight")
    w = ops.reshape(ops.permute(weight, [1, 0, 2]), [i, size_product([o, j])])
    lead = shape_of(input1)[:-1]
    t = ops.reshape(ops.matmul(input1, w), lead + [o, j])
    y = ops.sum(t * ops.unsqueeze(input2, [rank(input2) - 1]), [rank(t) - 1], False)
    return y if bias is None else y + bias


def batch_norm_with_update(input: Any, weight: Any, bias: Any, running_mean: Any,
                           running_var: Any, momentum: Any, eps: Any) -> Any:
    raise unsupported("_batch_norm_with_update updates the running statistics in place")


def batch_norm_with_update_functional(input: Any, weight: Any, bias: Any, momentum: Any,
                                      eps: Any) -> Any:
    """functional.batch_norm_with_update: the norm of the batch, without the running
    statistics (their updates are functional.running_stat nodes of their own)."""
    y, mean, invstd = _training_batch_norm(input, weight, bias, None, None, eps)
    return y, mean, invstd, full([0], 0, "uint8")


def running_stat(stat: Any, input: Any, momentum: Any, kind: str) -> Any:
    """functional.running_stat: (1 - momentum) * stat + momentum * the batch's mean or
    unbiased variance per channel (for an instance norm, the per-instance statistics averaged
    over the batch)."""
    dt = dtype_name(stat)
    if not is_float_dtype(dt) or not is_float_dtype(dtype_name(input)):
        raise unsupported("a running statistic of a non-float tensor")
    if 0 in shape_of(stat):
        return stat  # no channels: nothing to update
    if rank(input) < 2 or 0 in shape_of(input):
        raise unsupported("a running statistic of an empty or rank < 2 input")
    x = cast(input, dt)
    spatial = list(range(2, rank(x)))
    dims = spatial if kind.startswith("instance_") else [0] + spatial
    if kind.endswith("mean"):
        batch = ops.mean(x, dims, False)
    else:
        centered = x - ops.mean(x, dims, True)
        count = size_value(size_product([shape_of(x)[d] for d in dims]), dt)
        batch = ops.div(ops.sum(centered * centered, dims, False), ops.sub(count, 1.0)
                        if is_tensor(count) else count - 1.0)
    if kind.startswith("instance_"):
        batch = ops.mean(batch, [0], False)
    m = float_param(momentum, dt)
    if is_tensor(m):  # known only at run time
        return stat * ops.add(ops.neg(m), 1.0) + batch * m
    return stat * (1.0 - m) + batch * m


# ---- losses ----------------------------------------------------------------------------------
def _loss_pair(input: Any, target: Any, what: str) -> tuple[Any, Any]:
    dt = common_dtype(input, target)
    if not is_float_dtype(dt):
        raise unsupported(f"{what} of non-float tensors")
    return cast(input, dt), cast(target, dt)


def soft_margin_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                     reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    x, y = _loss_pair(input, target, "soft_margin_loss")
    return _reduce_loss(ops.log1p(ops.exp(ops.neg(x) * y)), how)


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: Any = 0.0,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    dt = common_dtype(input1, input2, target)
    if not is_float_dtype(dt):
        raise unsupported("margin_ranking_loss of non-float tensors")
    a, b, y = cast(input1, dt), cast(input2, dt), cast(target, dt)
    loss = ops.relu(ops.neg(y) * (a - b) + float_param(margin, dt))
    return _reduce_loss(loss, how)


def hinge_embedding_loss(input: Any, target: Any, margin: Any = 1.0, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    x, y = _loss_pair(input, target, "hinge_embedding_loss")
    m = float_param(margin, dtype_name(x))
    margin_part = ops.where(ops.not_equal(y, 1.0), ops.relu(ops.neg(x) + m), 0.0)
    self_part = ops.where(ops.not_equal(y, -1.0), x, 0.0)
    return _reduce_loss(margin_part + self_part, how)


def _class_targets(input: Any, target: Any, what: str) -> tuple[Any, Any, int, bool]:
    """(input as [N, C], target as [N] int64, C, whether the input was 1-d)."""
    x = float_input(input, what)
    if not is_tensor(target) or dtype_name(target) not in ("int64", "int32"):
        raise unsupported(f"{what} with targets that are not class indices")
    one = rank(x) <= 1
    if one:
        x = ops.reshape(x, [1, -1])
    if rank(x) != 2:
        raise unsupported(f"{what} of a tensor of rank > 2")
    n, c = fixed_shape(x, what)
    if n == 0 or c == 0:
        raise unsupported(f"{what} of an empty tensor")
    return x, ops.reshape(cast(target, "int64"), [n]), c, one


def _unbatched(loss: Any, how: str, one: bool) -> Any:
    if how == "none" and one:
        return ops.reshape(loss, [])
    return _reduce_loss(loss, how)


def multi_margin_loss(input: Any, target: Any, p: Any = 1, margin: Any = 1.0, weight: Any = None,
                      size_average: Any = None, reduce: Any = None,
                      reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    p = static_int(p, "multi_margin_loss's p")
    if p not in (1, 2):
        raise unsupported(f"multi_margin_loss with p={p}")
    x, t, c, one = _class_targets(input, target, "multi_margin_loss")
    picked = gather(x, 1, ops.unsqueeze(t, [1]))
    z = ops.relu(x - picked + float_param(margin, dtype_name(x)))
    h = z * z if p == 2 else z
    if weight is not None:
        table = ops.reshape(cast(weight, dtype_name(x)), [c, 1])
        h = h * ops.embedding(table, t)
    classes = int_constant(list(range(c)))
    h = ops.where(ops.equal(ops.unsqueeze(t, [1]), classes), 0.0, h)
    loss = ops.sum(h, [1], False) / float(c)
    if how == "none" and one:
        return ops.reshape(loss, shape_of(target))  # [1] or [], as the target
    return _reduce_loss(loss, how)


def multilabel_margin_loss(input: Any, target: Any, size_average: Any = None,
                           reduce: Any = None, reduction: str = "mean") -> Any:
    """Targets list class indices up to the first -1: sum over listed j and unlisted i of
    max(0, 1 - (x[j] - x[i])) / C."""
    how = _reduction(size_average, reduce, reduction)
    x = float_input(input, "multilabel_margin_loss")
    if not is_tensor(target) or dtype_name(target) not in ("int64", "int32"):
        raise unsupported("multilabel_margin_loss with non-integer targets")
    one = rank(x) <= 1
    if one:
        x, target = ops.reshape(x, [1, -1]), ops.reshape(target, [1, -1])
    if rank(x) != 2 or fixed_shape(target, "targets") != fixed_shape(x, "inputs"):
        raise unsupported("multilabel_margin_loss with mismatched shapes")
    n, c = fixed_shape(x, "multilabel_margin_loss")
    if n == 0 or c == 0:
        raise unsupported("multilabel_margin_loss of an empty tensor")
    t = cast(target, "int64")
    ended = cast(ops.equal(t, -1), "float32")
    before = constant(torch.tril(torch.ones(c, c)).T.contiguous())  # [k, j]: k <= j
    valid = ops.equal(ops.matmul(ended, before), 0.0)  # no -1 at or before position j
    safe = ops.where(valid, t, 0)
    picked = gather(x, 1, safe)  # [n, c]: x at the listed classes
    classes = int_constant(list(range(c)))
    listed = ops.logical_and(ops.unsqueeze(valid, [2]),
                             ops.equal(ops.unsqueeze(safe, [2]), classes))  # [n, k, i]
    is_target = ops.greater(ops.sum(cast(listed, "int32"), [1], False), 0)  # [n, i]
    z = ops.relu(1.0 - ops.unsqueeze(picked, [2]) + ops.unsqueeze(x, [1]))  # [n, j, i]
    keep = ops.logical_and(ops.unsqueeze(valid, [2]),
                           ops.logical_not(ops.unsqueeze(is_target, [1])))
    loss = ops.sum(ops.where(keep, z, 0.0), [1, 2], False) / float(c)
    return _unbatched(loss, how, one)


def multilabel_soft_margin_loss(input: Any, target: Any, weight: Any = None,
                                size_average: Any = None, reduce: Any = None,
                                reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    x, y = _loss_pair(input, target, "multilabel_soft_margin_loss")
    loss = ops.neg(y * ops.logsigmoid(x) + (1.0 - y) * ops.logsigmoid(ops.neg(x)))
    if weight is not None:
        loss = binary(ops.mul, loss, weight)
    class_dim = rank(x) - 1
    c = _count_of(shape_of(x)[class_dim:], dtype_name(loss))
    return _reduce_loss(ops.sum(loss, [class_dim], False) / c, how)


def binary_cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                         reduce: Any = None, reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    x, y = _loss_pair(input, target, "binary_cross_entropy")
    log_x = ops.maximum(ops.log(x), -100.0)
    log_1mx = ops.maximum(ops.log1p(ops.neg(x)), -100.0)
    loss = (y - 1.0) * log_1mx - y * log_x
    if weight is not None:
        loss = binary(ops.mul, loss, weight)
    return _reduce_loss(loss, how)


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,
                                     size_average: Any = None, reduce: Any = None,
                                     reduction: str = "mean", pos_weight: Any = None) -> Any:
    how = _reduction(size_average, reduce, reduction)
    x, y = _loss_pair(input, target, "binary_cross_entropy_with_logits")
    log_sig = ops.logsigmoid(x)
    if pos_weight is not None:
        log_weight = binary(ops.mul, pos_weight, y) - y + 1.0
        loss = (1.0 - y) * x - log_weight * log_sig
    else:
        loss = (1.0 - y) * x - log_sig
    if weight is not None:
        loss = binary(ops.mul, loss, weight)
    return _reduce_loss(loss, how)


def kl_div(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
           reduction: str = "mean", log_target: bool = False) -> Any:
    batchmean = reduction == "batchmean"
    how = _reduction(size_average, reduce, "sum" if batchmean else reduction)
    x, t = _loss_pair(input, target, "kl_div")
    loss = ops.exp(t) * (t - x) if log_target else xlogy(t, t) - t * x
    if batchmean:
        if rank(loss) == 0:
            return _reduce_loss(loss, "sum")
        return _reduce_loss(loss, "sum") / _count_of(shape_of(loss)[:1], dtype_name(loss))
    return _reduce_loss(loss, how)


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: Any = 1.0,
                        p: Any = 2, eps: Any = 1e-06, swap: bool = False,
                        size_average: Any = None, reduce: Any = None,
                        reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    for t in (anchor, positive, negative):
        float_input(t, "triplet_margin_loss")
    if rank(anchor) not in (1, 2):
        raise unsupported("triplet_margin_loss of tensors of rank other than 1 or 2")
    p = static_float(p, "triplet_margin_loss's p")
    eps = static_float(eps, "triplet_margin_loss's eps")
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = ops.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    loss = ops.relu(d_ap - d_an + float_param(margin, dtype_name(d_ap)))
    return _reduce_loss(loss, how)


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: Any = 0.0,
                          size_average: Any = None, reduce: Any = None,
                          reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    dt = common_dtype(input1, input2, target)
    if not is_float_dtype(dt):
        raise unsupported("cosine_embedding_loss of non-float tensors")
    a, b, y = cast(input1, dt), cast(input2, dt), cast(target, dt)
    d = rank(target)
    eps = 1e-12
    prod = ops.sum(a * b, [d], False)
    mag = ops.sqrt((ops.sum(a * a, [d], False) + eps) * (ops.sum(b * b, [d], False) + eps))
    cos = prod / mag
    pos = ops.where(ops.equal(y, 1.0), 1.0 - cos, 0.0)
    neg = ops.where(ops.equal(y, -1.0), ops.relu(cos - float_param(margin, dt)), 0.0)
    return _reduce_loss(pos + neg, how)


# ---- normalization ---------------------------------------------------------------------------
def _batch_stats(x: Any, eps: Any) -> tuple[Any, Any, list[int]]:
    """The mean and 1/sqrt(biased var + eps) over every dim but 1, kept as [C, 1, ...]."""
    dims = [0] + list(range(2, rank(x)))
    mean = ops.mean(x, dims, True)
    centered = x - mean
    invstd = ops.rsqrt(ops.mean(centered * centered, dims, True) + eps)
    return mean, invstd, dims


def _affine(y: Any, weight: Any, bias: Any, n: int) -> Any:
    if n < 2:
        raise unsupported("a batch norm of a tensor of rank < 2")
    channel = [-1] + [1] * (n - 2)
    if weight is not None:
        y = y * ops.reshape(weight, channel)
    if bias is not None:
        y = y + ops.reshape(bias, channel)
    return y


def _training_batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any,
                         running_var: Any, eps: Any) -> tuple[Any, Any, Any]:
    if running_mean is not None or running_var is not None:
        raise unsupported("batch norm that updates running statistics (an in-place write)")
    x = float_input(input, "batch_norm")
    if rank(x) < 2:
        raise unsupported("batch norm of a tensor of rank < 2")
    if any(s == 0 for s in shape_of(x)):
        raise unsupported("batch norm of an empty tensor")
    mean, invstd, dims = _batch_stats(x, float_param(eps, dtype_name(x)))
    y = _affine((x - mean) * invstd, weight, bias, rank(x))
    return y, ops.reshape(mean, [-1]), ops.reshape(invstd, [-1])


def _eval_batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                     eps: Any) -> Any:
    if running_mean is None or running_var is None:
        raise unsupported("inference batch norm without running statistics")
    x = float_input(input, "batch_norm")
    if rank(x) >= 2 and not is_tensor(eps):
        from ember.torch.converters import nn_functions as nn_fn

        return nn_fn.batch_norm(x, running_mean, running_var, weight, bias, False, 0.1, eps)
    if rank(x) < 2:
        raise unsupported("batch norm of a tensor of rank < 2")
    channel = [-1] + [1] * (rank(x) - 2)
    invstd = ops.rsqrt(ops.reshape(running_var, channel) + float_param(eps, dtype_name(x)))
    y = (x - ops.reshape(running_mean, channel)) * invstd
    return _affine(y, weight, bias, rank(x))


def native_batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                      training: bool, momentum: Any, eps: Any) -> Any:
    if training:
        return _training_batch_norm(input, weight, bias, running_mean, running_var, eps)
    y = _eval_batch_norm(input, weight, bias, running_mean, running_var, eps)
    empty = full([0], 0.0, dtype_name(input))
    return y, empty, empty


def native_batch_norm_legit(input: Any, weight: Any, bias: Any, *args: Any) -> Any:
    """Both overloads: (running_mean, running_var, training, momentum, eps) and, without
    running statistics, (training, momentum, eps)."""
    if len(args) == 5:
        running_mean, running_var, training, momentum, eps = args
    elif len(args) == 3:
        running_mean = running_var = None
        training, momentum, eps = args
    else:
        raise unsupported("_native_batch_norm_legit with unexpected arguments")
    return native_batch_norm(input, weight, bias, running_mean, running_var, training,
                             momentum, eps)


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None,
               bias: Any = None, training: bool = False, momentum: Any = 0.1,
               eps: Any = 1e-5) -> Any:
    """F.batch_norm: batch statistics in training mode (when no running statistics are to be
    updated), ember's batch_norm operator (nn_functions.batch_norm) for inference. An input
    without elements gives itself (torch's result: empty, of its shape)."""
    if all(isinstance(d, int) for d in shape_of(input)) and 0 in shape_of(input):
        return input
    if training:
        return _training_batch_norm(input, weight, bias, running_mean, running_var, eps)[0]
    return _eval_batch_norm(input, weight, bias, running_mean, running_var, eps)


def torch_batch_norm(input: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                     training: bool, momentum: Any, eps: Any, cudnn_enabled: Any = True) -> Any:
    """torch.batch_norm: F.batch_norm's arguments in ATen's order."""
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def native_layer_norm(input: Any, normalized_shape: Any, weight: Any, bias: Any,
                      eps: Any) -> Any:
    x = float_input(input, "native_layer_norm")
    k = len(normalized_shape)
    dims = list(range(rank(x) - k, rank(x)))
    if any(s == 0 for s in shape_of(x)):
        raise unsupported("native_layer_norm of an empty tensor")
    mean = ops.mean(x, dims, True)
    centered = x - mean
    rstd = ops.rsqrt(ops.mean(centered * centered, dims, True) + float_param(eps, dtype_name(x)))
    y = centered * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y, mean, rstd


def native_group_norm(input: Any, weight: Any, bias: Any, N: Any, C: Any, HxW: Any, group: Any,
                      eps: Any) -> Any:
    x = float_input(input, "native_group_norm")
    g = static_int(group, "group")
    if any(s == 0 for s in shape_of(x)):
        raise unsupported("native_group_norm of an empty tensor")
    n = shape_of(x)[0]
    grouped = ops.reshape(x, [n, g, -1])
    mean = ops.mean(grouped, [2], True)
    centered = grouped - mean
    rstd = ops.rsqrt(ops.mean(centered * centered, [2], True) + float_param(eps, dtype_name(x)))
    y = ops.reshape(centered * rstd, shape_of(x))
    y = _affine(y, weight, bias, rank(x))
    return y, ops.reshape(mean, [n, g]), ops.reshape(rstd, [n, g])


def local_response_norm(input: Any, size: Any, alpha: Any = 1e-4, beta: Any = 0.75,
                        k: Any = 1.0) -> Any:
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels, zero-padded) ** beta."""
    x = float_input(input, "local_response_norm")
    if rank(x) < 3:
        raise unsupported("local_response_norm of a tensor of rank < 3")
    size = static_int(size, "local_response_norm's size")
    c = x.shape[1]
    if 0 in shape_of(x) or size < 1:
        raise unsupported("local_response_norm of an empty tensor")
    sq = x * x
    before, after = size // 2, (size - 1) // 2
    shape = shape_of(sq)
    parts = []
    for width in (before, after):
        pad_shape = list(shape)
        pad_shape[1] = width
        parts.append(full(pad_shape, 0.0, dtype_name(x)) if width else None)
    padded = ops.concat([p for p in (parts[0], sq, parts[1]) if p is not None], 1)
    total = cut(padded, 1, 0, c)
    for i in range(1, size):
        total = total + cut(padded, 1, i, size_plus(c, i))
    dt = dtype_name(x)
    div = ops.pow((total / float(size)) * float_param(alpha, dt) + float_param(k, dt),
                  float_param(beta, dt))
    return x / div


# ---- registration --------------------------------------------------------------------------
def _register_all() -> None:
    register(softsign, F.softsign)
    register(tanhshrink, F.tanhshrink)
    register(threshold, F.threshold, torch.threshold)
    register(softshrink, F.softshrink, torch._C._nn.softshrink)
    register(hardshrink, F.hardshrink, torch.hardshrink)
    register(glu, F.glu, torch._C._nn.glu)
    register(prelu, F.prelu, torch.prelu)
    register(softmax_backward_data, aten._softmax_backward_data,
             aten._softmax_backward_data.default, torch._softmax_backward_data)
    register(safe_softmax, aten._safe_softmax, aten._safe_softmax.default)
    register(soft_margin_loss, F.soft_margin_loss)
    register(margin_ranking_loss, F.margin_ranking_loss)
    register(hinge_embedding_loss, F.hinge_embedding_loss)
    register(multi_margin_loss, F.multi_margin_loss)
    register(multilabel_margin_loss, F.multilabel_margin_loss)
    register(multilabel_soft_margin_loss, F.multilabel_soft_margin_loss)
    register(binary_cross_entropy, F.binary_cross_entropy)
    register(binary_cross_entropy_with_logits, F.binary_cross_entropy_with_logits)
    register(kl_div, F.kl_div)
    register(triplet_margin_loss, F.triplet_margin_loss)
    register(cosine_embedding_loss, F.cosine_embedding_loss)
    register(native_batch_norm, torch.native_batch_norm)
    register(torch_batch_norm, torch.batch_norm)
    register(native_batch_norm_legit, torch._native_batch_norm_legit)
    register(native_layer_norm, torch.native_layer_norm)
    register(native_group_norm, torch.native_group_norm)
    register(local_response_norm, F.local_response_norm)
    register(bilinear, F.bilinear, torch.bilinear)
    register(batch_norm_with_update, aten._batch_norm_with_update,
             aten._batch_norm_with_update.default)
    register(batch_norm_with_update_functional, functional.batch_norm_with_update)
    register(running_stat, functional.running_stat)
    with builtin_registrations():
        register_function(F.batch_norm, priority=HIGH)(batch_norm)
        for name, converter in (("softsign", softsign), ("prelu", prelu),
                                ("hardshrink", hardshrink)):
            if hasattr(torch.Tensor, name):
                register_method(name)(converter)


_register_all()
