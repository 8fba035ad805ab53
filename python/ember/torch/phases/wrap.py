"""Phase 6, wrap: the callable torch calls instead of the graph.

For a whole graph, its CompiledSegment; for a split graph, the partition's GraphModule with
each compiled segment in place of its submodule (a segment that failed keeps its FX
submodule and runs eagerly, with a warning), after the one warning that names every
operator running eagerly. Inputs the graph updates in place are copied back by the eager
``copy_`` nodes the prepare phase added. The correctness report, when asked for, is made
here, once every segment is compiled.

A CompiledSegment converts a call's tensors through DLPack (no copies) and runs its
CompiledGraph in one C++ call. It converts and builds itself again if the weights it
captured are replaced or updated in place (unless the static single-call path is on), and
runs its FX graph eagerly if ember fails at run time (bad data, ember.DataError, is raised
to the caller instead).

Memory: every CompiledGraph of the backend takes its workspace from one pool, WORKSPACES
(graphs that run one after the other, such as a training step's forward and backward or the
segments of a model, keep one workspace between calls: the largest any of them needs;
concurrent calls from several threads each take their own). ``call_boxed`` is the call for
AOTAutograd's boxed convention: it empties the argument list and runs the graph with
``release_inputs``, so an input the caller gave up (an activation the forward saved for the
backward) is freed after the last kernel that reads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

import ember
from ember import profiling
from ember.torch import report
from ember.torch.complex_values import as_runtime_input
from ember.torch.config import Settings
from ember.torch.interpreter import Conversion
from ember.torch.phases import build, convert
from ember.torch.phases.partition import Partition

__all__ = ["WORKSPACES", "CompiledSegment", "wrap"]

# The workspace pool of every graph the torch backend compiles (see the module docstring).
WORKSPACES = ember.WorkspacePool()


def wrap(parts: Partition, settings: Settings) -> Callable[..., Any]:
    if not parts.split:
        (whole,) = parts.segments
        segment = _compiled(whole.graph, settings, whole.label, whole.conversion, whole.compiled)
        if parts.reference is not None:
            _print_correctness(parts.reference, parts.example_inputs, [(segment, None)], set(),
                               settings, parts.analysis.graph_index)
        return segment
    fused, analysis = parts.graph, parts.analysis
    segments = []
    failed: list[str] = []
    for s in parts.segments:
        if s.error is not None:
            failed += s.operators
            e = s.error
            report.warn_once(f"segment-{s.label}", f"ember could not compile {s.label} "
                             f"({type(e).__name__}: {e}); its {len(s.operators)} operators "
                             f"run in eager PyTorch instead.{report.blame(e)}")
            continue
        segment = _compiled(s.graph, settings, s.label, s.conversion, s.compiled)
        segments.append((segment, s.graph))
        fused.add_submodule(s.name, _SegmentModule(segment, s.graph))
    fused.recompile()
    analysis = dataclasses.replace(analysis, failed=analysis.failed + failed)
    if analysis.eager_count:
        report.warn_once(f"eager-{analysis.graph_index}", report.fallback_message(analysis),
                         report.EagerFallbackWarning)
    if parts.reference is not None:
        eager_nodes = ({n.name for n, _, _ in analysis.failures} | set(analysis.small)
                       | set(analysis.failed))
        _print_correctness(parts.reference, parts.example_inputs, segments, eager_nodes,
                           settings, analysis.graph_index)
    return fused.forward


def _compiled(gm: torch.fx.GraphModule, settings: Settings, label: str,
              conversion: Conversion | None, compiled: Any) -> CompiledSegment:
    assert conversion is not None  # a segment without an error was converted
    return CompiledSegment(gm, settings, label, conversion, compiled)


class _SegmentModule(torch.nn.Module):
    def __init__(self, segment: CompiledSegment, eager: torch.fx.GraphModule) -> None:
        super().__init__()
        self.segment = segment
        self.eager = eager

    def forward(self, *args: Any) -> Any:
        return self.segment(*args)


# ---- one compiled segment ------------------------------------------------------------------
class CompiledSegment:
    """A converted graph and its CompiledGraph (None when the graph computes no tensor),
    called with the graph's torch arguments (see the module docstring)."""

    def __init__(self, gm: torch.fx.GraphModule, settings: Settings, label: str,
                 conversion: Conversion, compiled: Any) -> None:
        self.gm = gm
        self.settings = settings
        self.label = label
        self.failed = False
        self.static = settings.static_call
        self._auto_profile = profiling.AutoProfile(f"ember segment {label}", settings.profile)
        self._setup(conversion, compiled)

    def _setup(self, conversion: Conversion, compiled: Any) -> None:
        self.conversion = conversion
        self.input_index = [i for i, _ in conversion.inputs]
        # (argument, dim or None) of a symbol the arguments carry, or the SymInt of a size
        # computed from them
        self.carrier_sources = [conversion.derived_sizes[name] if name in
                                conversion.derived_sizes else conversion.symbol_sources[name]
                                for name, _ in conversion.carriers]
        self.scalars = [(value, "float64" if isinstance(value, torch.SymFloat) else "int64")
                        for _, value in conversion.scalars]
        self.seeds = len(conversion.seeds)
        self.weight_args = list(conversion.weight_args)
        # The captured weights that have a version counter (inference tensors have none),
        # and their versions: checked on every call, as one list (a few hundred tensors whose
        # metadata is out of cache after a run: about 90 us for MobileNetV2's 314).
        versioned = [(t, v) for t, v in conversion.captured if v is not None]
        self.versioned = [t for t, _ in versioned]
        self.versions = [v for _, v in versioned]
        self.spec = conversion.output_spec
        self.compiled = compiled
        if compiled is not None:
            compiled.workspace_pool = WORKSPACES
        # The arguments the outputs are assembled from (returned as they are, or read for
        # their sizes): call_boxed keeps them.
        self.kept_args = set(_spec_args(self.spec))
        self.kept_args |= {i for i, _ in conversion.symbol_sources.values()}

    def _rebuild(self, args: list[Any]) -> None:
        """Converts and builds the graph again, with the weights of this call."""
        conversion = convert.convert_graph(self.gm, args, self.settings)
        compiled = None
        if conversion.outputs:
            compiled = build.build_graph(conversion, self.settings, self.label, args)
        self._setup(conversion, compiled)

    def __call__(self, *args: Any) -> Any:
        return self._call(args, self._auto_profile.due())

    def _call(self, args: tuple, profile: bool) -> Any:
        """One call; `profile`: this is the call to profile (AutoProfile.due, asked once
        per call)."""
        if self.failed:
            return self.gm(*args)
        ember.wake_workers()  # they wake up while the arguments are converted
        if not self.static and self._weights_changed(args):
            self._rebuild(list(args))
        try:
            tensors = self._run(args, profile)
        except ember.DataError:
            # Bad data (an index out of range, an integer division by zero): eager PyTorch
            # would raise too, so the user gets ember's message and the segment stays compiled.
            raise
        except Exception as e:
            if self.settings.strict:
                raise
            self.failed = True
            report.warn_once(f"run-{self.label}", f"ember failed to run {self.label} "
                             f"({type(e).__name__}: {e}); it runs in eager PyTorch from now on.")
            return self.gm(*args)
        return _assemble(self.spec, tensors, args, self.conversion.symbol_sources)

    def call_boxed(self, args: list[Any]) -> Any:
        """The call with AOTAutograd's boxed convention: `args` is emptied, and the tensors
        the graph reads are dropped during the run after their last use (the module
        docstring). A failure before the run started runs the FX graph eagerly, as
        __call__ does; one after some inputs were dropped is raised."""
        profile = self._auto_profile.due()
        if self.failed or self.compiled is None or profile:
            values = tuple(args)
            args.clear()
            return self._call(values, profile)
        ember.wake_workers()
        if not self.static and self._weights_changed(tuple(args)):
            self._rebuild(list(args))
        inputs = self._inputs(tuple(args))
        given = len(inputs)
        kept = [a if i in self.kept_args or not isinstance(a, torch.Tensor) else None
                for i, a in enumerate(args)]
        args.clear()
        try:
            outputs = [o.torch() for o in self.compiled.run(inputs, release_inputs=True)]
        except ember.DataError:
            raise
        except Exception as e:
            if self.settings.strict or len(inputs) != given:  # inputs dropped: no way back
                raise
            self.failed = True
            report.warn_once(f"run-{self.label}", f"ember failed to run {self.label} "
                             f"({type(e).__name__}: {e}); it runs in eager PyTorch from now on.")
            for i, t in zip(self.input_index, inputs, strict=False):
                kept[i] = t.torch()
            return self.gm(*kept)
        return _assemble(self.spec, outputs, tuple(kept), self.conversion.symbol_sources)

    def _weights_changed(self, args: tuple) -> bool:
        for i, t in self.weight_args:
            if args[i] is not t and not _same_scalar(args[i], t):
                return True
        return [t._version for t in self.versioned] != self.versions

    def _inputs(self, args: tuple) -> list[Any]:
        """The CompiledGraph's inputs for a call with `args` (no copies where torch's tensors
        are contiguous)."""
        inputs = []
        for i in self.input_index:
            t = as_runtime_input(args[i])
            inputs.append(ember.from_torch(t if t.is_contiguous() else t.contiguous()))
        return inputs + _extra_inputs(self, args)

    def _run(self, args: tuple, profile: bool) -> list[Any]:
        if self.compiled is None:
            return []
        inputs = self._inputs(args)
        outputs = [o.torch() for o in self.compiled.run(inputs)]
        if profile:  # the second call: profiled with its own inputs
            self._auto_profile.run(self.compiled, inputs)
        return outputs


