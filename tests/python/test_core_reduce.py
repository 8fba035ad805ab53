"""Reductions (sum mean max min prod argmax argmin), softmax and matmul against numpy
(float64 references) and, for float16 / bfloat16, against torch computing in float32 and
rounding once (ember accumulates low-precision values in float32)."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pytest
import torch
from _helpers_core import (
    FLOAT_DTYPES,
    LOW_PRECISION,
    assert_matches,
    np_softmax,
    random_tensor,
    run_traced,
    torch_dtype,
)

import ember

E = ember.ops
Dims = int | list[int] | None

REDUCE_OPS = ["sum", "mean", "max", "min", "prod"]
ARG_OPS = ["argmax", "argmin"]
DIMS_FULL: list[Dims] = [None, 1, -1, [0, 2], [-3, -1], [0, 1, 2]]
REDUCE_DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int8", "uint8", "bool"]
SHAPE = (3, 17, 5)
WIDE = (2, 1031)  # a long innermost axis: vector accumulators plus a tail


def reduce_cases(dtype: str) -> list[tuple[str, Dims, bool]]:
    """Every dims / keepdim combination for float32; a cheaper selection for other dtypes."""
    if dtype == "float32":
        pairs = [(d, k) for d in DIMS_FULL for k in (False, True)]
        arg_pairs = [(d, k) for d in (0, 1, -1) for k in (False, True)]
    else:
        pairs = [(None, False), (-1, False), (-1, True), ([0, 2], False)]
        arg_pairs = [(0, False), (1, True), (-1, False)]
    cases: list[tuple[str, Dims, bool]] = []
    for op in REDUCE_OPS:
        if op == "mean" and dtype not in FLOAT_DTYPES:
            continue  # mean refuses integers (tested in test_core_errors.py)
        cases += [(op, d, k) for d, k in pairs]
    if dtype != "bool":
        cases += [(op, d, k) for op in ARG_OPS for d, k in arg_pairs]
    return cases


def reduce_input(dtype: str, shape: Sequence[int], seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    if dtype in FLOAT_DTYPES or dtype == "bool":
        return random_tensor(shape, dtype, rng, 1.0)
    # |prod| of all 255 elements stays far below 2**63; many ties for argmax / argmin
    low = 0 if dtype == "uint8" else -1
    return torch.from_numpy(np.asarray(rng.integers(low, 2, shape))).to(torch_dtype(dtype)) + (
        torch.from_numpy(np.asarray(rng.random(shape) < 0.05)).to(torch_dtype(dtype))
    )


def apply(op: str, x: ember.Tensor, dims: Dims, keepdim: bool) -> ember.Tensor:
    if op in ARG_OPS:
        assert isinstance(dims, int)
        return getattr(E, op)(x, dims, keepdim)
    return getattr(E, op)(x, dims, keepdim=keepdim)


def key(op: str, dims: Dims, keepdim: bool) -> tuple[str, str, bool]:
    return (op, repr(dims), keepdim)


@functools.cache
def reduce_results(dtype: str) -> tuple[torch.Tensor, torch.Tensor, dict]:
    x = reduce_input(dtype, SHAPE, 1)
    wide = reduce_input(dtype, WIDE, 2)
    cases = reduce_cases(dtype)
    wide_ops = [op for op in REDUCE_OPS if dtype in FLOAT_DTYPES or op != "mean"]

    def build(s: ember.Tensor, w: ember.Tensor) -> list[ember.Tensor]:
        outs = [apply(op, s, d, k) for op, d, k in cases]
        return outs + [getattr(E, op)(w, -1) for op in wide_ops]

    outs = run_traced(build, [x, wide])
    results = {key(*c): out for c, out in zip(cases, outs[: len(cases)], strict=True)}
    for op, out in zip(wide_ops, outs[len(cases) :], strict=True):
        results[key("wide-" + op, -1, False)] = out
    return x, wide, results


def reduce_reference(op: str, x: torch.Tensor, dims: Dims, keepdim: bool) -> tuple[object, str]:
    """The expected values and dtype. Sums and products of integers and bools give int64;
    max / min keep the dtype; argmax / argmin give int64, the first index of the extreme."""
    dtype = str(x.dtype).removeprefix("torch.")
    if op in ARG_OPS:
        assert isinstance(dims, int)
        a = x.numpy() if dtype not in LOW_PRECISION else x.float().numpy()  # exact in float32
        return getattr(np, op)(a, axis=dims, keepdims=keepdim), "int64"
    axes = None if dims is None else (dims if isinstance(dims, int) else tuple(dims))
    np_op = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}[op]
    if dtype in LOW_PRECISION:  # float32 values, reduced, rounded once to the dtype
        a = x.float().numpy().astype(np.float64)
        return torch.from_numpy(np.asarray(np_op(a, axis=axes, keepdims=keepdim))).to(
            x.dtype
        ), dtype
    a = x.numpy()
    if dtype in FLOAT_DTYPES:
        a = a.astype(np.float64)
    ref = np.asarray(np_op(a, axis=axes, keepdims=keepdim))
    if op in ("sum", "prod") and dtype not in FLOAT_DTYPES:
        return ref.astype(np.int64), "int64"
    return ref, dtype


def reduce_params() -> list:
    params = []
    for dtype in REDUCE_DTYPES:
        for op, dims, keepdim in reduce_cases(dtype):
            params.append(
                pytest.param(dtype, op, dims, keepdim, id=f"{dtype}-{op}-{dims}-{keepdim}")
            )
    return params


def reduce_tolerance(op: str, dtype: str, n: int) -> tuple[float | None, float | None]:
    if dtype == "float32":  # float32 accumulation of up to n values of magnitude ~1
        return 1e-5 * max(1.0, math.sqrt(n)), 1e-6 * n
    return None, None


@pytest.mark.parametrize(("dtype", "op", "dims", "keepdim"), reduce_params())
def test_reduce(dtype: str, op: str, dims: Dims, keepdim: bool) -> None:
    x, _, results = reduce_results(dtype)
    ref, expect = reduce_reference(op, x, dims, keepdim)
    rtol, atol = reduce_tolerance(op, dtype, x.numel())
    assert_matches(results[key(op, dims, keepdim)], ref, expect, rtol, atol)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dtype", "op"),
    [(d, op) for d in REDUCE_DTYPES for op in REDUCE_OPS if op != "mean" or d in FLOAT_DTYPES],
)
def test_reduce_long_inner_axis(dtype: str, op: str) -> None:
    _, wide, results = reduce_results(dtype)
    ref, expect = reduce_reference(op, wide, -1, False)
    rtol, atol = reduce_tolerance(op, dtype, WIDE[-1])
    if dtype in LOW_PRECISION and op == "sum":
        atol = 0.1  # a sum near 30 in bfloat16 is 0.125 apart from its neighbours
    assert_matches(results[key("wide-" + op, -1, False)], ref, expect, rtol, atol)  # type: ignore


def test_reduce_imperative() -> None:
    a = np.random.default_rng(9).standard_normal((4, 33)).astype(np.float32)
    x = ember.asarray(a)
    assert_matches(E.sum(x, 1), a.astype(np.float64).sum(1), "float32", rtol=1e-5, atol=1e-5)
    assert_matches(E.max(x), np.asarray(a.max()), "float32")
    assert_matches(E.argmin(x, -1, keepdim=True), a.argmin(-1, keepdims=True), "int64")
    assert_matches(E.mean(x, [0, 1]), np.asarray(a.astype(np.float64).mean()), "float32")


def test_reduce_zero_d_and_empty() -> None:
    s = ember.asarray(2.5)
    z = ember.zeros([3, 0])
    outs = run_traced(
        lambda x, e: [
            E.sum(x),
            E.sum(x, 0),
            E.max(x, -1, keepdim=True),
            E.sum(e),  # 0 (numpy: sum of nothing)
            E.prod(e, 1),  # 1
            E.mean(e, 1),  # NaN
            E.sum(e, 0),  # shape (0,)
            E.max(e, 0),  # shape (0,)
        ],
        [ember.to_torch(s), ember.to_torch(z)],
    )
    e = np.zeros((3, 0), np.float32)
    with warnings.catch_warnings():  # numpy warns about the mean of nothing
        warnings.simplefilter("ignore")
        refs = [
            np.asarray(2.5),
            np.asarray(2.5),
            np.asarray(2.5),
            np.asarray(0.0),
            np.prod(e, 1),
            np.mean(e, 1),
            np.sum(e, 0),
            np.max(e, 0),
        ]
    for got, ref in zip(outs, refs, strict=True):
        assert_matches(got, ref, "float32")


def test_reduce_nan_propagation() -> None:
    """max / min / sum with a NaN give NaN (numpy); argmax / argmin point at the first NaN."""
    a = np.random.default_rng(3).standard_normal((4, 40)).astype(np.float32)
    a[0, 5] = np.nan
    a[1, 39] = np.nan  # in the vector tail
    a[2, 0] = np.nan
    a[2, 7] = np.nan
    a[3, 9] = np.inf
    ops = [
        (lambda x: E.max(x, 1), lambda v: np.max(v, 1), "float32"),
        (lambda x: E.min(x, 1), lambda v: np.min(v, 1), "float32"),
        (lambda x: E.sum(x, 1), lambda v: np.sum(v.astype(np.float64), 1), "float32"),
        (lambda x: E.max(x, 0), lambda v: np.max(v, 0), "float32"),
        (lambda x: E.argmax(x, 1), lambda v: np.argmax(v, 1), "int64"),
        (lambda x: E.argmin(x, 1), lambda v: np.argmin(v, 1), "int64"),
        (lambda x: E.maximum(x, 0.0), lambda v: np.maximum(v, 0.0), "float32"),
    ]
    outs = run_traced(lambda x: [f(x) for f, _, _ in ops], [torch.from_numpy(a)])
    for (_, ref, dtype), got in zip(ops, outs, strict=True):
        assert_matches(got, np.asarray(ref(a)), dtype, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("width", [1, 5, 7, 14, 15, 16, 17, 31, 49, 65])
def test_reduce_rows_of_every_length(width: int) -> None:
    """Rows shorter than a vector, or with a partial vector after whole ones: the last lanes
    are read masked and the others count as the reduction's identity (a -inf row keeps its
    maximum, a row of -1 its sum)."""
    a = np.random.default_rng(width).standard_normal((6, 3, width)).astype(np.float32)
    a[1, 2, :] = -np.inf
    a[2, 0, :] = -1.0
    a[3, 1, width - 1] = np.nan
    ops = [
        (lambda x: E.sum(x, 2), lambda v: np.sum(v.astype(np.float64), 2)),
        (lambda x: E.mean(x, [1, 2]), lambda v: np.mean(v.astype(np.float64), (1, 2))),
        (lambda x: E.max(x, 2), lambda v: np.max(v, 2)),
        (lambda x: E.min(x, 2), lambda v: np.min(v, 2)),
        (lambda x: E.sum(x * x, 2), lambda v: np.sum(v.astype(np.float64) ** 2, 2)),
    ]
    outs = run_traced(lambda x: [f(x) for f, _ in ops], [torch.from_numpy(a)])
    for (_, ref), got in zip(ops, outs, strict=True):
        assert_matches(got, np.asarray(ref(a)), "float32", rtol=1e-5, atol=1e-5)


# ---- softmax ----

SOFTMAX_SHAPE = (3, 17, 5)


@functools.cache
def softmax_results(dtype: str) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    x = random_tensor(SOFTMAX_SHAPE, dtype, np.random.default_rng(12), 3.0)
    x[0, 0, :] = torch.tensor([1000.0, 999.0, -1000.0, 0.0, 1000.0])  # needs the max shift
    x[1, :, 2] = -float("inf")
    x[1, 3, 2] = 0.0
    wide = random_tensor((2, 1031), dtype, np.random.default_rng(13), 3.0)
    outs = run_traced(
        lambda s, w: [E.softmax(s, a) for a in (0, 1, 2, -1, -2)] + [E.softmax(w)], [x, wide]
    )
    return x, wide, outs


def softmax_reference(x: torch.Tensor, axis: int) -> torch.Tensor | np.ndarray:
    if x.dtype in (torch.float16, torch.bfloat16):
        return torch.softmax(x.float(), axis).to(x.dtype)
    return np_softmax(x.double().numpy(), axis)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("index", range(6))
def test_softmax(dtype: str, index: int) -> None:
    x, wide, outs = softmax_results(dtype)
    axis = [0, 1, 2, -1, -2, -1][index]
    source = x if index < 5 else wide
    assert_matches(outs[index], softmax_reference(source, axis), dtype)
    total = outs[index].double().sum(axis)
    torch.testing.assert_close(total, torch.ones_like(total), rtol=0, atol=2e-2)


def test_softmax_imperative() -> None:
    a = np.random.default_rng(14).standard_normal((4, 5)).astype(np.float32)
    for axis in (0, 1, -1):
        assert_matches(
            E.softmax(ember.asarray(a), axis), np_softmax(a.astype(np.float64), axis), "float32"
        )


# ---- matmul ----

MATMUL_CASES: list[tuple[tuple[int, ...], tuple[int, ...]]] = [
    ((1, 1), (1, 1)),
    ((17, 33), (33, 5)),
    ((128, 64), (64, 256)),
    ((1, 768), (768, 3072)),
    ((2, 3, 4), (2, 4, 5)),  # batched
    ((3, 4), (2, 4, 5)),  # a broadcast over b's batch
    ((2, 1, 3, 4), (5, 4, 6)),  # batch dims broadcast against each other
    ((4,), (4, 5)),  # 1-d on the left
    ((3, 4), (4,)),  # 1-d on the right
    ((4,), (4,)),  # dot product: 0-d result
    ((2, 3, 4), (4,)),
    ((5,), (2, 5, 3)),
    ((0, 3), (3, 4)),  # empty result
    ((2, 0), (0, 3)),  # K = 0: zeros
]
MATMUL_SHORT = [c for c in MATMUL_CASES if c[0] not in ((128, 64), (1, 768))]


def matmul_inputs(dtype: str, cases: Sequence) -> list[torch.Tensor]:
    rng = np.random.default_rng(21)
    tensors = []
    for sa, sb in cases:
        for s in (sa, sb):
            if dtype == "int32":
                tensors.append(torch.from_numpy(np.asarray(rng.integers(-5, 6, s), np.int32)))
            else:
                tensors.append(random_tensor(s, dtype, rng, 1.0))
    return tensors


@functools.cache
def matmul_results(dtype: str) -> tuple[list, list[torch.Tensor], list[torch.Tensor]]:
    cases = MATMUL_CASES if dtype == "float32" else MATMUL_SHORT
    inputs = matmul_inputs(dtype, cases)
    outs = run_traced(lambda *xs: [xs[2 * i] @ xs[2 * i + 1] for i in range(len(cases))], inputs)
    return list(cases), inputs, outs


def matmul_params() -> list:
    params = []
    for dtype in ["float32", "float64", "int32", *LOW_PRECISION]:
        cases = MATMUL_CASES if dtype == "float32" else MATMUL_SHORT
        for i, (sa, sb) in enumerate(cases):
            params.append(pytest.param(dtype, i, id=f"{dtype}-{sa}x{sb}"))
    return params


@pytest.mark.parametrize(("dtype", "index"), matmul_params())
def test_matmul(dtype: str, index: int) -> None:
    cases, inputs, outs = matmul_results(dtype)
    a, b = inputs[2 * index], inputs[2 * index + 1]
    k = cases[index][0][-1]
    got = outs[index]
    if dtype == "int32":
        ref = np.matmul(a.numpy().astype(np.int64), b.numpy().astype(np.int64)).astype(np.int32)
        assert_matches(got, ref, "int32")
    elif dtype in LOW_PRECISION:  # float32 products, rounded once
        ref_t = torch.matmul(a.float(), b.float()).to(a.dtype)
        assert_matches(got, ref_t, dtype, rtol=2e-2, atol=2e-2 * math.sqrt(max(k, 1)))
    else:
        ref = np.matmul(a.numpy().astype(np.float64), b.numpy().astype(np.float64))
        rtol, atol = (1e-5, 2e-6 * max(k, 1)) if dtype == "float32" else (1e-10, 1e-12 * max(k, 1))
        assert_matches(got, ref, dtype, rtol=rtol, atol=atol)


def test_matmul_imperative_quick_start() -> None:
    a, b, c = ember.randn([2, 3]), ember.randn([3, 2]), ember.randn([2])
    d = ember.ops.matmul(a, b) + c
    ref = a.numpy().astype(np.float64) @ b.numpy() + c.numpy()
    assert_matches(d, ref, "float32")
    assert_matches(a @ b, a.numpy().astype(np.float64) @ b.numpy(), "float32")


def test_matmul_refuses_scalars_and_bool() -> None:
    x = ember.ones([2, 2])
    with pytest.raises(ember.EmberError) as info:
        x @ 2.0  # type: ignore[operator]
    assert str(info.value) == (
        "matmul: both operands need at least one dimension, got float32[2, 2] and float32[]; "
        "multiply by a 0-d tensor with mul"
    )
    with pytest.raises(ember.EmberError, match="^matmul: bool tensors are not supported"):
        ember.ones([2, 2], "bool") @ ember.ones([2, 2], "bool")


@pytest.mark.parametrize("step", [2, 3])
def test_reductions_along_every_other_element_run_in_vectors(tmp_path, step: int) -> None:
    """A sum, max and min along an axis read every other element (a stride-2 depthwise
    convolution's weight gradient reads its input at 2 * ow + kw) run in vectors along that
    axis, tail included; every third element stays as it was (vectors along the outputs or
    scalar), and both match float64."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((6, 2 * 37 + 1)).astype(np.float32)
    sx = ember.symbol(list(x.shape), "float32")
    ref = x[:, 1::step].astype(np.float64)
    cases = [(E.sum, ref.sum(1)), (E.max, ref.max(1)), (E.min, ref.min(1))]
    for i, (op, want) in enumerate(cases):  # one graph each: the slice fuses into the reduction
        dump = tmp_path / str(i)
        out = op(E.slice(sx, [1], [1], [x.shape[1]], [step]), 1)
        compiled = ember.graph.optimize(ember.trace_from([out], [sx])).build(dump_dir=str(dump))
        (got,) = compiled.run([ember.asarray(x)])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
        plans = [f.read_text() for f in (dump / "kernels").glob("*.plan.txt")]
        assert len(plans) == 1, plans
        assert ("(reduce, vector)" in plans[0]) == (step == 2), plans[0]
        if step == 2:
            assert "strided (stride 2) along __r1" in plans[0], plans[0]
