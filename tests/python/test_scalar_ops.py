"""Every scalar operator of ember's table (ember/ir/scalar_ops.h) against torch at edge values:
NaN, +-inf, +-0, denormals, the smallest normal, values near poles and where the functions
change formulas, huge and tiny inputs, and random values over many binades.

Each operator runs in one traced graph per (instruction set, dtype): float32 through the
vector code and its scalar tail (the lengths are not multiples of a vector), on every
instruction set this CPU can run (EMBER_ISA=scalar, avx2, avx512), and float64 through the
double-precision functions. The reference is torch's own function on the float64 values,
rounded to the result's dtype; results must be within a few ulps, with NaN, infinities and
the sign of zero where torch puts them. Integer operators (bitwise, shifts, remainders,
sign, abs) compare exactly with torch on every integer dtype, and every row converts under
torch.compile.
"""

from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from _helpers_core import run_traced, torch_dtype
from _helpers_torch import check

import ember
from ember.torch.converters import scalar as scalar_converters

TABLE = {name: (arity, rule) for name, arity, rule in ember.ops.scalar_op_table()}
UNARY = [n for n, (a, _) in TABLE.items() if a == 1]
BINARY = [n for n, (a, _) in TABLE.items() if a == 2]
FLOAT_UNARY = [n for n in UNARY if TABLE[n][1] in ("float", "signed", "float_or_identity",
                                                       "predicate")]
FLOAT_BINARY = [n for n in BINARY if TABLE[n][1] in ("arith", "div", "pow", "remainder",
                                                        "float", "compare")]
INT_UNARY = [n for n in UNARY if TABLE[n][1] in ("signed", "float_or_identity", "predicate",
                                                     "bitwise", "logical")]
# The orthogonal polynomials (x, n) run torch's recurrences n times: a degree of 1e10 would take
# seconds, so the sweeps take 1000 for it. torch returns an uninitialized value for x = NaN
# (its loop never runs); ember returns NaN (tests/python/test_cov_special.py), so the sweeps
# leave NaN x out.
POLYNOMIALS = frozenset(n for n in BINARY if "polynomial" in n)
INT_BINARY = [n for n in BINARY if TABLE[n][1] in ("arith", "integer", "remainder", "compare",
                                                      "logical", "bitwise", "shift")]

# How many ulps an operator may be off by, as a number or a function of the input. The GELUs
# evaluate a function of a rounded argument (x / sqrt(2), or u = sqrt(2 / pi) * (x + 0.044715
# x^3)) whose slope magnifies that rounding by about x^2 (erfc) or |2u| (exp), in float32
# and float64 alike, as in torch; ndtr's double version too (its float32 one rounds once).
ULPS: dict[str, Any] = {
    "default": 4,
    "gelu": lambda x: 4 + x.double() ** 2,
    "ndtr": lambda x: 4 + x.double() ** 2,
    "gelu_tanh": lambda x: 4 + 0.1 * x.double().abs() ** 3 + 4 * x.double().abs(),
    # The orthogonal polynomials run torch's recurrences in the operands' precision, as torch
    # does (so that overflow gives torch's NaN or inf). Where the compiler fuses the same
    # multiply-adds as torch's build (avx2, avx512) the float32 results are torch's bit for bit
    # (same_as); the scalar build rounds each step, and differs from float64 by what torch's
    # float32 recurrence does: up to 3e5 ulps near a zero of a Laguerre polynomial. Float64 is
    # within 4 ulps of torch.
    **{name: 2.0**19 for name in POLYNOMIALS},
    # torch's erfcx below 0 is 2 exp(x * x) - erfcx(-x) with x * x rounded: its float64
    # reference is 2 x^2 ulps off there (ember splits x^2 exactly).
    "erfcx": lambda x: 4 + 2 * x.double() ** 2 * (x < 0),
    # The incomplete gamma functions multiply x^a, e^-x and 1 / Gamma(a), each rounded once,
    # and sum a series: up to ~20 ulps of float64 (float32 rounds the double result once).
    "igamma": 256,
    "igammac": 256,
    # Near its zero (x = 1.4616...) digamma is a difference of nearly equal terms: an absolute
    # error of a few ulps of 1 is what any evaluation gives there.
    "digamma": lambda x: 4 + 8 / torch.special.digamma(x.double()).abs(),
}


