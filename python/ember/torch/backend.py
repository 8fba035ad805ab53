"""The torch.compile backend "ember": ``torch.compile(model, backend="ember")``.

``ember_backend(gm, example_inputs, mode=..., options=...)`` is what Dynamo calls (through
the ``torch_dynamo_backends`` entry point, or the registration made when ember.torch is
imported). It returns a callable with the graph's calling convention:

1. settings: dynamo_config, then torch.compile's mode, then its options (validated);
2. graphs that live off the CPU run eagerly (one warning);
3. graphs that need gradients (grad mode on and an input or parameter requiring grad) are
   compiled for training, forward and backward, through AOTAutograd (training.py);
4. every other graph goes through the compile path, pipeline.compile_graph (prepare,
   analyze, partition, convert, build, wrap); when Dynamo gives fake example inputs, on
   the first call, with the real ones.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

import ember
from ember.torch import report
from ember.torch.config import InvalidOptionError, Settings, resolve_settings
from ember.torch.context import guards_allowed
from ember.torch.interpreter import is_fake
from ember.torch.phases.wrap import WORKSPACES
from ember.torch.pipeline import compile_graph
from ember.torch.training import compile_training

__all__ = ["compile_graph", "ember_backend", "register_with_dynamo", "reset"]

_graph_counter = itertools.count()
_lock = threading.Lock()


def reset() -> None:
    """Clears ember's in-memory state for torch.compile: compiled kernels held in memory,
    the idle workspaces of the compiled graphs, one-time warnings, dry-run reports and graph
    numbering. (torch._dynamo.reset() calls it too.)"""
    global _graph_counter
    with _lock:
        _graph_counter = itertools.count()
    report.clear_warnings()
    report.dryrun_reports.clear()
    WORKSPACES.clear()
    clear = getattr(ember, "clear_memory_cache", None)
    if clear is not None:
        clear()


_threads_shared = False


def share_torch_threads() -> bool:
    """Runs ember's kernels on PyTorch's OpenMP threads (ember.use_openmp) from the first
    graph that needs gradients on, unless EMBER_OPENMP=0. Between a training step's PyTorch
    operators (loss, autograd, optimizer) PyTorch's OpenMP workers spin on the cores for
    milliseconds, and ember's own workers would take turns with them. Inference alone stays
    on ember's pool: a model called in a loop ran as fast or faster there (ResNet-50 5%).
    Returns whether ember uses them."""
    global _threads_shared
    if not _threads_shared:
        value = os.environ.get("EMBER_OPENMP", "").strip()
        if value not in ("", "0", "1"):
            raise ValueError(f"EMBER_OPENMP={value!r}: use 0 to keep ember's kernels on its own "
                             "thread pool, or 1 (the default) to run them on PyTorch's OpenMP "
                             "threads")
        if value != "0" and torch.backends.openmp.is_available():
            ember.use_openmp(True)
        _threads_shared = True
    return ember.uses_openmp()


def ember_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Any:
    """Compiles the FX graph Dynamo captured; see the module docstring."""
    mode = kwargs.pop("mode", None)
    options = kwargs.pop("options", None)
    if kwargs:
        raise InvalidOptionError(
            f"ember_backend got unexpected arguments {sorted(kwargs)}; torch.compile passes "
            "only mode= and options="
        )
    settings = resolve_settings(mode, options)
    index = next(_graph_counter)
    if settings.print_input_graph:
        print(f"ember: graph {index} from Dynamo\n{report.format_graph_table(gm)}")
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    tensors += list(gm.parameters())
    devices = {t.device.type for t in tensors} - {"cpu", "meta"}
    if devices:
        report.warn_once("device", f"ember runs on the CPU; a graph with tensors on "
                         f"{sorted(devices)} runs in eager PyTorch.")
        return gm.forward
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        share_torch_threads()
        return compile_training(gm, example_inputs, settings, index)
    if any(is_fake(x) for x in example_inputs):
        return _LazyCompile(gm, settings, index)
    with guards_allowed():  # inside Dynamo's call: a guard made now is checked on every call
        return compile_graph(gm, example_inputs, settings, index)


ember_backend.reset = reset  # type: ignore[attr-defined]


class _LazyCompile:
    """Compiles on the first call, when Dynamo gave fake example inputs."""

    def __init__(self, gm: torch.fx.GraphModule, settings: Settings, index: int) -> None:
        self.gm, self.settings, self.index = gm, settings, index
        self.compiled: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self.compiled is None:
            self.compiled = compile_graph(self.gm, list(args), self.settings, self.index)
        return self.compiled(*args)


# ---- registration with Dynamo --------------------------------------------------------------
def register_with_dynamo() -> None:
    """Makes backend="ember" known to Dynamo in this process. An installed ember declares
    the torch_dynamo_backends entry point and Dynamo finds it by itself; a source checkout
    on sys.path registers here."""
    from importlib.metadata import entry_points

    try:
        declared = any(ep.name == "ember" for ep in entry_points(group="torch_dynamo_backends"))
    except Exception:
        declared = False
    if declared:
        return
    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend

    if "ember" not in _COMPILER_FNS:
        register_backend(compiler_fn=ember_backend, name="ember")
