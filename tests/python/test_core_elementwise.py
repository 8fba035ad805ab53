"""Elementwise operators against numpy (float64 references) and, for float16 / bfloat16,
against eager torch in the same dtype: unary math, binary arithmetic and comparisons with
numpy broadcasting, Python operators with scalars on either side, where, cast, and the
propagation of NaN and infinities.

Shapes include 0-d tensors, size-1 dimensions, odd sizes (17, 1031: vector tails) and
empty tensors. Each (dtype, shape) traces all operators into one graph (see
_helpers_core.run_traced); the imperative path is checked on its own as well.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from _helpers_core import (
    FLOAT_DTYPES,
    INT_DTYPES,
    LOW_PRECISION,
    assert_matches,
    np_erf,
    np_gelu,
    np_gelu_tanh,
    np_sigmoid,
    random_tensor,
    run_traced,
    torch_dtype,
)

import ember

E = ember.ops
Unary = Callable[[ember.Tensor], ember.Tensor]

# name -> (ember operator, float64 numpy reference, eager torch reference)
UNARY: dict[str, tuple[Unary, Callable[[np.ndarray], np.ndarray], Callable]] = {
    "neg": (E.neg, np.negative, torch.neg),
    "abs": (E.abs, np.abs, torch.abs),
    "exp": (E.exp, np.exp, torch.exp),
    "log": (E.log, np.log, torch.log),
    "sqrt": (E.sqrt, np.sqrt, torch.sqrt),
    "rsqrt": (E.rsqrt, lambda x: 1.0 / np.sqrt(x), torch.rsqrt),
    "sigmoid": (E.sigmoid, np_sigmoid, torch.sigmoid),
    "tanh": (E.tanh, np.tanh, torch.tanh),
    "relu": (E.relu, lambda x: np.maximum(x, 0.0), torch.relu),
    "gelu": (E.gelu, np_gelu, F.gelu),
    "gelu_tanh": (
        lambda x: E.gelu(x, approximate="tanh"),
        np_gelu_tanh,
        lambda t: F.gelu(t, approximate="tanh"),
    ),
    "silu": (E.silu, lambda x: x * np_sigmoid(x), F.silu),
    "erf": (E.erf, np_erf, torch.erf),
    "logical_not": (E.logical_not, np.logical_not, torch.logical_not),
}
FLOAT_ONLY = ["exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "gelu", "gelu_tanh", "silu", "erf"]

SHAPES_F32 = [(), (1,), (17,), (1031,), (3, 0), (2, 1, 5)]
SHAPES_OTHER = [(), (1031,), (2, 1, 5)]
UNARY_CASES = [("float32", s) for s in SHAPES_F32] + [
    (d, s) for d in ("float64", "float16", "bfloat16") for s in SHAPES_OTHER
]


def out_dtype(op: str, dtype: str) -> str:
    return "bool" if op == "logical_not" else dtype


def unary_reference(op: str, x: torch.Tensor) -> np.ndarray | torch.Tensor:
    """numpy in float64 for float32 / float64 inputs; for float16 / bfloat16, numpy in
    float64 rounded to the input's dtype (torch's own vector kernels disagree with its scalar
    ones at the edges on some CPUs: its AVX-512 gelu(inf) is NaN), else torch in that dtype."""
    dtype = str(x.dtype).removeprefix("torch.")
    if dtype in LOW_PRECISION:
        if x.dtype.is_floating_point:
            with np.errstate(all="ignore"):
                exact = UNARY[op][1](x.double().numpy())
            if isinstance(exact, np.ndarray) and exact.dtype.kind == "f":
                return torch.from_numpy(exact).to(x.dtype)
        return UNARY[op][2](x)
    with np.errstate(all="ignore"):
        return UNARY[op][1](x.double().numpy())


@functools.cache
def unary_results(
    dtype: str, shape: tuple[int, ...]
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    x = random_tensor(shape, dtype, np.random.default_rng(len(shape) * 1000 + sum(shape)), 3.0)
    names = list(UNARY)
    outs = run_traced(lambda s: [UNARY[n][0](s) for n in names], [x])
    return x, dict(zip(names, outs, strict=True))


@pytest.mark.parametrize("op", list(UNARY))
@pytest.mark.parametrize(("dtype", "shape"), UNARY_CASES, ids=str)
def test_unary(op: str, dtype: str, shape: tuple[int, ...]) -> None:
    x, results = unary_results(dtype, shape)
    assert_matches(results[op], unary_reference(op, x), out_dtype(op, dtype))


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_imperative(op: str) -> None:
    x = random_tensor((17,), "float32", np.random.default_rng(5), 3.0)
    got = UNARY[op][0](ember.from_torch(x))
    assert not got.is_symbolic
    assert_matches(got, unary_reference(op, x), out_dtype(op, "float32"))


# Special values at the head and the tail of a vector of 1031 (the tail is the vector
# remainder), with finite values in between.
SPECIALS = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-30, 80.0, -80.0, 1e10, -1e10]


def special_input(dtype: str) -> torch.Tensor:
    v = np.random.default_rng(11).standard_normal(1031)
    v[: len(SPECIALS)] = SPECIALS
    v[-len(SPECIALS) :] = SPECIALS
    v[500] = np.nan
    return torch.from_numpy(v).to(torch_dtype(dtype))


@functools.cache
def special_results(dtype: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    x = special_input(dtype)
    names = list(UNARY)
    outs = run_traced(lambda s: [UNARY[n][0](s) for n in names], [x])
    return x, dict(zip(names, outs, strict=True))


def special_cases() -> list:
    cases = []
    for dtype in FLOAT_DTYPES:
        for op in UNARY:
            marks = []
            cases.append(pytest.param(dtype, op, marks=marks, id=f"{dtype}-{op}"))
    return cases


@pytest.mark.parametrize(("dtype", "op"), special_cases())
def test_unary_special_values(dtype: str, op: str) -> None:
    """inf, -inf, NaN, signed zeros, tiny and huge values give what numpy (or torch, for
    float16 / bfloat16) gives: exp(inf) = inf, exp(-inf) = 0, log(0) = -inf, log(-1) = NaN,
    sqrt(-1) = NaN, f(NaN) = NaN, ..."""
    x, results = special_results(dtype)
    assert_matches(results[op], unary_reference(op, x), out_dtype(op, dtype))


def test_documented_special_values() -> None:
    x = ember.asarray([np.inf, -np.inf, 0.0, -1.0, np.nan])
    with np.errstate(all="ignore"):
        ref = np.array([np.inf, -np.inf, 0.0, -1.0, np.nan], np.float32)
        np.testing.assert_allclose(E.exp(x).numpy(), np.exp(ref), rtol=1e-6)
        np.testing.assert_allclose(E.log(x).numpy(), np.log(ref), rtol=1e-6)
    assert E.exp(x).numpy()[0] == np.inf and E.exp(x).numpy()[1] == 0.0
    assert E.log(x).numpy()[2] == -np.inf and np.isnan(E.log(x).numpy()[3])


# ---- integer-capable unary operators ----


@pytest.mark.parametrize("dtype", [*INT_DTYPES, "bool"])
def test_unary_integers(dtype: str) -> None:
    x = random_tensor((17,), dtype, np.random.default_rng(2))
    if dtype == "int8":
        x[0] = -128  # abs and neg wrap around, as in numpy
    names = ["logical_not"] if dtype == "bool" else ["neg", "abs", "relu", "logical_not"]
    outs = run_traced(lambda s: [UNARY[n][0](s) for n in names], [x])
    a = x.numpy()
    refs: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "neg": np.negative,
        "abs": np.abs,
        "relu": lambda v: np.maximum(v, v.dtype.type(0)),
        "logical_not": np.logical_not,
    }
    for name, got in zip(names, outs, strict=True):
        with np.errstate(all="ignore"):
            ref = refs[name](a)
        assert_matches(got, ref, out_dtype(name, dtype))


@pytest.mark.parametrize("op", FLOAT_ONLY)
def test_float_only_unary_refuses_integers(op: str) -> None:
    with pytest.raises(ember.EmberError) as info:
        UNARY[op][0](ember.ones([2], "int32"))
    assert str(info.value) == (
        f"{op}: expected a floating-point tensor (float16, bfloat16, float32 or float64), got "
        "int32; cast it first with ember.ops.cast(x, ember.float32)"
    )


# ---- binary operators ----

BinaryFn = Callable[[ember.Tensor, ember.Tensor], ember.Tensor]
# name -> (ember operator, numpy reference)
BINARY: dict[str, tuple[BinaryFn, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    "add": (E.add, np.add),
    "sub": (E.sub, np.subtract),
    "mul": (E.mul, np.multiply),
    "div": (E.div, np.true_divide),
    "pow": (E.pow, np.power),
    "maximum": (E.maximum, np.maximum),
    "minimum": (E.minimum, np.minimum),
    "equal": (E.equal, np.equal),
    "not_equal": (E.not_equal, np.not_equal),
    "less": (E.less, np.less),
    "less_equal": (E.less_equal, np.less_equal),
    "greater": (E.greater, np.greater),
    "greater_equal": (E.greater_equal, np.greater_equal),
    "logical_and": (E.logical_and, np.logical_and),
    "logical_or": (E.logical_or, np.logical_or),
}
# eager torch for float16 / bfloat16
TORCH_BINARY: dict[str, Callable] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "equal": torch.eq,
    "not_equal": torch.ne,
    "less": torch.lt,
    "less_equal": torch.le,
    "greater": torch.gt,
    "greater_equal": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
}
BOOL_OUT = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
BOOL_OUT |= {"logical_and", "logical_or"}

PAIRS_F32 = [
    ((17,), (17,)),
    ((1031,), (1031,)),
    ((3, 1, 5), (4, 1)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((1,), (1031,)),
    ((2, 0), (1,)),
]
PAIRS_OTHER = [((17,), (17,)), ((3, 1, 5), (4, 1))]
BINARY_CASES = [("float32", a, b) for a, b in PAIRS_F32] + [
    (d, a, b) for d in ["float64", *LOW_PRECISION, *INT_DTYPES, "bool"] for a, b in PAIRS_OTHER
]
BINARY_CASES.append(("float64", (), (2, 3)))


def binary_ops(dtype: str) -> list[str]:
    if dtype == "bool":  # arithmetic refuses bool
        return sorted(BOOL_OUT)
    return list(BINARY)


def binary_inputs(dtype: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> list[torch.Tensor]:
    rng = np.random.default_rng(sum(sa) * 31 + sum(sb) + len(sa))
    if dtype in FLOAT_DTYPES:
        a = random_tensor(sa, dtype, rng)
        b = random_tensor(sb, dtype, rng)
    elif dtype == "bool":
        a, b = random_tensor(sa, dtype, rng), random_tensor(sb, dtype, rng)
    else:  # small integers; b >= 0 so that pow is defined (b == 0 divides by zero)
        low = 0 if dtype == "uint8" else -4
        a = torch.from_numpy(np.asarray(rng.integers(low, 5, sa))).to(torch_dtype(dtype))
        b = torch.from_numpy(np.asarray(rng.integers(0, 4, sb))).to(torch_dtype(dtype))
    if sa == sb and a.numel() > 0:  # some equal elements, for the comparisons
        a.view(-1)[::3] = b.view(-1)[::3]
    return [a, b]


@functools.cache
def binary_results(
    dtype: str, sa: tuple[int, ...], sb: tuple[int, ...]
) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
    inputs = binary_inputs(dtype, sa, sb)
    names = binary_ops(dtype)
    outs = run_traced(lambda x, y: [BINARY[n][0](x, y) for n in names], inputs)
    return inputs, dict(zip(names, outs, strict=True))


def binary_reference(op: str, a: torch.Tensor, b: torch.Tensor, dtype: str) -> tuple[object, str]:
    """The reference values and the dtype ember's result must have."""
    expect = "bool" if op in BOOL_OUT else dtype
    if op == "div" and dtype not in FLOAT_DTYPES:
        expect = "float32"  # true division of integers
    if dtype in LOW_PRECISION:
        return TORCH_BINARY[op](a, b), expect
    x, y = a.numpy(), b.numpy()
    if dtype in ("float32", "float64") or (op == "div" and dtype != "bool"):
        x, y = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        return BINARY[op][1](x, y), expect