def _same_scalar(new: Any, old: torch.Tensor) -> bool:
    """A module's Python number (an eps) that Dynamo passes as a 0-d tensor: a new tensor on
    every call when sizes are dynamic, but the same value."""
    return (old.dim() == 0 and isinstance(new, torch.Tensor) and new.dim() == 0
            and new.dtype == old.dtype and bool(new == old))


def _extra_inputs(segment: CompiledSegment, args: Any) -> list[Any]:
    """The inputs that carry sizes: empty [n, 0] tensors binding symbols, and 0-d tensors
    holding scalars known only at run time; then the random operators' seeds."""
    extra = []
    sources = segment.conversion.symbol_sources
    for source in segment.carrier_sources:
        if not isinstance(source, tuple):  # a size computed from the arguments
            n = int(_eval_symbolic(source, args, sources))
        else:
            i, axis = source
            n = int(args[i]) if axis is None else int(args[i].shape[axis])
        extra.append(ember.from_torch(torch.empty(n, 0)))
    for value, dtype in segment.scalars:
        number = _eval_symbolic(value, args, sources)
        extra.append(ember.from_torch(torch.tensor(number, dtype=getattr(torch, dtype))))
    if segment.seeds:
        extra += [ember.from_torch(s) for s in draw_seeds(segment.seeds)]
    return extra


