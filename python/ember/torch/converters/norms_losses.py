"""Converters composed of ember's basic operators for normalization (instance and RMS
norms), vector norms and the distances built on them, ``einsum`` with one or two operands,
and the common losses (cross entropy, nll, mse, l1, smooth l1, huber). Calls a converter
cannot compute exactly raise ``unsupported`` and run in eager PyTorch.
"""


from __future__ import annotations

import builtins
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import ember_dtype, same_size, torch_dtype
from ember.torch.converters import functions as fn
from ember.torch.converters.common import (
    binary,
    broadcast,
    cast,
    common_dtype,
    dtype_name,
    fixed_number,
    float_param,
    is_float_dtype,
    is_runtime_scalar,
    is_tensor,
    norm_dim,
    norm_dims,
    ops,
    py_value,
    rank,
    reshape_dims,
    shape_of,
    size_product,
    size_value,
    to_float,
    unsupported,
    with_shape,
)
from ember.torch.converters.composite_math import (
    check_nonempty,
)
from ember.torch.converters.composites import gather
from ember.torch.converters.functions import register
from ember.torch.registry import (
    builtin_registrations,
    register_method,
)


# ---- normalization -------------------------------------------------------------------------
def instance_norm(input: Any, running_mean: Any = None, running_var: Any = None,
                  weight: Any = None, bias: Any = None, use_input_stats: bool = True,
                  momentum: Any = 0.1, eps: Any = 1e-5) -> Any:
    if not use_input_stats:
        from ember.torch.converters import nn_functions as nn_fn

        return nn_fn.batch_norm(input, running_mean, running_var, weight, bias, False,
                                momentum, eps)
    if running_mean is not None or running_var is not None:
        raise unsupported("instance_norm that updates running statistics")
    if rank(input) < 3:
        raise unsupported("instance_norm of a tensor of rank < 3")
    x = to_float(input)
    dims = list(range(2, rank(x)))
    centered = x - ops.mean(x, dims, True)
    var = ops.mean(centered * centered, dims, True)
    y = centered * ops.rsqrt(var + float_param(eps, dtype_name(x)))
    channels = shape_of(x)[1:2]  # a weight's size may be spelled by another symbol
    channel_shape = channels + [1] * (rank(x) - 2)
    if weight is not None:
        y = y * ops.reshape(with_shape(weight, channels, "instance_norm's weight"),
                            channel_shape)
    if bias is not None:
        y = y + ops.reshape(with_shape(bias, channels, "instance_norm's bias"), channel_shape)
    return y


def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: Any = None) -> Any:
    dt = dtype_name(input)
    if not is_float_dtype(dt):
        raise unsupported("rms_norm of a non-float tensor")
    n = len(normalized_shape)
    dims = list(range(rank(input) - n, rank(input)))
    compute = "float64" if dt == "float64" else "float32"
    x = cast(input, compute)
    # torch's default eps is that of the dtype it computes in (float32 for half types)
    e = torch.finfo(torch_dtype(compute)).eps if eps is None else float_param(eps, compute)
    y = x * ops.rsqrt(ops.mean(x * x, dims, True) + e)
    y = cast(y, dt)
    return y if weight is None else y * weight


def _norm(x: Any, p: Any, dims: list[int], keepdim: bool) -> Any:
    """The vector p-norm of a float tensor over dims (torch.linalg.vector_norm)."""
    if isinstance(p, str):
        if p != "fro":
            raise unsupported(f"the {p!r} norm")
        p = 2.0
    if is_tensor(p):  # a float Dynamo passes as a graph input (not specialized)
        return _norm_of_runtime_order(x, p, dims, keepdim)
    p = float(py_value(p))
    if p == float("inf") or p == float("-inf"):
        check_nonempty(x, dims, "an inf-norm")
        reduce = ops.max if p > 0 else ops.min
        return reduce(ops.abs(x), dims, keepdim)
    if p == 0:
        return ops.sum(ops.cast(ops.not_equal(x, 0.0), dtype_name(x)), dims, keepdim)
    if p == 1:
        return ops.sum(ops.abs(x), dims, keepdim)
    if p == 2:
        return ops.sqrt(ops.sum(x * x, dims, keepdim))
    if p != p:
        raise unsupported(f"the vector norm of order {p}")
    # negative orders too: a zero makes the sum inf and the norm 0, as in torch
    return ops.pow(ops.sum(ops.pow(ops.abs(x), p), dims, keepdim), 1.0 / p)


