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

_ops = _C.ops

neg = _ops.neg
abs = _ops.abs
exp = _ops.exp
log = _ops.log
sqrt = _ops.sqrt
rsqrt = _ops.rsqrt
sigmoid = _ops.sigmoid
tanh = _ops.tanh
relu = _ops.relu
gelu = _ops.gelu
silu = _ops.silu
erf = _ops.erf
logical_not = _ops.logical_not
add = _ops.add
sub = _ops.sub
mul = _ops.mul
div = _ops.div
pow = _ops.pow
floor_divide = _ops.floor_divide
remainder = _ops.remainder
maximum = _ops.maximum
minimum = _ops.minimum
equal = _ops.equal
not_equal = _ops.not_equal
less = _ops.less
less_equal = _ops.less_equal
greater = _ops.greater
greater_equal = _ops.greater_equal
logical_and = _ops.logical_and
logical_or = _ops.logical_or
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
reshape = _ops.reshape
transpose = _ops.transpose
permute = _ops.permute
flatten = _ops.flatten
squeeze = _ops.squeeze
unsqueeze = _ops.unsqueeze
concat = _ops.concat
slice = _ops.slice
expand = _ops.expand
op_names = _ops.op_names
conv2d = _ops.conv2d
conv1d = _ops.conv1d
max_pool2d = _ops.max_pool2d
avg_pool2d = _ops.avg_pool2d
adaptive_avg_pool2d = _ops.adaptive_avg_pool2d
upsample_nearest2d = _ops.upsample_nearest2d
upsample_bilinear2d = _ops.upsample_bilinear2d
embedding = _ops.embedding
arange = _ops.arange
full = _ops.full
tril = _ops.tril
triu = _ops.triu
clamp = _ops.clamp
relu6 = _ops.relu6
hardsigmoid = _ops.hardsigmoid
hardswish = _ops.hardswish
layer_norm = _ops.layer_norm
batch_norm = _ops.batch_norm

__all__ = [
    "abs",
    "adaptive_avg_pool2d",
    "add",
    "arange",
    "argmax",
    "argmin",
    "avg_pool2d",
    "batch_norm",
    "cast",
    "clamp",
    "concat",
    "conv1d",
    "conv2d",
    "div",
    "embedding",
    "equal",
    "erf",
    "exp",
    "expand",
    "flatten",
    "floor_divide",
    "full",
    "gelu",
    "greater",
    "greater_equal",
    "hardsigmoid",
    "hardswish",
    "layer_norm",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "matmul",
    "max",
    "max_pool2d",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mul",
    "neg",
    "not_equal",
    "op_names",
    "permute",
    "pow",
    "prod",
    "relu",
    "relu6",
    "remainder",
    "reshape",
    "rsqrt",
    "scalar",
    "sigmoid",
    "silu",
    "slice",
    "softmax",
    "sqrt",
    "squeeze",
    "sub",
    "sum",
    "tanh",
    "transpose",
    "tril",
    "triu",
    "unsqueeze",
    "upsample_bilinear2d",
    "upsample_nearest2d",
    "where",
]
