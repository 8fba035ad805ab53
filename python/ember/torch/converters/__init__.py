"""ember's own converters, registered on import (registry.builtin_registrations).

- functions.py: torch functions and Python operators (elementwise math, reductions,
  matrix products);
- tensors.py: shapes, dtype conversions and tensor creation, and indexing.py: Python
  indexing (``x[...]``, ``select``);
- nn_functions.py: torch.nn.functional layers (convolution, pooling, norms, attention);
- methods.py: torch.Tensor methods, reusing the function converters;
- modules.py: torch.nn modules, as ModuleConverter subclasses;
- composites.py: operators composed of ember's basic ones (padding modes, flips, rolls,
  gathers, smooth activations, logsumexp, rounded division), on composite_math.py;
- norms_losses.py: instance and RMS norms, vector norms and distances, einsum, losses;
- elementwise_extra.py: elementwise composites with torch's formulas (logaddexp, xlogy,
  lerp, isclose, frexp, round with decimals, ...), nan-reductions, diff, trapezoid, renorm;
- products_extra.py: the vector and matrix products that are not ember operators (dot,
  outer, tensordot, kron, cross, matrix_power, cdist, pdist, matrix norms, ...);
- nn_extra.py: more torch.nn.functional activations, losses (margin, binary cross entropy,
  kl_div, triplet, ...), bilinear and batch-statistics norms;
- masked_extra.py: the masked reductions and softmaxes of torch.masked;
- aten.py: ATen overloads, and which torch functions share their argument layout;
- backward.py: the backward operators of training graphs that torch's core ATen
  decompositions leave whole (convolution and pooling backward, index_put);
- special.py: torch's special functions with more than the table's operands (polygamma);
- spectral.py: the Fourier transforms (torch.fft, stft) as products with constant cosine and
  sine matrices, and complex_ops.py: the operators of complex tensors (held as pairs of real
  ones, complex_values.py);
- scalar.py: every operator of ember's scalar operator table (sin, atan2, bitwise_and, ...)
  for its torch functions, methods, ATen overloads and Python operators;
- spatial.py: N-d pooling (return_indices, adaptive max), unfold, take, take_along_dim;
  spatial_conv.py: 3-d and transposed convolutions; spatial_resample.py: every interpolate
  mode;
- stacks.py: splits, stacks and grids (tensor_split, hstack, atleast_*d, meshgrid, ...);
- views.py: views and their copies (as_strided, unfold), shuffles; diagonals.py:
  diagonals and the scatters into views (diagonal_scatter, select_scatter, slice_scatter);
  creation.py: creation functions (empty_permuted, and those computed at compile time:
  windows, logspace, linspace);
- scans_sorts.py: scans and sorts (cumsum, cummax, sort, topk, quantile, ...), and
  scatters.py: scatters and binary searches (scatter, index_add, index_put, searchsorted,
  ...), each a call of a routine of ember's runtime library;
- linalg.py: dense linear algebra (det, inv, solves, LU, Cholesky, matrix_exp, cond), and
  linalg_orthogonal.py: its orthogonal decompositions (QR, eigvalsh, singular values, pinv,
  matrix_rank), each a call of a linear algebra routine of ember's runtime library;
- optimizers.py: the operators of compiled optimizer steps (``_foreach_*`` as lists of
  elementwise operators, ``lerp_``, ``addcmul_``, ``addcdiv_``, ``prims.fma``);
- writes.py: ``x[index] = value`` and in-place writes (fill_, copy_, index_put_), made
  functional by the prepare phase (inplace.functionalize).
"""

from ember.torch.converters import (
    aten,
    backward,
    complex_ops,
    composites,
    creation,
    diagonals,
    elementwise_extra,
    functions,
    indexing,
    linalg,
    linalg_orthogonal,
    masked_extra,
    methods,
    modules,
    nn_extra,
    nn_functions,
    norms_losses,
    optimizers,
    products_extra,
    scalar,
    scans_sorts,
    scatters,
    spatial,
    spatial_conv,
    spatial_resample,
    special,
    spectral,
    stacks,
    tensors,
    views,
    writes,
)

__all__ = [
    "aten", "backward", "complex_ops", "composites", "creation", "diagonals", "elementwise_extra",
    "functions", "indexing", "linalg", "linalg_orthogonal", "masked_extra", "methods",
    "modules", "nn_extra",
    "nn_functions", "norms_losses", "optimizers", "products_extra", "scalar", "scans_sorts",
    "scatters", "spatial", "spatial_conv", "spatial_resample", "special", "spectral", "stacks",
    "tensors", "views", "writes",
]