def _norm_of_runtime_order(x: Any, p: Any, dims: list[int], keepdim: bool) -> Any:
    """The vector p-norm for an order that arrives when the graph runs (a 0-d tensor): each
    of torch's cases is computed and the order picks one: max |x| (inf), min |x| (-inf),
    the count of nonzeros (0), else sum(|x|^p)^(1/p) (negative orders included: a zero
    makes the sum inf and the norm 0, as in torch)."""
    if rank(x) == 0:  # dim 0 or none of a 0-d tensor: its one element, a 0-d result
        return ops.reshape(_norm_of_runtime_order(ops.reshape(x, [1]), p, [0], False), [])
    if any(shape_of(x)[d] == 0 for d in dims):  # torch accepts only some orders: fix it
        return _norm(x, fixed_number(p, "a norm's order over an empty dimension"), dims,
                     keepdim)
    dt = dtype_name(x)
    p = cast(p, dt)
    a = ops.abs(x)
    general = ops.pow(ops.sum(ops.pow(a, p), dims, keepdim), ops.reciprocal(p))
    count = ops.sum(ops.cast(ops.not_equal(x, 0.0), dt), dims, keepdim)
    y = ops.where(ops.equal(p, 0.0), count, general)
    y = ops.where(ops.equal(p, float("-inf")), ops.min(a, dims, keepdim), y)
    return ops.where(ops.equal(p, float("inf")), ops.max(a, dims, keepdim), y)


def _norm_input(input: Any, dtype: Any) -> Any:
    if dtype is not None:
        return cast(input, ember_dtype(dtype))
    if not is_float_dtype(dtype_name(input)):
        raise unsupported("the norm of a non-float tensor")
    return input


def vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    x = _norm_input(x, dtype)
    return _norm(x, ord, norm_dims(dim, rank(x)), keepdim)


def norm(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
         dtype: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    x = _norm_input(input, dtype)
    if p is None:
        p = 2.0
    if is_tensor(p):  # a float Dynamo passes as a graph input: a vector norm (any order)
        return _norm(x, p, norm_dims(dim, rank(x)), keepdim)
    if p == "nuc":  # a matrix norm, over all (two) dimensions by default
        from ember.torch.converters.products_extra import matrix_norm

        dims = list(range(rank(x))) if dim is None else list(dim)
        if len(dims) != 2:
            raise unsupported("the nuclear norm over other than two dimensions")
        return matrix_norm(x, "nuc", dims, keepdim)
    if isinstance(p, str) and p != "fro":
        raise unsupported(f"torch.norm with p={p!r}")
    return _norm(x, p, norm_dims(dim, rank(x)), keepdim)


def linalg_norm(input: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
                out: Any = None, dtype: Any = None) -> Any:
    vector = (isinstance(dim, int) or (isinstance(dim, (tuple, list)) and len(dim) == 1)
              or (dim is None and (ord is None or rank(input) == 1)))
    if is_tensor(ord) and not vector:  # a float Dynamo passes as a graph input
        ord = fixed_number(ord, "a matrix norm's order")
    if not vector and ord not in (None, "fro"):
        from ember.torch.converters.products_extra import matrix_norm

        if out is not None:
            raise unsupported("out= arguments")
        dims = (-2, -1) if dim is None else tuple(dim)
        if len(dims) != 2 or (dim is None and rank(input) != 2):
            raise unsupported(f"the matrix norm ord={ord!r} of a tensor of rank {rank(input)}")
        return matrix_norm(input, ord, dims, keepdim, dtype=dtype)
    return vector_norm(input, 2 if ord in (None, "fro") else ord, dim, keepdim, dtype=dtype,
                       out=out)


def normalize(input: Any, p: Any = 2.0, dim: Any = 1, eps: Any = 1e-12, out: Any = None) -> Any:
    if out is not None:
        raise unsupported("out= arguments")
    x = _norm_input(input, None)
    denom = ops.maximum(_norm(x, p, [norm_dim(dim, rank(x))], True), float(py_value(eps)))
    return x / denom


def pairwise_distance(x1: Any, x2: Any, p: Any = 2.0, eps: Any = 1e-6,
                      keepdim: bool = False) -> Any:
    dt = common_dtype(x1, x2)
    if not is_float_dtype(dt):
        raise unsupported("pairwise_distance of non-float tensors")
    n = builtins.max(rank(x1), rank(x2))
    if n == 0:
        raise unsupported("pairwise_distance of 0-d tensors")
    diff = binary(ops.sub, x1, x2, dtype=dt) + float(py_value(eps))
    if rank(diff) == 1 and n == 1:
        return _norm(diff, p, [0], keepdim)
    return _norm(diff, p, [rank(diff) - 1], keepdim)


def cosine_similarity(x1: Any, x2: Any, dim: Any = 1, eps: Any = 1e-8) -> Any:
    dt = common_dtype(x1, x2)
    if not is_float_dtype(dt):
        raise unsupported("cosine_similarity of non-float tensors")
    a, b = cast(x1, dt), cast(x2, dt)
    n = builtins.max(rank(a), rank(b))
    d = norm_dim(dim, n)
    e = float(py_value(eps))
    # both operands broadcast to one shape before the norms (a size-1 dimension d counts
    # once per element of the other's)
    a, b = broadcast(a, b)
    na = ops.maximum(_norm(a, 2.0, [d], True), e)
    nb = ops.maximum(_norm(b, 2.0, [d], True), e)
    return ops.sum((a / na) * (b / nb), [d], False)


# ---- einsum --------------------------------------------------------------------------------
def _einsum_terms(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise unsupported(f"einsum {equation!r} with {len(ranks)} operands")
    # "..." becomes upper-case letters that name the broadcast dims, right-aligned
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in eq]
    width = 0
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            width = builtins.max(width, r - (len(t) - 3))
    dots = "".join(spare[:width])
    out_terms = []
    for t, r in zip(terms, ranks, strict=True):
        if "..." in t:
            k = r - (len(t) - 3)
            t = t.replace("...", dots[width - k:] if k else "")
        if len(t) != r or not t.isalpha():
            raise unsupported(f"einsum term {t!r} for an operand of rank {r}")
        out_terms.append(t)
    if arrow:
        rhs = rhs.replace("...", dots)
    else:
        counts = {c: "".join(out_terms).count(c) for c in "".join(out_terms)}
        rhs = dots + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in dots))
    if not rhs.isalpha() and rhs:
        raise unsupported(f"einsum output {rhs!r}")
    return out_terms, rhs