def ulps_for(name: str, x: torch.Tensor) -> Any:
    bound = ULPS.get(name, ULPS["default"])
    return bound(x.double().clamp(-1e6, 1e6)) if callable(bound) else bound


def torch_function(name: str) -> Any:
    """torch's function for a table row: torch.X, torch.special.X, F.X, or an alias."""
    special = {"gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
               "equal": torch.eq, "not_equal": torch.ne, "less": torch.lt,
               "less_equal": torch.le, "greater": torch.gt, "greater_equal": torch.ge,
               "floor_divide": torch.floor_divide}
    if name in special:
        return special[name]
    for namespace in (torch, torch.special, torch.nn.functional):
        fn = getattr(namespace, name, None)
        if callable(fn):
            return fn
    raise AssertionError(f"no torch function for {name}")


def isas() -> list[str]:
    best = ember.isa()
    order = ["scalar", "avx2", "avx512"]
    return order[: order.index(best) + 1]


def edge_values_f32(rng: np.random.Generator) -> np.ndarray:
    tiny = np.finfo(np.float32).tiny
    fmax = np.finfo(np.float32).max
    base = [
        np.nan, np.inf, 0.0, 1e-45, 1e-40, tiny, 1e-30, 1e-10, 1e-7, 1e-4, 0.01, 0.1, 0.25, 0.5,
        0.75, 0.9, 0.99, 0.9999999, 1.0, 1.0000001, 1.001, 1.5, 2.0, 2.5, 3.0, 4.0, 5.5, 6.0,
        math.pi / 4, math.pi / 2, math.pi, 2 * math.pi, 10.0, 15.0, 19.9, 20.0, 20.1, 30.0,
        50.0, 80.0, 88.5, 89.0, 100.0, 710.0, 1000.0, 12345.678, 1e5, 1e6, 1e10, 1e20, 1e30,
        3e38, fmax,
    ]
    rand = np.exp(rng.uniform(-30.0, 30.0, 120))
    unit = rng.uniform(-1.0, 1.0, 60)
    values = np.concatenate([base, -np.asarray(base), rand, -rand, unit, -np.arange(1, 6)])
    return values.astype(np.float32)


def _numpy_reference(fn: Any, x: torch.Tensor) -> torch.Tensor:
    with np.errstate(over="ignore", invalid="ignore"):
        return torch.from_numpy(fn(x.numpy()))


# Float64 references where torch's own formula loses the result: its gelu and ndtr compute
# 1 + erf(x / sqrt(2)), which is 0 for x below about -8 (ember's go through erfc).
def _incgamma_reference(upper: bool) -> Any:
    """30-digit values from mpmath for finite positive operands (torch's at the edges and
    where mpmath does not converge): torch's own float64 result loses digits for small a
    (igammac(1e-30, 0.5) is 1.137e-30 there, 5.598e-31 in fact) and for tiny x
    (igamma(1, 1e-30) = 1 - e^-1e-30 is off by 7e-15)."""

    def ref(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        import mpmath

        out = (torch.igammac if upper else torch.igamma)(a, x)
        a_b, x_b = torch.broadcast_tensors(a, x)
        flat_out = out.reshape(-1).clone()
        with mpmath.workdps(30):
            for k, (ak, xk) in enumerate(zip(a_b.reshape(-1).tolist(),
                                             x_b.reshape(-1).tolist(), strict=True)):
                if 0 < ak < math.inf and 0 < xk < math.inf:
                    bounds = (xk, mpmath.inf) if upper else (0, xk)
                    try:
                        flat_out[k] = float(mpmath.gammainc(ak, *bounds, regularized=True))
                    except mpmath.libmp.libhyper.NoConvergence:
                        pass  # huge a: torch's value stands
        return flat_out.reshape(out.shape)

    return ref


def _airy_reference(x: torch.Tensor) -> torch.Tensor:
    """torch's float64 airy_ai, except for |x| < 2.1, where torch sums its Maclaurin series in
    double and its terms, up to 40 times the result, cancel: 30-digit values from mpmath."""
    import mpmath

    out = torch.special.airy_ai(x).reshape(-1).clone()
    with mpmath.workdps(30):
        for k, v in enumerate(x.reshape(-1).tolist()):
            if abs(v) < 2.1:
                out[k] = float(mpmath.airyai(v))
    return out.reshape(x.shape)


FLOAT64_REFERENCES: dict[str, Any] = {
    "airy_ai": _airy_reference,
    "igamma": _incgamma_reference(False),
    "igammac": _incgamma_reference(True),
    "gelu": lambda x: 0.5 * x * torch.special.erfc(-x / math.sqrt(2.0)),
    "ndtr": lambda x: 0.5 * torch.special.erfc(-x / math.sqrt(2.0)),
    # x * sigmoid(2u) rather than x * (1 + tanh(u)) / 2, which cancels for negative x.
    "gelu_tanh": lambda x: x * torch.sigmoid(2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)),
    # torch's float64 sinh and cosh overflow from exp(x) where the result itself is finite
    # (x = 710); numpy's are the C library's.
    "sinh": lambda x: _numpy_reference(np.sinh, x),
    "cosh": lambda x: _numpy_reference(np.cosh, x),
}


