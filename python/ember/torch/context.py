"""The conversion in progress, as converters see it: the FX node being converted and what
Dynamo recorded for it, dtype and size conversions between torch and ember, weights as ember
constants that share their memory, and the error a converter raises for a call it cannot
convert. The interpreter (interpreter.py) sets the context up; converters only read it."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import re
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx

import ember
from ember.torch.config import Settings
from ember.torch.shape_guards import forget_guarded, guarded_int, sym_dim_free

__all__ = [
    "ConversionFailure",
    "SizesSpecialized",
    "carried_size",
    "conversion_context",
    "current_node",
    "derived_constant",
    "ember_dtype",
    "expected_value",
    "guards_allowed",
    "input_dim",
    "low_precision",
    "may_be_negative",
    "random_seed",
    "runtime_scalar",
    "same_size",
    "same_size_or_unify",
    "specialized_scalar",
    "specialized_size",
    "sym_dim",
    "sym_size",
    "symbol_name",
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


class SizesSpecialized(Exception):  # noqa: N818 (a signal, not an error)
    """A converter fixed symbols of the graph's inputs to their traced values (with Dynamo
    guards), or spelled one symbol as another (same_size_or_unify): the interpreter
    converts the graph again, where those sizes are constants or one symbol."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"symbolic sizes fixed by a guard: {', '.join(names)}")
        self.names = names


@dataclasses.dataclass
class _Context:
    settings: Settings
    node: torch.fx.Node | None = None
    captured: list[tuple[torch.Tensor, int]] = dataclasses.field(default_factory=list)
    by_tensor: dict[int, Any] = dataclasses.field(default_factory=dict)
    derived: dict[Any, Any] = dataclasses.field(default_factory=dict)
    # symbol name -> (argument index, dim or None for a SymInt/SymFloat argument)
    symbol_sources: dict[str, tuple[int, int | None]] = dataclasses.field(default_factory=dict)
    # sizes ember cannot spell (floor(0.6*s0)): symbol name -> the SymInt whose value the
    # compiled graph receives for it on each call (carried_size)
    derived_sizes: dict[str, torch.SymInt] = dataclasses.field(default_factory=dict)
    # symbol name -> a SymInt (SymFloat, SymBool) of the graph's inputs that is that symbol
    # (specialized_size, specialized_scalar)
    symints: dict[str, Any] = dataclasses.field(default_factory=dict)
    # the symbols that are sizes of the graph's input tensors
    dim_symbols: set[str] = dataclasses.field(default_factory=set)
    # symbol -> the symbol it is spelled as: sizes of different inputs that a converter
    # needs equal, checked by ember when the graph runs (same_size_or_unify)
    unified: dict[str, str] = dataclasses.field(default_factory=dict)
    # runtime scalars: (0-d ember input, the SymInt/SymFloat whose value it receives)
    scalars: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)
    # random seeds: int64 [2] inputs, each drawn from torch's generator on every call
    seeds: list[Any] = dataclasses.field(default_factory=list)
    # 0-d ember values that .item() read from a graph input: id -> (value, its SymFloat /
    # SymInt), for converters that need the number (fixed_number)
    item_reads: dict[int, tuple[Any, Any]] = dataclasses.field(default_factory=dict)


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


def traced_size(size: int | str) -> int | None:
    """The value an ember size has in the traced call: an int, or the example value of a
    symbol of the graph's inputs (read without adding a guard); None for an expression."""
    if isinstance(size, int):
        return size
    ctx = _ACTIVE.get()
    symint = ctx.symints.get(size) if ctx is not None else None
    hint = getattr(getattr(symint, "node", None), "hint", None)
    return hint if isinstance(hint, int) else None


def remember_item_read(value: Any, read: Any) -> None:
    """value (a 0-d ember tensor) is what .item() read: the SymFloat/SymInt `read`."""
    ctx = _ACTIVE.get()
    if ctx is not None:
        ctx.item_reads[id(value)] = (value, read)


def item_read(value: Any) -> Any:
    """The SymFloat/SymInt that value was read as by .item(), or None."""
    ctx = _ACTIVE.get()
    entry = ctx.item_reads.get(id(value)) if ctx is not None else None
    return entry[1] if entry is not None and entry[0] is value else None


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
            return symbol_name(expr)
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


def sym_size(value: Any, of_tensor: bool = False) -> int | str:
    """A size as ember shapes and bounds take it: an int, a symbol name, or a size
    expression of symbols as text ("(s0 * 2)", "(s1 // 4)") that ember parses; sizes torch
    knows at compile time stay ints. A size ember cannot spell is a ConversionFailure.
    of_tensor: the value is a dimension of a tensor torch made (never negative, whatever
    the ranges of its symbols)."""
    if isinstance(value, torch.SymInt):
        node = value.node
        as_int = node.maybe_as_int() if hasattr(node, "maybe_as_int") else None
        if as_int is not None:
            return int(as_int)
        known = guarded_int(value)
        if known is not None:
            return known
        carried = input_dim_symbol(node.expr)
        if carried is not None:
            return carried
        try:
            return size_text(node.expr)
        except ConversionFailure:
            return carried_size(value, of_tensor)
    if isinstance(value, str):
        return value
    return sym_dim(value)


