"""What ember tells the user about a graph: the input graph as a table, the coverage report
of a dry run, the strict-mode error, the eager-fallback warning, and the correctness
report (each node's error against eager PyTorch)."""

from __future__ import annotations

import dataclasses
import math
import operator
import threading
import warnings
from collections import Counter
from typing import Any

import torch
import torch.fx

import ember
from ember.torch import registry
from ember.torch.context import ConversionFailure, expected_value
from ember.torch.interpreter import node_public_name

__all__ = [
    "Analysis",
    "EagerFallbackWarning",
    "dryrun_reports",
    "format_graph_table",
    "format_table",
]

# Reports of dry runs in this process, newest last (cleared by ember.torch.reset()).
dryrun_reports: list[Analysis] = []

# The keys of the warnings given once per process (cleared by ember.torch.reset()).
_warned: set[str] = set()
_lock = threading.Lock()

# Errors above these (the harmonic mean of absolute and relative error) are marked.
THRESHOLDS = {"float64": 1e-9, "float32": 1e-5, "float16": 1e-2, "bfloat16": 5e-2}

_NOT_OPERATORS = {"shape", "value", "input", "weight", "unused"}
_REASONS = {
    "unmapped": "no converter is registered",
    "signature": "the call matches no converter's signature",
    "rejected": "no converter's capability_validator accepted it",
    "forced": "listed in torch_executed_ops",
    "error": "its converter cannot convert this call",
    "mismatch": "its converter's result differs from torch's",
    "value": "an input ember cannot represent",
}


class EagerFallbackWarning(UserWarning):
    """Some operators of a graph run in eager PyTorch instead of ember."""


def warn_once(key: str, message: str, category: type[Warning] = UserWarning) -> None:
    """Warns, unless a warning with this key was given before in this process."""
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, category, stacklevel=3)


def clear_warnings() -> None:
    """Every warning may be given once again."""
    with _lock:
        _warned.clear()


def blame(e: Exception) -> str:
    """What a compile failure says about its cause: an ember.EmberError is the user's or the
    environment's (a missing or broken C++ compiler, a bad setting), with a message that
    says what to fix; an ember.InternalError or any other exception is a bug in ember."""
    if isinstance(e, ember.EmberError):
        return ""
    return " This is a bug in ember: please report it with the model."