def binary_case_params() -> list:
    return [
        pytest.param(d, a, b, op, id=f"{d}-{a}-{b}-{op}")
        for d, a, b in BINARY_CASES
        for op in binary_ops(d)
    ]


@pytest.mark.parametrize(("dtype", "sa", "sb", "op"), binary_case_params())
def test_binary(dtype: str, sa: tuple[int, ...], sb: tuple[int, ...], op: str) -> None:
    (a, b), results = binary_results(dtype, sa, sb)
    ref, expect = binary_reference(op, a, b, dtype)
    assert tuple(results[op].shape) == np.broadcast_shapes(sa, sb)
    assert_matches(results[op], ref, expect)  # type: ignore[arg-type]


def test_binary_special_values() -> None:
    """NaN and infinities through arithmetic, maximum / minimum and comparisons, as numpy."""
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.0, np.nan], np.float32)
    a = np.concatenate([specials, np.linspace(-3, 3, 9, dtype=np.float32), specials])
    b = np.roll(a, 3)
    names = list(BINARY)
    outs = run_traced(
        lambda x, y: [BINARY[n][0](x, y) for n in names], [torch.from_numpy(a), torch.from_numpy(b)]
    )
    for name, got in zip(names, outs, strict=True):
        with np.errstate(all="ignore"):
            ref = BINARY[name][1](a.astype(np.float64), b.astype(np.float64))
        assert_matches(got, ref, "bool" if name in BOOL_OUT else "float32")