def reference(name: str, args: list[torch.Tensor]) -> torch.Tensor:
    """torch's result on the float64 values, in the dtype torch gives for the inputs."""
    fn = FLOAT64_REFERENCES.get(name, torch_function(name))
    out_dtype = fn(*[a[:1] for a in args]).dtype
    wide = [a.double() if a.is_floating_point() else a for a in args]
    return fn(*wide).to(out_dtype)


def assert_close_ulps(name: str, got: torch.Tensor, ref: torch.Tensor, ulps: Any,
                      same_as: torch.Tensor | None = None) -> None:
    """got is within `ulps` of ref, or equal to `same_as` (torch's own result in got's
    dtype: where float32 itself cannot hold an intermediate, as exp(89) in silu, ember and
    torch give the same answer)."""
    assert got.dtype == ref.dtype, f"{name}: dtype {got.dtype}, torch {ref.dtype}"
    if not got.is_floating_point():
        bad = (got != ref).nonzero()
        assert bad.numel() == 0, f"{name}: {got[bad[:5]]} != torch {ref[bad[:5]]}"
        return
    g, r = got.double(), ref.double()
    nan_ok = torch.isnan(g) == torch.isnan(r)
    inf_ok = torch.where(torch.isinf(r), g == r, ~torch.isinf(g) | torch.isnan(r))
    eps = torch.finfo(got.dtype).eps
    tiny = torch.finfo(got.dtype).tiny
    ulps = torch.nan_to_num(torch.as_tensor(ulps, dtype=torch.float64), nan=4.0, posinf=1e6)
    tol = ulps * eps * r.abs() + tiny * ulps
    finite = torch.isfinite(r) & torch.isfinite(g)
    val_ok = ~finite | (g == r) | ((g - r).abs() <= tol)
    # The sign of a zero result, where torch gives a zero.
    zero = finite & (r == 0)
    sign_ok = ~zero | (torch.signbit(g) == torch.signbit(r)) | (g != 0)
    ok = nan_ok & inf_ok & val_ok & sign_ok
    if same_as is not None:
        ok = ok | (got == same_as) | (torch.isnan(got) & torch.isnan(same_as))
    if not bool(ok.all()):
        idx = (~ok).nonzero().flatten()[:6]
        raise AssertionError(f"{name}: {ok.numel() - int(ok.sum())} of {ok.numel()} wrong; "
                             f"got {g[idx].tolist()}, torch {r[idx].tolist()}")


