"""ember.Tensor: creation in every dtype, numpy and torch interop (DLPack, no copies),
attributes, and the printed form."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest
import torch
from _helpers_core import (
    ALL_DTYPES,
    FLOAT_DTYPES,
    assert_printed_value,
    printed_words,
    torch_dtype,
)

import ember

SHAPES = [(), (1,), (2, 3), (0, 4), (2, 1, 5)]


def values_of(t: ember.Tensor) -> torch.Tensor:
    """The tensor's values as torch sees them (torch has every dtype, numpy lacks bfloat16)."""
    return ember.to_torch(t)


# ---- dtypes ----


def test_dtype_names_and_properties() -> None:
    for name in ALL_DTYPES:
        dt = ember.dtype(name)
        assert str(dt) == name
        assert getattr(ember, name) == dt
        assert dt.itemsize == torch.empty(0, dtype=torch_dtype(name)).element_size()
        assert dt.is_float == (name in FLOAT_DTYPES)
        assert dt.is_integer == (name not in FLOAT_DTYPES and name != "bool")
        assert ember.dtype(torch_dtype(name)) == dt
        if name != "bfloat16":
            assert ember.dtype(np.dtype(name)) == dt
    assert ember.dtype("half") == ember.float16
    assert ember.dtype("torch.int64") == ember.int64


# ---- creation ----


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_zeros_ones_full_empty(dtype: str, shape: tuple[int, ...]) -> None:
    tdt = torch_dtype(dtype)
    z = ember.zeros(list(shape), dtype)
    o = ember.ones(list(shape), dtype)
    fill = 1 if dtype == "bool" else 3 if dtype in ("uint8",) or "int" in dtype else -2.5
    f = ember.full(list(shape), fill, dtype)
    e = ember.empty(list(shape), dtype)
    for t in (z, o, f, e):
        assert t.shape == shape
        assert t.dtype == ember.dtype(dtype)
        assert t.device == "cpu"
        assert t.ndim == len(shape)
        assert t.numel() == int(np.prod(shape))
        assert t.nbytes == t.numel() * ember.dtype(dtype).itemsize
        assert not t.is_symbolic
        assert t.trace is None
    assert torch.equal(values_of(z), torch.zeros(shape, dtype=tdt))
    assert torch.equal(values_of(o), torch.ones(shape, dtype=tdt))
    assert torch.equal(values_of(f), torch.full(shape, fill, dtype=tdt))
    if dtype != "bfloat16":
        np.testing.assert_array_equal(z.numpy(), np.zeros(shape, dtype))
        np.testing.assert_array_equal(o.numpy(), np.ones(shape, dtype))
        assert z.numpy().dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_randn(dtype: str) -> None:
    t = ember.randn([200, 100], dtype, seed=7)
    assert t.shape == (200, 100)
    assert t.dtype == ember.dtype(dtype)
    v = values_of(t).double()
    assert torch.isfinite(v).all()
    # 20000 standard normal draws: mean within 5 standard errors of 0, std near 1.
    assert abs(v.mean().item()) < 5 / np.sqrt(v.numel())
    assert abs(v.std().item() - 1.0) < 0.03
    assert len(torch.unique(v)) > 100
    # A seed makes it reproducible; another seed gives other values.
    assert torch.equal(values_of(ember.randn([200, 100], dtype, seed=7)).double(), v)
    assert not torch.equal(values_of(ember.randn([200, 100], dtype, seed=8)).double(), v)
    # Without a seed, two draws differ.
    assert not torch.equal(values_of(ember.randn([50], dtype)), values_of(ember.randn([50], dtype)))


def test_randn_refuses_integer_dtypes() -> None:
    with pytest.raises(ember.EmberError) as info:
        ember.randn([2], "int32")
    assert str(info.value) == (
        "randn: dtype int32 is not a floating-point type; use float32, float16, bfloat16 or float64"
    )