def test_integer_division_by_zero_gives_float32_infinities() -> None:
    i = ember.asarray(np.array([1, 0, -1], np.int32))
    got = (i / 0).numpy()
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.array([1, 0, -1], np.int32) / np.int32(0))


# ---- Python operators and scalars ----


def test_python_operators_with_scalars_on_both_sides() -> None:
    rng = np.random.default_rng(4)
    a = (rng.standard_normal(17) * 2).astype(np.float32)
    a[3] = 0.5
    ops: list[tuple[str, Callable, Callable]] = [
        ("x + 2.5", lambda x: x + 2.5, lambda v: v + 2.5),
        ("2.5 + x", lambda x: 2.5 + x, lambda v: 2.5 + v),
        ("x - 1.5", lambda x: x - 1.5, lambda v: v - 1.5),
        ("1.5 - x", lambda x: 1.5 - x, lambda v: 1.5 - v),
        ("x * 3", lambda x: x * 3, lambda v: v * 3),
        ("3 * x", lambda x: 3 * x, lambda v: 3 * v),
        ("x / 4", lambda x: x / 4, lambda v: v / 4),
        ("4 / x", lambda x: 4 / x, lambda v: 4 / v),
        ("x ** 2", lambda x: x**2, lambda v: v**2),
        ("2 ** x", lambda x: 2**x, lambda v: 2.0**v),
        ("x < 0.5", lambda x: x < 0.5, lambda v: v < 0.5),
        ("0.5 < x", lambda x: 0.5 < x, lambda v: 0.5 < v),
        ("x <= 0.5", lambda x: x <= 0.5, lambda v: v <= 0.5),
        ("x > 0.5", lambda x: x > 0.5, lambda v: v > 0.5),
        ("x >= 0.5", lambda x: x >= 0.5, lambda v: v >= 0.5),
        ("x == 0.5", lambda x: x == 0.5, lambda v: v == 0.5),
        ("x != 0.5", lambda x: x != 0.5, lambda v: v != 0.5),
        ("-x", lambda x: -x, lambda v: -v),
        ("abs(x)", lambda x: abs(x), np.abs),
        ("+x", lambda x: +x, lambda v: v),
    ]
    outs = run_traced(lambda x: [f(x) for _, f, _ in ops], [torch.from_numpy(a)])
    ref_in = a.astype(np.float64)
    for (text, _, ref), got in zip(ops, outs, strict=True):
        expected = ref(ref_in)
        dtype = "bool" if expected.dtype == np.bool_ else "float32"
        assert_matches(got, expected, dtype)
        assert text  # named for the failure message


