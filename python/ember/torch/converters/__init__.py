"""ember's own converters, registered on import (registry.builtin_registrations).

- functions.py: torch functions and Python operators (elementwise math, reductions,
  matrix products);
- tensors.py: shapes, indexing, dtype conversions and tensor creation;
- nn_functions.py: torch.nn.functional layers (convolution, pooling, norms, attention);
- methods.py: torch.Tensor methods, reusing the function converters;
- modules.py: torch.nn modules, as ModuleConverter subclasses;
- composites.py: operators composed of ember's basic ones (padding modes, flips, rolls,
  gathers, smooth activations, logsumexp, rounded division), on composite_math.py;
- norms_losses.py: instance and RMS norms, vector norms and distances, einsum, losses;
- aten.py: ATen overloads, and which torch functions share their argument layout;
- scalar.py: every operator of ember's scalar operator table (sin, atan2, bitwise_and, ...)
  for its torch functions, methods, ATen overloads and Python operators;
- scans_sorts.py: scans, sorts and scatters (cumsum, sort, topk, quantile, scatter,
  index_add, ...), each a call of a routine of ember's runtime library;
- linalg.py: dense linear algebra (det, inv, solves, LU, Cholesky, matrix_exp), each a call
  of a linear algebra routine of ember's runtime library;
- writes.py: ``x[index] = value`` and in-place writes (fill_, copy_, index_put_), made
  functional by the prepare phase (inplace.functionalize).
"""

from ember.torch.converters import (
    aten,
    composites,
    functions,
    linalg,
    methods,
    modules,
    nn_functions,
    norms_losses,
    scalar,
    scans_sorts,
    tensors,
    writes,
)

__all__ = [
    "aten", "composites", "functions", "linalg", "methods", "modules", "nn_functions",
    "norms_losses", "scalar", "scans_sorts", "tensors", "writes",
]
