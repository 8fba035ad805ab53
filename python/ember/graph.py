"""Flow graphs: build them by tracing, optimize them, compile them.

- ``trace_from(outputs, inputs=None)`` follows the traces of symbolic tensors back to the
  graph inputs and returns a ``FlowGraph``.
- ``optimize(graph, dump_dir=None, return_timings=False)`` runs ember's passes in the order
  of ``pass_names()`` and returns a new graph; with ``dump_dir`` the graph is written after
  every pass (``00_input.txt``, ``01_<pass>.txt``, ...); with ``return_timings=True`` it
  returns ``(graph, timings)`` where ``timings`` is a list of
  ``{"pass": str, "seconds": float, "nodes_before": int, "nodes_after": int}``. With
  ``search_space=1`` or ``2`` (and ``symbol_values`` as ``build`` takes them)
  each convolution's algorithm is measured instead of chosen by the rules (recorded on disk
  and reused; ``EMBER_LOG=tune`` prints the times).
- ``FlowGraph.build()`` compiles every kernel (or loads it from the cache) and returns a
  ``CompiledGraph``, whose ``run(inputs)`` is one C++ call.
"""

from __future__ import annotations

from ember._C import CompiledGraph, FlowGraph, TensorType, optimize, pass_names, trace_from

__all__ = ["CompiledGraph", "FlowGraph", "TensorType", "optimize", "pass_names", "trace_from"]