def test_python_operators_imperative_and_on_integers() -> None:
    x = ember.asarray([1.0, -2.0, 3.5])
    np.testing.assert_array_equal((1.0 - x).numpy(), np.float32(1.0) - x.numpy())
    np.testing.assert_array_equal((x < 0.0).numpy(), np.array([False, True, False]))
    i = ember.asarray(np.arange(-3, 4, dtype=np.int32))
    ref = np.arange(-3, 4, dtype=np.int32)
    np.testing.assert_array_equal((i + 3).numpy(), ref + 3)
    np.testing.assert_array_equal((10 - i).numpy(), 10 - ref)
    np.testing.assert_array_equal((i * 2).numpy(), ref * 2)
    assert (i * 2).dtype == ember.int32
    half = (i / 2).numpy()
    assert half.dtype == np.float32
    np.testing.assert_array_equal(half, (ref / 2).astype(np.float32))
    np.testing.assert_array_equal((i >= 0).numpy(), ref >= 0)
    # A float with a fraction next to an integer tensor would be truncated: refused.
    with pytest.raises(ember.EmberError) as info:
        i + 1.5
    assert str(info.value) == (
        "+: cannot combine a tensor of dtype int32 with the Python float 1.5 without losing its "
        "fraction (ember converts a Python number to the tensor's dtype); cast the tensor "
        "first, e.g. ember.ops.cast(t, 'float32')"
    )
    # A whole float is fine.
    np.testing.assert_array_equal((i + 2.0).numpy(), ref + 2)
    b = ember.asarray([True, False])
    np.testing.assert_array_equal((~b).numpy(), np.array([False, True]))
    np.testing.assert_array_equal((b & True).numpy(), np.array([True, False]))
    np.testing.assert_array_equal((False | b).numpy(), np.array([True, False]))


