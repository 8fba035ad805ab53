"""The conversion in progress, as converters see it: the FX node being converted and what
Dynamo recorded for it, dtype and size conversions between torch and ember, weights as ember
constants that share their memory, and the error a converter raises for a call it cannot
convert. The interpreter (interpreter.py) sets the context up; converters only read it."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import re
import weakref
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx

import ember
from ember.torch.config import Settings

__all__ = [
    "ConversionFailure",
    "conversion_context",
    "current_node",
    "derived_constant",
    "ember_dtype",
    "expected_value",
    "guarded_int",
    "input_dim",
    "may_be_negative",
    "low_precision",
    "random_seed",
    "runtime_scalar",
    "sym_dim",
    "sym_size",
    "sym_dim_free",
    "torch_dtype",
    "weight_to_ember",
]

TORCH_TO_EMBER = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float64: "float64",
    torch.int8: "int8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
    torch.bool: "bool",
}
_EMBER_TO_TORCH = {v: k for k, v in TORCH_TO_EMBER.items()}


class ConversionFailure(Exception):
    """Why one node cannot be converted. kind: 'unmapped' (no converter for the target),
    'signature' (the call binds to no converter's signature), 'rejected' (no converter's
    validator accepted it), 'forced' (torch_executed_ops), 'error' (the converter raised),
    'mismatch' (the result differs from Dynamo's shape or dtype), 'value' (an input ember
    cannot represent)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclasses.dataclass
class _Context:
    settings: Settings
    node: torch.fx.Node | None = None
    captured: list[tuple[torch.Tensor, int]] = dataclasses.field(default_factory=list)
    by_tensor: dict[int, Any] = dataclasses.field(default_factory=dict)
    derived: dict[Any, Any] = dataclasses.field(default_factory=dict)
    # symbol name -> (argument index, dim or None for a SymInt/SymFloat argument)
    symbol_sources: dict[str, tuple[int, int | None]] = dataclasses.field(default_factory=dict)
    # runtime scalars: (0-d ember input, the SymInt/SymFloat whose value it receives)
    scalars: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)
    # random seeds: int64 [2] inputs, each drawn from torch's generator on every call
    seeds: list[Any] = dataclasses.field(default_factory=list)


_ACTIVE: contextvars.ContextVar[_Context | None] = contextvars.ContextVar(
    "ember_torch_conversion", default=None
)


def current_node() -> torch.fx.Node | None:
    """The FX node being converted (for converters that need its metadata)."""
    ctx = _ACTIVE.get()
    return ctx.node if ctx else None


def expected_value(node: torch.fx.Node | None = None) -> Any:
    """What Dynamo recorded for a node's result (a FakeTensor, SymInt, tuple, ...), or None."""
    node = node if node is not None else current_node()
    if node is None:
        return None
    meta = node.meta
    return meta.get("example_value", meta.get("val"))


def low_precision() -> str | None:
    ctx = _ACTIVE.get()
    return ctx.settings.low_precision if ctx else None


def ember_dtype(dtype: torch.dtype | str | None) -> str:
    """The ember dtype name for a torch dtype; float32 becomes the low precision when
    use_fp16 or use_bf16 is on."""
    if dtype is None:
        dtype = torch.get_default_dtype()
    if isinstance(dtype, str):
        name = dtype
    else:
        if dtype not in TORCH_TO_EMBER:
            raise ConversionFailure("value", f"ember has no dtype for {dtype}")
        name = TORCH_TO_EMBER[dtype]
    low = low_precision()
    return low if (low and name == "float32") else name


def torch_dtype(name: Any) -> torch.dtype:
    return _EMBER_TO_TORCH[str(name)]


