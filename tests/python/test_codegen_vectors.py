"""Elementwise kernels the code generator runs in vectors, beyond plain float32 loads and
stores: bool masks (bitwise operators on them, loads, stores, broadcasts and casts) and rows
computed as interleaved phases (a stride-2 convolution's input gradient, a nearest 2x
upsampling). Values are checked against numpy; the kernel plans must say that the kernel is
vectorized (and, for phases, interleaved)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

E = ember.ops


def test_bitwise_operators_on_masks_are_vectorized(tmp_path) -> None:
    """hardtanh's backward as torch writes it, where((x <= 0) | (x >= 6), 0, dy): bitwise
    and, or, xor of bool masks are the logical operators, and the kernel computes them in
    vectors (it had run element by element: MobileNetV2's ReLU6 backward, 4x slower)."""
    rng = np.random.default_rng(8)
    x = rng.uniform(-2, 8, (37, 129)).astype(np.float32)
    x[0, :6] = [0.0, 6.0, -0.0, np.nan, 5.999999, 1e-30]  # the edges, and NaN (no mask)
    dy = rng.standard_normal((37, 129)).astype(np.float32)
    sx, sdy = ember.symbol(list(x.shape), "float32"), ember.symbol(list(dy.shape), "float32")
    with np.errstate(invalid="ignore"):
        cases = [(E.bitwise_or, 0.0, np.bitwise_or), (E.bitwise_and, 0.0, np.bitwise_and),
                 (E.bitwise_xor, 3.0, np.bitwise_xor)]
        for i, (op, lo, ref) in enumerate(cases):  # one graph each: the masks fuse
            out = E.where(op(sx <= lo, sx >= 6.0), 0.0, sdy)
            dump = tmp_path / str(i)
            compiled = ember.graph.optimize(ember.trace_from([out], [sx, sdy])).build(
                dump_dir=str(dump))
            (got,) = compiled.run([ember.asarray(x), ember.asarray(dy)])
            want = np.where(ref(x <= lo, x >= 6), np.float32(0), dy)
            np.testing.assert_array_equal(got.numpy(), want)
            plans = list((dump / "kernels").glob("*.plan.txt"))
            assert len(plans) == 1
            assert "(blocks, vector)" in plans[0].read_text(), plans[0].read_text()


def test_bool_masks_are_loaded_stored_and_cast_in_vectors(tmp_path) -> None:
    """Kernels that write a bool mask (the ReLU6 mask a training forward saves), read one
    (its backward), turn one into 0/1 floats and a float into a mask run in vectors; the
    sizes leave a masked tail, and one mask is read broadcast along the vector axis."""
    rng = np.random.default_rng(9)
    x = rng.uniform(-2, 8, (37, 129)).astype(np.float32)
    x[0, :6] = [0.0, 6.0, -0.0, np.nan, 5.999999, 1e-30]
    dy = rng.standard_normal((37, 129)).astype(np.float32)
    m = rng.random((37, 129)) < 0.5
    col = rng.random((37, 1)) < 0.5  # broadcast along the last axis
    sx, sdy = ember.symbol(list(x.shape), "float32"), ember.symbol(list(dy.shape), "float32")
    sm, scol = ember.symbol(list(m.shape), "bool"), ember.symbol(list(col.shape), "bool")
    with np.errstate(invalid="ignore"):
        cases = [
            ("write", [E.bitwise_or(sx <= 0.0, sx >= 6.0)], (x <= 0) | (x >= 6)),
            ("read", [E.where(sm, 0.0, sdy)], np.where(m, np.float32(0), dy)),
            ("broadcast", [E.where(scol, sdy, 1.0)], np.where(col, dy, np.float32(1))),
            ("to float", [E.cast(sm, "float32") * sdy], m.astype(np.float32) * dy),
            ("to mask", [E.cast(sx - 1.0, "bool")], (x - 1) != 0),
        ]
        for name, outs, want in cases:
            dump = tmp_path / name.replace(" ", "_")
            compiled = ember.graph.optimize(ember.trace_from(outs, [sx, sdy, sm, scol])).build(
                dump_dir=str(dump))
            (got,) = compiled.run([ember.asarray(v) for v in (x, dy, m, col)])
            np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
            plans = list((dump / "kernels").glob("*.plan.txt"))
            assert len(plans) == 1, name
            assert "(blocks, vector)" in plans[0].read_text(), plans[0].read_text()
    assert np.isnan(x[0, 3]) and bool((x[0, 3] - 1) != 0)  # NaN is a true mask, as in torch


@pytest.mark.parametrize("width", [56, 13])  # 13: a masked tail of each phase, and W odd
def test_interleaved_phases_run_in_vectors(tmp_path, width: int) -> None:
    """The input gradient of a stride-2 convolution interleaves its four output phases
    (each reshaped with unit axes, concatenated along them) and a ReLU6 mask then picks
    from it: the kernel computes each phase in vectors along the row and stores the two
    phases of a row interleaved; a nearest 2x upsampling (x[i, j // 2]) runs the same way."""
    rng = np.random.default_rng(10)
    n, c, h, w = 2, 3, 5, width
    parts = [rng.standard_normal((n, c, h, w)).astype(np.float32) for _ in range(4)]
    mask = rng.random((n, c, 2 * h, 2 * w)) < 0.3
    syms = [ember.symbol([n, c, h, w], "float32") for _ in range(4)]
    smask = ember.symbol([n, c, 2 * h, 2 * w], "bool")
    spread = [E.reshape(v, [n, c, h, 1, w, 1]) for v in syms]
    rows = [E.concat([spread[0], spread[1]], 5), E.concat([spread[2], spread[3]], 5)]
    y = E.reshape(E.concat(rows, 3), [n, c, 2 * h, 2 * w])
    out = E.where(smask, 0.0, y)
    want = np.zeros((n, c, 2 * h, 2 * w), np.float32)
    for k, v in enumerate(parts):
        want[:, :, k // 2::2, k % 2::2] = v
    want[mask] = 0
    dump = tmp_path / "phases"
    compiled = ember.graph.optimize(ember.trace_from([out], [*syms, smask])).build(
        dump_dir=str(dump))
    (got,) = compiled.run([ember.asarray(v) for v in (*parts, mask)])
    np.testing.assert_array_equal(got.numpy(), want)
    plans = [f.read_text() for f in (dump / "kernels").glob("*.plan.txt")]
    assert len(plans) == 1 and "interleaved phases" in plans[0], plans
    assert "(blocks, vector)" in plans[0], plans[0]

    # The masked values as an output and read on (a training backward keeps such values for
    # a later reduction): one kernel stores both, each interleaved; and a bool output.
    full = np.zeros_like(want)
    for k, v in enumerate(parts):
        full[:, :, k // 2::2, k % 2::2] = v
    for name, outs, wants in [("stores", [out, out * 2.0], [want, want * 2]),
                              ("mask", [y > 0.5], [full > 0.5])]:
        dump = tmp_path / name
        compiled = ember.graph.optimize(ember.trace_from(outs, [*syms, smask])).build(
            dump_dir=str(dump))
        got = compiled.run([ember.asarray(v) for v in (*parts, mask)])
        for g, w_ in zip(got, wants, strict=True):
            np.testing.assert_array_equal(g.numpy(), w_, err_msg=name)
        plans = [f.read_text() for f in (dump / "kernels").glob("*.plan.txt")]
        assert len(plans) == 1 and "interleaved phases" in plans[0], plans
        assert "(blocks, vector)" in plans[0], plans[0]
        if name == "stores":
            assert "also stores" in plans[0], plans[0]

    # nearest 2x upsampling along the last axis, as a gather at j // 2
    x = rng.standard_normal((4, width)).astype(np.float32)
    sx = ember.symbol(list(x.shape), "float32")
    up = E.reshape(E.concat([E.reshape(sx, [4, width, 1])] * 2, 2), [4, 2 * width])
    compiled = ember.graph.optimize(ember.trace_from([up * 2.0], [sx])).build(
        dump_dir=str(tmp_path / "up"))
    (got,) = compiled.run([ember.asarray(x)])
    np.testing.assert_array_equal(got.numpy(), np.repeat(x, 2, axis=1) * 2)
    plans = [f.read_text() for f in (tmp_path / "up" / "kernels").glob("*.plan.txt")]
    assert len(plans) == 1 and "interleaved phases" in plans[0], plans


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clamps_by_constant_bounds_keep_nan_and_x_at_the_bound(dtype, tmp_path) -> None:
    """clamp, relu6 and hardtanh by constant bounds run as one max / min instruction per
    vector (max_c, min_c) and still follow torch.clamp: NaN stays NaN, infinities clamp, and
    an x equal to a bound is returned as it is (-0 stays -0 at a bound of 0), in the vector
    body and in the scalar tail (45 elements) alike."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    edges = [-0.0, 0.0, float("nan"), 6.0, -1.0, 0.5, float("inf"), -float("inf"), 7.0]
    x = np.array(edges * 5, dtype=dtype)
    cases = {
        "clamp": (lambda a: E.clamp(a, 0.0, 6.0), lambda t: torch.clamp(t, 0.0, 6.0)),
        "clamp min": (lambda a: E.clamp(a, min=-0.0), lambda t: torch.clamp(t, min=-0.0)),
        "clamp max": (lambda a: E.clamp(a, max=0.5), lambda t: torch.clamp(t, max=0.5)),
        "relu6": (E.relu6, F.relu6),
        "hardtanh": (lambda a: E.clamp(a, -1.0, 0.0), lambda t: F.hardtanh(t, -1.0, 0.0)),
    }
    for i, (name, (ours, theirs)) in enumerate(cases.items()):
        sx = ember.symbol([x.size], dtype)
        dump = tmp_path / str(i)
        compiled = ember.graph.optimize(ember.trace_from([ours(sx)], [sx])).build(
            dump_dir=str(dump))
        (got,) = compiled.run([ember.asarray(x)])
        got = got.numpy()
        want = theirs(torch.from_numpy(x)).numpy()
        assert np.array_equal(got, want, equal_nan=True), (name, got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want)), (name, got, want)
        source = "".join(p.read_text() for p in (dump / "kernels").glob("*.cpp"))
        assert "max_c(" in source or "min_c(" in source, source