def test_numpy_scalar_operands() -> None:
    """numpy scalars (np.float32, np.float16, np.int64, ...) are operands like Python numbers:
    the result is an ember tensor (traced on a symbolic one), not a numpy array."""
    s = ember.symbol([3])
    traced = s * np.float32(2.0)
    assert isinstance(traced, ember.Tensor) and traced.is_symbolic
    a = np.array([1.0, -2.0, 3.5], np.float32)
    x = ember.asarray(a)
    for got, ref in [
        (x * np.float32(2.0), a * 2),
        (np.float32(2.0) * x, a * 2),
        (np.float16(1.5) + x, a + 1.5),
        (x - np.float64(0.5), a - 0.5),
        (np.int64(3) - x, 3 - a),
        (x < np.float32(0.0), a < 0),
    ]:
        assert isinstance(got, ember.Tensor)
        assert_matches(got, ref, "bool" if ref.dtype == np.bool_ else "float32")


def test_scalar_operands_in_ops_functions() -> None:
    x = ember.asarray(np.array([1.0, 4.0, 9.0], np.float32))
    np.testing.assert_array_equal(E.sub(10.0, x).numpy(), np.float32(10.0) - x.numpy())
    np.testing.assert_array_equal(E.maximum(x, 5.0).numpy(), np.maximum(x.numpy(), 5.0))
    np.testing.assert_array_equal(E.pow(x, 0.5).numpy(), np.sqrt(x.numpy()))
    with pytest.raises(ember.EmberError) as info:
        E.add(1.0, 2.0)
    assert str(info.value) == (
        "add: at least one operand must be an ember.Tensor, but both are Python numbers"
    )