def _diagonals(x: Any, term: str) -> tuple[Any, str]:
    """x and its term with each index repeated in the term ("ii", "bii") taken as the
    diagonal of those dimensions (torch.diagonal: it goes last in the term)."""
    from ember.torch.converters.diagonals import diagonal

    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        if not same_size(x.shape[i], x.shape[j]):
            raise unsupported(f"einsum index {c!r} repeated over sizes {x.shape[i]} and "
                              f"{x.shape[j]}")
        x = diagonal(x, 0, i, j)
        term = "".join(t for k, t in enumerate(term) if k not in (i, j)) + c
    return x, term


def einsum(equation: Any, *operands: Any) -> Any:
    if not isinstance(equation, str):
        raise unsupported("einsum in the sublist format")
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    if not 1 <= len(operands) <= 2 or not all(is_tensor(o) for o in operands):
        raise unsupported("einsum with more than two operands")
    terms, out = _einsum_terms(equation, [rank(o) for o in operands])
    if len(set(out)) != len(out):
        raise unsupported(f"einsum output {out!r} with a repeated index")
    operands, terms = zip(*(_diagonals(o, t) for o, t in zip(operands, terms, strict=True)),
                          strict=True)
    if any(c not in "".join(terms) for c in out):
        raise unsupported(f"einsum output {out!r} names an index no operand has")
    size: dict[str, int | str] = {}  # an index's size: an int or a symbolic size
    for t, o in zip(terms, operands, strict=True):
        for c, s in zip(t, shape_of(o), strict=True):
            if size.setdefault(c, s) != s:
                raise unsupported(f"einsum with index {c!r} of sizes {size[c]} and {s} "
                                  "(broadcast size-1 dimensions, or symbolic sizes ember "
                                  "cannot show equal)")
    dt = common_dtype(*operands)
    xs = [cast(o, dt) for o in operands]

    if len(xs) == 1:
        x, t = xs[0], terms[0]
        gone = [i for i, c in enumerate(t) if c not in out]
        if gone:
            x = ops.sum(x, gone, False)
            t = "".join(c for c in t if c in out)
        order = [t.index(c) for c in out]
        return ops.permute(x, order) if order != list(range(len(order))) else x
    (a, b), (ta, tb) = xs, terms
    ga = [i for i, c in enumerate(ta) if c not in out and c not in tb]
    if ga:
        a, ta = ops.sum(a, ga, False), "".join(c for c in ta if c in out or c in tb)
    gb = [i for i, c in enumerate(tb) if c not in out and c not in ta]
    if gb:
        b, tb = ops.sum(b, gb, False), "".join(c for c in tb if c in out or c in ta)
    batch = [c for c in ta if c in tb and c in out]
    contract = [c for c in ta if c in tb and c not in out]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]

    def prod(cs: list[str]) -> int | str:
        return size_product([size[c] for c in cs])

    a = ops.permute(a, [ta.index(c) for c in batch + left + contract])
    b = ops.permute(b, [tb.index(c) for c in batch + contract + right])
    a = ops.reshape(a, reshape_dims([prod(batch), prod(left), prod(contract)]))
    b = ops.reshape(b, reshape_dims([prod(batch), prod(contract), prod(right)]))
    y = ops.matmul(a, b)
    got = batch + left + right
    y = ops.reshape(y, reshape_dims([size[c] for c in got]))
    order = [got.index(c) for c in out]
    return ops.permute(y, order) if order != list(range(len(order))) else y