def format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _short(v: Any, limit: int = 60) -> str:
    text = str(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_graph_table(gm: torch.fx.GraphModule) -> str:
    """The FX graph as a table: opcode, name, target, args, kwargs."""
    rows = []
    for n in gm.graph.nodes:
        if n.op in ("call_function", "call_method", "call_module"):
            target = node_public_name(gm, n)
        else:
            target = str(n.target)
        rows.append([n.op, n.name, target, _short(n.args), _short(n.kwargs)])
    return format_table(["opcode", "name", "target", "args", "kwargs"], rows)


def _module_context(node: torch.fx.Node) -> str | None:
    stack = node.meta.get("nn_module_stack") or {}
    for _, (_, cls) in reversed(list(stack.items())):
        if isinstance(cls, type) and cls.__module__.startswith("torch.nn."):
            return registry.public_name(cls)
    return None


@dataclasses.dataclass
class Analysis:
    """Coverage of one graph: which operators ember converts and how the graph is split."""

    graph_index: int | str  # "<i>_forward" / "<i>_backward" for training graphs
    total: int
    converted: int
    failures: list[tuple[torch.fx.Node, str, ConversionFailure]]  # node, public name, why
    segments: list[list[str]]  # the node names of each ember segment
    small: list[str]  # nodes of segments dropped for min_block_size
    min_block_size: int
    # operators of ember segments that failed to compile as a whole (they run eagerly)
    failed: list[str] = dataclasses.field(default_factory=list)

    @property
    def percent(self) -> float:
        return 100.0 * self.converted / self.total if self.total else 100.0

    @property
    def eager_count(self) -> int:
        """Operators that run in eager PyTorch: not convertible, in segments under
        min_block_size, or in segments that failed to compile."""
        return len(self.failures) + len(self.small) + len(self.failed)

    @property
    def unconverted(self) -> Counter:
        return Counter(name for _, name, f in self.failures)

    def text(self) -> str:
        lines = [
            f"ember dry run of graph {self.graph_index}: {self.total} operators, "
            f"{self.converted} converted by ember ({self.percent:.1f}%)",
        ]
        if self.failures:
            lines.append("not converted (count, operator, reason):")
            reasons: dict[str, str] = {}
            for _, name, f in self.failures:
                reasons.setdefault(name, _REASONS.get(f.kind, f.kind))
            for name, count in sorted(self.unconverted.items()):
                lines.append(f"  {count:4d}  {name}  ({reasons[name]})")
        lines.append(f"segments (min_block_size={self.min_block_size}):")
        if not self.failures:
            lines.append("  one ember segment: the whole graph")
        for i, names in enumerate(self.segments):
            lines.append(f"  ember segment {i}: {len(names)} nodes ({_span(names)})")
        eager = [n.name for n, _, _ in self.failures]
        if eager:
            lines.append(f"  eager PyTorch, not convertible: {len(eager)} nodes "
                         f"({_short(', '.join(eager), 200)})")
        if self.small:
            lines.append(f"  eager PyTorch, in segments under min_block_size: {len(self.small)} "
                         f"nodes ({_short(', '.join(self.small), 200)})")
        return "\n".join(lines)


def print_dryrun(analysis: Analysis) -> None:
    """Keeps a dry run's report in dryrun_reports and prints it."""
    dryrun_reports.append(analysis)
    print(analysis.text())


def _span(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"


def is_operator(node: torch.fx.Node, how: str | None) -> bool:
    """Nodes counted as operators: calls that compute something (not getitem, sizes, or
    the write-back of an updated input)."""
    if node.op not in ("call_function", "call_method", "call_module"):
        return False
    if _selects_output(node) or node.meta.get("ember_writeback"):
        return False
    return how not in _NOT_OPERATORS


def _selects_output(node: torch.fx.Node) -> bool:
    """operator.getitem picking one result of a multi-output node (not tensor indexing)."""
    if node.target is not operator.getitem or not node.args:
        return False
    source = node.args[0]
    return not (isinstance(source, torch.fx.Node)
                and isinstance(expected_value(source), torch.Tensor))


def analyze(gm: torch.fx.GraphModule, conversion: Any, index: int | str, min_block_size: int,
            segments: list[list[str]] | None = None, small: list[str] | None = None) -> Analysis:
    failures = []
    total = converted = 0
    for n in gm.graph.nodes:
        failure = conversion.failures.get(n)
        how = conversion.converted.get(n)
        if failure is None and not is_operator(n, how):
            continue
        if failure is not None and (_selects_output(n) or n.meta.get("ember_writeback")):
            continue
        total += 1
        if failure is None:
            converted += 1
        elif failure.kind != "value" or n.op.startswith("call_"):
            failures.append((n, node_public_name(gm, n), failure))
    return Analysis(index, total, converted, failures, segments or [], small or [],
                    min_block_size)


def strict_message(analysis: Analysis) -> str:
    names: dict[str, str] = {}
    details = []
    for node, name, failure in analysis.failures:
        context = _module_context(node)
        shown = f"{name}  (inside {context})" if context and context != name else name
        names.setdefault(name, shown)
        details.append(f"  {node.name} = {name}: {failure.message}")
    listing = "\n".join(f"  {names[k]}" for k in sorted(names))
    return (
        "ember cannot convert these operators yet (strict mode):\n"
        f"{listing}\n"
        "Why, node by node:\n" + "\n".join(details) + "\n"
        f"Add a converter for each with ember.torch.registry (see {registry.GUIDE}), or compile "
        "without strict=True to run them in eager PyTorch."
    )


def fallback_message(analysis: Analysis) -> str:
    eager, total = analysis.eager_count, max(analysis.total, analysis.eager_count)
    percent = 100.0 * eager / total if total else 0.0
    lines = [f"ember: {eager} of {total} operators ({percent:.1f}%) of graph "
             f"{analysis.graph_index} run in eager PyTorch"]
    grouped: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    for node, name, failure in analysis.failures:
        grouped.setdefault(name, []).append(node.name)
        detailed = failure.kind in ("error", "signature", "mismatch", "value")
        reasons.setdefault(name, failure.message if detailed else _REASONS[failure.kind])
    if grouped:
        lines.append(f"  {len(analysis.failures)} that ember cannot convert:")
    for name in sorted(grouped):
        lines.append(f"    {name} ({', '.join(grouped[name])}): {reasons[name]}")
    if analysis.small:
        lines.append(f"  {len(analysis.small)} in segments smaller than "
                     f"min_block_size={analysis.min_block_size}: {', '.join(analysis.small)}")
    if analysis.failed:
        lines.append(f"  {len(analysis.failed)} in ember segments that failed to compile: "
                     f"{', '.join(analysis.failed)}")
    lines.append(f"See {registry.GUIDE} to add converters; strict=True makes this an error.")
    return "\n".join(lines)


# ---- correctness report --------------------------------------------------------------------
def error_of(actual: Any, expected: Any) -> float | None:
    """max |actual - expected| / (|expected| + 1) over the elements (the harmonic mean of
    absolute and relative error, as the guide describes); None if not comparable."""
    if isinstance(expected, (tuple, list)) and isinstance(actual, (tuple, list)):
        errs = [error_of(a, e) for a, e in zip(actual, expected, strict=False)]
        errs = [e for e in errs if e is not None]
        return max(errs) if errs else None
    if not isinstance(expected, torch.Tensor) or not isinstance(actual, torch.Tensor):
        return None
    if actual.shape != expected.shape:
        return math.inf
    if expected.numel() == 0:
        return 0.0
    a, e = actual.detach().double(), expected.detach().double()
    both_inf = torch.isinf(a) & torch.isinf(e) & (torch.sign(a) == torch.sign(e))
    both_nan = torch.isnan(a) & torch.isnan(e)
    diff = ((a - e).abs() / (e.abs() + 1)).masked_fill(both_inf | both_nan, 0.0)
    return float(torch.nan_to_num(diff, nan=math.inf).max())


def correctness_table(gm: torch.fx.GraphModule, eager: dict[str, Any], actual: dict[str, Any],
                      eager_nodes: set[str], low_precision: str | None = None) -> str:
    """The correctness report; with use_fp16/use_bf16, float32 nodes are shown (and judged)
    in the precision ember computed them in."""
    rows = []
    marked = 0
    for i, n in enumerate(gm.graph.nodes):
        meta = expected_value(n)
        dtype = ""
        ref = eager.get(n.name)
        sample = ref[0] if isinstance(ref, (tuple, list)) and ref else ref
        if isinstance(sample, torch.Tensor):
            dtype = str(sample.dtype).replace("torch.", "")
        elif isinstance(meta, torch.Tensor):
            dtype = str(meta.dtype).replace("torch.", "")
        if low_precision and dtype == "float32" and n.name not in eager_nodes:
            dtype = low_precision
        if n.op == "output":
            outs = n.args[0] if isinstance(n.args[0], (tuple, list)) else [n.args[0]]
            errs = [_error_cell(actual.get(o.name), eager.get(o.name))
                    for o in outs if isinstance(o, torch.fx.Node)]
            errs = [e for e in errs if e is not None]
            err = max(errs) if errs else None
        elif n.name in eager_nodes:
            err = None
        elif n.op == "placeholder":
            err = 0.0
        else:
            err = _error_cell(actual.get(n.name), ref)
        if n.op in ("call_function", "call_method"):
            op = node_public_name(gm, n)
        elif n.op == "call_module":
            op = _short(repr(gm.get_submodule(n.target)), 80)
        else:
            op = ""
        cell = "eager" if n.name in eager_nodes else ("" if err is None else f"{err:.1e}")
        flag = ""
        if err is not None and err > THRESHOLDS.get(dtype, 0.0):
            flag = "<------"
            marked += 1
        rows.append([str(i), n.op, op, dtype, cell, flag])
    table = format_table(["", "kind", "operator", "dtype", "error", "attention"], rows)
    summary = (f"\n{marked} nodes exceed the error expected for their dtype "
               f"({', '.join(f'{k} {v:.0e}' for k, v in THRESHOLDS.items())})")
    return table + summary


def _error_cell(actual: Any, expected: Any) -> float | None:
    if actual is None or expected is None:
        return None
    return error_of(actual, expected)


def eager_values(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> dict[str, Any]:
    """Every node's value when gm runs eagerly on the example inputs (cloned, so in-place
    updates do not leak back)."""
    values: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            out = super().run_node(n)
            values[n.name] = _snapshot(out)
            return out

    inputs = [x.clone() if isinstance(x, torch.Tensor) and not x.requires_grad else x
              for x in example_inputs]
    with torch.no_grad():
        Recorder(gm).run(*inputs)
    return values


def _snapshot(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return v.detach().clone()
    if isinstance(v, (tuple, list)):
        return type(v)(_snapshot(x) for x in v)
    return v
