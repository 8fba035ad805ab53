"""ember's PyTorch frontend: the ``torch.compile`` backend named "ember".

    import torch
    model = torch.compile(model, backend="ember")     # compiled on the first call

- ``ember.torch.dynamo_config``: process-wide settings (search_space, correctness_report,
  print_input_graph, use_fp16, use_bf16, strict, min_block_size, dump_dir, ...); each is
  also accepted through ``torch.compile(..., options={...})``. See docs/torch-backend.md.
- ``ember.torch.registry``: converters from PyTorch operators to ember operators
  (``register_function``, ``register_method``, ``register_module``, priorities and
  capability validators). See docs/add-operator-mapping.md.
- ``ember.torch.reset()``: clears ember's in-memory caches (torch._dynamo.reset() calls it).
- ``ember.torch.backend``: the backend itself (``ember_backend``); its compile path is
  ``ember.torch.pipeline.compile_graph``, the phases of ``ember.torch.phases`` in order.

Importing this package imports torch; ``import ember`` alone does not.
"""

from __future__ import annotations

from ember.torch import backend as backend
from ember.torch import config, converters, registry, report
from ember.torch.backend import ember_backend, reset
from ember.torch.config import dynamo_config
from ember.torch.registry import (
    HIGH,
    STANDARD,
    ConverterPriority,
    ModuleConverter,
    register_function,
    register_method,
    register_module,
)

backend.register_with_dynamo()

__all__ = [
    "HIGH",
    "STANDARD",
    "ConverterPriority",
    "ModuleConverter",
    "backend",
    "config",
    "converters",
    "dynamo_config",
    "ember_backend",
    "register_function",
    "register_method",
    "register_module",
    "registry",
    "report",
    "reset",
]
