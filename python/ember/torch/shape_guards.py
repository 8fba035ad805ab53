"""What Dynamo's guards say about symbolic sizes and scalars: the value a SymInt, SymFloat or
SymBool has in every call that reaches the graph, where the guards fix it, asked of the
shape environment and, where the environment does not connect a guard with a size, solved
from the guards' equations. Answers are cached per shape environment; forget_guarded drops
them when a converter adds a guard (context.specialized_size, specialized_scalar)."""

from __future__ import annotations

import weakref
from typing import Any

import torch

__all__ = [
    "forget_guarded",
    "guarded_int",
    "guarded_value",
    "sym_dim_free",
    "values_fixed_by_guards",
]

_GUARDED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # shape env -> {expr: value}


def forget_guarded(env: Any) -> None:
    """Drops the cached answers for `env`: a guard was added, so they may have changed."""
    _GUARDED.pop(env, None)


def sym_dim_free(v: Any) -> bool:
    """True when a SymInt/SymFloat has free symbols (its value is not known now). A SymInt
    that Dynamo's guards fix to one value (guarded_int) is known, and so is a SymFloat or
    SymBool whose symbols the guards all fix (guarded_value)."""
    try:
        free = bool(v.node.expr.free_symbols)
    except AttributeError:
        return False
    if not free:
        return False
    if isinstance(v, torch.SymInt):
        return guarded_int(v) is None
    return guarded_value(v) is None


def guarded_value(v: Any) -> Any:
    """The number a SymInt/SymFloat/SymBool has under Dynamo's guards (its symbols replaced
    by the values the guards fix), or None while a symbol stays free."""
    if isinstance(v, torch.SymInt):
        return guarded_int(v)
    try:
        simplified = v.node.shape_env.simplify(v.node.expr)
        if simplified.free_symbols:
            return None
        return v.node.pytype(simplified)
    except Exception:  # the shape environment's API moved: treat it as unknown
        return None


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
        if not simplified.is_Integer:
            simplified = simplified.xreplace(values_fixed_by_guards(env, cache))
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


def values_fixed_by_guards(env: Any, cache: dict[Any, Any]) -> dict[Any, Any]:
    """The sizes Dynamo's guards fix to one integer that the shape environment does not
    simplify to it, as {expression: Integer} for sympy's xreplace. A guard recorded before
    one of its symbols was replaced keeps that symbol: ``Eq(s20*s42, 144)`` with ``s42``
    replaced by 6 fixes ``s20`` to 24, which the environment does not see in ``6*s20``;
    ``Eq(((s53 - 3)//2) + 1, 1)`` and ``Eq((((s53 - 3)//2) + 1)*(((s65 - 3)//2) + 1), 2)``
    fix the output length ``((s65 - 3)//2) + 1`` of a convolution to 2 (but not s65). An
    equation that, with the replacements and the values found so far, is linear in one
    symbol fixes the symbol; one that is an expression equal to a constant fixes the
    expression. Every call that reaches the graph passes the guards. Kept in `cache` (the
    environment's entry of _GUARDED, dropped when a converter adds a guard)."""
    key = ("values fixed by guards", len(env.guards))
    if key in cache:
        return cache[key]
    import sympy

    equations = []
    for guard in env.guards:
        try:
            e = env.simplify(guard.expr)
        except Exception:  # an expression the environment cannot simplify
            continue
        if isinstance(e, sympy.Eq):
            equations.append(e.lhs - e.rhs)
    fixed: dict[Any, Any] = {}
    for _ in range(len(equations)):
        found = False
        for diff in equations:
            d = diff.xreplace(fixed)
            if not d.free_symbols:
                continue
            constant, rest = d.as_coeff_Add()
            if rest.could_extract_minus_sign():
                constant, rest = -constant, -rest
            if len(d.free_symbols) == 1 and d.is_polynomial():
                (symbol,) = d.free_symbols
                poly = sympy.Poly(d, symbol)
                if poly.degree() != 1:
                    continue
                rest, root = symbol, -poly.nth(0) / poly.nth(1)
            else:
                root = -constant
            if root.is_Integer and rest not in fixed:
                fixed[rest] = root
                found = True
        if not found:
            break
    cache[key] = fixed
    return fixed
