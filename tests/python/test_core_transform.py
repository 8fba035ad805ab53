"""Transforms against numpy: reshape (with -1), transpose, permute, flatten, squeeze,
unsqueeze, concat, slice (steps, negative and clamped bounds), tensor indexing and expand.

On concrete tensors reshape / squeeze / unsqueeze return views and the others run a kernel;
in a graph every transform is a kernel, or is inlined into its consumer once optimized.
All three paths are checked.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from _helpers_core import assert_matches, run_traced

import ember

E = ember.ops
Transform = Callable[[ember.Tensor], ember.Tensor]
Reference = Callable[[np.ndarray], np.ndarray]

A_SHAPE = (2, 3, 4)

# name -> (ember transform of a (2, 3, 4) tensor, numpy reference)
TRANSFORMS: dict[str, tuple[Transform, Reference]] = {
    "reshape(-1, 4)": (lambda x: E.reshape(x, [-1, 4]), lambda a: a.reshape(-1, 4)),
    "reshape(4, -1)": (lambda x: x.reshape([4, -1]), lambda a: a.reshape(4, -1)),
    "reshape(-1)": (lambda x: E.reshape(x, [-1]), lambda a: a.reshape(-1)),
    "reshape(3, 1, 8)": (lambda x: E.reshape(x, [3, 1, 8]), lambda a: a.reshape(3, 1, 8)),
    "transpose(0, 2)": (lambda x: E.transpose(x, 0, 2), lambda a: a.swapaxes(0, 2)),
    "transpose(-1, -2)": (lambda x: E.transpose(x, -1, -2), lambda a: a.swapaxes(-1, -2)),
    "permute(1, 2, 0)": (lambda x: E.permute(x, [1, 2, 0]), lambda a: a.transpose(1, 2, 0)),
    "permute(-1, 0, 1)": (lambda x: E.permute(x, [-1, 0, 1]), lambda a: a.transpose(2, 0, 1)),
    "flip(1)": (lambda x: E.flip(x, [1]), lambda a: a[:, ::-1]),
    "flip(-1, 0)": (lambda x: E.flip(x, [-1, 0]), lambda a: a[::-1, :, ::-1]),
    "flip of permute": (lambda x: E.flip(E.permute(x, [2, 0, 1]), [0, 2]),
                        lambda a: a.transpose(2, 0, 1)[::-1, :, ::-1]),
    "flatten()": (lambda x: E.flatten(x), lambda a: a.reshape(-1)),
    "flatten(1)": (lambda x: E.flatten(x, 1), lambda a: a.reshape(2, -1)),
    "flatten(0, 1)": (lambda x: E.flatten(x, 0, 1), lambda a: a.reshape(6, 4)),
    "flatten(-2, -1)": (lambda x: E.flatten(x, -2, -1), lambda a: a.reshape(2, 12)),
    "unsqueeze(0)": (lambda x: E.unsqueeze(x, 0), lambda a: a[None]),
    "unsqueeze(-1)": (lambda x: E.unsqueeze(x, -1), lambda a: a[..., None]),
    "unsqueeze([0, 4])": (lambda x: E.unsqueeze(x, [0, 4]), lambda a: np.expand_dims(a, (0, 4))),
    "squeeze of unsqueeze": (
        lambda x: E.squeeze(E.unsqueeze(x, [1, 3])),
        lambda a: np.squeeze(np.expand_dims(a, (1, 3))),
    ),
    "squeeze(1) of size 3": (lambda x: E.squeeze(x, 1), lambda a: a),  # torch: a no-op
    "slice steps": (
        lambda x: E.slice(x, [1, 2], [0, 1], [3, 4], [2, 2]),
        lambda a: a[:, 0:3:2, 1:4:2],
    ),
    "slice negative": (lambda x: E.slice(x, [-1], [-3], [-1]), lambda a: a[..., -3:-1]),
    "slice clamped": (lambda x: E.slice(x, [2, 0], [1, -100], [100, 1]), lambda a: a[:1, :, 1:]),
    "slice empty": (lambda x: E.slice(x, [2], [3], [1]), lambda a: a[..., 3:1]),
    "slice step 3": (lambda x: E.slice(x, [2], [0], [4], [3]), lambda a: a[..., ::3]),
    "x[1, ::2, -2:]": (lambda x: x[1, ::2, -2:], lambda a: a[1, ::2, -2:]),
    "x[..., 1]": (lambda x: x[..., 1], lambda a: a[..., 1]),
    "x[-1]": (lambda x: x[-1], lambda a: a[-1]),
    "x[:, 1:]": (lambda x: x[:, 1:], lambda a: a[:, 1:]),
    "expand(5, 2, 3, 4)": (
        lambda x: E.expand(x, [5, 2, 3, 4]),
        lambda a: np.broadcast_to(a, (5, 2, 3, 4)),
    ),
    "expand of size 1": (
        lambda x: E.expand(x[:, :1, :], [-1, 7, -1]),
        lambda a: np.broadcast_to(a[:, :1, :], (2, 7, 4)),
    ),
    "transpose then reshape": (
        lambda x: E.reshape(E.transpose(x, 1, 2), [2, 12]),
        lambda a: a.swapaxes(1, 2).reshape(2, 12),
    ),
}


def a_input(dtype: str = "float32") -> np.ndarray:
    return (np.arange(24).reshape(A_SHAPE) * 3 - 20).astype(dtype)


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_imperative(name: str) -> None:
    a = a_input()
    fn, ref = TRANSFORMS[name]
    got = fn(ember.asarray(a))
    assert not got.is_symbolic
    assert_matches(got, np.ascontiguousarray(ref(a)), "float32")


@pytest.mark.parametrize("dtype", ["float32", "int64", "bfloat16", "bool", "uint8"])
def test_transforms_in_graphs(dtype: str) -> None:
    """All transforms in one graph, run as it is and once optimized (transforms inlined
    into the consumer `+ 0` / logical_or)."""
    a = a_input("float32")
    t = torch.from_numpy(a_input("float32" if dtype == "bfloat16" else dtype))
    if dtype == "bfloat16":
        t = t.to(torch.bfloat16)
    names = list(TRANSFORMS)
    outs = run_traced(lambda x: [TRANSFORMS[n][0](x) for n in names], [t])
    source = t.float().numpy() if dtype == "bfloat16" else t.numpy()
    for name, got in zip(names, outs, strict=True):
        ref = np.ascontiguousarray(TRANSFORMS[name][1](source))
        if dtype == "bfloat16":
            assert_matches(got, torch.from_numpy(ref).to(torch.bfloat16), dtype)
        else:
            assert_matches(got, ref, dtype)
    if dtype != "float32":
        return
    x = ember.symbol(list(A_SHAPE))
    graph = ember.graph.optimize(ember.trace_from([TRANSFORMS[n][0](x) + 0.0 for n in names], x))
    fused = graph(ember.asarray(a))
    assert len(fused) == len(names)
    for name, got in zip(names, fused, strict=True):
        assert_matches(got, np.ascontiguousarray(TRANSFORMS[name][1](a)), "float32")


def test_flip_errors_and_no_dims() -> None:
    x = ember.asarray(a_input())
    with pytest.raises(ember.EmberError, match="flip"):
        E.flip(x, [1, -2])  # the same dimension twice
    with pytest.raises(ember.EmberError, match="flip"):
        E.flip(x, [3])
    assert_matches(E.flip(x, []), a_input(), "float32")


def test_views_share_memory() -> None:
    """reshape / squeeze / unsqueeze of a concrete tensor are views of its memory."""
    t = torch.arange(24, dtype=torch.float32)
    e = ember.from_torch(t)
    for view in (E.reshape(e, [2, 3, 4]), E.unsqueeze(e, 0), E.squeeze(E.unsqueeze(e, 1))):
        assert ember.to_torch(view).data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(E.reshape(e, [4, -1]).numpy(), np.arange(24.0).reshape(4, 6))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concat_each_axis(axis: int) -> None:
    rng = np.random.default_rng(axis + 10)
    parts = []
    for size in (2, 5, 1, 3):
        shape = list(A_SHAPE)
        shape[axis] = size
        parts.append(rng.standard_normal(shape).astype(np.float32))
    ref = np.concatenate(parts, axis)
    got = E.concat([ember.asarray(p) for p in parts], axis)
    assert_matches(got, ref, "float32")
    outs = run_traced(lambda *xs: [E.concat(list(xs), axis)], [torch.from_numpy(p) for p in parts])
    assert_matches(outs[0], ref, "float32")


def test_concat_dtypes_and_empty_parts() -> None:
    b = E.concat([ember.ones([2], "bool"), ember.zeros([3], "bool")])
    assert_matches(b, np.array([True, True, False, False, False]), "bool")
    i = E.concat([ember.asarray(np.arange(3, dtype=np.int8)), ember.zeros([0], "int8")], 0)
    assert_matches(i, np.arange(3, dtype=np.int8), "int8")
    e = E.concat([ember.zeros([2, 0]), ember.ones([2, 3])], 1)
    assert_matches(e, np.ones((2, 3), np.float32), "float32")
    single = E.concat([ember.asarray([[1.0, 2.0]])], 0)
    assert_matches(single, np.array([[1.0, 2.0]], np.float32), "float32")


def test_zero_d_transforms() -> None:
    s = ember.asarray(5.0)
    assert_matches(E.reshape(s, [-1]), np.array([5.0], np.float32), "float32")
    assert_matches(E.reshape(ember.asarray([5.0]), []), np.array(5.0, np.float32), "float32")
    assert_matches(E.flatten(s), np.array([5.0], np.float32), "float32")
    assert_matches(E.unsqueeze(s, 0), np.array([5.0], np.float32), "float32")
    assert_matches(E.expand(s, [2, 3]), np.full((2, 3), 5.0, np.float32), "float32")
    assert_matches(E.squeeze(ember.ones([1, 1])), np.array(1.0, np.float32), "float32")


def test_indexing_errors() -> None:
    x = ember.zeros([2, 3])
    with pytest.raises(IndexError, match="^index 2 is out of range for axis 0 of size 2$"):
        x[2]
    with pytest.raises(IndexError, match="^too many indices for a tensor of rank 2: 3 given$"):
        x[0, 0, 0]
    with pytest.raises(ember.EmberError, match=r"^tensor indexing: slice steps must be positive"):
        x[::-1]
    assert len(x) == 2
    rows = list(x)
    assert len(rows) == 2 and rows[0].shape == (3,)


def test_reshape_cancels_dimensions_spelled_differently():
    # [(1 + n) // 2, 2] into [(n + 1) // 2, 2, -1]: the known dims are a sum over 2, which
    # the element-count algebra cannot divide out; equal dims cancel first.
    x = ember.symbol(["((1 + n) // 2)", 2], "float32", name="x")
    y = ember.ops.reshape(x, ["((n + 1) // 2)", 2, -1])
    assert y.shape[-1] == 1 and y.shape[1] == 2
    z = ember.ops.reshape(x, [2, "((n + 1) // 2)"])  # same count, dims swapped
    with pytest.raises(ember.EmberError, match="no input has a dimension that is 'n' itself"):
        ember.trace_from([y * 2.0, z], [x]).build()
    n = ember.symbol(["n"], "float32", name="n_carrier")  # binds n at run time
    graph = ember.trace_from([y * 2.0, z, n + 0.0], [x, n])
    t = torch.arange(8.0).reshape(4, 2)
    out_y, out_z, _ = graph(ember.from_torch(t), ember.from_torch(torch.zeros(7)))
    torch.testing.assert_close(out_y.torch(), t.reshape(4, 2, 1) * 2)
    torch.testing.assert_close(out_z.torch(), t.reshape(2, 4))
    with pytest.raises(ember.EmberError, match="number of elements must stay the same"):
        ember.ops.reshape(x, ["((n + 1) // 2)", 3])


def test_reshape_never_takes_a_floor_division_as_exact():
    # h = (n - 2) // 2 + 1 (a stride-2 convolution's output length) is not n / 2 for an odd
    # n: the -1 of [h, n, 8, h] -> [h, -1] is 8 * n * h, never 4 * n * n.
    h = "(((n - 2) // 2) + 1)"
    x = ember.symbol([h, "n", 8, h], "float32", name="x")
    y = ember.ops.reshape(x, [h, -1])
    n_carrier = ember.symbol(["n"], "float32", name="n_carrier")
    graph = ember.trace_from([y * 2.0, n_carrier + 0.0], [x, n_carrier])
    for n in (5, 6, 7):
        t = torch.randn((n - 2) // 2 + 1, n, 8, (n - 2) // 2 + 1)
        out, _ = graph(ember.from_torch(t), ember.from_torch(torch.zeros(n)))
        torch.testing.assert_close(out.torch(), t.reshape(t.shape[0], -1) * 2)
    # [n] and [n // 2, 2] hold the same number of elements only for an even n.
    v = ember.symbol(["n"], "float32", name="v")
    with pytest.raises(ember.EmberError, match="number of elements must stay the same"):
        ember.ops.reshape(v, ["(n // 2)", 2])
    w = ember.symbol(["(n // 2)", 2], "float32", name="w")
    with pytest.raises(ember.EmberError, match="number of elements must stay the same"):
        ember.ops.reshape(w, ["n"])
    with pytest.raises(ember.EmberError, match="is not a multiple of"):
        ember.ops.reshape(v, ["(n // 2)", -1])


def test_gather_along_each_axis_with_symbolic_sizes():
    g = torch.Generator().manual_seed(0)
    for axis in (0, 1, -1):
        x = torch.randn(4, 6, 5, generator=g)
        shape = [4, 6, 5]
        shape[axis] = 3
        index = torch.randint(0, x.shape[axis], shape, generator=g)
        (out,) = run_traced(lambda a, i, axis=axis: [ember.ops.gather(a, axis, i)], [x, index])
        torch.testing.assert_close(out, torch.gather(x, axis, index), rtol=0, atol=0)
    xs = ember.symbol(["n", 7], "int32", name="x")
    ix = ember.symbol(["n", "m"], "int64", name="i")
    graph = ember.trace_from([ember.ops.gather(xs, 1, ix)], [xs, ix])
    x = torch.arange(21, dtype=torch.int32).reshape(3, 7)
    index = torch.tensor([[6, 0], [1, 1], [3, 5]])
    out = graph(ember.from_torch(x), ember.from_torch(index))
    out = out[0] if isinstance(out, (list, tuple)) else out
    torch.testing.assert_close(out.torch(), torch.gather(x, 1, index), rtol=0, atol=0)
    with pytest.raises(ember.DataError, match="index 7 is out of range"):
        graph(ember.from_torch(x), ember.from_torch(torch.tensor([[7, 0]] * 3)))
    with pytest.raises(ember.DataError, match="index -1 is out of range"):
        graph(ember.from_torch(x), ember.from_torch(torch.tensor([[-1, 0]] * 3)))


def test_gather_rejects_indexes_that_could_leave_the_input():
    x = ember.symbol([4, 5], "float32", name="x")
    with pytest.raises(ember.EmberError, match="must not exceed"):
        ember.ops.gather(x, 1, ember.symbol([6, 2], "int64", name="i"))
    with pytest.raises(ember.EmberError, match="must not exceed"):
        ember.ops.gather(ember.symbol(["n", 5], "float32"), 1, ember.symbol(["m", 2], "int64"))
    with pytest.raises(ember.EmberError, match="rank"):
        ember.ops.gather(x, 0, ember.symbol([4], "int64", name="i"))
    with pytest.raises(ember.EmberError, match="int32 or int64"):
        ember.ops.gather(x, 0, ember.symbol([4, 5], "float32", name="i"))