def run_all(names: list[str], inputs: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    """One traced graph computing every operator on its inputs."""
    flat = [t for args in inputs for t in args]

    def build(*symbols: Any) -> list[Any]:
        outs, k = [], 0
        for name, args in zip(names, inputs, strict=True):
            outs.append(getattr(ember.ops, name)(*symbols[k:k + len(args)]))
            k += len(args)
        return outs

    return run_traced(build, flat)


@pytest.fixture(params=isas())
def isa(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("EMBER_ISA", request.param)
    ember.clear_memory_cache()
    yield request.param
    ember.clear_memory_cache()


def binary_edge_pairs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(values, values)
    return a.ravel(), b.ravel()


BINARY_EDGES = np.asarray(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-40, 1e-30, 0.5, -0.5, 1.0, -1.0, 1.5,
     -2.0, 3.0, 7.25, -10.0, 1e10, -3e38], dtype=np.float32)




def binary_inputs(name: str, a: torch.Tensor, b: torch.Tensor) -> list[torch.Tensor]:
    if name not in POLYNOMIALS:
        return [a, b]
    huge = torch.isfinite(b) & (b.abs() > 1e6)
    keep = ~torch.isnan(a)
    return [a[keep], torch.where(huge, torch.copysign(torch.full_like(b, 1000.0), b), b)[keep]]


def test_float_operators_at_edge_values(isa: str) -> None:
    rng = np.random.default_rng(0)
    x = torch.from_numpy(edge_values_f32(rng))
    a, b = (torch.from_numpy(v) for v in binary_edge_pairs(BINARY_EDGES))
    names = FLOAT_UNARY + FLOAT_BINARY
    inputs = [[x] for _ in FLOAT_UNARY] + [binary_inputs(n, a, b) for n in FLOAT_BINARY]
    got = run_all(names, inputs)
    for name, args, g in zip(names, inputs, got, strict=True):
        assert_close_ulps(name, g, reference(name, args), ulps_for(name, args[0]),
                          same_as=torch_function(name)(*args))


def test_float64_operators_at_edge_values() -> None:
    rng = np.random.default_rng(1)
    x = torch.from_numpy(edge_values_f32(rng).astype(np.float64) * (1 + 1e-9))
    a, b = (torch.from_numpy(v.astype(np.float64)) for v in binary_edge_pairs(BINARY_EDGES))
    names = FLOAT_UNARY + FLOAT_BINARY
    inputs = [[x] for _ in FLOAT_UNARY] + [binary_inputs(n, a, b) for n in FLOAT_BINARY]
    got = run_all(names, inputs)
    for name, args, g in zip(names, inputs, got, strict=True):
        # torch's float64 functions are the C library's; ember's are too, or within 4 ulps.
        assert_close_ulps(name, g, reference(name, args), ulps_for(name, args[0]))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "bool"])
def test_integer_operators_match_torch(dtype: str) -> None:
    td = torch_dtype(dtype)
    if dtype == "bool":
        x = torch.tensor([True, False] * 37)
        y = torch.tensor([True, True, False, False] * 18 + [False, True])
    else:
        info = torch.iinfo(td)
        rng = np.random.default_rng(2)
        edge = [0, 1, 2, 3, 7, 8, info.max, info.min, info.max - 1, info.min + 1]
        if info.min < 0:
            edge += [-1, -2, -7, -8]
        values = np.concatenate([edge, rng.integers(info.min, info.max, 60, endpoint=True)])
        x = torch.from_numpy(np.asarray(values)).to(td)
        y = torch.from_numpy(np.asarray(np.roll(values, 5))).to(td)
    names, inputs = [], []
    for name in INT_UNARY:
        # torch.sign(bool) is the identity; ember asks for a number type (a clear error).
        if _torch_accepts(name, [x]) and not (name == "sign" and dtype == "bool"):
            names.append(name)
            inputs.append([x])
    for name in INT_BINARY:
        if dtype == "bool" and TABLE[name][1] not in ("compare", "logical", "bitwise"):
            continue  # arithmetic on bool: ember asks for a number type (a clear error)
        other = y
        if TABLE[name][1] in ("integer", "remainder"):
            other = torch.where(y == 0, torch.ones_like(y), y)  # zero divisors: see below
        if TABLE[name][1] == "shift":
            other = (y.to(torch.int64).abs() % 70).to(td)  # counts beyond the bit width too
        if _torch_accepts(name, [x, other]):
            names.append(name)
            inputs.append([x, other])
    got = run_all(names, inputs)
    for name, args, g in zip(names, inputs, got, strict=True):
        assert_close_ulps(name, g, torch_function(name)(*args), 0)