def test_asarray_from_lists() -> None:
    cases: list[tuple[object, str, np.ndarray]] = [
        ([[1, 2, 3], [4, 5, 6]], "int64", np.array([[1, 2, 3], [4, 5, 6]])),
        ([1.5, -2.0, 3.25], "float32", np.array([1.5, -2.0, 3.25], np.float32)),
        ([True, False, True], "bool", np.array([True, False, True])),
        (2.5, "float32", np.array(2.5, np.float32)),
        (7, "int64", np.array(7)),
        ([[1.0], [2.0]], "float32", np.array([[1.0], [2.0]], np.float32)),
    ]
    for obj, dtype, expected in cases:
        t = ember.asarray(obj)
        assert t.dtype == ember.dtype(dtype), obj
        assert t.shape == expected.shape
        np.testing.assert_array_equal(t.numpy(), expected)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_asarray_with_dtype_and_from_numpy(dtype: str) -> None:
    source = [[0, 1, 2], [3, 4, 5]]
    t = ember.asarray(source, dtype=dtype)
    assert t.dtype == ember.dtype(dtype)
    assert torch.equal(values_of(t), torch.tensor(source).to(torch_dtype(dtype)))
    if dtype == "bfloat16":
        return
    arr = np.array(source).astype(dtype)
    u = ember.asarray(arr)
    assert u.dtype == ember.dtype(dtype)  # numpy arrays keep their dtype
    back = u.numpy()
    assert back.dtype == arr.dtype
    np.testing.assert_array_equal(back, arr)
    # asarray copies: changing the source afterwards does not change the tensor.
    arr[0, 0] = 1
    assert back[0, 0] == arr.dtype.type(0)


def test_asarray_copies_tensors_and_converts_dtype() -> None:
    a = ember.asarray([1.5, -2.5, 3.0])
    b = ember.asarray(a)
    a.numpy()[0] = 100.0
    assert b.numpy()[0] == 1.5
    c = ember.asarray(b, dtype="int32")
    assert c.dtype == ember.int32
    np.testing.assert_array_equal(c.numpy(), np.array([1, -2, 3], np.int32))


def test_asarray_refuses_non_numeric() -> None:
    with pytest.raises(ember.EmberError) as info:
        ember.asarray(["a", "b"])
    assert str(info.value) == (
        "asarray: cannot make a tensor from an object of type list: numpy reads its elements "
        "as 'str32'; pass numbers, nested lists of numbers of a regular shape, or a numeric "
        "numpy array"
    )


# ---- numpy ----


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != "bfloat16"])
def test_numpy_views_without_copy(dtype: str) -> None:
    rng = np.random.default_rng(1)
    arr = (rng.standard_normal((3, 5)) * 5).astype(dtype)
    t = ember.asarray(arr)
    view = t.numpy()
    assert view.dtype == arr.dtype and view.shape == arr.shape
    np.testing.assert_array_equal(view, arr)
    # numpy() is a view of the tensor's memory: writes show in a second view and in torch.
    view[1, 2] = arr.dtype.type(1)
    assert t.numpy()[1, 2] == arr.dtype.type(1)
    assert ember.to_torch(t)[1, 2].item() == arr.dtype.type(1)
    assert t.numpy().ctypes.data == view.ctypes.data
    np.testing.assert_array_equal(np.asarray(t), view)


def test_numpy_keeps_memory_alive() -> None:
    t = ember.asarray(np.arange(1000, dtype=np.float32))
    view = t.numpy()
    del t
    gc.collect()
    ember.asarray(np.ones(1000, np.float32))  # reuse freed memory if it were freed
    np.testing.assert_array_equal(view, np.arange(1000, dtype=np.float32))


def test_numpy_refuses_bfloat16() -> None:
    with pytest.raises(ember.EmberError) as info:
        ember.ones([2], "bfloat16").numpy()
    assert str(info.value) == (
        "numpy(): numpy has no bfloat16; use t.torch() (no copy) or "
        "ember.ops.cast(t, 'float32').numpy()"
    )


# ---- torch through DLPack ----


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_from_torch_shares_memory(dtype: str) -> None:
    tdt = torch_dtype(dtype)
    t = torch.zeros(4, 6, dtype=tdt)
    e = ember.from_torch(t)
    assert e.shape == (4, 6) and e.dtype == ember.dtype(dtype) and e.device == "cpu"
    back = ember.to_torch(e)
    assert back.dtype == tdt
    assert back.data_ptr() == t.data_ptr()
    assert e.torch().data_ptr() == t.data_ptr()
    # torch writes are seen by ember: by its views and by a kernel that reads the memory.
    t[1, 2] = 1
    t[3, 5] = 1
    assert values_of(e)[1, 2].item() == 1 and values_of(e)[3, 5].item() == 1
    if dtype != "bool":
        doubled = ember.ops.add(e, e)
        expected = torch.zeros(4, 6, dtype=tdt)
        expected[1, 2] = expected[3, 5] = 2
        assert torch.equal(values_of(doubled), expected)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_to_torch_shares_memory(dtype: str) -> None:
    e = ember.zeros([3, 7], dtype)
    t = ember.to_torch(e)
    assert t.dtype == torch_dtype(dtype) and tuple(t.shape) == (3, 7) and t.is_contiguous()
    assert ember.to_torch(e).data_ptr() == t.data_ptr()
    assert ember.from_torch(t).torch().data_ptr() == t.data_ptr()
    t[2, 6] = 1  # a torch write into ember's memory
    assert ember.to_torch(e)[2, 6].item() == 1
    if dtype != "bfloat16":
        assert e.numpy()[2, 6] == 1
        e.numpy()[0, 0] = 1  # a write through ember's numpy view shows in torch
        assert t[0, 0].item() == 1


