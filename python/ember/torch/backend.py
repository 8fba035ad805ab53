"""The torch.compile backend "ember": ``torch.compile(model, backend="ember")``.

``ember_backend(gm, example_inputs, mode=..., options=...)`` is what Dynamo calls (through
the ``torch_dynamo_backends`` entry point, or the registration made when ember.torch is
imported). It returns a callable with the graph's calling convention:

1. settings: dynamo_config, then torch.compile's mode, then its options (validated);
2. graphs that need gradients, or live off the CPU, run eagerly (one warning);
3. the graph is functionalized, converted (splitter, interpreter), and either compiled
   whole or split into ember segments and eager nodes (one warning names the latter;
   strict=True turns it into an error listing every unsupported operator);
4. each segment is optimized and built into a CompiledGraph; a call converts its tensors
   through DLPack (no copies) and runs the CompiledGraph in one C++ call.

An internal failure while compiling never breaks the user's program: the backend warns and
runs the graph eagerly (unless strict is on).
"""

from __future__ import annotations

import itertools
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

import ember
from ember.torch import registry, report, splitter
from ember.torch.config import InvalidOptionError, Settings, progress_bar, resolve_settings
from ember.torch.context import tensor_version
from ember.torch.interpreter import Conversion, FxConverter, is_fake

__all__ = ["CompiledSegment", "ember_backend", "register_with_dynamo", "reset"]

_warned: set[str] = set()
_graph_counter = itertools.count()
_lock = threading.Lock()


def _warn_once(key: str, message: str, category: type[Warning] = UserWarning) -> None:
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, category, stacklevel=3)


def reset() -> None:
    """Clears ember's in-memory state for torch.compile: compiled kernels held in memory,
    one-time warnings, dry-run reports and graph numbering. (torch._dynamo.reset() calls
    it too.)"""
    global _graph_counter
    with _lock:
        _warned.clear()
        _graph_counter = itertools.count()
    report.dryrun_reports.clear()
    clear = getattr(ember, "clear_memory_cache", None)
    if clear is not None:
        clear()


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
    reason = _eager_only_reason(gm, example_inputs)
    if reason is not None:
        _warn_once(reason[0], reason[1])
        return gm.forward
    if any(is_fake(x) for x in example_inputs):
        return _LazyCompile(gm, settings, index)
    return compile_graph(gm, example_inputs, settings, index)


ember_backend.reset = reset  # type: ignore[attr-defined]


def _eager_only_reason(gm: torch.fx.GraphModule, inputs: list[Any]) -> tuple[str, str] | None:
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    tensors += list(gm.parameters())
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return ("grad", "ember compiles inference graphs only for now: this graph needs "
                "gradients (grad mode is on and an input or parameter requires grad), so it "
                "runs in eager PyTorch. Run the model under torch.no_grad() or "
                "torch.inference_mode() to compile it with ember.")
    devices = {t.device.type for t in tensors} - {"cpu", "meta"}
    if devices:
        return ("device", f"ember runs on the CPU; a graph with tensors on {sorted(devices)} "
                "runs in eager PyTorch.")
    return None


class _LazyCompile:
    """Compiles on the first call, when Dynamo gave fake example inputs."""

    def __init__(self, gm: torch.fx.GraphModule, settings: Settings, index: int) -> None:
        self.gm, self.settings, self.index = gm, settings, index
        self.compiled: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self.compiled is None:
            self.compiled = compile_graph(self.gm, list(args), self.settings, self.index)
        return self.compiled(*args)


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], settings: Settings,
                  index: int) -> Any:
    try:
        return _compile(gm, example_inputs, settings, index)
    except (registry.UnsupportedOperatorsError, InvalidOptionError):
        raise
    except Exception as e:
        if settings.strict:
            raise
        _warn_once(f"failed-{index}", f"ember could not compile graph {index} "
                   f"({type(e).__name__}: {e}); it runs in eager PyTorch instead.{_blame(e)}")
        return gm.forward


