"""Sizes as values, shared by the frontends (torch-free): a symbolic size (a symbol or a
size expression, as ember shapes spell it) used as data, and products of sizes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import ops

# Python's "to the end" for ember.ops.slice, whose stops are clamped to the dimension.
END = 2**62


def size_value(size: int | str, dtype: str) -> Any:
    """A size used as a value: the int itself, or for a symbolic size (a symbol or a size
    expression, as ember shapes spell it) a 0-d ember tensor of `dtype` that holds it at run
    time (``arange(n, n + 1)`` read back; it inlines into its consumers)."""
    if isinstance(size, int):
        return size
    one = ops.arange(size, f"({size} + 1)", 1, "int64")
    return ops.cast(ops.reshape(one, []), dtype)


def size_product(sizes: Sequence[int | str]) -> int | str:
    """The product of sizes: an int when all are ints, else ember's text for it."""
    const, parts = 1, []
    for s in sizes:
        if isinstance(s, int):
            const *= s
        else:
            parts.append(f"({s})")
    if not parts:
        return const
    return "(" + " * ".join(([str(const)] if const != 1 else []) + parts) + ")"