def test_dlpack_keeps_memory_alive_both_ways() -> None:
    t = torch.arange(4096, dtype=torch.float32)
    e = ember.from_torch(t)
    del t
    gc.collect()
    torch.ones(4096)  # reuse freed memory if it were freed
    np.testing.assert_array_equal(e.numpy(), np.arange(4096, dtype=np.float32))
    f = ember.asarray(np.arange(4096, dtype=np.float32))
    u = ember.to_torch(f)
    del f
    gc.collect()
    ember.asarray(np.ones(4096, np.float32))
    assert torch.equal(u, torch.arange(4096, dtype=torch.float32))


def test_from_torch_zero_d_empty_and_requires_grad() -> None:
    assert ember.from_torch(torch.tensor(3.5)).shape == ()
    assert float(ember.from_torch(torch.tensor(3.5))) == 3.5
    empty = ember.from_torch(torch.zeros(0, 3))
    assert empty.shape == (0, 3) and empty.numel() == 0
    assert tuple(ember.to_torch(ember.zeros([0, 3])).shape) == (0, 3)
    w = torch.ones(3, requires_grad=True)
    e = ember.from_torch(w)
    assert e.torch().data_ptr() == w.data_ptr()


def test_from_torch_refuses_non_contiguous() -> None:
    with pytest.raises(ember.EmberError) as info:
        ember.from_torch(torch.zeros(3, 4).t())
    assert str(info.value) == (
        "from_torch: the tensor is not contiguous (strides (1, 4) for shape (4, 3)); call "
        ".contiguous() first — ember tensors are row-major and from_torch never copies"
    )
    with pytest.raises(ember.EmberError, match=r"strides \(4, 2\) for shape \(3, 2\)"):
        ember.from_torch(torch.zeros(3, 4)[:, ::2])
    # .contiguous() is the documented fix.
    fixed = ember.from_torch(torch.arange(12.0).reshape(3, 4).t().contiguous())
    np.testing.assert_array_equal(fixed.numpy(), np.arange(12.0, dtype=np.float32).reshape(3, 4).T)


def test_from_torch_refuses_unsupported_dtype_and_non_tensors() -> None:
    with pytest.raises(ember.EmberError) as info:
        ember.from_torch(torch.zeros(3, dtype=torch.complex64))
    assert str(info.value) == (
        "from_torch: ember has no dtype for torch.complex64; ember supports float32, float16, "
        "bfloat16, float64, int8, int16, int32, int64, uint8 and bool. Convert the tensor "
        "first, e.g. t.to(torch.float32) (that copies)"
    )
    with pytest.raises(ember.EmberError, match="from_torch: expected a torch.Tensor, got an "):
        ember.from_torch(np.zeros(3))  # type: ignore[arg-type]


def test_from_torch_views_parameters_and_lifetime() -> None:
    """from_torch reads data_ptr (storage offsets included), shares a Parameter's memory, and
    holds exactly one reference to the torch tensor, dropped with the ember tensor."""
    base = torch.arange(12.0).reshape(3, 4)
    row = base[1:]  # storage offset 4
    shared = ember.from_torch(row)
    np.testing.assert_array_equal(shared.numpy(), row.numpy())
    base[2, 3] = -1.0  # the same memory
    assert shared.numpy()[1, 3] == -1.0
    param = torch.nn.Parameter(torch.full((3,), 2.0))
    np.testing.assert_array_equal(ember.from_torch(param).numpy(), [2.0, 2.0, 2.0])
    t = torch.ones(5)
    before = sys.getrefcount(t)
    view = ember.from_torch(t)
    assert sys.getrefcount(t) == before + 1
    del view
    gc.collect()
    assert sys.getrefcount(t) == before
    assert ember.from_torch(torch.ones(0, 3)).shape == (0, 3)
    assert ember.from_torch(torch.tensor(2.5)).numpy() == np.float32(2.5)
    assert ember.from_torch(torch.ones(2, dtype=torch.bfloat16)).dtype == ember.bfloat16