def _torch_accepts(name: str, args: list[torch.Tensor]) -> bool:
    try:
        torch_function(name)(*[a[:2] for a in args])
    except (RuntimeError, TypeError):
        return False
    return True


@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide"])
def test_integer_zero_divisor_raises(name: str) -> None:
    x = ember.from_torch(torch.tensor([5, -3, 4], dtype=torch.int32))
    zero = ember.from_torch(torch.tensor([1, 0, 2], dtype=torch.int32))
    with pytest.raises(ember.DataError, match="division by zero|divides by zero|zero"):
        getattr(ember.ops, name)(x, zero)


@pytest.mark.parametrize("name", UNARY)
def test_every_unary_operator_converts(name: str) -> None:
    rule = TABLE[name][1]
    if rule in ("bitwise", "logical"):
        x = torch.tensor([1, 0, -3, 7, 100], dtype=torch.int32)
    else:
        x = torch.linspace(-3.5, 3.5, 19)
        if name in ("acosh",):
            x = x.abs() + 1
        if name in ("asin", "acos", "atanh", "erfinv"):
            x = x / 4
    fn = torch_function(name)
    check(lambda t: fn(t), x, tol=1e-5)
    if hasattr(torch.Tensor, name):
        # By attribute name: torch 2.13's Dynamo reuses a graph across closures holding
        # different method descriptors (torch.Tensor.neg, then torch.Tensor.abs).
        check(lambda t: getattr(t, name)() * 2, x, tol=1e-5)


@pytest.mark.parametrize("name", BINARY)
def test_every_binary_operator_converts(name: str) -> None:
    rule = TABLE[name][1]
    if rule in ("bitwise", "shift", "integer"):
        a = torch.tensor([1, 6, -3, 7, 100], dtype=torch.int64)
        b = torch.tensor([3, 2, 1, 5, 4], dtype=torch.int64)
    else:
        a = torch.linspace(-3.5, 3.5, 19)
        b = torch.linspace(0.75, 4.0, 19) * torch.tensor([1.0, -1.0]).repeat(10)[:19]
    fn = torch_function(name)
    check(lambda x, y: fn(x, y), a, b, tol=1e-5)


@pytest.mark.parametrize(
    ("op", "dtype"),
    [(operator.and_, torch.int32), (operator.or_, torch.int64), (operator.xor, torch.uint8),
     (operator.lshift, torch.int32), (operator.rshift, torch.int64), (operator.invert, torch.int8),
     (operator.and_, torch.bool), (operator.mod, torch.float32)],
)
def test_python_operators_are_bitwise_as_in_torch(op: Any, dtype: torch.dtype) -> None:
    if dtype == torch.bool:
        a, b = torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])
    elif dtype.is_floating_point:
        a, b = torch.tensor([5.5, -5.5, 3.0, -0.0]), torch.tensor([2.0, 2.0, -2.0, 3.0])
    else:
        a = torch.tensor([12, 5, 3, 100], dtype=dtype)
        b = torch.tensor([10, 3, 1, 2], dtype=dtype)
    if op is operator.invert:
        check(lambda x: op(x) + 0, a)
    else:
        check(lambda x, y: op(x, y), a, b)


def test_float_remainder_and_fmod_follow_their_signs() -> None:
    a = torch.tensor([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 1e30, 7.0])
    b = torch.tensor([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 3.0, 0.0])
    check(lambda x, y: (torch.remainder(x, y), torch.fmod(x, y), x % y), a, b, tol=0)


