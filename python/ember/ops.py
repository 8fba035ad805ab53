"""ember's operators.

On concrete tensors an operator runs at once (ember compiles a one-node graph, cached by the
operator, its attributes and its input types); when any input is symbolic it records a trace
and returns a symbolic tensor, from which ``ember.trace_from`` builds a graph.

Conventions: binary operators accept a Python number on either side (it takes the other
operand's dtype) and broadcast like numpy; ``dims`` is an int, a list of ints, or None for all
dimensions; negative dimensions count from the end; shapes are lists whose items are ints or
names of symbolic dimensions. Shape and dtype mismatches raise ``ember.EmberError`` naming
the operator, the shapes and the rule.
"""

from __future__ import annotations

from ember import _C
from ember._C import Tensor

_ops = _C.ops

# The scalar operators, one function per row of the table in ember/ir/scalar_ops.h (sin, atan2,
# bitwise_and, ...): `scalar_op_table()` lists them as (name, arity, dtype rule).
scalar_op_table = _ops.scalar_op_table
SCALAR_OPS: tuple[str, ...] = tuple(row[0] for row in scalar_op_table())
globals().update({name: getattr(_ops, name) for name in SCALAR_OPS})

gelu = _ops.gelu
nan_to_num = _ops.nan_to_num
elu = _ops.elu
celu = _ops.celu
where = _ops.where
cast = _ops.cast
scalar = _ops.scalar
sum = _ops.sum
mean = _ops.mean
max = _ops.max
min = _ops.min
prod = _ops.prod
argmax = _ops.argmax
argmin = _ops.argmin
softmax = _ops.softmax
matmul = _ops.matmul
matmul_nt = _ops.matmul_nt
reshape = _ops.reshape
transpose = _ops.transpose
permute = _ops.permute
flip = _ops.flip
flatten = _ops.flatten
squeeze = _ops.squeeze
unsqueeze = _ops.unsqueeze
concat = _ops.concat
slice = _ops.slice
expand = _ops.expand
to_layout = _ops.to_layout
gather = _ops.gather
op_names = _ops.op_names
conv2d = _ops.conv2d
conv1d = _ops.conv1d
conv2d_weight_grad = _ops.conv2d_weight_grad
max_pool2d = _ops.max_pool2d
max_pool2d_indices = _ops.max_pool2d_indices
avg_pool2d = _ops.avg_pool2d
adaptive_avg_pool2d = _ops.adaptive_avg_pool2d
upsample_nearest2d = _ops.upsample_nearest2d
upsample_bilinear2d = _ops.upsample_bilinear2d
embedding = _ops.embedding
arange = _ops.arange
full = _ops.full
random_uniform = _ops.random_uniform
tril = _ops.tril
triu = _ops.triu
clamp = _ops.clamp
relu6 = _ops.relu6
hardsigmoid = _ops.hardsigmoid
hardswish = _ops.hardswish
layer_norm = _ops.layer_norm
batch_norm = _ops.batch_norm
attention = _ops.attention
cumsum = _ops.cumsum
cumprod = _ops.cumprod
logcumsumexp = _ops.logcumsumexp
cummax = _ops.cummax
cummin = _ops.cummin
sort = _ops.sort
scatter = _ops.scatter
searchsorted = _ops.searchsorted
lu_factor = _ops.lu_factor
cholesky = _ops.cholesky
triangular_solve = _ops.triangular_solve
lu_solve = _ops.lu_solve
solve = _ops.solve
det = _ops.det
slogdet = _ops.slogdet
matrix_exp = _ops.matrix_exp
qr_factor = _ops.qr_factor
householder_apply = _ops.householder_apply
svd = _ops.svd
svdvals = _ops.svdvals
eigh = _ops.eigh
eigvalsh = _ops.eigvalsh



def clamp_min(x: Tensor, min: Tensor | float) -> Tensor:  # noqa: A002 (torch's name)
    """max(x, min) elementwise; `min` may be a tensor (broadcast) or a number."""
    return _ops.maximum(x, min)


def clamp_max(x: Tensor, max: Tensor | float) -> Tensor:  # noqa: A002 (torch's name)
    """min(x, max) elementwise; `max` may be a tensor (broadcast) or a number."""
    return _ops.minimum(x, max)


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """x clamped to [min_val, max_val] (torch.nn.functional.hardtanh)."""
    return _ops.clamp(x, min_val, max_val)


__all__ = [
    "SCALAR_OPS",
    "clamp_max",
    "clamp_min",
    "hardtanh",
    "scalar_op_table",
    "adaptive_avg_pool2d",
    "arange",
    "argmax",
    "attention",
    "argmin",
    "avg_pool2d",
    "batch_norm",
    "cast",
    "celu",
    "clamp",
    "concat",
    "conv1d",
    "conv2d",
    "conv2d_weight_grad",
    "elu",
    "embedding",
    "expand",
    "to_layout",
    "flatten",
    "gather",
    "full",
    "gelu",
    "hardsigmoid",
    "hardswish",
    "layer_norm",
    "matmul",
    "matmul_nt",
    "max",
    "max_pool2d",
    "max_pool2d_indices",
    "mean",
    "min",
    "nan_to_num",
    "op_names",
    "permute",
    "flip",
    "prod",
    "random_uniform",
    "relu6",
    "reshape",
    "scalar",
    "slice",
    "softmax",
    "squeeze",
    "sum",
    "transpose",
    "tril",
    "triu",
    "unsqueeze",
    "upsample_bilinear2d",
    "upsample_nearest2d",
    "where",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "logcumsumexp",
    "scatter",
    "searchsorted",
    "sort",
    "lu_factor",
    "cholesky",
    "triangular_solve",
    "lu_solve",
    "solve",
    "det",
    "slogdet",
    "matrix_exp",
    "qr_factor",
    "householder_apply",
    "svd",
    "svdvals",
    "eigh",
    "eigvalsh",
]
__all__ += list(SCALAR_OPS)
