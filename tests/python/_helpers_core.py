"""Helpers shared by the test_core_*.py files (tensors, operators, graphs, cache, threads).

Kernel compilation dominates the run time of these tests (a few tenths of a second per
distinct kernel), so most operator checks trace many operators into ONE unoptimized graph
(`run_traced`): such a graph runs every operator as its own kernel, the same kernel the
imperative call compiles, and compiles them together. Each operator's result is still
compared on its own against numpy or eager torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import numpy as np
import torch

import ember

ALL_DTYPES = [
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
]
FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]
LOW_PRECISION = ("float16", "bfloat16")
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]

# (rtol, atol) of a computed float result against a reference, by the result's dtype.
# float32 / float64: against a float64 numpy reference. float16 / bfloat16: against torch's
# own result in that dtype (a few units in the last place).
TOLERANCE: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1e-6),
    "float64": (1e-10, 1e-12),
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
}


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype named like ember's: 'float32' -> torch.float32, 'bool' -> torch.bool."""
    return {"bool": torch.bool}.get(name) or getattr(torch, name)


def dtype_name(t: torch.Tensor) -> str:
    """ember's name of a torch tensor's dtype."""
    return str(t.dtype).removeprefix("torch.")


def run_traced(
    fn: Callable[..., Sequence[ember.Tensor]], inputs: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """Calls fn on symbols shaped like `inputs`, traces its outputs into one graph (not
    optimized: one kernel per operator), runs it once on `inputs` (shared with ember through
    DLPack) and returns the outputs as torch tensors."""
    symbols = [ember.symbol(list(t.shape), dtype_name(t)) for t in inputs]
    outputs = list(fn(*symbols))
    graph = ember.trace_from(outputs, symbols)
    result = graph(*[ember.from_torch(t) for t in inputs])
    if isinstance(result, ember.Tensor):
        result = (result,)
    assert len(result) == len(outputs)
    return [r.torch() for r in result]


def random_tensor(
    shape: Sequence[int], dtype: str, rng: np.random.Generator, scale: float = 2.0
) -> torch.Tensor:
    """Random values of `dtype`: normal * scale for floats, small integers, random bools."""
    shape = tuple(shape)
    if dtype == "bool":
        return torch.from_numpy(np.asarray(rng.random(shape) > 0.5))
    if dtype in FLOAT_DTYPES:
        values = torch.from_numpy(np.asarray(rng.standard_normal(shape) * scale))
        return values.to(torch_dtype(dtype))
    low = 0 if dtype == "uint8" else -9
    return torch.from_numpy(np.asarray(rng.integers(low, 10, shape))).to(torch_dtype(dtype))


def assert_matches(
    got: torch.Tensor | ember.Tensor,
    ref: np.ndarray | torch.Tensor,
    dtype: str,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """got has dtype `dtype`, ref's shape, and ref's values: exactly for integers and bools,
    within TOLERANCE[dtype] (or rtol / atol) for floats; NaNs must sit at the same places and
    infinities must match in sign."""
    if isinstance(got, ember.Tensor):
        assert got.dtype == ember.dtype(dtype)
        got = got.torch()
    assert got.dtype == torch_dtype(dtype), f"dtype {got.dtype}, expected {dtype}"
    if isinstance(ref, np.ndarray) or np.isscalar(ref):
        ref = torch.from_numpy(np.asarray(ref))
    assert tuple(got.shape) == tuple(ref.shape), f"shape {tuple(got.shape)} vs {tuple(ref.shape)}"
    if dtype not in FLOAT_DTYPES:
        np.testing.assert_array_equal(got.numpy(), ref.to(got.dtype).numpy())
        return
    default_rtol, default_atol = TOLERANCE[dtype]
    # The reference is rounded to the result's dtype first (it may be float64): a value
    # beyond that dtype's range is infinite there, as in the result.
    expected = ref.to(got.dtype).double()
    torch.testing.assert_close(
        got.double(),
        expected,
        rtol=default_rtol if rtol is None else rtol,
        atol=default_atol if atol is None else atol,
        equal_nan=True,
    )


# ---- references numpy lacks (no scipy): erf and the two GELUs, in float64 ----

_erf = np.vectorize(math.erf, otypes=[np.float64])


def np_erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf(np.asarray(x, np.float64)), np.float64)


def np_gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np_erf(x / math.sqrt(2.0)))


def np_gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def np_sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def np_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


# ---- printed tensors ----

_WORD = re.compile(r"nan|-?inf|True|False|-?\d+(?:\.\d*)?(?:e[+-]\d+)?")


def printed_words(text: str) -> list[str]:
    """The element words of a printed tensor (everything after the header line), in order;
    the '...' of a summarised tensor is left out."""
    header, _, body = text.partition("\n")
    assert header.startswith("Tensor(shape=")
    return _WORD.findall(body)


def assert_printed_value(word: str, value: float | int | bool, dtype: str) -> None:
    """A printed element stands for `value`: exactly for bools and integers, to within half a
    unit of its last printed digit for floats (relative for the e-notation)."""
    if dtype == "bool":
        assert word == str(bool(value)), (word, value)
    elif dtype not in FLOAT_DTYPES:
        assert int(word) == int(value), (word, value)
    elif math.isnan(float(value)) or math.isinf(float(value)):
        assert word == str(float(value)), (word, value)
    else:
        printed = float(word)
        if "e" in word:
            mantissa = word.split("e")[0]
            decimals = len(mantissa.partition(".")[2])
            tol = 0.5 * 10.0**-decimals * abs(printed) * 1.0001
        else:
            decimals = len(word.partition(".")[2])
            tol = 0.5 * 10.0**-decimals * 1.0001
        assert abs(printed - float(value)) <= tol, (word, value)