def _blame(e: Exception) -> str:
    """What a compile failure says about its cause: an ember.EmberError is the user's or the
    environment's (a missing or broken C++ compiler, a bad setting), with a message that
    says what to fix; an ember.InternalError or any other exception is a bug in ember."""
    if isinstance(e, ember.EmberError):
        return ""
    return " This is a bug in ember: please report it with the model."


def _compile(gm: torch.fx.GraphModule, example_inputs: list[Any], settings: Settings,
             index: int) -> Any:
    work = splitter.copy_graph_module(gm)
    reason = splitter.functionalize(work)
    if reason is not None:
        _warn_once(f"inplace-{index}", f"ember runs graph {index} in eager PyTorch: {reason}.")
        return gm.forward
    splitter.collapse_module_calls(
        work, lambda cls, key: registry.has_module_converter(cls, user_only=True))
    trial = FxConverter(work, example_inputs, settings, keep_going=True).run()
    failing = {k for n, f in trial.failures.items() if f.kind != "forced"
               for k in (n.meta.get("nn_module_stack") or {})}
    if failing and splitter.collapse_module_calls(
            work, lambda cls, key: key in failing and registry.has_module_converter(cls)):
        trial = FxConverter(work, example_inputs, settings, keep_going=True).run()
    reference = splitter.copy_graph_module(work) if settings.correctness_report else None
    analysis = report.analyze(work, trial, index, settings.min_block_size)
    real_failures = [f for _, _, f in analysis.failures if f.kind != "forced"]
    if settings.strict and real_failures and not settings.dryrun:
        raise registry.UnsupportedOperatorsError(report.strict_message(analysis))
    if not trial.failures:
        if settings.dryrun:
            return _dryrun(gm, analysis)
        segment = CompiledSegment(work, example_inputs, settings, trial, f"graph_{index}")
        if reference is not None:
            _print_correctness(reference, example_inputs, [(segment, None)], set(), settings)
        return segment
    return _split(gm, work, example_inputs, settings, trial, analysis, reference)


def _split(gm: torch.fx.GraphModule, work: torch.fx.GraphModule, example_inputs: list[Any],
           settings: Settings, trial: Conversion, analysis: report.Analysis,
           reference: torch.fx.GraphModule | None) -> Any:
    supported = {n for n in work.graph.nodes
                 if n.op.startswith("call_") and n in trial.converted}
    placeholders = {n.name: i for i, n in enumerate(work.graph.find_nodes(op="placeholder"))}
    # Writing updated inputs back is the only eager work when nothing else failed: the graph
    # still counts as converted whole, whatever its size.
    min_block = settings.min_block_size if analysis.failures else 1
    by_name = {n.name: n for n in work.graph.nodes}  # before partition erases fused nodes
    fused, names, dropped = splitter.partition(work, supported, min_block)
    analysis.segments = [
        [n.name for n in fused.get_submodule(name).graph.nodes if n.op.startswith("call_")]
        for name in names
    ]
    analysis.small = [n.name for nodes in dropped for n in nodes
                      if report.is_operator(n, trial.converted.get(n))]
    if settings.dryrun:
        return _dryrun(gm, analysis)
    segments = []
    with progress_bar(settings, len(names), "ember: compiling segments", "segment") as bar:
        for k, name in enumerate(names):
            sub = fused.get_submodule(name)
            sub_inputs = [
                example_inputs[placeholders[p.name]] if p.name in placeholders else None
                for p in sub.graph.find_nodes(op="placeholder")
            ]
            label = f"graph_{analysis.graph_index}/segment_{k}"
            bar.update(1)
            try:
                segment = CompiledSegment(sub, sub_inputs, settings, None, label)
            except Exception as e:  # this segment runs eagerly; the others stay compiled
                if settings.strict:
                    raise
                failed = [n for n in analysis.segments[k] if n in by_name and
                          report.is_operator(by_name[n], trial.converted.get(by_name[n]))]
                analysis.failed += failed
                _warn_once(f"segment-{label}", f"ember could not compile {label} "
                           f"({type(e).__name__}: {e}); its {len(failed)} operators run in "
                           f"eager PyTorch instead.{_blame(e)}")
                continue
            segments.append((segment, sub))
            fused.add_submodule(name, _SegmentModule(segment, sub))
    fused.recompile()
    if analysis.eager_count:
        _warn_once(f"eager-{analysis.graph_index}", report.fallback_message(analysis),
                   report.EagerFallbackWarning)
    if reference is not None:
        eager_nodes = ({n.name for n, _, _ in analysis.failures} | set(analysis.small)
                       | set(analysis.failed))
        _print_correctness(reference, example_inputs, segments, eager_nodes, settings)
    return fused.forward