def carried_size(value: torch.SymInt, of_tensor: bool = False) -> str:
    """A size that ember's size expressions cannot spell (floor(0.6*s0), an interpolated
    length): a symbol of its own, whose value the compiled graph receives on each call,
    computed from the graph's arguments (an empty [n, 0] tensor, as for the other symbols
    that no input tensor carries). Only for expressions of symbols that the graph's
    arguments carry; otherwise the ConversionFailure stands. of_tensor: see sym_size."""
    expr = value.node.expr
    ctx = _ACTIVE.get()
    missing = sorted(str(s) for s in expr.free_symbols
                     if ctx is None or str(s) not in ctx.symbol_sources)
    negative = not of_tensor and may_be_negative(value)
    if ctx is None or missing or not expr.free_symbols or negative:
        size_text(expr)  # raises the reason it cannot be spelled
        if negative:  # a bound, an offset: not a size ember can bind
            raise ConversionFailure("value", f"the value {expr} is known only at run time "
                                    "and may be negative")
        raise ConversionFailure("value", f"the size {expr} depends on {', '.join(missing)}, "
                                "which no graph input carries")
    name = expression_symbol(expr)
    ctx.derived_sizes.setdefault(name, value)
    return name


def expression_symbol(expr: Any) -> str:
    """The name of the symbol of its own that a size expression gets where the graph's inputs
    cannot spell it (input_dim, carried_size): the expression's symbols and numbers, then a
    digest of the whole, so that equal expressions share it and others never do (s53 - s27
    and s53 + s27 have the same symbols)."""
    text = str(expr)
    words = re.sub(r"\W+", "_", text).strip("_")
    return f"e_{words}_{hashlib.sha1(text.encode()).hexdigest()[:6]}"


def input_dim_symbol(expr: Any) -> str | None:
    """The symbol an input tensor's dimension got for this expression (input_dim), when one
    did: a size computed inside the graph that equals it is spelt the same."""
    ctx = _ACTIVE.get()
    name = expression_symbol(expr)
    return name if ctx is not None and name in ctx.symbol_sources else None