# ---- where ----


def test_where() -> None:
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 1)).astype(np.float32)
    c = rng.random((3, 1, 5)) > 0.5
    ints = rng.integers(-5, 5, (4, 5)).astype(np.int64)
    outs = run_traced(
        lambda x, y, cond, i: [
            E.where(x > 0, x, 0.0),
            E.where(cond, y, x),  # cond, a and b broadcast to each other
            E.where(cond, 1.0, y),
            E.where(i > 0, i, -i),
            E.where(cond, cond, x < 0),
        ],
        [torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c), torch.from_numpy(ints)],
    )
    assert_matches(outs[0], np.where(a > 0, a, np.float32(0)), "float32")
    assert_matches(outs[1], np.where(c, b, a), "float32")
    assert_matches(outs[2], np.where(c, np.float32(1), b), "float32")
    assert_matches(outs[3], np.where(ints > 0, ints, -ints), "int64")
    assert_matches(outs[4], np.where(c, c, a < 0), "bool")
    # imperative
    got = E.where(ember.asarray(c), ember.asarray(b), 2.0)
    assert_matches(got, np.where(c, b, np.float32(2)), "float32")


# ---- cast ----


def cast_float_source() -> np.ndarray:
    return np.array(
        [-2.7, -0.5, -0.0, 0.0, 0.4, 0.5, 1.9, 3.5, 100.2, -100.9, 1e-8, 126.99, -127.9],
        np.float32,
    )


@functools.cache
def cast_results() -> dict[tuple[str, str], tuple[torch.Tensor, torch.Tensor]]:
    sources = {
        "float32": torch.from_numpy(cast_float_source()),
        "float64": torch.from_numpy(cast_float_source().astype(np.float64) * 0.75),
        "int64": torch.tensor([-300, -129, -1, 0, 1, 127, 128, 255, 256, 70000]),
        "int32": torch.tensor([-5, 0, 3, 1 << 24, (1 << 24) + 1], dtype=torch.int32),
        "bool": torch.tensor([True, False, True]),
        "bfloat16": torch.tensor([1.7, -2.5, 0.0, 100.5], dtype=torch.bfloat16),
        "float16": torch.tensor([0.1, -65504.0, 3.25, -0.0], dtype=torch.float16),
        "uint8": torch.tensor([0, 1, 200, 255], dtype=torch.uint8),
    }
    pairs = [(s, t) for s in sources for t in ["float32", "float64", "int32", "int8", "bool"]]
    pairs += [("float32", "float16"), ("float32", "bfloat16"), ("float32", "int64")]
    pairs += [("float32", "int16"), ("int64", "int16"), ("int64", "uint8"), ("bool", "uint8")]
    pairs += [("float64", "float16"), ("float64", "bfloat16")]
    pairs = [(s, t) for s, t in pairs if s != t]
    order = list(sources)
    outs = run_traced(
        lambda *xs: [E.cast(xs[order.index(s)], t) for s, t in pairs],
        [sources[s] for s in order],
    )
    return {p: (sources[p[0]], o) for p, o in zip(pairs, outs, strict=True)}


def cast_params() -> list:
    return [pytest.param(s, t, id=f"{s}->{t}") for s, t in cast_results()]