def _dryrun(gm: torch.fx.GraphModule, analysis: report.Analysis) -> Any:
    report.dryrun_reports.append(analysis)
    print(analysis.text())
    return gm.forward


class _SegmentModule(torch.nn.Module):
    def __init__(self, segment: CompiledSegment, eager: torch.fx.GraphModule) -> None:
        super().__init__()
        self.segment = segment
        self.eager = eager

    def forward(self, *args: Any) -> Any:
        return self.segment(*args)


# ---- one compiled segment ------------------------------------------------------------------
class CompiledSegment:
    """A converted graph compiled into a CompiledGraph, called with the graph's torch
    arguments. It re-converts itself if the weights it captured are replaced or updated in
    place (unless the static single-call path is on), and runs its FX graph eagerly if
    ember fails at run time (bad data, ember.DataError, is raised to the caller instead)."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any], settings: Settings,
                 conversion: Conversion | None, label: str) -> None:
        self.gm = gm
        self.settings = settings
        self.label = label
        self.failed = False
        self._setup(conversion or FxConverter(gm, example_inputs, settings).run(), example_inputs)

    def _setup(self, conversion: Conversion, args: list[Any]) -> None:
        self.conversion = conversion
        self.input_index = [i for i, _ in conversion.inputs]
        self.carrier_sources = [conversion.symbol_sources[name] for name, _ in conversion.carriers]
        self.scalars = [(value, "float64" if isinstance(value, torch.SymFloat) else "int64")
                        for _, value in conversion.scalars]
        self.weight_args = list(conversion.weight_args)
        self.captured = list(conversion.captured)
        self.spec = conversion.output_spec
        self.compiled = None
        if conversion.outputs:
            self.compiled = _build(conversion, self.settings, self.label, args)
        self.static = self.settings.static_call

    def __call__(self, *args: Any) -> Any:
        if self.failed:
            return self.gm(*args)
        if not self.static and self._weights_changed(args):
            self._setup(FxConverter(self.gm, list(args), self.settings).run(), list(args))
        try:
            tensors = self._run(args)
        except ember.DataError:
            # Bad data (an index out of range, an integer division by zero): eager PyTorch
            # would raise too, so the user gets ember's message and the segment stays compiled.
            raise
        except Exception as e:
            if self.settings.strict:
                raise
            self.failed = True
            _warn_once(f"run-{self.label}", f"ember failed to run {self.label} "
                       f"({type(e).__name__}: {e}); it runs in eager PyTorch from now on.")
            return self.gm(*args)
        return _assemble(self.spec, tensors, args, self.conversion.symbol_sources)

    def _weights_changed(self, args: tuple) -> bool:
        for i, t in self.weight_args:
            if args[i] is not t and not _same_scalar(args[i], t):
                return True
        return any(tensor_version(t) != v for t, v in self.captured)

    def _run(self, args: tuple) -> list[Any]:
        if self.compiled is None:
            return []
        inputs = []
        for i in self.input_index:
            t = args[i]
            if t.is_neg():
                t = t.resolve_neg()
            inputs.append(ember.from_torch(t if t.is_contiguous() else t.contiguous()))
        inputs += _extra_inputs(self, args)
        return [o.torch() for o in self.compiled.run(inputs)]


def _same_scalar(new: Any, old: torch.Tensor) -> bool:
    """A module's Python number (an eps) that Dynamo passes as a 0-d tensor: a new tensor on
    every call when sizes are dynamic, but the same value."""
    return (old.dim() == 0 and isinstance(new, torch.Tensor) and new.dim() == 0
            and new.dtype == old.dtype and bool(new == old))


def _extra_inputs(segment: CompiledSegment, args: Any) -> list[Any]:
    """The inputs that carry sizes: empty [n, 0] tensors binding symbols, and 0-d tensors
    holding scalars known only at run time."""
    extra = []
    for i, axis in segment.carrier_sources:
        n = int(args[i]) if axis is None else int(args[i].shape[axis])
        extra.append(ember.from_torch(torch.empty(n, 0)))
    sources = segment.conversion.symbol_sources
    for value, dtype in segment.scalars:
        number = _eval_symbolic(value, args, sources)
        extra.append(ember.from_torch(torch.tensor(number, dtype=getattr(torch, dtype))))
    return extra


def _assemble(spec: Any, tensors: list[Any], args: tuple, sources: dict) -> Any:
    tag = spec[0]
    if tag == "out":
        return tensors[spec[1]]
    if tag == "arg":
        return args[spec[1]]
    if tag == "const":
        return spec[1].clone()
    if tag == "value":
        return spec[1]
    if tag == "sym":
        return _eval_symbolic(spec[1], args, sources)
    if tag == "item":
        return _assemble(spec[1], tensors, args, sources).item()
    return tag(_assemble(s, tensors, args, sources) for s in spec[1])


def _eval_symbolic(value: Any, args: tuple, sources: dict) -> Any:
    expr = value.node.expr
    binding = {}
    for sym in expr.free_symbols:
        i, axis = sources[str(sym)]
        binding[sym] = _scalar_arg(args[i]) if axis is None else int(args[i].shape[axis])
    result = expr.xreplace(binding)
    return value.node.pytype(result)


def _scalar_arg(value: Any) -> int | float:
    """The number a SymInt/SymFloat argument has on this call: a float stays a float (a
    SymFloat read with int() would truncate 0.125 to 0)."""
    if isinstance(value, (float, torch.SymFloat)):
        return float(value)
    return int(value)


# ---- building ------------------------------------------------------------------------------
class _PhaseBars:
    """Progress of the core's build, one tqdm bar per phase it reports (generating kernels,
    tuning, compiling), fed by FlowGraph.build's ``progress(phase, done, total)``."""

    def __init__(self, settings: Settings, label: str) -> None:
        self.settings, self.label = settings, label
        self.bars: dict[str, tuple[Any, list[int]]] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase not in self.bars:
            bar = progress_bar(self.settings, int(total), f"ember {self.label}: {phase}")
            self.bars[phase] = (bar, [0])
        bar, seen = self.bars[phase]
        bar.update(max(int(done) - seen[0], 0))
        seen[0] = max(seen[0], int(done))

    def close(self) -> None:
        for bar, _ in self.bars.values():
            bar.close()


