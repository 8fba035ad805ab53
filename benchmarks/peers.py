"""Contenders outside torch.compile for benchmarks/run.py: ONNX Runtime and OpenVINO.

Each is prepared from a freshly built model and returns a callable that takes the same torch
tensors as the model and returns torch tensors, so the runner checks and times it like the
others. The call converts the inputs with ``Tensor.numpy()`` and wraps the outputs with
``torch.from_numpy``: the time includes the conversions a torch user pays to call the
runtime (both are views for contiguous CPU tensors, and each runtime copies what it needs).

Nothing here decides whether a contender runs: a missing package or a failed export or
conversion raises :class:`Unavailable`, which the runner shows as ``n/a`` with the reason.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

PEERS = ("ort", "openvino")


class Unavailable(Exception):
    """The contender cannot run here (package missing, export or conversion failed)."""


@dataclass
class Peer:
    """A prepared contender: ``fn(*torch_inputs) -> list[torch.Tensor]`` and how it was made
    (seconds for each preparation step, the exporter used, the runtime's settings)."""

    fn: Callable[..., list[torch.Tensor]]
    info: dict[str, Any] = field(default_factory=dict)


def _import(name: str, package: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken installation
        raise Unavailable(f"{package} is not importable ({type(e).__name__}: {e})") from e


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Exporters print progress on stdout (the runner's table goes there) and raise
    deprecation warnings: send the prints to stderr and drop the warnings."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        yield


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


# --------------------------------------------------------------------------- ONNX Runtime


def export_onnx(
    model: torch.nn.Module, inputs: Sequence[torch.Tensor], path: Path
) -> dict[str, Any]:
    """torch.onnx.export to ``path``: the dynamo exporter, or the TorchScript exporter when
    that fails. Returns which one wrote the file (and why dynamo did not)."""
    names = [f"in{i}" for i in range(len(inputs))]
    info: dict[str, Any] = {}
    t0 = time.perf_counter()
    with _quiet(), torch.no_grad():
        try:
            torch.onnx.export(model, tuple(inputs), str(path), dynamo=True, input_names=names)
            info["exporter"] = "dynamo"
        except Exception as e:  # noqa: BLE001 - fall back, and say why
            info["dynamo_error"] = _first_line(e)
            try:
                torch.onnx.export(model, tuple(inputs), str(path), dynamo=False,
                                  input_names=names, opset_version=17)
            except Exception as e2:  # noqa: BLE001
                raise Unavailable(f"ONNX export failed: dynamo: {info['dynamo_error']}; "
                                  f"TorchScript: {_first_line(e2)}") from e2
            info["exporter"] = "torchscript"
    info["export_s"] = time.perf_counter() - t0
    return info


def prepare_ort(model: torch.nn.Module, inputs: Sequence[torch.Tensor], threads: int) -> Peer:
    """Export ``model`` to ONNX and load it in an ONNX Runtime session on the CPU provider:
    ``threads`` intra-op threads, one inter-op thread, every graph optimization, and no
    spinning of idle workers (they would steal a core from the next contender)."""
    ort = _import("onnxruntime", "onnxruntime")
    with tempfile.TemporaryDirectory(prefix="ember-bench-onnx-") as tmp:
        path = Path(tmp) / "model.onnx"
        info = export_onnx(model, inputs, path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        t0 = time.perf_counter()
        try:
            # The session reads the file (and any external weights) now, not at run time.
            sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001
            raise Unavailable(f"ONNX Runtime could not load the export: {_first_line(e)}") from e
        info["load_s"] = time.perf_counter() - t0
    feed_names = [i.name for i in sess.get_inputs()]
    # The exporter may drop an input the model never reads: feed the named ones that remain.
    names = [f"in{i}" for i in range(len(inputs))]
    if all(n in names for n in feed_names):
        positions = [names.index(n) for n in feed_names]
    elif len(feed_names) == len(inputs):
        positions = list(range(len(inputs)))
    else:
        raise Unavailable(f"the ONNX export takes inputs {feed_names}, the model {len(inputs)}")
    info.update(onnxruntime=ort.__version__, intra_op_num_threads=threads,
                inter_op_num_threads=1, graph_optimization="ORT_ENABLE_ALL",
                allow_spinning="0", inputs_fed=feed_names)

    def call(*xs: torch.Tensor) -> list[torch.Tensor]:
        feeds = {n: xs[p].numpy() for n, p in zip(feed_names, positions, strict=True)}
        return [torch.from_numpy(o) for o in sess.run(None, feeds)]

    return Peer(call, info)


# --------------------------------------------------------------------------- OpenVINO


def prepare_openvino(
    model: torch.nn.Module, inputs: Sequence[torch.Tensor], threads: int
) -> Peer:
    """openvino.convert_model from the torch module, compiled for the CPU at float32 with the
    latency hint and ``threads`` inference threads; called through one infer request."""
    ov = _import("openvino", "openvino")
    props = _import("openvino.properties", "openvino")
    hints = _import("openvino.properties.hint", "openvino")
    info: dict[str, Any] = {}
    t0 = time.perf_counter()
    try:
        with _quiet(), torch.no_grad():
            converted = ov.convert_model(model, example_input=tuple(inputs))
    except Exception as e:  # noqa: BLE001
        raise Unavailable(f"openvino.convert_model failed: {_first_line(e)}") from e
    info["convert_s"] = time.perf_counter() - t0
    config = {
        hints.inference_precision: ov.Type.f32,
        hints.performance_mode: hints.PerformanceMode.LATENCY,
        props.inference_num_threads: threads,
    }
    t0 = time.perf_counter()
    try:
        compiled = ov.Core().compile_model(converted, "CPU", config)
    except Exception as e:  # noqa: BLE001
        raise Unavailable(f"OpenVINO could not compile the model: {_first_line(e)}") from e
    info["load_s"] = time.perf_counter() - t0
    # What the plugin settled on, read back (not what was asked for).
    info.update(
        openvino=ov.__version__,
        inference_precision=str(compiled.get_property(hints.inference_precision)),
        performance_mode=str(compiled.get_property(hints.performance_mode)),
        inference_num_threads=int(compiled.get_property(props.inference_num_threads)),
    )
    request = compiled.create_infer_request()

    def call(*xs: torch.Tensor) -> list[torch.Tensor]:
        result = request.infer([x.numpy() for x in xs])
        return [torch.from_numpy(o) for o in result.to_tuple()]

    return Peer(call, info)


PREPARE: dict[str, Callable[[torch.nn.Module, Sequence[torch.Tensor], int], Peer]] = {
    "ort": prepare_ort,
    "openvino": prepare_openvino,
}


def prepare(
    name: str, model: torch.nn.Module, inputs: Sequence[torch.Tensor], threads: int
) -> Peer:
    """Prepare contender ``name`` (one of :data:`PEERS`); raises :class:`Unavailable`."""
    return PREPARE[name](model, inputs, threads)