def test_symbolic_tensor_attributes_and_export_refused() -> None:
    x = ember.symbol(["n", 4], "float16", name="x")
    assert x.shape == ("n", 4)
    assert x.dtype == ember.float16
    assert x.device == "cpu"
    assert x.is_symbolic and x.trace is None and x.name == "x"
    y = ember.ops.exp(x)
    assert y.is_symbolic and y.trace == ("Exp", 0) and y.shape == ("n", 4)
    with pytest.raises(ember.EmberError, match=r"^torch\(\): the tensor is symbolic"):
        ember.to_torch(x)
    with pytest.raises(ember.EmberError, match=r"^numpy\(\): the tensor is symbolic"):
        y.numpy()
    like = ember.symbol_like(ember.zeros([2, 3], "int8"))
    assert like.shape == (2, 3) and like.dtype == ember.int8 and like.is_symbolic


# ---- printing ----


def header(shape: tuple[int, ...], dtype: str) -> str:
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    return f"Tensor(shape=({dims}), dtype='{dtype}', device='cpu')"


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 2, 3), (0, 3)], ids=str)
def test_printed_form_matches_values(dtype: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    if dtype == "bool":
        values = torch.from_numpy(np.asarray(rng.random(shape) > 0.5))
    elif dtype in FLOAT_DTYPES:
        values = torch.from_numpy(np.asarray(rng.standard_normal(shape) * 3)).to(torch_dtype(dtype))
    else:
        low = 0 if dtype == "uint8" else -100
        values = torch.from_numpy(np.asarray(rng.integers(low, 100, shape))).to(torch_dtype(dtype))
    t = ember.from_torch(values)
    text = str(t)
    assert text == repr(t)
    assert text.split("\n")[0] == header(shape, dtype)
    words = printed_words(text)
    flat = values.double().flatten().tolist() if dtype != "bool" else values.flatten().tolist()
    assert len(words) == len(flat)
    for word, value in zip(words, flat, strict=True):
        assert_printed_value(word, value, dtype)
    if len(shape) >= 1 and values.numel() > 0:
        body = text.split("\n", 1)[1]
        assert body.startswith("[" * len(shape)) and body.endswith("]" * len(shape))


def test_printed_special_values_and_styles() -> None:
    cases = [
        np.array([np.nan, np.inf, -np.inf, 1.5], np.float32),
        np.array([1e-5, 1.0, 1e5], np.float32),  # scientific: magnitudes far apart
        np.array([1.0, 2.0, -3.0], np.float64),  # integral values
        np.arange(30, dtype=np.float32) / 3,  # wraps onto several lines
    ]
    for arr in cases:
        words = printed_words(str(ember.asarray(arr)))
        assert len(words) == arr.size
        for word, value in zip(words, arr.tolist(), strict=True):
            assert_printed_value(word, value, str(arr.dtype))


def test_printed_form_summarises_large_tensors() -> None:
    arr = (np.arange(40 * 50, dtype=np.float32) / 7).reshape(40, 50)
    text = str(ember.asarray(arr))
    assert text.split("\n")[0] == header((40, 50), "float32")
    assert "..." in text
    edges = [0, 1, 2, 37, 38, 39]
    cols = [0, 1, 2, 47, 48, 49]
    shown = arr[np.ix_(edges, cols)].flatten().tolist()
    words = printed_words(text)
    assert len(words) == len(shown)
    for word, value in zip(words, shown, strict=True):
        assert_printed_value(word, value, "float32")


def test_printed_quick_start_tensor() -> None:
    a = ember.randn([2, 3], seed=0)
    lines = str(a).split("\n")
    assert lines[0] == "Tensor(shape=(2, 3), dtype='float32', device='cpu')"
    assert len(lines) == 3 and lines[1].startswith("[[") and lines[2].startswith(" [")
    words = printed_words(str(a))
    for word, value in zip(words, a.numpy().flatten().tolist(), strict=True):
        assert_printed_value(word, value, "float32")