def test_nan_to_num_elu_celu() -> None:
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -1.5, 0.0, 2.0, -1e-8])
    check(lambda t: (torch.nan_to_num(t), torch.nan_to_num(t, 1.0, 2.0, -3.0)), x, tol=0)
    for dtype in ("float32", "float64"):
        got = ember.ops.nan_to_num(ember.from_torch(x.to(torch_dtype(dtype)))).torch()
        assert_close_ulps("nan_to_num", got, torch.nan_to_num(x.to(torch_dtype(dtype))), 0)
    y = torch.linspace(-6, 3, 29)
    check(lambda t: (torch.nn.functional.elu(t, 0.7), torch.nn.functional.celu(t, 1.3),
                     torch.nn.functional.selu(t), torch.nn.functional.softplus(t)), y)
    with pytest.raises(ember.EmberError, match="elu: expected a floating-point tensor"):
        ember.ops.elu(ember.from_torch(torch.tensor([1, 2])))


def test_clamp_with_tensor_bounds() -> None:
    x = torch.tensor([float("nan"), -3.0, 0.5, 4.0, 10.0])
    lo = torch.tensor([0.0, 0.0, 1.0, float("nan"), 2.0])
    hi = torch.tensor([5.0, 5.0, 5.0, 5.0, 6.0])
    check(lambda t, a, b: (torch.clamp(t, a, b), torch.clamp_min(t, a), torch.clamp_max(t, b),
                           t.clamp(min=a)), x, lo, hi, tol=0)
    ex, elo, ehi = (ember.from_torch(v) for v in (x, lo, hi))
    assert_close_ulps("clamp_min", ember.ops.clamp_min(ex, elo).torch(), torch.clamp_min(x, lo), 0)
    assert_close_ulps("clamp_max", ember.ops.clamp_max(ex, ehi).torch(), torch.clamp_max(x, hi), 0)
    y = torch.linspace(-3, 3, 13)
    assert_close_ulps("hardtanh", ember.ops.hardtanh(ember.from_torch(y), -0.5, 2.0).torch(),
                      torch.nn.functional.hardtanh(y, -0.5, 2.0), 0)


def test_table_reaches_every_layer() -> None:
    """Each row is a registered operator, an ember.ops function taking `arity` operands, and
    a torch converter of the same arity."""
    registered = set(ember.ops.op_names())
    for name, (arity, _) in TABLE.items():
        assert name in registered, name
        assert name in ember.ops.__all__, name
        conv = scalar_converters.converter(name)
        assert conv.__name__ == name
        positional = [p for p in inspect.signature(conv).parameters.values()
                      if p.kind == p.POSITIONAL_OR_KEYWORD]
        assert len(positional) == arity, name
        operands = [ember.from_torch(torch.ones(3, dtype=torch.int32))] * arity
        if TABLE[name][1] in ("float", "div", "pow"):
            operands = [ember.from_torch(torch.ones(3))] * arity
        assert list(getattr(ember.ops, name)(*operands).shape) == [3], name


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda f, i: ember.ops.bitwise_and(f, f),
         "bitwise_and: expected integer or bool tensors, got float32[3]"),
        (lambda f, i: ember.ops.bitwise_not(f),
         "bitwise_not: expected an integer or bool tensor, got float32[3]"),
        (lambda f, i: ember.ops.bitwise_left_shift(f, f),
         "bitwise_left_shift: expected integer tensors, got float32[3]"),
        (lambda f, i: ember.ops.floor_divide(f, f),
         "floor_divide: ember implements it for integer tensors, got float32[3]; for floating "
         "point use floor(a / b)"),
        (lambda f, i: ember.ops.sin(i),
         "sin: expected a floating-point tensor (float16, bfloat16, float32 or float64), got "
         "int32; cast it first with ember.ops.cast(x, ember.float32)"),
        (lambda f, i: ember.ops.celu(f, 0.0), "celu: alpha must not be 0"),
        (lambda f, i: ember.ops.celu(i), "celu: expected a floating-point tensor, got int32"),
    ],
)
def test_dtype_rule_messages(call: Any, message: str) -> None:
    f = ember.from_torch(torch.ones(3))
    i = ember.from_torch(torch.ones(3, dtype=torch.int32))
    with pytest.raises(ember.EmberError) as info:
        call(f, i)
    assert str(info.value).startswith(message), str(info.value)