@pytest.mark.parametrize(("src", "dst"), cast_params())
def test_cast(src: str, dst: str) -> None:
    """float -> integer truncates toward zero, anything -> bool is != 0, integers wrap
    modulo 2**bits, float -> float16 / bfloat16 rounds to nearest even (as torch)."""
    source, got = cast_results()[(src, dst)]
    if src in LOW_PRECISION or dst in LOW_PRECISION:  # numpy has no bfloat16: torch's cast
        assert got.dtype == torch_dtype(dst)
        torch.testing.assert_close(got, source.to(torch_dtype(dst)), rtol=0, atol=0)
        return
    a = source.numpy()
    with np.errstate(all="ignore"):
        if a.dtype.kind == "f" and dst not in ("bool", "float32", "float64"):
            ref_np = np.trunc(a.astype(np.float64)).astype(np.int64).astype(dst)
        else:
            ref_np = a.astype(dst)
    assert_matches(got, ref_np, dst, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("float_type", "int_type"), [("float32", "int32"), ("float64", "int64"), ("float32", "int8")]
)
@pytest.mark.parametrize("size", [5, 1031])
def test_fused_float_int_float_round_trip_gives_positive_zero(
    float_type: str, int_type: str, size: int
) -> None:
    """A negative fraction cast to an integer is 0, and back to float +0.0 (numpy, torch),
    never -0.0: a fused kernel must not become trunc(x), which keeps the sign (1 / -0.0 is
    -inf where the reference gives +inf)."""
    rng = np.random.default_rng(size)
    v = (rng.random(size) * 2.2 - 1.1).astype(float_type)  # mostly in (-1, 1)
    v[:3] = [-0.5, -0.999, 0.25]
    x = ember.symbol([size], float_type, name="x")
    y = 1.0 / E.cast(E.cast(x, int_type), float_type)
    graph = ember.graph.optimize(ember.trace_from([y], x))
    assert graph.node_titles == ["Fused"]
    (got,) = graph.build().run([ember.asarray(v)])
    with np.errstate(divide="ignore"):
        ref = 1.0 / v.astype(int_type).astype(np.float64)
    assert_matches(got, ref, float_type)
    assert np.isposinf(got.numpy()[:2]).all()


@pytest.mark.parametrize("size", [5, 1031])
def test_fused_multiply_and_add_round_each_operation_as_numpy(size: int) -> None:
    """A fused kernel rounds every multiply and add on its own, as numpy's and eager's
    separate operations do: the compiler may not contract x * y + z into one fma, which
    would make x*x*x - x*x*x the product's rounding error instead of 0 (a layer_norm after
    it magnifies that to 1e-4)."""
    rng = np.random.default_rng(size)
    a, b, c = (rng.standard_normal(size).astype(np.float32) for _ in range(3))
    x, y, z = (ember.symbol([size], "float32", name=n) for n in "xyz")
    cube = x * x * x
    outs = [cube - cube, x * y + z, x * y - z * x]
    graph = ember.graph.optimize(ember.trace_from(outs, [x, y, z]))
    assert graph.node_titles == ["Fused"] * 3
    got = [t.numpy() for t in graph.build().run([ember.asarray(v) for v in (a, b, c)])]
    np.testing.assert_array_equal(got[0], np.zeros(size, np.float32))
    np.testing.assert_array_equal(got[1], a * b + c)
    np.testing.assert_array_equal(got[2], a * b - c * a)


def test_cast_imperative_and_astype() -> None:
    f = ember.asarray([-2.7, 2.7, 0.0])
    np.testing.assert_array_equal(E.cast(f, "int32").numpy(), np.array([-2, 2, 0], np.int32))
    np.testing.assert_array_equal(f.astype(ember.bool).numpy(), np.array([True, True, False]))
    nan_bool = E.cast(ember.asarray([np.nan]), "bool").numpy()
    np.testing.assert_array_equal(nan_bool, np.array([np.nan], np.float32).astype(bool))
    assert E.cast(f, "float32") is not None and E.cast(f, "float32").dtype == ember.float32
    with pytest.raises(ember.EmberError, match=r"^unknown dtype 'int3'; valid dtypes are "):
        E.cast(f, "int3")
