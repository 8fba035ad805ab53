"""The converter registry: which ember code converts which PyTorch operator.

A *target* is what an FX node calls:

- a function: ``torch.relu``, ``torch.nn.functional.relu``, ``operator.add``, or an ATen
  overload such as ``torch.ops.aten.gelu.default`` (``register_function``);
- a Tensor method: ``torch.Tensor.flatten`` or its name ``"flatten"`` (``register_method``);
- an ``nn.Module`` class: ``torch.nn.Linear`` (``register_module``, with a subclass of
  ``ModuleConverter``).

A target has a list of candidate converters. A converter may carry a
``capability_validator(node, settings) -> bool``, a ``priority`` (``HIGH`` candidates are
tried before ``STANDARD`` ones), ``supports_dynamic_shapes`` and ``complex_inputs`` (whether
it takes complex tensors, as ember.torch.complex_values.ComplexValue pairs). For each node the
candidates are tried in order and the first whose arguments bind, whose shapes it supports
and whose validator passes converts the node.

Registering without a priority installs the target's *default* converter, replacing the
previous default (the last registration takes effect). ``priority=HIGH`` puts a converter in
front of the others; ``priority=STANDARD`` appends it after them. ``remove`` takes
registrations out again.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import enum
import functools
import inspect
import operator
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

__all__ = [
    "HIGH",
    "STANDARD",
    "Converter",
    "ConverterPriority",
    "ConverterSignatureError",
    "ModuleConverter",
    "UnsupportedOperatorsError",
    "candidates_for",
    "converters",
    "public_name",
    "register_function",
    "register_method",
    "register_module",
    "remove",
]

GUIDE = "docs/add-operator-mapping.md"


def _user_error_base() -> type[Exception]:
    try:
        from ember import EmberError

        return EmberError
    except Exception:
        return RuntimeError


_EmberError = _user_error_base()


class UnsupportedOperatorsError(_EmberError, NotImplementedError):  # type: ignore[misc]
    """strict mode: operators ember cannot convert; the message lists all of them."""


class ConverterSignatureError(_EmberError, TypeError):  # type: ignore[misc]
    """A call whose arguments bind to none of its converters' signatures."""


class ConverterPriority(enum.IntEnum):
    STANDARD = 0
    HIGH = 1


HIGH = ConverterPriority.HIGH
STANDARD = ConverterPriority.STANDARD

_KINDS = ("function", "method", "module")


@dataclasses.dataclass(eq=False)
class Converter:
    """One registration: a converter for one target."""

    kind: str  # 'function' | 'method' | 'module'
    key: Any  # the function, the method name, or the module class
    fn: Any  # a function, or a ModuleConverter subclass
    priority: ConverterPriority
    capability_validator: Callable[[Any, Any], bool] | None
    supports_dynamic_shapes: bool
    complex_inputs: bool  # whether it takes complex tensors (ember.torch.complex_values)
    is_default: bool
    builtin: bool

    @functools.cached_property
    def signature(self) -> inspect.Signature | None:
        fn = self.fn.__call__ if self.kind == "module" else self.fn
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        if self.kind == "module":  # drop `self` of __call__
            params = list(sig.parameters.values())[1:]
            sig = sig.replace(parameters=params)
        return sig

    def bind(self, args: tuple, kwargs: dict) -> inspect.BoundArguments | None:
        """The arguments bound to the converter's signature, or None if they do not bind."""
        sig = self.signature
        if sig is None:
            return inspect.Signature().bind_partial()
        try:
            return sig.bind(*args, **kwargs)
        except TypeError:
            return None

    @property
    def name(self) -> str:
        return getattr(self.fn, "__qualname__", None) or repr(self.fn)

    def describe(self) -> str:
        sig = self.signature
        where = getattr(self.fn, "__module__", "")
        text = f"{self.name}{sig if sig is not None else '(...)'}"
        return f"{text}  [{where}, priority {self.priority.name}]"

    def accepts(self, node: Any, settings: Any) -> bool:
        if self.capability_validator is None:
            return True
        return bool(self.capability_validator(node, settings))

    @property
    def public_target(self) -> str:
        return public_name(self.key, kind=self.kind)