# ---- losses --------------------------------------------------------------------------------
def _reduction(size_average: Any, reduce: Any, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        raise unsupported("the deprecated size_average/reduce arguments")
    if reduction not in ("mean", "sum", "none"):
        raise unsupported(f"reduction={reduction!r}")
    return reduction


def _reduce_loss(loss: Any, reduction: str) -> Any:
    if reduction == "none":
        return loss
    all_dims = list(range(rank(loss)))
    if reduction == "sum":
        return ops.sum(loss, all_dims, False)
    return ops.mean(loss, all_dims, False)


def _pointwise_loss(kind: str) -> Any:
    def convert(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                reduction: str = "mean", **kw: Any) -> Any:
        how = _reduction(size_average, reduce, reduction)
        dt = common_dtype(input, target)
        if not is_float_dtype(dt):
            raise unsupported(f"{kind} loss of non-float tensors")
        if kw.get("weight") is not None:
            raise unsupported(f"{kind} loss with weight")
        d = binary(ops.sub, input, target, dtype=dt)
        if kind == "mse":
            loss = d * d
        elif kind == "l1":
            loss = ops.abs(d)
        else:
            ad = ops.abs(d)
            beta = float(py_value(kw.get("beta", kw.get("delta", 1.0))))
            if kind == "smooth_l1" and beta == 0:
                loss = ad
            elif beta <= 0:
                raise unsupported(f"{kind} loss with a non-positive parameter {beta}")
            elif kind == "smooth_l1":
                loss = ops.where(ops.less(ad, beta), (d * d * 0.5) / beta, ad - 0.5 * beta)
            else:  # huber
                loss = ops.where(ops.less(ad, beta), d * d * 0.5, (ad - 0.5 * beta) * beta)
        return _reduce_loss(loss, how)

    convert.__name__ = convert.__qualname__ = f"{kind}_loss"
    return convert


def mse_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Any = None) -> Any:
    return _pointwise_loss("mse")(input, target, size_average, reduce, reduction, weight=weight)


def l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean") -> Any:
    return _pointwise_loss("l1")(input, target, size_average, reduce, reduction)


def smooth_l1_loss(input: Any, target: Any, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Any:
    return _pointwise_loss("smooth_l1")(input, target, size_average, reduce, reduction,
                                        beta=beta)


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0,
               weight: Any = None) -> Any:
    return _pointwise_loss("huber")(input, target, None, None, reduction, delta=delta,
                                    weight=weight)


