"""Bad data at run time: embedding indices out of range and integer division by zero raise
ember.DataError naming the operator (compiled graphs, imperative ops, torch.compile), never
crash or return garbage, and leave the compiled graph fit for the next run. Values are
compared with eager PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import ember
import ember.torch
from ember.torch.report import EagerFallbackWarning

ROWS, DIM = 7, 5


def weight() -> np.ndarray:
    return np.arange(ROWS * DIM, dtype=np.float32).reshape(ROWS, DIM)


def embedding_graph(index_dtype: type) -> ember.CompiledGraph:
    x = ember.symbol_like(ember.asarray(np.zeros([3], dtype=index_dtype)))
    y = ember.ops.embedding(ember.asarray(weight()), x) * 2.0 + 1.0
    return ember.graph.optimize(ember.trace_from(y)).build()


def torch_embedding(ids: np.ndarray) -> np.ndarray:
    w = torch.from_numpy(weight())
    return (torch.nn.functional.embedding(torch.from_numpy(ids).long(), w) * 2.0 + 1.0).numpy()


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("bad", [ROWS, -1, 50000])
def test_embedding_out_of_range_in_a_compiled_graph(index_dtype: type, bad: int) -> None:
    g = embedding_graph(index_dtype)
    good = np.array([6, 0, 3], dtype=index_dtype)
    np.testing.assert_array_equal(g(ember.asarray(good)).numpy(), torch_embedding(good))
    ids = np.array([1, bad, 2], dtype=index_dtype)
    with pytest.raises(ember.DataError, match=rf"Embedding.*index {bad} is out of range for "
                       rf"dimension 0 .*of size {ROWS} \(valid indices are 0 to {ROWS - 1}"):
        g(ember.asarray(ids))
    # A DataError is an EmberError; the graph runs correctly on good input afterwards.
    assert issubclass(ember.DataError, ember.EmberError)
    np.testing.assert_array_equal(g(ember.asarray(good)).numpy(), torch_embedding(good))


def test_embedding_out_of_range_imperative() -> None:
    w = ember.asarray(weight())
    with pytest.raises(ember.DataError, match=r"index 9 is out of range"):
        ember.ops.embedding(w, ember.asarray(np.array([[0, 9]], dtype=np.int64)))
    with pytest.raises(ember.DataError, match=r"index -3 is out of range"):
        ember.ops.embedding(w, ember.asarray(np.array([-3], dtype=np.int32)))
    out = ember.ops.embedding(w, ember.asarray(np.array([4], dtype=np.int64)))
    np.testing.assert_array_equal(out.numpy(), weight()[[4]])


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8])
def test_integer_floor_divide_and_remainder_match_torch(dtype: type) -> None:
    info = np.iinfo(dtype)
    a = np.array([7, -7, 7, -7, 0, 5, info.min, info.min], dtype=dtype)
    b = np.array([2, 2, -2, -2, 3, 1, -1, 3], dtype=dtype)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    got_q = ember.ops.floor_divide(ember.asarray(a), ember.asarray(b)).numpy()
    got_r = ember.ops.remainder(ember.asarray(a), ember.asarray(b)).numpy()
    np.testing.assert_array_equal(got_q, torch.floor_divide(ta, tb).numpy())
    np.testing.assert_array_equal(got_r, torch.remainder(ta, tb).numpy())


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
def test_integer_division_by_zero(op: str) -> None:
    fn = getattr(ember.ops, op)
    a = ember.asarray(np.array([5, -6, 7], dtype=np.int64))
    zero = ember.asarray(np.array([1, 0, 2], dtype=np.int64))
    with pytest.raises(ember.DataError, match=r"integer division by zero \(-6 divided by 0\)"):
        fn(a, zero)
    # Compiled, then good input.
    x = ember.symbol_like(a)
    y = ember.symbol_like(zero)
    g = ember.graph.optimize(ember.trace_from(fn(x, y) + 1)).build()
    with pytest.raises(ember.DataError, match=r"integer division by zero"):
        g(a, zero)
    b = np.array([2, 4, -3], dtype=np.int64)
    expected = getattr(torch, op)(torch.tensor([5, -6, 7]), torch.from_numpy(b)) + 1
    np.testing.assert_array_equal(g(a, ember.asarray(b)).numpy(), expected.numpy())


def test_floor_division_of_floats_is_refused_with_advice() -> None:
    a = ember.asarray(np.ones([2], dtype=np.float32))
    with pytest.raises(ember.EmberError, match=r"floor_divide: ember implements it for integer"):
        ember.ops.floor_divide(a, a)


# ---- torch.compile -------------------------------------------------------------------------
@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class EmbedModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.lin = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(self.emb(x)))


@pytest.mark.usefixtures("fresh_dynamo")
def test_torch_compile_embedding_with_a_bad_index_raises() -> None:
    torch.manual_seed(0)
    model = EmbedModel().eval()
    compiled = torch.compile(model, backend="ember")
    good = torch.randint(0, 50, (2, 6))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        torch.testing.assert_close(compiled(good), model(good))
        for bad_value in (50, -1):
            bad = good.clone()
            bad[1, 2] = bad_value
            with pytest.raises(ember.DataError, match=rf"index {bad_value} is out of range"):
                compiled(bad)
            with pytest.raises(IndexError):  # eager PyTorch refuses it too
                model(bad)
        # Still compiled (no fallback to eager), and right.
        torch.testing.assert_close(compiled(good), model(good))


@pytest.mark.usefixtures("fresh_dynamo")
def test_torch_compile_integer_division_by_zero_raises() -> None:
    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a // b + a % b

    compiled = torch.compile(f, backend="ember")
    a = torch.tensor([7, -7, 9])
    b = torch.tensor([2, 3, -4])
    torch.testing.assert_close(compiled(a, b), f(a, b))
    with pytest.raises(ember.DataError, match=r"integer division by zero"):
        compiled(a, torch.tensor([2, 0, 1]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):  # eager PyTorch too
        f(a, torch.tensor([2, 0, 1]))
    torch.testing.assert_close(compiled(a, b), f(a, b))