def _symbol_values(conversion: Conversion, args: list[Any]) -> dict[str, int]:
    """The sizes the symbolic dimensions have in `args` (the example inputs), for tuning."""
    values = {}
    for name, (i, axis) in conversion.symbol_sources.items():
        if i >= len(args):
            continue
        v = args[i] if axis is None else getattr(args[i], "shape", [None] * (axis + 1))[axis]
        if isinstance(v, torch.SymInt):  # its example value, read without adding a guard
            v = getattr(v.node, "hint", None)
        if isinstance(v, int) and not isinstance(v, bool):
            values[name] = v
    return values


def _build(conversion: Conversion, settings: Settings, label: str, args: list[Any]) -> Any:
    graph = conversion.graph()
    dump = os.path.join(settings.dump_dir, label) if settings.dump_dir else None
    if dump:
        os.makedirs(dump, exist_ok=True)
        with open(os.path.join(dump, "flow_graph.txt"), "w") as f:
            f.write(str(graph))
    phases = _PhaseBars(settings, label)
    try:
        with progress_bar(settings, len(ember.graph.pass_names()), f"ember {label}: fusing",
                          "pass") as bar:
            optimized, timings = ember.graph.optimize(graph, dump_dir=dump, return_timings=True)
            bar.update(len(timings))
        return optimized.build(
            search_space=settings.search_space, parallel_k=settings.parallel_k, dump_dir=dump,
            progress=phases if settings.progress else None,
            symbol_values=_symbol_values(conversion, args))
    finally:
        phases.close()


