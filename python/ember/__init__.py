"""ember: a deep-learning compiler with a C++ core.

Tensors and operators run at once on concrete tensors and are traced on symbolic ones;
``trace_from`` turns traced tensors into a ``FlowGraph``, ``ember.graph.optimize`` rewrites
it, and ``FlowGraph.build`` compiles it into a ``CompiledGraph``::

    import ember

    a = ember.randn([2, 3])
    x = ember.symbol_like(a)
    y = ember.ops.relu(x) + 1.0
    graph = ember.graph.optimize(ember.trace_from(y))
    print(graph(a))

Everything here is implemented in C++ (``ember._C``); this package only names it.
"""

from __future__ import annotations

from ember import _C
from ember._C import (
    ArtifactError,
    CacheCategoryUsage,
    CacheUsage,
    CompiledGraph,
    DataError,
    DType,
    EmberError,
    FlowGraph,
    InternalError,
    PruneResult,
    Tensor,
    TensorType,
    WorkspacePool,
    asarray,
    cache_dir,
    cache_stats,
    cache_usage,
    clear_cache,
    clear_memory_cache,
    dtype,
    empty,
    from_torch,
    full,
    get_num_threads,
    isa,
    ones,
    prune_cache,
    randn,
    reset_cache_stats,
    runtime_include_dir,
    set_num_threads,
    symbol,
    symbol_like,
    to_torch,
    trace_from,
    use_openmp,
    uses_openmp,
    wake_workers,
    zeros,
)

from . import graph, ops, profiling
from .deploy import CompiledModel, TensorSpec, compile, load
from .profiling import machine_peak, profile_table

__version__: str = _C.__version__

# Public types print as ember.<Name> (tracebacks say ember.EmberError, not ember._C.EmberError).
for _type in (ArtifactError, CacheCategoryUsage, CacheUsage, CompiledGraph, DataError, DType,
              EmberError, FlowGraph, InternalError, PruneResult, Tensor, TensorType, WorkspacePool):
    _type.__module__ = __name__
del _type

__all__ = [
    "ArtifactError",
    "CacheCategoryUsage",
    "CacheUsage",
    "CompiledGraph",
    "CompiledModel",
    "DType",
    "DataError",
    "EmberError",
    "FlowGraph",
    "InternalError",
    "PruneResult",
    "Tensor",
    "TensorType",
    "WorkspacePool",
    "__version__",
    "asarray",
    "bfloat16",
    "bool",
    "cache_dir",
    "cache_stats",
    "cache_usage",
    "clear_cache",
    "clear_memory_cache",
    "compile",
    "dtype",
    "empty",
    "float16",
    "float32",
    "float64",
    "from_torch",
    "full",
    "get_num_threads",
    "graph",
    "int8",
    "int16",
    "int32",
    "int64",
    "isa",
    "load",
    "machine_peak",
    "ones",
    "ops",
    "profile_table",
    "profiling",
    "prune_cache",
    "randn",
    "reset_cache_stats",
    "runtime_include_dir",
    "set_num_threads",
    "symbol",
    "symbol_like",
    "TensorSpec",
    "to_torch",
    "trace_from",
    "uint8",
    "use_openmp",
    "uses_openmp",
    "wake_workers",
    "zeros",
]

# The dtypes by name, as in torch: ember.float32 is ember.DType.float32. Defined last, since
# `bool` shadows the builtin in this module from here on.
float32: DType = DType.float32
float16: DType = DType.float16
bfloat16: DType = DType.bfloat16
float64: DType = DType.float64
int8: DType = DType.int8
int16: DType = DType.int16
int32: DType = DType.int32
int64: DType = DType.int64
uint8: DType = DType.uint8
bool: DType = DType.bool  # noqa: A001
