"""Values of an ONNX graph while it is imported.

A value is an ember tensor (symbolic, or a constant) or a numpy array known at import time.
Shapes of symbolic tensors are numpy arrays of dtype object whose items are ints and ``Dim``
(a symbolic size: an ember size expression), so that Shape -> Gather -> Concat -> Reshape
folds with numpy into a shape that ember's reshape takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
from ember._sizes import size_value
from ember.onnx.errors import unsupported
from ember.onnx.registry import NotFoldable

ops = ember.ops


class Dim:
    """A symbolic size (a symbol or a size expression of symbols), as numpy object arrays
    hold it; arithmetic with ints and other Dims builds ember size expressions."""

    __slots__ = ("expr",)

    def __init__(self, expr: str) -> None:
        self.expr = expr

    def __repr__(self) -> str:
        return f"Dim({self.expr!r})"

    def __str__(self) -> str:
        return self.expr

    @staticmethod
    def _text(v: Any) -> str:
        if isinstance(v, Dim):
            return f"({v.expr})"
        if isinstance(v, (int, np.integer)):
            return str(int(v))
        raise NotFoldable(f"a symbolic size combined with {v!r}")

    def _op(self, other: Any, op: str, swap: bool = False) -> Dim:
        a, b = self._text(self), self._text(other)
        return Dim(f"{b} {op} {a}" if swap else f"{a} {op} {b}")

    def __add__(self, o: Any) -> Any:
        return self if _is_int(o, 0) else self._op(o, "+")

    def __radd__(self, o: Any) -> Any:
        return self if _is_int(o, 0) else self._op(o, "+", True)

    def __sub__(self, o: Any) -> Any:
        return self if _is_int(o, 0) else self._op(o, "-")

    def __rsub__(self, o: Any) -> Any:
        return self._op(o, "-", True)

    def __mul__(self, o: Any) -> Any:
        return self if _is_int(o, 1) else self._op(o, "*")

    def __rmul__(self, o: Any) -> Any:
        return self if _is_int(o, 1) else self._op(o, "*", True)

    def __floordiv__(self, o: Any) -> Any:
        if isinstance(o, (int, np.integer)) and int(o) <= 0:
            raise NotFoldable("a symbolic size divided by a non-positive number")
        return self if _is_int(o, 1) else self._op(o, "//")

    def __rfloordiv__(self, o: Any) -> Any:
        return self._op(o, "//", True)

    # ONNX Div of integers truncates; sizes are never negative, so it is floor division.
    __truediv__ = __floordiv__
    __rtruediv__ = __rfloordiv__

    def __mod__(self, o: Any) -> Any:
        return self._op(o, "%")

    def __neg__(self) -> Any:
        return Dim(f"-({self.expr})")

    def __eq__(self, o: object) -> Any:  # type: ignore[override]
        if isinstance(o, Dim) and o.expr == self.expr:
            return True
        if isinstance(o, (int, np.integer)) and int(o) < 0:
            return False  # a size is never negative (Reshape's -1 tests)
        raise NotFoldable(f"comparing the symbolic size {self.expr} with {o!r}")

    def __ne__(self, o: object) -> Any:  # type: ignore[override]
        return not self.__eq__(o)

    def __hash__(self) -> int:
        return hash(self.expr)

    def __ge__(self, o: Any) -> Any:
        if isinstance(o, (int, np.integer)) and int(o) <= 0:
            return True
        raise NotFoldable(f"comparing the symbolic size {self.expr} with {o!r}")

    def __lt__(self, o: Any) -> Any:
        return not self.__ge__(o)

    def __gt__(self, o: Any) -> Any:
        if isinstance(o, (int, np.integer)) and int(o) < 0:
            return True
        raise NotFoldable(f"comparing the symbolic size {self.expr} with {o!r}")

    def __le__(self, o: Any) -> Any:
        return not self.__gt__(o)


def _is_int(v: Any, k: int) -> bool:
    return isinstance(v, (int, np.integer)) and int(v) == k


# ---- dtypes ----------------------------------------------------------------------------------
# ONNX TensorProto element types ember has, by number.
ONNX_DTYPES: dict[int, str] = {
    1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
    10: "float16", 11: "float64", 16: "bfloat16",
}
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")


def ember_dtype(onnx_type: int, what: str) -> str:
    if onnx_type not in ONNX_DTYPES:
        raise unsupported(f"{what} has the ONNX element type {onnx_type}, which ember lacks")
    return ONNX_DTYPES[onnx_type]


def numpy_dtype(dtype: str) -> Any:
    if dtype == "bfloat16":
        return np.float32  # numpy has no bfloat16: folded values stay float32
    return np.dtype(dtype)


def dtype_of(v: Any) -> str:
    """The ember dtype name of a value (object arrays of sizes are int64)."""
    if isinstance(v, ember.Tensor):
        return str(v.dtype)
    if v.dtype == object:
        return "int64"
    return str(v.dtype)


def shape_of(v: Any) -> list[int | str]:
    """The shape of a value as ember sizes (ints and size expressions)."""
    if isinstance(v, ember.Tensor):
        return list(v.shape)
    return list(v.shape)


def is_symbolic_array(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.dtype == object


# ---- conversions -----------------------------------------------------------------------------
def shape_array(t: Any) -> np.ndarray:
    """The shape of t as a 1-d int64 array, or an object array when a size is symbolic."""
    dims = [d if isinstance(d, int) else Dim(d) for d in shape_of(t)]
    if all(isinstance(d, int) for d in dims):
        return np.array(dims, dtype=np.int64)
    out = np.empty(len(dims), dtype=object)
    out[:] = dims
    return out


def simplify(a: Any) -> np.ndarray:
    """A numpy result as an array (numpy gives scalars for 0-d results; a lone size is a
    0-d object array), and an object array with no symbolic size left as int64."""
    if not isinstance(a, np.ndarray):
        if isinstance(a, Dim):
            out = np.empty((), dtype=object)
            out[()] = a
            return out
        a = np.asarray(a)
    if a.dtype == object and all(not isinstance(v, Dim) for v in a.flat):
        return a.astype(np.int64)
    return a


def sizes(v: Any) -> list[int | str]:
    """A 1-d value known at import time as a list of ember sizes (ints, expressions)."""
    if not isinstance(v, np.ndarray):
        raise NotFoldable("sizes computed at run time")
    return [v_.expr if isinstance(v_, Dim) else int(v_) for v_ in np.asarray(v).reshape(-1)]


def to_tensor(v: Any) -> Any:
    """v as an ember tensor: a numpy array becomes a constant; an array of sizes with
    symbolic items becomes a small traced tensor that holds them at run time."""
    if isinstance(v, ember.Tensor):
        return v
    if v.dtype != object:
        return ember.asarray(np.ascontiguousarray(v))
    items = [size_value(s, "int64") for s in sizes(v)]
    parts = [ops.reshape(i, [1]) if isinstance(i, ember.Tensor)
             else ember.asarray(np.array([i], dtype=np.int64)) for i in items]
    flat = ops.concat(parts, 0) if parts else ember.asarray(np.zeros([0], np.int64))
    return ops.reshape(flat, list(v.shape))


def as_numpy(values: Sequence[Any]) -> bool:
    """Whether every present value is known at import time."""
    return all(v is None or isinstance(v, np.ndarray) for v in values)