def _print_correctness(reference: torch.fx.GraphModule, example_inputs: list[Any],
                       segments: list[tuple[CompiledSegment, Any]], eager_nodes: set[str],
                       settings: Settings) -> None:
    """Prints the correctness report. It is a diagnosis: when it cannot be made, ember says
    why and the graph stays compiled."""
    try:
        _correctness_report(reference, _example_values(example_inputs), segments, eager_nodes,
                            settings)
    except Exception as e:
        _warn_once(f"report-{id(reference)}", "ember could not make the correctness report "
                   f"({type(e).__name__}: {e}); the graph stays compiled.")


def _example_values(example_inputs: list[Any]) -> list[Any]:
    """The example inputs with the sizes Dynamo passes as SymInts (and SymFloats) replaced
    by the values they have in this example, read without adding a guard: eager PyTorch
    cannot run the reference graph on symbols."""
    values = []
    for v in example_inputs:
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            hint = getattr(v.node, "hint", None)
            if hint is None or isinstance(hint, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                raise ValueError(f"the example input {v} has no known value")
            v = v.node.pytype(hint)
        values.append(v)
    return values


def _correctness_report(reference: torch.fx.GraphModule, example_inputs: list[Any],
                        segments: list[tuple[CompiledSegment, Any]], eager_nodes: set[str],
                        settings: Settings) -> None:
    eager = report.eager_values(reference, example_inputs)
    actual: dict[str, Any] = {}
    for segment, sub in segments:
        actual.update(_segment_node_values(segment, sub, example_inputs, eager))
    print(report.correctness_table(reference, eager, actual, eager_nodes,
                                   settings.low_precision))


def _segment_node_values(segment: CompiledSegment, sub: Any, example_inputs: list[Any],
                         eager: dict[str, Any]) -> dict[str, Any]:
    """Every node of a segment computed by ember (a debug graph whose outputs are all the
    segment's values), fed with eager PyTorch's values of the segment's inputs."""
    conv = segment.conversion
    names, outs = [], []
    for node, value in conv.values.items():
        if node.op.startswith("call_") and isinstance(value, ember.Tensor) and value.is_symbolic:
            names.append(node.name)
            outs.append(value)
    if not outs:
        return {}
    if sub is None:
        args = list(example_inputs)
    else:
        args = [eager.get(p.name) for p in sub.graph.find_nodes(op="placeholder")]
    ins = [sym for _, sym in conv.inputs] + [sym for _, sym in conv.carriers]
    ins += [sym for sym, _ in conv.scalars]
    compiled = ember.graph.optimize(ember.trace_from(outs, ins)).build()
    inputs = [ember.from_torch(args[i].contiguous()) for i in segment.input_index]
    inputs += _extra_inputs(segment, args)
    results = compiled.run(inputs)
    return {name: r.torch().float() if str(r.dtype) in ("float16", "bfloat16") else r.torch()
            for name, r in zip(names, results, strict=True)}


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
