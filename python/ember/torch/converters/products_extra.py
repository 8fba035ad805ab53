"""Converters for the vector and matrix products that are not ember operators, composed of
ember's matmul, sums and gathers: ``dot``, ``mv``, ``addmv``, ``addr``, ``addbmm``, ``outer``,
``inner``, ``tensordot``, ``kron``, ``trace``, ``cross``, ``linalg.vecdot``, ``multi_dot``,
``matrix_power`` (n >= 0), ``vander``, the distances ``cdist`` (the direct difference form),
``dist``, ``pdist``, and ``linalg.matrix_norm`` ('nuc', 2 and -2 from the singular values of
linalg.py). Integer products are sums of elementwise products (exact); calls a
converter cannot compute exactly raise ``unsupported`` and run in eager PyTorch.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from ember.torch.context import ember_dtype
from ember.torch.converters.common import (
    binary,
    broadcast,
    broadcast_shape,
    cast,
    common_dtype,
    constant,
    dtype_name,
    expand_to,
    fixed_int,
    fixed_number,
    fixed_shape,
    full,
    is_float_dtype,
    is_tensor,
    no_out,
    norm_dim,
    ops,
    py_value,
    rank,
    shape_of,
    static_int,
    static_shape,
    unsupported,
)
from ember.torch.converters.composite_math import int_constant, static_size, take, take_static
from ember.torch.converters.elementwise_extra import static_float
from ember.torch.converters.functions import register_tables


def _product_dtype(*xs: Any) -> str:
    dt = common_dtype(*xs)
    if dt == "bool" or dt.startswith("complex"):
        raise unsupported(f"a product of {dt} tensors")
    return dt


def _sum_of_products(a: Any, b: Any, dims: list[int]) -> Any:
    return ops.sum(a * b, dims, False)


def dot(input: Any, tensor: Any, *, out: Any = None) -> Any:
    no_out(out)
    if rank(input) != 1 or rank(tensor) != 1 or dtype_name(input) != dtype_name(tensor):
        raise unsupported("dot of tensors that are not 1-d of one dtype")
    _product_dtype(input, tensor)
    return _sum_of_products(input, tensor, [0])


def mv(input: Any, vec: Any, *, out: Any = None) -> Any:
    no_out(out)
    if rank(input) != 2 or rank(vec) != 1 or dtype_name(input) != dtype_name(vec):
        raise unsupported("mv of tensors that are not 2-d and 1-d of one dtype")
    if not is_float_dtype(_product_dtype(input, vec)):
        return _sum_of_products(input, ops.unsqueeze(vec, [0]), [1])
    return ops.matmul(input, vec)


def _beta_alpha(product: Any, input: Any, beta: Any, alpha: Any) -> Any:
    dt = dtype_name(product)
    if not is_float_dtype(dt):
        beta, alpha = py_value(beta), py_value(alpha)
    # a float Dynamo passes as a 0-d tensor, a size known only at run time as a 0-d input
    beta, alpha = cast(beta, dt), cast(alpha, dt)
    if is_tensor(beta) or is_tensor(alpha):
        if not is_float_dtype(dt):
            raise unsupported("an integer product with beta or alpha known only at run time")
        a = alpha if is_tensor(alpha) else float(alpha)
        b = beta if is_tensor(beta) else ops.scalar(float(beta), dt)
        scaled = ops.where(ops.equal(b, 0.0), ops.scalar(0.0, dt), cast(input, dt) * b)
        return product * a + scaled
    if not is_float_dtype(dt) and (float(beta) != int(beta) or float(alpha) != int(alpha)):
        raise unsupported("an integer product with a fractional beta or alpha")
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # torch ignores input (NaN in it included)
        return expand_to(product, broadcast_shape(product, input), "a product")
    term = cast(input, dt) if beta == 1 else cast(input, dt) * beta
    return product + term


def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1,
          out: Any = None) -> Any:
    no_out(out)
    return _beta_alpha(mv(mat, vec), input, beta, alpha)


def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1,
         out: Any = None) -> Any:
    no_out(out)
    if dtype_name(vec1) == "bool":
        raise unsupported("addr of boolean tensors")
    return _beta_alpha(outer(vec1, vec2), input, beta, alpha)


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1,
           out: Any = None) -> Any:
    no_out(out)
    if rank(batch1) != 3 or rank(batch2) != 3:
        raise unsupported("addbmm of tensors that are not 3-d")
    if not is_float_dtype(_product_dtype(batch1, batch2)):
        raise unsupported("addbmm of integer tensors")
    if shape_of(batch1)[0] == 0:
        raise unsupported("addbmm of an empty batch")
    product = ops.sum(ops.matmul(batch1, batch2), [0], False)
    return _beta_alpha(product, input, beta, alpha)


def outer(input: Any, vec2: Any, *, out: Any = None) -> Any:
    no_out(out)
    if rank(input) != 1 or rank(vec2) != 1:
        raise unsupported("outer of tensors that are not 1-d")
    return binary(ops.mul, ops.unsqueeze(input, [1]), ops.unsqueeze(vec2, [0]))


def inner(input: Any, other: Any, *, out: Any = None) -> Any:
    no_out(out)
    if rank(input) == 0 or rank(other) == 0:
        return binary(ops.mul, input, other)
    return tensordot(input, other, ([rank(input) - 1], [rank(other) - 1]))


def tensordot(a: Any, b: Any, dims: Any = 2, out: Any = None) -> Any:
    no_out(out)
    if is_tensor(dims):
        raise unsupported("tensordot with dims as a tensor")
    dt = _product_dtype(a, b)
    if dtype_name(a) != dtype_name(b):
        raise unsupported("tensordot of tensors of different dtypes")
    if isinstance(dims, (tuple, list)):
        da = [norm_dim(d, rank(a)) for d in (dims[0] if isinstance(dims[0], (tuple, list))
                                             else [dims[0]])]
        db = [norm_dim(d, rank(b)) for d in (dims[1] if isinstance(dims[1], (tuple, list))
                                             else [dims[1]])]
    else:
        k = static_int(dims, "tensordot's dims")
        da, db = list(range(rank(a) - k, rank(a))), list(range(k))
    sa, sb = static_shape(a, "tensordot"), static_shape(b, "tensordot")
    # torch broadcasts a contracted size 1 against the other side's: the sum over that
    # side's dimension, times the one element
    ones_a = [x for x, y in zip(da, db, strict=True) if sa[x] == 1 and sb[y] != 1]
    ones_b = [y for x, y in zip(da, db, strict=True) if sb[y] == 1 and sa[x] != 1]
    if ones_a:
        b = ops.sum(b, [db[da.index(x)] for x in ones_a], True)
        sb = shape_of(b)
    if ones_b:
        a = ops.sum(a, [da[db.index(y)] for y in ones_b], True)
        sa = shape_of(a)
    if [sa[d] for d in da] != [sb[d] for d in db]:
        raise unsupported("tensordot with contracted sizes that differ")
    free_a = [d for d in range(rank(a)) if d not in da]
    free_b = [d for d in range(rank(b)) if d not in db]
    k = math.prod(sa[d] for d in da)
    m, n = math.prod(sa[d] for d in free_a), math.prod(sb[d] for d in free_b)
    left = ops.reshape(ops.permute(a, free_a + da), [m, k])
    right = ops.reshape(ops.permute(b, db + free_b), [k, n])
    if is_float_dtype(dt):
        if k == 0:
            raise unsupported("tensordot contracting an empty dimension")
        y = ops.matmul(left, right)
    else:
        y = ops.sum(ops.unsqueeze(left, [2]) * ops.unsqueeze(right, [0]), [1], False)
    return ops.reshape(y, [sa[d] for d in free_a] + [sb[d] for d in free_b])


def kron(input: Any, other: Any, *, out: Any = None) -> Any:
    no_out(out)
    n = max(rank(input), rank(other))
    sa = [1] * (n - rank(input)) + static_shape(input, "kron")
    sb = [1] * (n - rank(other)) + static_shape(other, "kron")
    a = ops.reshape(input, [d for s in sa for d in (s, 1)])
    b = ops.reshape(other, [d for s in sb for d in (1, s)])
    return ops.reshape(binary(ops.mul, a, b), [x * y for x, y in zip(sa, sb, strict=True)])


def trace(input: Any) -> Any:
    if rank(input) != 2:
        raise unsupported("trace of a tensor that is not 2-d")
    x = cast(input, "int64") if dtype_name(input) in ("bool", "int8", "int16", "int32",
                                                      "uint8") else input
    rows, cols = shape_of(input)
    if not (isinstance(rows, int) and isinstance(cols, int)):
        # symbolic sizes: the sum of the elements where row == column
        r = ops.reshape(ops.arange(0, rows, 1, "int64"), [rows, 1])
        c = ops.reshape(ops.arange(0, cols, 1, "int64"), [1, cols])
        zero = ops.cast(ops.less(x, x), dtype_name(x))  # zeros of x's shape and dtype
        return ops.sum(ops.where(ops.equal(r, c), x, zero), [0, 1], False)
    if min(rows, cols) == 0:
        return ops.sum(x, [0, 1], False)
    flat = ops.reshape(x, [rows * cols])
    return ops.sum(take_static(flat, 0, [i * (cols + 1) for i in range(min(rows, cols))]), [0],
                   False)


def _cross(a: Any, b: Any, axis: int) -> Any:
    dt = common_dtype(a, b)
    a, b = cast(a, dt), cast(b, dt)
    a, b = broadcast(a, b)

    def part(x: Any, i: int) -> Any:
        return take_static(x, axis, [i])

    def comp(i: int, j: int) -> Any:
        return part(a, i) * part(b, j) - part(a, j) * part(b, i)

    return ops.concat([comp(1, 2), comp(2, 0), comp(0, 1)], axis)


def cross(input: Any, other: Any, dim: Any = None, *, out: Any = None) -> Any:
    no_out(out)
    if rank(input) != rank(other):
        raise unsupported("cross of tensors of different ranks")
    if dim is None:
        shape = shape_of(input)
        if any(not isinstance(s, int) for s in shape):
            raise unsupported("cross without dim of a tensor with symbolic sizes")
        found = [d for d, s in enumerate(shape) if s == 3]
        if not found:
            raise unsupported("cross without a dimension of size 3")
        axis = found[0]
    else:
        axis = norm_dim(dim, rank(input))
    return _cross(input, other, axis)


def linalg_cross(input: Any, other: Any, *, dim: Any = -1, out: Any = None) -> Any:
    no_out(out)
    n = max(rank(input), rank(other))
    axis = norm_dim(dim, n)
    if static_size(input, norm_dim(dim, rank(input)), "cross") != 3 or static_size(
            other, norm_dim(dim, rank(other)), "cross") != 3:
        raise unsupported("cross along a dimension whose size is not 3")
    return _cross(input, other, axis)


def vecdot(x: Any, y: Any, *, dim: Any = -1, out: Any = None) -> Any:
    no_out(out)
    _product_dtype(x, y)
    if dtype_name(x) != dtype_name(y):
        raise unsupported("vecdot of tensors of different dtypes")
    product = x * y
    return ops.sum(product, [norm_dim(dim, rank(product))], False)


def multi_dot(tensors: Any, *, out: Any = None) -> Any:
    no_out(out)
    xs = list(tensors)
    if len(xs) < 2:
        raise unsupported("multi_dot of fewer than two tensors")
    if len({dtype_name(x) for x in xs}) != 1 or not is_float_dtype(dtype_name(xs[0])):
        raise unsupported("multi_dot of non-float tensors or of different dtypes")
    first_vec, last_vec = rank(xs[0]) == 1, rank(xs[-1]) == 1
    if first_vec:
        xs[0] = ops.unsqueeze(xs[0], [0])
    if last_vec:
        xs[-1] = ops.unsqueeze(xs[-1], [1])
    if any(rank(x) != 2 for x in xs):
        raise unsupported("multi_dot of tensors that are not matrices")
    if any(isinstance(d, int) and d == 0 for x in xs for d in shape_of(x)):
        # an empty inner size gives zeros (a sum of nothing), an outer one an empty result
        y = full([shape_of(xs[0])[0], shape_of(xs[-1])[1]], 0.0, dtype_name(xs[0]))
    else:
        y = xs[0]
        for x in xs[1:]:
            y = ops.matmul(y, x)
    if first_vec and last_vec:
        return ops.reshape(y, [])
    if first_vec:
        return ops.squeeze(y, [0])
    if last_vec:
        return ops.squeeze(y, [1])
    return y


def matrix_power(input: Any, n: Any, *, out: Any = None) -> Any:
    no_out(out)
    from ember.torch.converters import linalg

    n = static_int(n, "matrix_power's n")
    shape = shape_of(input)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise unsupported("matrix_power of a non-square tensor")
    dt = dtype_name(input)
    if n == 0:  # the identity, of symbolic sizes too
        if all(isinstance(d, int) for d in shape):
            eye = torch.eye(shape[-1], dtype=torch.float64).expand(shape).contiguous()
            return cast(constant(eye), dt)
        return linalg.identity(shape[-1], dt, shape[:-2])
    if 0 in shape:
        return input
    if n < 0:  # the inverse's power, as torch computes it (a singular input: ember.DataError)
        input, n = linalg.inv(input), -n
    if not is_float_dtype(dt):
        raise unsupported("matrix_power of an integer tensor")
    result, base = None, input
    while n:
        if n & 1:
            result = base if result is None else ops.matmul(result, base)
        n >>= 1
        if n:
            base = ops.matmul(base, base)
    return result


def vander(x: Any, N: Any = None) -> Any:
    if rank(x) == 0:
        x = ops.reshape(x, [1])  # torch takes a 0-d tensor as one of length 1
    size = fixed_int(x.shape[rank(x) - 1], "vander's input")
    n = size if N is None else static_int(N, "vander's N")
    dt = dtype_name(x)
    if dt == "bool" or dt.startswith("complex"):
        raise unsupported(f"vander of a {dt} tensor")
    if dt in ("int8", "int16", "int32", "uint8"):
        x, dt = cast(x, "int64"), "int64"
    col = ops.unsqueeze(x, [rank(x)])
    if n <= 0:
        shape = shape_of(x) + [0]
        return full(shape, 0, dt)
    columns = [full(shape_of(col), 1, dt)]
    for _ in range(n - 1):
        columns.append(columns[-1] * col)
    return ops.concat(columns, rank(x)) if n > 1 else columns[0]


def _p_norm_last(d: Any, p: float, keepdim: bool = False) -> Any:
    from ember.torch.converters.norms_losses import _norm

    return _norm(d, p, [rank(d) - 1], keepdim)


def cdist(x1: Any, x2: Any, p: Any = 2.0, compute_mode: Any = None) -> Any:
    """The direct form: the p-norm of every difference x1[i] - x2[j]."""
    if not is_float_dtype(dtype_name(x1)) or dtype_name(x1) != dtype_name(x2):
        raise unsupported("cdist of non-float tensors or of different dtypes")
    if rank(x1) < 2 or rank(x2) < 2:
        raise unsupported("cdist of tensors of rank < 2")
    p = static_float(p, "cdist's p")
    if p < 0 or p != p:
        raise unsupported(f"cdist with p={p}")
    s1 = shape_of(x1)
    if s1[-1] == 0 and p == float("inf"):
        raise unsupported("cdist of zero-length vectors with p=inf")
    diff = ops.unsqueeze(x1, [rank(x1) - 1]) - ops.unsqueeze(x2, [rank(x2) - 2])
    if s1[-1] == 0:
        return ops.sum(diff, [rank(diff) - 1], False)
    return _p_norm_last(diff, p)


def dist(input: Any, other: Any, p: Any = 2) -> Any:
    from ember.torch.converters.norms_losses import _norm

    dt = common_dtype(input, other)
    if not is_float_dtype(dt):
        raise unsupported("dist of non-float tensors")
    d = binary(ops.sub, input, other, dtype=dt)
    if rank(d) == 0:
        d = ops.reshape(d, [1])
    p = static_float(p, "dist's p")
    if 0 in shape_of(d) and p in (float("inf"), float("-inf")):
        raise unsupported("the inf-norm of an empty tensor")
    return _norm(d, p, list(range(rank(d))), False)


def pdist(input: Any, p: Any = 2) -> Any:
    if rank(input) != 2 or not is_float_dtype(dtype_name(input)):
        raise unsupported("pdist of a tensor that is not a 2-d float tensor")
    n, m = fixed_shape(input, "pdist")
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    p = static_float(p, "pdist's p")
    if not pairs:
        return full([0], 0.0, dtype_name(input))
    if m == 0:
        return full([len(pairs)], 0.0, dtype_name(input))
    left = take(input, 0, int_constant([i for i, _ in pairs]))
    right = take(input, 0, int_constant([j for _, j in pairs]))
    return _p_norm_last(left - right, p)


def matrix_norm(A: Any, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Any:
    no_out(out)
    x = cast(A, ember_dtype(dtype)) if dtype is not None else A
    if not is_float_dtype(dtype_name(x)):
        raise unsupported("matrix_norm of a non-float tensor")
    if rank(x) < 2:
        raise unsupported("matrix_norm of a tensor of rank < 2")
    d0, d1 = (norm_dim(d, rank(x)) for d in dim)
    if d0 == d1:
        raise unsupported("matrix_norm over one dimension twice")
    if is_tensor(ord):  # a float Dynamo passes as a graph input (not specialized)
        ord = fixed_number(ord, "a matrix norm's order")
    if ord == "fro":
        return ops.sqrt(ops.sum(x * x, sorted([d0, d1]), keepdim))
    o = ord if ord == "nuc" else float(py_value(ord))
    if o in ("nuc", 2.0, -2.0):  # from the singular values of x moved to [..., d0, d1]
        from ember.torch.converters.linalg_orthogonal import spectral_norm

        order = [d for d in range(rank(x)) if d not in (d0, d1)] + [d0, d1]
        y = spectral_norm(ops.permute(x, order), o)
        return ops.unsqueeze(y, sorted([d0, d1])) if keepdim else y
    if o in (1.0, -1.0):
        summed, across = d0, d1  # the largest (smallest) column sum
    elif o in (float("inf"), float("-inf")):
        summed, across = d1, d0  # the largest (smallest) row sum
    else:
        raise unsupported(f"the matrix norm ord={ord!r}")
    if shape_of(x)[across] == 0:
        raise unsupported("a matrix norm over an empty dimension")
    sums = ops.sum(ops.abs(x), [summed], True)
    reduce = ops.max if o > 0 else ops.min
    y = reduce(sums, [across], True)
    return y if keepdim else ops.squeeze(y, sorted([d0, d1]))


# ---- registration --------------------------------------------------------------------------
_FUNCTIONS: list[tuple[Any, tuple[Any, ...]]] = [
    (dot, (torch.dot, torch.vdot)),
    (mv, (torch.mv,)),
    (addmv, (torch.addmv,)),
    (addr, (torch.addr,)),
    (addbmm, (torch.addbmm,)),
    (outer, (torch.outer, torch.ger)),
    (inner, (torch.inner,)),
    (tensordot, (torch.tensordot, torch.functional.tensordot)),
    (kron, (torch.kron,)),
    (trace, (torch.trace,)),
    (cross, (torch.cross,)),
    (linalg_cross, (torch.linalg.cross,)),
    (vecdot, (torch.linalg.vecdot,)),
    (multi_dot, (torch.linalg.multi_dot,)),
    (matrix_power, (torch.linalg.matrix_power, torch.matrix_power)),
    (vander, (torch.linalg.vander,)),
    (cdist, (torch.cdist, torch.functional.cdist)),
    (dist, (torch.dist,)),
    (pdist, (F.pdist,)),
    (matrix_norm, (torch.linalg.matrix_norm,)),
]

_METHODS = {
    "dot": dot, "vdot": dot, "mv": mv, "addmv": addmv, "addr": addr, "addbmm": addbmm,
    "outer": outer, "inner": inner, "kron": kron, "trace": trace, "cross": cross,
    "matrix_power": matrix_power, "dist": dist,
}


register_tables(_FUNCTIONS, _METHODS)