class _Registry:
    def __init__(self) -> None:
        # (kind, key) -> candidates in try order
        self.table: dict[tuple[str, Any], list[Converter]] = {}
        # torch-level function or method name -> its ATen overload (same argument layout)
        self.aten_forms: dict[tuple[str, Any], Any] = {}
        self.builtin_depth = 0

    def add(self, conv: Converter) -> None:
        entries = self.table.setdefault((conv.kind, conv.key), [])
        if conv.is_default:
            for i, old in enumerate(entries):
                if old.is_default:
                    entries[i] = conv  # the last registration takes effect
                    return
            first_standard = next(
                (i for i, c in enumerate(entries) if c.priority == STANDARD), len(entries)
            )
            entries.insert(first_standard, conv)
        elif conv.priority == HIGH:
            entries.insert(0, conv)
        else:
            entries.append(conv)

    def entries(self, kind: str, key: Any) -> list[Converter]:
        return self.table.get((kind, key), [])


_REGISTRY = _Registry()


@contextlib.contextmanager
def builtin_registrations() -> Iterator[None]:
    """Marks registrations made inside as ember's own (used by ember.torch.converters)."""
    _REGISTRY.builtin_depth += 1
    try:
        yield
    finally:
        _REGISTRY.builtin_depth -= 1


# ---- normalizing targets ------------------------------------------------------------------
def _method_name(method: Any) -> str:
    name = method if isinstance(method, str) else getattr(method, "__name__", None)
    if not isinstance(name, str) or not hasattr(torch.Tensor, name):
        raise _EmberError(
            f"register_method: {method!r} is not a torch.Tensor method; pass one such as "
            "torch.Tensor.flatten or its name 'flatten'"
        )
    return name


def is_tensor_method(fn: Any) -> bool:
    name = getattr(fn, "__name__", None)
    return isinstance(name, str) and getattr(torch.Tensor, name, None) is fn


def _check_function_target(target: Any) -> Any:
    if isinstance(target, str):
        raise _EmberError(
            f"register_function: {target!r} is a string; pass the function object itself "
            "(torch.relu, operator.add, torch.ops.aten.gelu.default)"
        )
    if isinstance(target, type) and issubclass(target, torch.nn.Module):
        raise _EmberError(
            f"register_function: {public_name(target)} is an nn.Module class; use "
            "register_module with a ModuleConverter subclass"
        )
    if not callable(target):
        raise _EmberError(f"register_function: {target!r} is not callable")
    return target


def _register(
    kind: str,
    key: Any,
    fn: Any,
    priority: ConverterPriority | None,
    capability_validator: Callable[[Any, Any], bool] | None,
    supports_dynamic_shapes: bool,
    complex_inputs: bool = False,
) -> Converter:
    if priority is not None and not isinstance(priority, ConverterPriority):
        raise _EmberError(
            f"priority must be ConverterPriority.HIGH or ConverterPriority.STANDARD, got "
            f"{priority!r}"
        )
    if capability_validator is not None and not callable(capability_validator):
        raise _EmberError("capability_validator must be a callable (node, settings) -> bool")
    conv = Converter(
        kind=kind,
        key=key,
        fn=fn,
        priority=priority if priority is not None else STANDARD,
        capability_validator=capability_validator,
        supports_dynamic_shapes=bool(supports_dynamic_shapes),
        complex_inputs=bool(complex_inputs),
        is_default=priority is None,
        builtin=_REGISTRY.builtin_depth > 0,
    )
    _REGISTRY.add(conv)
    return conv


def _decorator(kind: str, key: Any, **meta: Any) -> Callable[[Any], Any]:
    def wrap(fn: Any) -> Any:
        if kind == "module":
            if not (isinstance(fn, type) and issubclass(fn, ModuleConverter)):
                raise _EmberError(
                    f"register_module({public_name(key)}) decorates a class derived from "
                    f"ember.torch.registry.ModuleConverter, got {fn!r}"
                )
        elif not callable(fn):
            raise _EmberError(f"a converter must be callable, got {fn!r}")
        conv = _register(kind, key, fn, **meta)
        with contextlib.suppress(AttributeError, TypeError):
            fn.__dict__.setdefault("ember_converters", []).append(conv)
        return fn

    return wrap


def register_function(
    target: Any,
    *,
    priority: ConverterPriority | None = None,
    capability_validator: Callable[[Any, Any], bool] | None = None,
    supports_dynamic_shapes: bool = True,
    complex_inputs: bool = False,
) -> Callable[[Any], Any]:
    """Decorator: the decorated function converts calls of ``target``.

    The converter's signature must accept the call's arguments as the target takes them;
    tensors arrive as ember tensors, everything else as the Python values of the call. It
    returns ember tensors (or a tuple/list of them, or Python values).
    """
    _check_function_target(target)
    return _decorator(
        "function",
        target,
        priority=priority,
        capability_validator=capability_validator,
        supports_dynamic_shapes=supports_dynamic_shapes,
        complex_inputs=complex_inputs,
    )