def nll_loss(input: Any, target: Any, weight: Any = None, size_average: Any = None,
             ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> Any:
    how = _reduction(size_average, reduce, reduction)
    if not is_tensor(target) or dtype_name(target) not in ("int64", "int32", "uint8"):
        raise unsupported("nll_loss with targets that are not class indices")
    x = input
    if not is_float_dtype(dtype_name(x)):
        raise unsupported("nll_loss of a non-float input")
    if rank(x) == 1:
        if rank(target) != 0:
            raise unsupported("nll_loss of a 1-d input with a target that is not 0-d")
        x, target = ops.unsqueeze(x, [0]), ops.reshape(target, [1])
    if rank(x) < 2 or rank(target) != rank(x) - 1:
        raise unsupported("nll_loss with mismatched input and target ranks")
    shape = shape_of(x)  # sizes may be symbolic
    c = shape[1]
    target = with_shape(target, shape[:1] + shape[2:], f"nll_loss of an input of shape "
                        f"{shape} with a target")
    t = cast(target, "int64")
    ignored = ops.equal(t, int(ignore_index))
    safe = ops.where(ignored, 0, t)  # ignored targets pick class 0, then count as 0
    picked = ops.squeeze(gather(x, 1, ops.unsqueeze(safe, [1])), [1])
    if weight is not None:
        table = ops.reshape(cast(weight, dtype_name(x)), reshape_dims([c, 1]))
        w = ops.where(ignored, 0.0, ops.reshape(ops.embedding(table, safe),
                                                reshape_dims(shape[:1] + shape[2:])))
    else:
        w = ops.cast(ops.logical_not(ignored), dtype_name(x))
    loss = ops.neg(picked) * w
    if how == "none":
        return loss if rank(input) != 1 else ops.reshape(loss, [])
    dims = list(range(rank(loss)))
    total = ops.sum(loss, dims, False)
    if how == "sum":
        return total
    return total / ops.sum(w, dims, False)


def cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None,
                  ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Any:
    """torch's cross entropy: class-index targets (nll_loss of log_softmax), class-probability
    targets, and label smoothing for both, with torch's normalizations (LossNLL.cpp)."""
    how = _reduction(size_average, reduce, reduction)
    x = to_float(input)
    # A smoothing Dynamo passes as a value known at run time takes the smoothing path
    # (exact for 0 too: the smoothing term is masked off where eps is 0).
    eps = float_param(label_smoothing, dtype_name(x))
    smoothing = is_runtime_scalar(eps) or eps > 0
    cd = 0 if rank(x) == 1 else 1
    shape = shape_of(x)  # sizes may be symbolic
    c = shape[cd]
    classes = size_value(c, dtype_name(x))  # the number of classes as a value
    logp = fn.log_softmax(x, cd)
    w = None
    if weight is not None:
        w = ops.reshape(cast(weight, dtype_name(x)), reshape_dims([c] + [1] * (rank(x) - cd - 1)))
    if is_tensor(target) and is_float_dtype(dtype_name(target)):
        t = cast(target, dtype_name(x))
        if smoothing:
            t = t * (1.0 - eps) + eps / classes
        prod = logp * t if w is None else logp * t * w
        if how == "none":
            return ops.neg(ops.sum(prod, [cd], False))
        total = ops.neg(ops.sum(prod, list(range(rank(x))), False))
        if how == "sum":
            return total
        per_class = size_product([d for i, d in enumerate(shape) if i != cd])
        if per_class == 0 or c == 0:
            raise unsupported("cross_entropy of an empty input (mean: NaN)")
        if isinstance(per_class, int):
            return total / float(per_class)
        return total / size_value(per_class, dtype_name(x))  # NaN when empty, as torch
    nll = nll_loss(logp, target, weight, size_average, ignore_index, reduce, reduction)
    if not smoothing:
        return nll
    ignored = ops.equal(cast(target, "int64"), int(ignore_index))
    smooth = ops.neg(ops.sum(logp if w is None else logp * w, [cd], False))
    smooth = ops.where(ignored, 0.0, smooth)
    if how == "none":
        ret = smooth
    elif how == "sum":
        ret = ops.sum(smooth, list(range(rank(smooth))), False)
    else:
        kept = ops.logical_not(ignored)
        if weight is None:
            norm = ops.sum(ops.cast(kept, dtype_name(x)), list(range(rank(kept))), False)
        else:
            safe = ops.where(ignored, 0, cast(target, "int64"))
            table = ops.reshape(cast(weight, dtype_name(x)), reshape_dims([c, 1]))
            picked = ops.reshape(ops.embedding(table, ops.reshape(safe, [-1])),
                                 reshape_dims(shape_of(safe)))
            norm = ops.sum(ops.where(ignored, 0.0, picked), list(range(rank(safe))), False)
        ret = ops.sum(smooth, list(range(rank(smooth))), False) / norm
    smoothed = ret * (eps / classes)
    if is_runtime_scalar(eps):  # eps 0 adds nothing, even where ret is inf or NaN
        smoothed = ops.where(ops.equal(eps, 0.0), 0.0, smoothed)
    return nll * (1.0 - eps) + smoothed


def _register_all() -> None:
    register(instance_norm, F.instance_norm)
    register(rms_norm, F.rms_norm, torch.rms_norm)
    register(norm, torch.norm, torch.functional.norm)
    register(vector_norm, torch.linalg.vector_norm, torch._C._linalg.linalg_vector_norm)
    register(linalg_norm, torch.linalg.norm, torch._C._linalg.linalg_norm)
    register(normalize, F.normalize)
    register(pairwise_distance, F.pairwise_distance, torch.pairwise_distance)
    register(cosine_similarity, F.cosine_similarity, torch.cosine_similarity)
    register(einsum, torch.einsum, torch.functional.einsum)
    register(mse_loss, F.mse_loss)
    register(l1_loss, F.l1_loss)
    register(smooth_l1_loss, F.smooth_l1_loss)
    register(huber_loss, F.huber_loss)
    register(nll_loss, F.nll_loss)
    register(cross_entropy, F.cross_entropy)
    with builtin_registrations():
        register_method("norm")(norm)


_register_all()