def draw_seeds(count: int) -> list[torch.Tensor]:
    """`count` (seed, offset) pairs for ember's random operators, drawn from torch's default
    CPU generator: torch.manual_seed(s) before a run makes it repeatable, and every call
    draws new ones (and advances the generator, as eager random operators do)."""
    drawn = torch.randint(0, 2**62, (count, 2), dtype=torch.int64)
    return [row.contiguous() for row in drawn]


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
    if tag == "complex":  # a ComplexValue's [..., 2] pair (ember.torch.complex_values)
        return torch.view_as_complex(_assemble(spec[1], tensors, args, sources))
    return tag(_assemble(s, tensors, args, sources) for s in spec[1])


def _spec_args(spec: Any) -> list[int]:
    """The arguments an output spec returns as they are ("arg" entries)."""
    tag = spec[0]
    if tag == "arg":
        return [spec[1]]
    if tag in ("item", "complex"):
        return _spec_args(spec[1])
    if tag in ("out", "const", "value", "sym"):
        return []
    return [i for s in spec[1] for i in _spec_args(s)]


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
    if isinstance(value, torch.Tensor):  # a 0-d tensor the graph reads with .item()
        return value.item()
    if isinstance(value, (float, torch.SymFloat)):
        return float(value)
    return int(value)


# ---- the correctness report ----------------------------------------------------------------
def _print_correctness(reference: torch.fx.GraphModule, example_inputs: list[Any],
                       segments: list[tuple[CompiledSegment, Any]], eager_nodes: set[str],
                       settings: Settings, graph_index: int | str) -> None:
    """Prints the correctness report, under a line naming the graph (a training graph's
    forward and backward have one report each). It is a diagnosis: when it cannot be made,
    ember says why and the graph stays compiled."""
    try:
        print(f"ember correctness report of graph {graph_index}:")
        _correctness_report(reference, _example_values(example_inputs), segments, eager_nodes,
                            settings)
    except Exception as e:
        report.warn_once(f"report-{id(reference)}", "ember could not make the correctness "
                         f"report ({type(e).__name__}: {e}); the graph stays compiled.")


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
    compiled = ember.graph.optimize(ember.trace_from(outs, conv.input_symbols())).build()
    inputs = [ember.from_torch(as_runtime_input(args[i]).contiguous())
              for i in segment.input_index]
    inputs += _extra_inputs(segment, args)
    results = compiled.run(inputs)
    return {name: r.torch().float() if str(r.dtype) in ("float16", "bfloat16") else r.torch()
            for name, r in zip(names, results, strict=True)}