def register_method(
    method: Any,
    *,
    priority: ConverterPriority | None = None,
    capability_validator: Callable[[Any, Any], bool] | None = None,
    supports_dynamic_shapes: bool = True,
    complex_inputs: bool = False,
) -> Callable[[Any], Any]:
    """Decorator for a torch.Tensor method (``torch.Tensor.flatten`` or ``"flatten"``); the
    converter's first parameter is the tensor the method is called on."""
    return _decorator(
        "method",
        _method_name(method),
        priority=priority,
        capability_validator=capability_validator,
        supports_dynamic_shapes=supports_dynamic_shapes,
        complex_inputs=complex_inputs,
    )


def register_module(
    module_class: type,
    *,
    priority: ConverterPriority | None = None,
    capability_validator: Callable[[Any, Any], bool] | None = None,
    supports_dynamic_shapes: bool = True,
    complex_inputs: bool = False,
) -> Callable[[Any], Any]:
    """Class decorator: the decorated ModuleConverter subclass converts calls of modules of
    ``module_class``. It is built once per module instance with that instance, and called
    like the module's forward with ember tensors."""
    if not (isinstance(module_class, type) and issubclass(module_class, torch.nn.Module)):
        raise _EmberError(
            f"register_module: {module_class!r} is not an nn.Module class (such as "
            "torch.nn.Linear)"
        )
    return _decorator(
        "module",
        module_class,
        priority=priority,
        capability_validator=capability_validator,
        supports_dynamic_shapes=supports_dynamic_shapes,
        complex_inputs=complex_inputs,
    )


class ModuleConverter:
    """Base class of module converters. ``self.module`` is the torch module;
    ``self.param(name)`` gives its parameter or buffer ``name`` as an ember tensor that
    shares the torch tensor's memory (no copy). Subclasses define ``__call__``."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module

    def param(self, name: str, optional: bool = False) -> Any:
        tensor = None
        with contextlib.suppress(AttributeError):
            tensor = self.module.get_parameter(name)
        if tensor is None:
            with contextlib.suppress(AttributeError):
                tensor = self.module.get_buffer(name)
        if tensor is None and optional:
            return None
        if not isinstance(tensor, torch.Tensor):
            raise _EmberError(
                f"{type(self).__name__}.param({name!r}): {public_name(type(self.module))} has "
                "no parameter or buffer of that name; pass optional=True if it may be absent"
            )
        from ember.torch.context import weight_to_ember

        return weight_to_ember(tensor)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __call__")


def remove(target: Any, converter: Any = None) -> list[Converter]:
    """Removes the converters of ``target`` (a function, a torch.Tensor method or its name,
    or a module class): all of them, or only ``converter`` (the decorated function or class,
    or a Converter record). Returns what was removed."""
    removed: list[Converter] = []
    for kind, key in _keys_of(target):
        entries = _REGISTRY.table.get((kind, key), [])
        keep = []
        for conv in entries:
            if converter is None or converter is conv or converter is conv.fn:
                removed.append(conv)
            else:
                keep.append(conv)
        if (kind, key) in _REGISTRY.table:
            _REGISTRY.table[(kind, key)] = keep
    return removed


def _keys_of(target: Any) -> list[tuple[str, Any]]:
    if isinstance(target, str):
        return [("method", target)]
    if isinstance(target, type) and issubclass(target, torch.nn.Module):
        return [("module", target)]
    keys = [("function", target)]
    if is_tensor_method(target):
        keys.append(("method", target.__name__))
    return keys


def converters(target: Any) -> list[Converter]:
    """The converters registered for ``target``, in the order they are tried."""
    out: list[Converter] = []
    for kind, key in _keys_of(target):
        out.extend(_REGISTRY.entries(kind, key))
    return out


def registered_targets(kind: str | None = None) -> list[Any]:
    """Every target with at least one converter (of one kind, if given)."""
    return [k for (kd, k), v in _REGISTRY.table.items() if v and (kind is None or kd == kind)]


def has_builtin_converter(kind: str, key: Any) -> bool:
    """Whether one of ember's own converters is registered for (kind, key); kind is
    "function", "method" or "module"."""
    return any(c.builtin for c in _REGISTRY.entries(kind, key))


def link_aten_form(target: Any, overload: Any) -> None:
    """Declares that ``target`` (a torch function or a Tensor method name) is the torch-level
    form of the ATen ``overload`` with the same argument layout, so converters registered
    for the overload also convert calls of ``target`` (their arguments named as in the ATen
    schema: ``input`` becomes ``self``)."""
    kind = "method" if isinstance(target, str) else "function"
    _REGISTRY.aten_forms[(kind, target)] = overload


def aten_form(kind: str, key: Any) -> Any:
    return _REGISTRY.aten_forms.get((kind, key))


def candidates_for(kind: str, key: Any) -> list[tuple[Converter, str]]:
    """The candidates for a node calling ``key`` (``kind`` as in FX: call_function's
    'function', call_method's 'method', call_module's 'module'), from every form of the
    target, in try order."""
    found: list[tuple[int, int, int, Converter, str]] = []

    def add(entries: list[Converter], rank: int, form: str) -> None:
        for pos, conv in enumerate(entries):
            if form == "aten" and conv.builtin:
                continue  # ember's own ATen converters serve ATen graphs only
            found.append((-int(conv.priority), rank, pos, conv, form))

    if kind == "module":
        for rank, cls in enumerate(_module_classes(key)):
            add(_REGISTRY.entries("module", cls), rank, "exact")
    else:
        add(_REGISTRY.entries(kind, key), 0, "exact")
        if kind == "function" and is_tensor_method(key):
            add(_REGISTRY.entries("method", key.__name__), 1, "method")
        overload = aten_form(kind, key)
        if overload is None and kind == "function" and is_tensor_method(key):
            overload = aten_form("method", key.__name__)
        if overload is not None:
            add(_REGISTRY.entries("function", overload), 2, "aten")
            packet = getattr(overload, "overloadpacket", None)
            if packet is not None:
                add(_REGISTRY.entries("function", packet), 3, "aten")
        packet = getattr(key, "overloadpacket", None)
        if packet is not None and kind == "function":
            add(_REGISTRY.entries("function", packet), 4, "exact")
    found.sort(key=lambda t: t[:3])
    return [(conv, form) for *_, conv, form in found]


def _module_classes(cls: type) -> list[type]:
    """cls, then its bases for as long as they share its forward (a subclass that does not
    override forward computes what its base computes)."""
    out = [cls]
    forward = getattr(cls, "forward", None)
    for base in cls.__mro__[1:]:
        if not (isinstance(base, type) and issubclass(base, torch.nn.Module)):
            break
        if base is torch.nn.Module or getattr(base, "forward", None) is not forward:
            break
        out.append(base)
    return out


def has_module_converter(cls: type, *, user_only: bool = False) -> bool:
    for c in _module_classes(cls):
        for conv in _REGISTRY.entries("module", c):
            if not user_only or not conv.builtin:
                return True
    return False


def to_aten_arguments(overload: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A torch-level call's arguments named as in the ATen schema of ``overload``."""
    names = {a.name for a in overload._schema.arguments}
    out = {}
    for k, v in kwargs.items():
        out["self" if k == "input" and "self" in names else k] = v
    return tuple(args), out


