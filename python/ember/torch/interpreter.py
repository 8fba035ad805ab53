"""The interpreter: an FX graph (from Dynamo, torch.export or symbolic_trace) to an ember
FlowGraph.

It walks the graph in order. Placeholders become symbolic ember tensors (runtime inputs),
ember constants that share the weights' memory (parameters and buffers), or symbolic
sizes (SymInt inputs). Each call node is converted by the first candidate of the registry
that accepts it; converters receive ember tensors and Python values and return ember
tensors. Each result is checked against the shape and dtype that Dynamo recorded for the
node, so a converter that computes something else is caught at compile time.

Nodes whose inputs are all constants are evaluated once by PyTorch at compile time and
become ember constants (constant folding at the FX level: no kernel is compiled for them).

With ``keep_going=True`` the interpreter converts every node it can and records, for the
others, why it could not: the analyze phase (phases/analyze.py) runs it so, and the
partition phase cuts the graph into ember segments and eager nodes from what it found, and
strict mode lists every unsupported operator at once.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import torch
import torch.fx

import ember
from ember.torch import complex_values, registry
from ember.torch.complex_values import ComplexValue, contains_complex
from ember.torch.config import Settings
from ember.torch.context import (
    TORCH_TO_EMBER,
    ConversionFailure,
    SizesSpecialized,
    conversion_context,
    ember_dtype,
    expected_value,
    input_dim,
    sym_dim,
    sym_size,
    torch_dtype,
    traced_size,
    weight_to_ember,
)
from ember.torch.fx_nodes import (
    INPLACE_OPERATORS,
    call_text,
    check_shape,
    fetch_attr,
    forced_keys,
    is_creation,
    is_dynamic,
    is_forced,
    is_large_fill,
    is_shape_value,
    node_public_name,
    node_target,
    refine_known_dims,
)
from ember.torch.shape_guards import sym_dim_free

__all__ = ["Conversion", "FxConverter", "NodeView", "node_public_name"]

# ---- placeholders -------------------------------------------------------------------------
def _source_chain(node: torch.fx.Node) -> list[Any]:
    grapharg = node.meta.get("grapharg")
    source = getattr(grapharg, "source", None)
    chain = []
    while source is not None:
        chain.append(source)
        source = getattr(source, "base", None)
    return chain


def is_weight_placeholder(node: torch.fx.Node, example: Any) -> bool:
    """A parameter or buffer of a module that Dynamo lifted into a graph input."""
    if isinstance(example, torch.nn.Parameter):
        return True
    names = {type(s).__name__ for s in _source_chain(node)}
    return bool(names & {"ParamBufferSource", "UnspecializedParamBufferSource"})


def is_module_attribute(node: torch.fx.Node) -> bool:
    """A Python number attribute of a module (an eps, a momentum) that Dynamo passes as a
    0-d tensor when floats are not specialized."""
    chain = _source_chain(node)
    if not chain or type(chain[0]).__name__ != "AttrSource":
        return False
    return any("NNModuleSource" in type(s).__name__ for s in chain[1:])


def _reads_item(node: torch.fx.Node) -> bool:
    """Whether node reads the number of its 0-d tensor argument (Tensor.item, or aten's
    _local_scalar_dense in an AOTAutograd graph)."""
    return (node.op == "call_method" and node.target == "item") or (
        node.op == "call_function"
        and node.target is torch.ops.aten._local_scalar_dense.default)


def is_fake(value: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(value, FakeTensor)


class NodeView:
    """A node seen through the ATen schema of a converter registered for an ATen overload:
    ``target``, ``args`` and ``kwargs`` are the ATen call's; anything else is the node's."""

    def __init__(self, node: torch.fx.Node, target: Any, args: tuple, kwargs: dict) -> None:
        self.node, self.target, self.args, self.kwargs = node, target, args, kwargs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.node, name)

    def __repr__(self) -> str:
        return f"NodeView({self.node.name}: {registry.public_name(self.target)})"


# ---- the conversion -----------------------------------------------------------------------
@dataclasses.dataclass
class Conversion:
    """The result of converting one graph (or segment)."""

    inputs: list[tuple[int, Any]]  # (placeholder index, ember symbol) for runtime inputs
    outputs: list[Any]  # ember tensors, the FlowGraph's outputs
    output_spec: Any  # the output structure (see _spec)
    failures: dict[torch.fx.Node, ConversionFailure]
    converted: dict[torch.fx.Node, str]  # node -> how: converter name, 'folded', 'shape'
    captured: list[tuple[torch.Tensor, int]]  # weights and their versions
    weight_args: list[tuple[int, torch.Tensor]]  # placeholder index -> the weight it must be
    carriers: list[tuple[str, Any]]  # (symbol, ember symbol [s, 0]) binding free symbols
    scalars: list[tuple[Any, Any]]  # (0-d ember input, the SymInt/SymFloat it receives)
    values: dict[torch.fx.Node, Any]  # every node's ember value (for reports)
    symbol_sources: dict[str, tuple[int, int | None]]  # symbol -> (arg index, dim or None)
    seeds: list[Any]  # int64 [2] inputs of random operators, drawn on every call
    # symbol -> the SymInt it stands for, for sizes ember cannot spell (context.carried_size)
    derived_sizes: dict[str, Any] = dataclasses.field(default_factory=dict)

    def input_symbols(self) -> list[Any]:
        """The compiled graph's inputs, in order: the runtime tensors, the size carriers,
        the runtime scalars and the random seeds (phases/wrap.py feeds them)."""
        ins = [sym for _, sym in self.inputs] + [sym for _, sym in self.carriers]
        return ins + [sym for sym, _ in self.scalars] + list(self.seeds)

    def graph(self) -> Any:
        return ember.trace_from(self.outputs, self.input_symbols())


_RANDOM_WORDS = ("rand", "dropout", "normal", "bernoulli", "multinomial", "uniform", "empty")


# Conversions of one graph at most: each fixes at least one more symbol (SizesSpecialized).
_MAX_SPECIALIZATIONS = 16


class FxConverter:
    def __init__(
        self,
        gm: torch.fx.GraphModule,
        example_inputs: list[Any],
        settings: Settings,
        *,
        keep_going: bool = False,
    ) -> None:
        self.gm = gm
        self.examples = list(example_inputs)
        self.settings = settings
        self.keep_going = keep_going
        self.forced = forced_keys(settings.torch_executed_ops)
        self.unified: dict[str, str] = {}  # kept when the conversion starts again
        self._reset()

    def _reset(self) -> None:
        self.env: dict[torch.fx.Node, Any] = {}
        self.failures: dict[torch.fx.Node, ConversionFailure] = {}
        self.converted: dict[torch.fx.Node, str] = {}
        self.inputs: list[tuple[int, Any]] = []
        self.weight_args: list[tuple[int, torch.Tensor]] = []
        self.symbol_sources: dict[str, tuple[int, int | None]] = {}
        self.module_converters: dict[int, Any] = {}

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> Conversion:
        """The graph's conversion; again from the start each time a converter fixes
        symbolic sizes (SizesSpecialized: each time at least one symbol fewer)."""
        for _ in range(_MAX_SPECIALIZATIONS):
            try:
                return self._run_once()
            except SizesSpecialized:
                self._reset()
        raise ConversionFailure("error", f"sizes were specialized more than "
                                f"{_MAX_SPECIALIZATIONS} times in one conversion")

    def _run_once(self) -> Conversion:
        with conversion_context(self.settings) as ctx:
            ctx.symbol_sources = self.symbol_sources
            ctx.unified = self.unified
            self._symbol_inputs(ctx.symints, ctx.dim_symbols)
            placeholder_index = 0
            output_node = None
            for node in self.gm.graph.nodes:
                ctx.node = node
                if node.op == "placeholder":
                    example = self.examples[placeholder_index] if placeholder_index < len(
                        self.examples) else None
                    self.env[node] = self._placeholder(node, placeholder_index, example)
                    placeholder_index += 1
                elif node.op == "output":
                    output_node = node
                else:
                    self._call(node)
            ctx.node = None
            outputs: list[Any] = []
            spec = None
            carriers: list[tuple[str, Any]] = []
            if not self.failures:
                spec = self._spec(output_node.args[0] if output_node else None, outputs)
                carriers = self._carriers(outputs, list(ctx.scalars), list(ctx.seeds),
                                          ctx.derived_sizes)
            return Conversion(
                inputs=self.inputs,
                outputs=outputs,
                output_spec=spec,
                failures=self.failures,
                converted=self.converted,
                captured=list(ctx.captured),
                weight_args=self.weight_args,
                carriers=carriers,
                scalars=list(ctx.scalars),
                values=self.env,
                symbol_sources=self.symbol_sources,
                seeds=list(ctx.seeds),
                derived_sizes=dict(ctx.derived_sizes),
            )

    def _symbol_inputs(self, symints: dict[str, Any], dims: set[str]) -> None:
        """The symbols the graph's inputs carry (SymInt arguments, tensor sizes that are one
        symbol), known before any input is converted: an input sized by an expression of
        them (4*s0, a conv's output length) keeps the expression (see input_dim). Each
        one's SymInt goes to `symints` (for specialized_size), and the names of the tensors'
        sizes to `dims`."""
        for index, node in enumerate(self.gm.graph.find_nodes(op="placeholder")):
            example = self.examples[index] if index < len(self.examples) else None
            meta = expected_value(node)
            value = meta if meta is not None else example
            if isinstance(value, torch.SymInt) and getattr(value.node.expr, "is_Symbol", False):
                self.symbol_sources.setdefault(str(value.node.expr), (index, None))
                symints.setdefault(str(value.node.expr), value)
            elif isinstance(value, (torch.SymFloat, torch.SymBool)) and getattr(
                    value.node.expr, "is_Symbol", False):
                symints.setdefault(str(value.node.expr), value)
            elif isinstance(value, torch.Tensor) and value.dtype in TORCH_TO_EMBER:
                for axis, d in enumerate(value.shape):
                    if isinstance(d, torch.SymInt) and getattr(d.node.expr, "is_Symbol", False):
                        self.symbol_sources.setdefault(str(d.node.expr), (index, axis))
                        symints.setdefault(str(d.node.expr), d)
                        dims.add(str(d.node.expr))
            # A number Dynamo passes as a 0-d tensor and the graph reads with .item() (a
            # float argument, not specialized): its symbol is that tensor's value on each
            # call, so sizes computed from it (interpolate's floor(in * scale)) are too.
            if isinstance(value, torch.Tensor) and value.dim() == 0:
                for user in node.users:
                    read = expected_value(user)
                    if _reads_item(user) and isinstance(
                            read, (torch.SymInt, torch.SymFloat)) and getattr(
                            read.node.expr, "is_Symbol", False):
                        self.symbol_sources.setdefault(str(read.node.expr), (index, None))
                        symints.setdefault(str(read.node.expr), read)

    def _placeholder(self, node: torch.fx.Node, index: int, example: Any) -> Any:
        meta = expected_value(node)
        value = meta if meta is not None else example
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            if getattr(value.node.expr, "is_Symbol", False):
                self.symbol_sources.setdefault(str(value.node.expr), (index, None))
            self.converted[node] = "shape"
            return value
        if not isinstance(value, torch.Tensor):
            self.converted[node] = "value"
            return example if example is not None else value
        real = example if isinstance(example, torch.Tensor) and not is_fake(example) else None
        if node.meta.get("ember_mutated"):
            real = None  # the graph updates it: a runtime input, never a constant
        if real is not None and is_weight_placeholder(node, real):
            self.weight_args.append((index, real))
            self.converted[node] = "weight"
            return weight_to_ember(real)
        if real is not None and real.dim() == 0 and is_module_attribute(node):
            self.weight_args.append((index, real))
            self.converted[node] = "weight"
            return weight_to_ember(real)
        complex_input = value.dtype.is_complex and value.dtype in (torch.complex64,
                                                                    torch.complex128)
        dtype = complex_values.part_dtype(value.dtype) if complex_input else TORCH_TO_EMBER.get(
            value.dtype)
        if dtype is None:
            return self._fail(node, ConversionFailure("value", f"ember has no dtype {value.dtype}"))
        try:
            shape = [input_dim(d) for d in value.shape] + ([2] if complex_input else [])
        except ConversionFailure as e:
            return self._fail(node, e)
        for axis, d in enumerate(shape):
            if isinstance(d, str) and d.isidentifier():
                self.symbol_sources.setdefault(d, (index, axis))
        sym = ember.symbol(shape, dtype, name=node.name)
        self.inputs.append((index, sym))
        self.converted[node] = "input"
        if complex_input:  # fed as torch.view_as_real (phases/wrap.py)
            return complex_values.from_stacked(sym)
        low = self.settings.low_precision
        if low and dtype == "float32":
            return ember.ops.cast(sym, low)
        return sym

    def _fail(self, node: torch.fx.Node, failure: ConversionFailure) -> Any:
        if not self.keep_going:
            raise failure
        self.failures[node] = failure
        return self._stand_in(node)

    def _stand_in(self, node: torch.fx.Node) -> Any:
        """A value standing for an unconverted node so that later nodes can still be tried."""

        def make(v: Any) -> Any:
            if isinstance(v, torch.Tensor):
                pair = v.dtype in (torch.complex64, torch.complex128)
                try:
                    shape = [input_dim(d) for d in v.shape]
                    dtype = complex_values.part_dtype(v.dtype) if pair else ember_dtype(v.dtype)
                    sym = ember.symbol(shape, dtype, name=node.name)
                except ConversionFailure:
                    return _OPAQUE
                return ComplexValue(sym, sym) if pair else sym
            if isinstance(v, (tuple, list)):
                return type(v)(make(x) for x in v)
            return v if v is not None else _OPAQUE

        return make(expected_value(node))

    # -- call nodes ---------------------------------------------------------------------------
    def _call(self, node: torch.fx.Node) -> None:
        try:
            value = self._convert(node)
        except ConversionFailure as failure:
            self.env[node] = self._fail(node, failure)
            return
        self.env[node] = value

    def _convert(self, node: torch.fx.Node) -> Any:
        if node.op == "get_attr":
            attr = fetch_attr(self.gm, node.target)
            self.converted[node] = "weight"
            return weight_to_ember(attr) if isinstance(attr, torch.Tensor) else attr
        if node.meta.get("ember_writeback"):
            raise ConversionFailure("forced", "writes a mutated graph input back")
        if not node.users and expected_value(node) is None and node.op != "call_method":
            self.converted[node] = "unused"
            return None  # a call whose result nobody reads (logging, export's input guards)
        if is_forced(self.gm, node, self.forced):
            raise ConversionFailure("forced", "listed in torch_executed_ops")
        args, kwargs = self._values(node)
        meta = expected_value(node)
        if self._foldable(node, args, kwargs):
            self.converted[node] = "folded"
            return self._fold(node, args, kwargs)
        if is_shape_value(meta) and (not _has_symbolic_tensor((args, kwargs))
                                     or node.target in _SIZE_QUERIES):
            self.converted[node] = "shape"
            return meta
        if isinstance(meta, bool) and not any(
                isinstance(v, ember.Tensor) for v in _leaves((args, kwargs))):
            # a test of sizes that Dynamo decided (not (s0 == s0)): its traced answer
            self.converted[node] = "shape"
            return meta
        empty = _empty_result(meta)
        if empty is not None:
            self.converted[node] = "empty"
            return empty
        kind, key = node_target(self.gm, node)
        result, how = self._apply_converter(node, kind, key, args, kwargs)
        result = self._check_result(node, result, meta)
        self.converted[node] = how
        return result

    def _values(self, node: torch.fx.Node) -> tuple[tuple, dict]:
        def lookup(n: torch.fx.Node) -> Any:
            v = self.env[n]
            if v is _OPAQUE or _contains_opaque(v):
                raise ConversionFailure("value", f"its input {n.name} has no ember value")
            return v

        args = torch.fx.node.map_arg(node.args, lookup)
        kwargs = torch.fx.node.map_arg(node.kwargs, lookup)
        return args, kwargs

    def _apply_converter(
        self, node: torch.fx.Node, kind: str, key: Any, args: tuple, kwargs: dict
    ) -> tuple[Any, str]:
        candidates = registry.candidates_for(kind, key)
        if not candidates:
            raise ConversionFailure("unmapped", "no converter is registered")
        dynamic = is_dynamic(node)
        has_complex = contains_complex((args, kwargs))
        tried: list[str] = []
        signatures: list[str] = []
        for conv, form in candidates:
            a, k, view = node.args, node.kwargs, node
            va, vk = args, kwargs
            if form == "aten":
                overload = registry.aten_form(kind, key) or registry.aten_form(
                    "method", getattr(key, "__name__", key))
                a, k = registry.to_aten_arguments(overload, a, k)
                va, vk = registry.to_aten_arguments(overload, va, vk)
                view = NodeView(node, overload, a, k)
            if conv.bind(a, k) is None:
                signatures.append(conv.describe())
                continue
            if dynamic and not conv.supports_dynamic_shapes:
                tried.append(f"{conv.name}: does not support dynamic shapes")
                continue
            if has_complex and not conv.complex_inputs:
                tried.append(f"{conv.name}: takes no complex tensors")
                continue
            try:
                ok = conv.accepts(view, self.settings)
            except Exception as e:  # a validator's bug must not break compilation
                tried.append(f"{conv.name}: its validator raised {type(e).__name__}: {e}")
                continue
            if not ok:
                tried.append(f"{conv.name}: its capability_validator returned False")
                continue
            return self._invoke(conv, node, va, vk), conv.name
        if not tried:
            listing = "\n".join(f"    {s}" for s in signatures)
            raise ConversionFailure(
                "signature",
                f"the call {call_text(node)} matches no converter's signature; the "
                f"converters take:\n{listing}",
            )
        reasons = "; ".join(tried + [f"{s}: signature does not match" for s in signatures])
        raise ConversionFailure("rejected", f"no converter accepted the call ({reasons})")

    def _invoke(self, conv: registry.Converter, node: torch.fx.Node, args: tuple,
                kwargs: dict) -> Any:
        try:
            if conv.kind == "module":
                module = fetch_attr(self.gm, node.target)
                key = (id(module), id(conv))
                instance = self.module_converters.get(key)
                if instance is None:
                    instance = conv.fn(module)
                    self.module_converters[key] = instance
                return instance(*args, **kwargs)
            return conv.fn(*args, **kwargs)
        except (ConversionFailure, SizesSpecialized):
            raise
        except Exception as e:
            raise ConversionFailure(
                "error", f"converter {conv.name} raised {type(e).__name__}: {e}"
            ) from e

    def _check_result(self, node: torch.fx.Node, result: Any, meta: Any) -> Any:
        """Matches the converter's result against Dynamo's record: shapes must agree, dtypes
        are cast to torch's when they differ, Python numbers become constants."""
        if meta is None:
            return result
        if isinstance(meta, torch.Tensor) and meta.dtype.is_complex:
            return complex_values.check_result(result, meta, check_shape)
        if isinstance(meta, torch.Tensor):
            if isinstance(result, (int, float, bool)) and not isinstance(result, ember.Tensor):
                result = ember.asarray(result, dtype=ember_dtype(meta.dtype))
                result = ember.ops.reshape(result, [sym_dim(d) for d in meta.shape])
            if not isinstance(result, ember.Tensor):
                raise ConversionFailure(
                    "mismatch", f"the converter returned {type(result).__name__}, torch a tensor")
            check_shape(result, meta)
            result = refine_known_dims(result, meta)
            want = ember_dtype(meta.dtype)
            if str(result.dtype) != want:
                result = ember.ops.cast(result, want)
            return result
        if isinstance(meta, (tuple, list)) and isinstance(result, (tuple, list)):
            if len(meta) != len(result):
                raise ConversionFailure(
                    "mismatch", f"the converter returned {len(result)} values, torch {len(meta)}")
            return type(result)(
                self._check_result(node, r, m) for r, m in zip(result, meta, strict=True))
        return result

    # -- FX-level constant folding ---------------------------------------------------------
    def _foldable(self, node: torch.fx.Node, args: tuple, kwargs: dict) -> bool:
        if node.op == "call_module":
            return False
        leaves = _leaves((args, kwargs))
        has_const_tensor = False
        for v in leaves:
            if isinstance(v, ember.Tensor):
                if v.is_symbolic and _empty_example(v) is None:
                    return False
                has_const_tensor = True  # a constant, or empty: no data to wait for
            elif isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                if sym_dim_free(v):
                    return False
        if not has_const_tensor and (not is_creation(node) or is_large_fill(node)):
            return False
        if _has_symbolic_shape(expected_value(node)):
            # torch.zeros(x.size()): the sizes reach it as ember's size names, and a result
            # whose shape is known only at run time is no constant.
            return False
        name = getattr(node.target, "__name__", str(node.target))
        if any(w in name for w in _RANDOM_WORDS) or node.target in INPLACE_OPERATORS:
            return False
        if name.endswith("_") and not name.endswith("__"):
            return False
        return True

    def _fold(self, node: torch.fx.Node, args: tuple, kwargs: dict) -> Any:
        def to_torch(v: Any) -> Any:
            if isinstance(v, ember.Tensor) and v.is_symbolic:  # empty (_foldable)
                return _empty_example(v)
            if isinstance(v, (ember.Tensor, ComplexValue)):
                return v.torch()
            if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                return v.node.pytype(v.node.expr)
            return v

        targs = torch.fx.node.map_aggregate(args, to_torch)
        tkwargs = torch.fx.node.map_aggregate(kwargs, to_torch)
        try:
            with torch.no_grad():
                if node.op == "call_method":
                    out = getattr(targs[0], node.target)(*targs[1:], **tkwargs)
                else:
                    out = node.target(*targs, **tkwargs)
        except Exception as e:
            raise ConversionFailure("error", f"folding a constant failed: {e}") from e

        def back(v: Any) -> Any:
            if isinstance(v, torch.Tensor) and v.is_complex():
                return complex_values.constant(v)
            if isinstance(v, torch.Tensor):
                return weight_to_ember(v)
            if isinstance(v, (tuple, list)):
                return type(v)(back(x) for x in v)
            return v

        return back(out)

    # -- outputs ------------------------------------------------------------------------------
    def _spec(self, arg: Any, outputs: list[Any]) -> Any:
        """The output structure: ('out', k) an ember output; ('arg', i) a graph input passed
        through; ('const', tensor); ('sym', SymInt); ('item', spec) a Python number read from
        a 0-d result; ('value', v); tuples/lists of specs."""
        if isinstance(arg, torch.fx.Node):
            value = self.env.get(arg)
            if arg in self.failures:
                raise self.failures[arg]
            if arg.op == "placeholder":
                index = list(self.gm.graph.find_nodes(op="placeholder")).index(arg)
                return ("arg", index)
            meta = expected_value(arg)
            return self._spec_value(value, meta, outputs)
        if isinstance(arg, (tuple, list)):
            return (type(arg), [self._spec(a, outputs) for a in arg])
        return ("value", arg)

    def _spec_value(self, value: Any, meta: Any, outputs: list[Any]) -> Any:
        if isinstance(value, ember.Tensor) and isinstance(meta, (torch.SymInt, torch.SymFloat,
                                                                 torch.SymBool)):
            return ("item", self._spec_value(value, None, outputs))
        if isinstance(value, ComplexValue):
            if not value.is_symbolic:
                return ("const", value.torch())
            return ("complex", self._spec_value(value.stacked(), None, outputs))
        if isinstance(value, ember.Tensor):
            if not value.is_symbolic:
                return ("const", value.torch())
            want = TORCH_TO_EMBER.get(meta.dtype) if isinstance(meta, torch.Tensor) else None
            if want and str(value.dtype) != want:
                value = ember.ops.cast(value, want)
            for i, o in enumerate(outputs):
                if o is value:
                    return ("out", i)
            outputs.append(value)
            return ("out", len(outputs) - 1)
        if isinstance(value, (tuple, list)):
            metas = meta if isinstance(meta, (tuple, list)) and len(meta) == len(value) else (
                [None] * len(value))
            return (type(value), [
                self._spec_value(v, m, outputs) for v, m in zip(value, metas, strict=True)])
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return ("sym", value)
        return ("value", value)

    def _carriers(self, outputs: list[Any], scalars: list[tuple[Any, Any]], seeds: list[Any],
                  derived: dict[str, Any]) -> list[tuple[str, Any]]:
        """Symbols used in the graph's shapes (outputs, and values inside such as an arange
        of a symbolic length) that no runtime tensor input carries, the graph's own sizes
        (`derived`) included: each gets an input of shape [symbol, 0] (an empty tensor at
        run time)."""
        bound = set()
        for _, sym in self.inputs:
            bound.update(d for d in sym.shape if isinstance(d, str))
        needed = set()
        values = list(outputs) + [v for v in _leaves(list(self.env.values()))
                                  if isinstance(v, ember.Tensor) and v.is_symbolic]
        for t in values:
            for d in t.shape:
                if isinstance(d, str):
                    needed.update(_symbol_names(d))
        # Symbols that only operators' attributes hold (a slice from a symbolic offset).
        inputs = [sym for _, sym in self.inputs] + [sym for sym, _ in scalars] + seeds
        try:
            needed.update(ember.trace_from(outputs, inputs).symbols)
        except ember.EmberError:
            pass  # the build reports what cannot be bound
        carriers = []
        for name in sorted(needed - bound):
            if name in self.symbol_sources or name in derived:
                carriers.append((name, ember.symbol([name, 0], "float32", name=f"{name}_size")))
        return carriers


def _empty_result(meta: Any) -> Any:
    """The result of a call whose every output is a tensor without elements (a dimension
    that is 0 whatever the symbols): it has no values to compute, so it converts whatever the
    operator (an inverse of 0 x 0 matrices, a topk with k = 0). None otherwise."""
    metas = meta if isinstance(meta, (tuple, list)) else [meta]
    if not metas or not all(isinstance(m, torch.Tensor) and m.dtype in TORCH_TO_EMBER
                            and any(isinstance(d, int) and d == 0 for d in m.shape)
                            for m in metas):
        return None
    empties = []
    for m in metas:
        try:
            dims = [sym_size(d) for d in m.shape]
        except ConversionFailure:
            return None
        if all(isinstance(d, int) for d in dims):
            empties.append(weight_to_ember(torch.empty(dims, dtype=m.dtype)))
        else:
            empties.append(ember.ops.full(dims, 0.0, TORCH_TO_EMBER[m.dtype]))
    return type(meta)(empties) if isinstance(meta, (tuple, list)) else empties[0]


class _Opaque:
    def __repr__(self) -> str:
        return "<no ember value>"


_OPAQUE = _Opaque()


def _contains_opaque(v: Any) -> bool:
    if isinstance(v, (tuple, list)):
        return any(x is _OPAQUE or _contains_opaque(x) for x in v)
    return False


# x.size(d) as torch's export traces it: its value is the SymInt Dynamo recorded (a graph
# input's size), as Dynamo passes such sizes to graphs it compiles.
_SIZE_QUERIES = (torch.ops.aten.sym_size.int,)


def _symbol_names(size: str) -> set[str]:
    """The symbols a size (a name or an expression ember printed) uses."""
    return set(re.findall(r"[A-Za-z_]\w*", size)) - {"min", "max"}


def _has_symbolic_shape(meta: Any) -> bool:
    """Dynamo's record of a result is a tensor (or several) with a size known only at run
    time."""
    return any(isinstance(t, torch.Tensor) and any(
        isinstance(d, torch.SymInt) and sym_dim_free(d) for d in t.shape) for t in _leaves(meta))


def _empty_example(v: Any) -> torch.Tensor | None:
    """For a tensor with a dimension that is 0 in every call (a static 0), an empty torch
    tensor of its traced shape: what an operator computes from it does not depend on its
    values, so torch can compute it at compile time (where the result's shape is static:
    _foldable). None otherwise."""
    if 0 not in v.shape:
        return None
    sizes = [traced_size(d) for d in v.shape]
    if any(d is None for d in sizes):
        return None
    return torch.empty(sizes, dtype=torch_dtype(v.dtype))


def _has_symbolic_tensor(v: Any) -> bool:
    """A value computed from tensor data (x.item() of a graph input), not from sizes."""
    return any(isinstance(x, ember.Tensor) and x.is_symbolic for x in _leaves(v))


def _leaves(v: Any) -> list[Any]:
    out: list[Any] = []

    def walk(x: Any) -> None:
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, slice):
            for y in (x.start, x.stop, x.step):
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)
        elif isinstance(x, ComplexValue):
            walk(x.real)
            walk(x.imag)
        else:
            out.append(x)

    walk(v)
    return out
