"""The one table of ONNX operator converters, keyed by operator type.

A converter takes the node's context (attributes, opset, the importer's helpers) and its
inputs (``None`` for an omitted optional input; a numpy array for a value known at import
time; an ember tensor otherwise) and returns the node's outputs in order. A fold function,
where an operator has one, computes the node with numpy when every input is known at import
time (shape arithmetic: Shape -> Gather -> Concat -> Reshape); it may raise ``NotFoldable`` to
leave the node to its converter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The default-domain opsets ember imports.
MIN_OPSET = 13
MAX_OPSET = 21

Converter = Callable[..., list[Any]]


class NotFoldable(Exception):
    """Raised by a fold function for inputs it cannot compute with numpy (a symbolic size
    where a number is needed): the importer then calls the operator's converter."""


@dataclass
class Entry:
    """One operator: its converter, optional numpy fold, and the opsets it supports."""

    op_type: str
    convert: Converter | None = None
    fold: Converter | None = None
    since: int = MIN_OPSET
    until: int = MAX_OPSET

    def supports(self, opset: int) -> bool:
        return self.since <= opset <= self.until and self.convert is not None


TABLE: dict[str, Entry] = {}


def _entry(op_type: str) -> Entry:
    return TABLE.setdefault(op_type, Entry(op_type))


def converter(*op_types: str, since: int = MIN_OPSET,
              until: int = MAX_OPSET) -> Callable[[Converter], Converter]:
    """Registers fn as the converter of op_types (opsets since..until)."""

    def register(fn: Converter) -> Converter:
        for op in op_types:
            e = _entry(op)
            if e.convert is not None:
                raise RuntimeError(f"two converters for ONNX {op}")
            e.convert, e.since, e.until = fn, since, until
        return fn

    return register


def folder(*op_types: str) -> Callable[[Converter], Converter]:
    """Registers fn as the numpy fold of op_types."""

    def register(fn: Converter) -> Converter:
        for op in op_types:
            _entry(op).fold = fn
        return fn

    return register