# ---- public names -------------------------------------------------------------------------
_NAMESPACES = (
    ("operator", operator),
    ("torch.nn.functional", None),
    ("torch", torch),
    ("torch.special", None),
    ("torch.linalg", None),
    ("torch.fft", None),
    ("math", None),
    ("builtins", builtins),
)


@functools.lru_cache(maxsize=1)
def _public_names() -> dict[int, str]:
    import importlib

    names: dict[int, str] = {}
    for modname, mod in _NAMESPACES:
        if mod is None:
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                continue
        for attr in dir(mod):
            if attr.startswith("__"):
                continue
            try:
                obj = getattr(mod, attr)
            except Exception:
                continue
            if callable(obj) and not isinstance(obj, type):
                names.setdefault(id(obj), f"{modname}.{attr}")
    for attr in dir(torch.nn):
        obj = getattr(torch.nn, attr, None)
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
            names.setdefault(id(obj), f"torch.nn.{attr}")
    return names


def public_name(target: Any, kind: str | None = None) -> str:
    """The name a user writes for a target: 'operator.add', 'torch.nn.functional.relu',
    'torch.Tensor.flatten', 'torch.nn.Linear', 'torch.ops.aten.gelu.default'."""
    if kind == "method" or isinstance(target, str):
        return f"torch.Tensor.{target}"
    if isinstance(target, torch._ops.OpOverload):
        return f"torch.ops.{target._schema.name.replace('::', '.')}.{target._overloadname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return f"torch.ops.{target._qualified_op_name.replace('::', '.')}"
    if is_tensor_method(target):
        return f"torch.Tensor.{target.__name__}"
    name = _public_names().get(id(target))
    if name is not None:
        return name
    module = getattr(target, "__module__", None) or ""
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if qualname is None:
        return repr(target)
    module = {"_operator": "operator", "builtins": ""}.get(module, module)
    if isinstance(target, types.BuiltinFunctionType) and module.startswith("torch._C"):
        module = "torch"
    return f"{module}.{qualname}" if module else qualname