def sym_dim(value: Any) -> int | str:
    """A size as ember takes it: an int, or the name of a symbolic dimension. A size that is
    an expression of several symbols cannot be expressed (ConversionFailure)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, torch.SymInt):
        node = value.node
        as_int = node.maybe_as_int() if hasattr(node, "maybe_as_int") else None
        if as_int is not None:
            return int(as_int)
        known = guarded_int(value)
        if known is not None:
            return known
        expr = node.expr
        if getattr(expr, "is_Symbol", False):
            return str(expr)
        raise ConversionFailure(
            "value", f"the size {expr} is an expression of symbols; ember shapes take constants "
            "and single symbols"
        )
    if isinstance(value, str):
        if value.isidentifier():
            return value
        raise ConversionFailure("value", f"the size {value} is an expression of symbols")
    if hasattr(value, "__index__"):
        return int(value)
    raise ConversionFailure("value", f"{value!r} is not a size")


def sym_size(value: Any) -> int | str:
    """A size as ember shapes and bounds take it: an int, a symbol name, or a size
    expression of symbols as text ("(s0 * 2)", "(s1 // 4)") that ember parses; sizes torch
    knows at compile time stay ints. A size ember cannot spell is a ConversionFailure."""
    if isinstance(value, torch.SymInt):
        node = value.node
        as_int = node.maybe_as_int() if hasattr(node, "maybe_as_int") else None
        if as_int is not None:
            return int(as_int)
        known = guarded_int(value)
        if known is not None:
            return known
        return size_text(node.expr)
    if isinstance(value, str):
        return value
    return sym_dim(value)


def size_text(expr: Any) -> int | str:
    """A sympy integer expression (a SymInt's) in ember's size syntax."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return str(expr)
    return _size_text(expr)


def _size_text(expr: Any) -> str:
    name = type(expr).__name__
    args = [str(size_text(a)) for a in expr.args]
    if expr.is_Integer or expr.is_Symbol:
        return str(size_text(expr))
    if name == "Add":
        return "(" + " + ".join(args) + ")"
    if name == "Mul" and all(a.is_Integer or not a.is_number for a in expr.args):
        return "(" + " * ".join(args) + ")"
    if name == "Pow" and expr.args[1].is_Integer and int(expr.args[1]) > 0:
        return "(" + " * ".join([args[0]] * int(expr.args[1])) + ")"
    if name == "FloorDiv":
        return f"({args[0]} // {args[1]})"
    if name == "CeilDiv":
        return f"(({args[0]} + {args[1]} - 1) // {args[1]})"
    if name in ("Mod", "PythonMod"):
        return f"({args[0]} % {args[1]})"
    if name in ("Min", "Max"):
        out = args[0]
        for a in args[1:]:
            out = f"{name.lower()}({out}, {a})"
        return out
    raise ConversionFailure(
        "value", f"the size {expr} uses {name}, which ember's size expressions do not have "
        "(they have + - * // % min max)")


def input_dim(value: Any) -> int | str:
    """A dimension of a tensor entering a graph: like sym_dim, but a size that is an
    expression of symbols (4*s1) is that expression in ember's syntax when an input of the
    graph carries each of its symbols (ember checks it at run time, and it unifies with the
    sizes computed inside the graph); otherwise it gets a symbol of its own, bound from the
    tensor at run time (named after the expression, so equal expressions share it)."""
    try:
        return sym_dim(value)
    except ConversionFailure:
        if not isinstance(value, torch.SymInt):
            raise
    expr = value.node.expr
    ctx = _ACTIVE.get()
    if ctx is not None and all(str(s) in ctx.symbol_sources for s in expr.free_symbols):
        with contextlib.suppress(ConversionFailure):
            return size_text(expr)
    return "e_" + re.sub(r"\W+", "_", str(expr)).strip("_")


def runtime_scalar(value: Any, dtype: str) -> Any:
    """A 0-d ember tensor of `dtype` holding a SymInt/SymFloat known only at run time (a
    size, a float argument): the compiled graph gets it as an extra input, computed from the
    graph's arguments on each call."""
    ctx = _ACTIVE.get()
    expr = getattr(getattr(value, "node", None), "expr", None)
    if ctx is None or expr is None:
        raise ConversionFailure("value", f"the scalar {value} is known only at run time")
    missing = [str(s) for s in expr.free_symbols if str(s) not in ctx.symbol_sources]
    if missing:
        raise ConversionFailure(
            "value", f"the scalar {value} depends on {', '.join(missing)}, which no graph "
            "input carries (a value read from a tensor's data)")
    for sym, known in ctx.scalars:
        if str(known.node.expr) == str(expr) and str(sym.dtype) == dtype:
            return sym
    kind = "float64" if isinstance(value, torch.SymFloat) else "int64"
    sym = ember.symbol([], kind, name=f"scalar_{len(ctx.scalars)}")
    ctx.scalars.append((sym, value))
    converted = sym if kind == dtype else ember.ops.cast(sym, dtype)
    return converted


def random_seed() -> Any:
    """An int64 [2] ember input holding (seed, offset) for one random operator of the graph
    (ember.ops.random_uniform): the compiled callable draws it from torch's default CPU
    generator on every call (phases/wrap.py), so torch.manual_seed makes a run repeatable
    and successive calls draw different numbers. Each random operator gets its own."""
    ctx = _ACTIVE.get()
    if ctx is None:
        raise ConversionFailure("value", "random numbers need a graph being converted")
    sym = ember.symbol([2], "int64", name=f"random_seed_{len(ctx.seeds)}")
    ctx.seeds.append(sym)
    return sym


def tensor_version(tensor: torch.Tensor) -> int | None:
    """The tensor's in-place version counter; None for inference tensors (made under
    torch.inference_mode), which have none and cannot be updated outside it."""
    if tensor.is_inference():
        return None
    return tensor._version


def weight_to_ember(tensor: torch.Tensor) -> Any:
    """An ember constant sharing the memory of a torch tensor (a contiguous copy only when
    the tensor is not contiguous, a converted copy only in low precision). The tensor and
    its version are remembered, so a compiled graph notices when the weights change."""
    ctx = _ACTIVE.get()
    key = id(tensor)
    if ctx is not None and key in ctx.by_tensor:
        return ctx.by_tensor[key]
    if ctx is not None:
        ctx.captured.append((tensor, tensor_version(tensor)))
    t = tensor.detach()
    if t.dtype not in TORCH_TO_EMBER:
        raise ConversionFailure("value", f"ember has no dtype for {t.dtype}")
    low = low_precision()
    if low and t.dtype == torch.float32:
        t = t.to(_EMBER_TO_TORCH[low])
    if not t.is_contiguous():
        t = t.contiguous()
    if t.device.type != "cpu":
        raise ConversionFailure("value", f"a tensor on {t.device}: ember runs on the CPU")
    out = ember.from_torch(t)
    if ctx is not None:
        ctx.by_tensor[key] = out
    return out


def derived_constant(key: Any, make: Any) -> Any:
    """A constant computed from other constants once per conversion (e.g. a transposed
    weight shared by several calls)."""
    ctx = _ACTIVE.get()
    if ctx is None:
        return make()
    if key not in ctx.derived:
        ctx.derived[key] = make()
    return ctx.derived[key]


@contextlib.contextmanager
def conversion_context(settings: Settings) -> Iterator[_Context]:
    ctx = _Context(settings=settings)
    token = _ACTIVE.set(ctx)
    try:
        yield ctx
    finally:
        _ACTIVE.reset(token)


def sym_dim_free(v: Any) -> bool:
    """True when a SymInt/SymFloat has free symbols (its value is not known now). A SymInt
    that Dynamo's guards fix to one value (guarded_int) is known."""
    try:
        free = bool(v.node.expr.free_symbols)
    except AttributeError:
        return False
    return free and guarded_int(v) is None


_GUARDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # shape env -> {expr: value}


def may_be_negative(value: Any) -> bool:
    """Whether a SymInt known only at run time (a scalar argument such as a slice start or a
    diagonal offset) can be negative in a call that reuses the graph. ember binds symbols as
    sizes, which are never negative: such a value has to reach the graph another way."""
    if not isinstance(value, torch.SymInt) or not sym_dim_free(value):
        return False
    try:
        lower = value.node.shape_env.bound_sympy(value.node.expr).lower
        return not bool(lower >= 0)
    except Exception:  # no range known
        return True


def guarded_int(value: Any) -> int | None:
    """The value of a symbolic size that Dynamo's guards fix to one value, else None.

    With dynamic shapes, a size such as ``s1`` or ``(s3 // 2)`` stays symbolic in the
    recorded shapes even when a guard made during tracing pins it (a ``view`` to fixed
    sizes, a broadcast against a constant size): every call that reaches this graph has
    that value, or Dynamo recompiles. The shape environment answers, from its replacements
    and the guards' axioms, whether the size equals the value it had when traced."""
    if not isinstance(value, torch.SymInt):
        return None
    node = value.node
    env = getattr(node, "shape_env", None)
    expr = getattr(node, "expr", None)
    if env is None or expr is None or not expr.free_symbols:
        return None
    try:
        cache = _GUARDED.setdefault(env, {})
    except TypeError:  # not weakly referenceable
        cache = {}
    key = str(expr)
    if key in cache:
        return cache[key]
    known: int | None = None
    try:
        import sympy

        simplified = env.simplify(expr)
        if simplified.is_Integer:
            known = int(simplified)
        else:
            hint = node.hint if getattr(node, "hint", None) is not None else None
            if hint is not None:
                proven = env._maybe_evaluate_static(sympy.Eq(simplified, int(hint)))
                if proven is not None and bool(proven):
                    known = int(hint)
    except Exception:  # the shape environment's API moved: treat the size as symbolic
        known = None
    cache[key] = known
    return known