def size_text(expr: Any) -> int | str:
    """A sympy integer expression (a SymInt's) in ember's size syntax."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return symbol_name(expr)
    return _size_text(expr)


def symbol_name(symbol: Any) -> str:
    """The ember name of one of torch's size symbols: its own, or that of the symbol it was
    unified with (same_size_or_unify)."""
    ctx = _ACTIVE.get()
    name = str(symbol)
    return ctx.unified.get(name, name) if ctx is not None else name


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
    return expression_symbol(expr)


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


def specialized_scalar(value: Any) -> None:
    """For a converter that needs a SymInt/SymFloat/SymBool argument as a Python number (a
    norm's order, a dim, a correction it branches on): fixes each of its symbols to the
    traced value with a guard and raises SizesSpecialized, so the graph is converted again
    with the number known (one graph per value, as torch's decompositions do where they
    branch on it). Where no guard can be added, or a symbol is not one of the graph's
    inputs (a value read from a tensor), a ConversionFailure: the call runs eagerly."""
    ctx = _ACTIVE.get()
    names = sorted(str(s) for s in value.node.expr.free_symbols)
    if ctx is None or not _MAY_GUARD.get() or any(n not in ctx.symints for n in names):
        raise ConversionFailure("value", f"the scalar {value} is known only at run time")
    sizes = [n for n in names if n in ctx.dim_symbols]
    if sizes:  # a tensor's size: fixing it would compile the graph again for every size
        raise ConversionFailure("value", f"the scalar {value} is known only at run time (it "
                                f"depends on the tensor size {', '.join(sizes)})")
    for n in names:
        symbol = ctx.symints[n]
        symbol.node.pytype(symbol)  # int() / float() / bool(): a guard on the traced value
        forget_guarded(symbol.node.shape_env)
    raise SizesSpecialized(names)


# Whether converters may add guards to Dynamo's shape environment: only while the backend
# compiles inside Dynamo's call, before Dynamo builds the guards of the graph. A graph compiled
# later (at its first call: training, fake example inputs) must not add any, since they would
# never be checked.
_MAY_GUARD: contextvars.ContextVar[bool] = contextvars.ContextVar("ember_may_guard",
                                                                  default=False)


@contextlib.contextmanager
def guards_allowed() -> Iterator[None]:
    """Converters may specialize symbolic sizes (specialized_size) inside this block."""
    token = _MAY_GUARD.set(True)
    try:
        yield
    finally:
        _MAY_GUARD.reset(token)


def same_size(a: int | str, b: int | str) -> bool:
    """Whether two ember sizes are equal in every call that reaches this graph: the same
    text, or sizes the shape environment proves equal under Dynamo's guards. Dynamo gives
    each input dimension a symbol of its own unless their traced values are equal, and
    torch's shape checks (a source that must match its destination) add the guards that
    make two such symbols one."""
    if a == b:
        return True
    ctx = _ACTIVE.get()
    names = sorted(set(re.findall(r"[A-Za-z_]\w*", f"{a} {b}")) - {"min", "max"})
    if ctx is None or not names or any(n not in ctx.symints for n in names):
        return False
    import sympy

    table = {"min": sympy.Min, "max": sympy.Max,
             **{n: ctx.symints[n].node.expr for n in names}}
    env = ctx.symints[names[0]].node.shape_env
    try:
        diff = _env_expr(a, table) - _env_expr(b, table)
        if env.simplify(diff) == 0:
            return True
        return bool(env._maybe_evaluate_static(sympy.Eq(diff, 0)))
    except Exception:  # an expression sympy or the environment cannot decide: not proven
        return False


def _env_expr(size: int | str, table: dict[str, Any]) -> Any:
    """An ember size as the shape environment spells it: sympify reads ``a // b`` as
    floor(a / b), the environment's guards hold FloorDiv(a, b), and an equation between the
    two spellings is not proven."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv

    expr = sympy.sympify(str(size), locals=table)
    return expr.replace(lambda e: isinstance(e, sympy.floor),
                        lambda e: FloorDiv(*sympy.fraction(sympy.together(e.args[0]))))


def same_size_or_unify(a: int | str, b: int | str) -> bool:
    """same_size, or, for two symbols of the graph's inputs with equal traced values that
    torch did not guard equal (an index_add source against its destination, a loss target
    against its input: torch checks them when the kernel runs), a restart of the conversion
    (SizesSpecialized) with b spelled as a. The graph's inputs are then declared with one
    symbol, and ember checks that their sizes agree on every call (a call where they do not
    fails in ember and runs eagerly, where torch raises its own error). False otherwise."""
    if same_size(a, b):
        return True
    ctx = _ACTIVE.get()
    if ctx is not None and _MAY_GUARD.get() and isinstance(a, int) != isinstance(b, int):
        # a constant against a symbolic size (values broadcast to [.., 5]): torch needs the
        # symbol to have that value, so a guard costs no call a graph could serve
        size, value = (b, a) if isinstance(a, int) else (a, b)
        if _traced(size, ctx) == value:
            specialized_size(size, "a size that must equal a constant")  # raises
        return False
    if ctx is None or not isinstance(a, str) or not isinstance(b, str):
        return False
    if not (a.isidentifier() and b.isidentifier() and a in ctx.symints and b in ctx.symints):
        return False
    sa, sb = ctx.symints[a], ctx.symints[b]
    if not isinstance(sa, torch.SymInt) or not isinstance(sb, torch.SymInt):
        return False
    if sa.node.hint is None or sa.node.hint != sb.node.hint:
        return False
    # b is an input symbol of its own (an ember name is never one that is spelled as
    # another): spell it, and everything spelled as it, as a
    for name, target in list(ctx.unified.items()):
        if target == b:
            ctx.unified[name] = a
    ctx.unified[b] = a
    raise SizesSpecialized([b])


def _traced(size: int | str, ctx: _Context) -> int | None:
    """The value an ember size had in the traced call, from its symbols' hints (no guard),
    or None."""
    if isinstance(size, int):
        return size
    names = sorted(set(re.findall(r"[A-Za-z_]\w*", size)) - {"min", "max"})
    if any(n not in ctx.symints or ctx.symints[n].node.hint is None for n in names):
        return None
    import sympy

    try:
        return int(sympy.sympify(size, locals={"min": sympy.Min, "max": sympy.Max, **{
            n: sympy.Integer(int(ctx.symints[n].node.hint)) for n in names}}))
    except (TypeError, ValueError, sympy.SympifyError):
        return None


def specialized_size(size: int | str, what: str) -> int:
    """A size a converter needs at compile time (a convolution's kernel size, a weight's
    channel count): an int as it is; a symbolic one (a symbol or an expression of symbols of
    the graph's inputs) becomes the value it has in the traced call, and each of its symbols
    gets a guard, so that a call with another value compiles the graph again (as inductor
    does for a convolution's kernel size). Where no guard can be added (a graph compiled at
    its first call), a ConversionFailure: the call runs eagerly."""
    if isinstance(size, int):
        return size
    ctx = _ACTIVE.get()
    names = sorted(set(re.findall(r"[A-Za-z_]\w*", size)) - {"min", "max"})
    if ctx is None or not _MAY_GUARD.get() or any(n not in ctx.symints for n in names):
        raise ConversionFailure(
            "value", f"{what} is the symbolic size {size}; ember needs a constant here")
    values, new = {}, []
    for n in names:
        symint = ctx.symints[n]
        if guarded_int(symint) is None:
            new.append(n)
        values[n] = int(symint)  # guard_int: Dynamo checks the value on every call
        forget_guarded(symint.node.shape_env)  # the cache's answers have changed
    if new:  # convert again, with the graph's inputs sized by the fixed values
        raise SizesSpecialized(new)
    import sympy

    return int(sympy.sympify(size, locals={"min": sympy.Min, "max": sympy.Max, **{
        n: sympy.Integer(v) for n, v in values.items()}}))


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

