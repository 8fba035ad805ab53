"""The C++ deployment path, checked from Python.

ember's .npy reader and writer (the runtime library's, bound as ember._C.read_npy/write_npy)
agree with numpy both ways, and a model saved from Python runs in examples/cpp/run_saved (a
program linking only the runtime library) to the same bits as CompiledModel.run. run_saved
is found through EMBER_RUN_SAVED, else build/cpp/run_saved in this repository; the tests
that need it are skipped without it.
"""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from _helpers_deploy import file_sections

import ember
from ember import _C

REPO = Path(__file__).resolve().parents[2]

NUMPY_DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                "bool"]
SHAPES = [(), (0,), (5,), (2, 3, 4), (3, 0, 2)]


def sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith("float"):
        return rng.standard_normal(size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_files_read_right(tmp_path: Path, dtype: str) -> None:
    for shape in SHAPES:
        a = sample(dtype, shape)
        path = tmp_path / "a.npy"
        np.save(path, a)
        t = _C.read_npy(str(path))
        assert same_bits(np.asarray(t), a), (dtype, shape)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_ember_files_read_right_in_numpy(tmp_path: Path, dtype: str) -> None:
    for shape in SHAPES:
        a = sample(dtype, shape)
        path = tmp_path / "a.npy"
        _C.write_npy(str(path), ember.asarray(a))
        assert same_bits(np.load(path), a), (dtype, shape)
        # Byte for byte what numpy writes (format 1.0, the header padded to 64 bytes).
        buf = io.BytesIO()
        np.save(buf, a)
        assert path.read_bytes() == buf.getvalue(), (dtype, shape)


def test_numpy_files_ember_cannot_read(tmp_path: Path) -> None:
    def error(a: np.ndarray, allow_pickle: bool = False) -> str:
        path = tmp_path / "bad.npy"
        np.save(path, a, allow_pickle=allow_pickle)
        with pytest.raises(ember.EmberError) as info:
            _C.read_npy(str(path))
        assert "bad.npy" in str(info.value)
        return str(info.value)

    assert "Fortran order" in error(np.asfortranarray(np.ones((2, 3), np.float32)))
    assert "big-endian" in error(np.ones(3, ">f4"))
    assert "Python objects" in error(np.array([1, "a"], dtype=object), allow_pickle=True)
    assert "only unsigned dtype is uint8" in error(np.ones(3, np.uint16))
    assert "astype" in error(np.ones(3, np.complex64))
    assert "structured" in error(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
    # Fortran order of a vector is C order.
    path = tmp_path / "f.npy"
    np.save(path, np.asfortranarray(np.arange(4, dtype=np.int32).reshape(1, 4)))
    assert same_bits(np.asarray(_C.read_npy(str(path))), np.arange(4, dtype=np.int32).reshape(1, 4))
    # Format versions 2.0 and 3.0.
    for version in [(2, 0), (3, 0)]:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, np.arange(3.0), version=version)
        assert same_bits(np.asarray(_C.read_npy(str(path))), np.arange(3.0))
    # Truncated data.
    np.save(path, np.arange(10.0))
    path.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ember.EmberError, match="truncated"):
        _C.read_npy(str(path))
    with pytest.raises(ember.EmberError, match="numpy has no such dtype"):
        _C.write_npy(str(path), ember.zeros([2], "bfloat16"))


def run_saved_program() -> Path:
    env = os.environ.get("EMBER_RUN_SAVED")
    path = Path(env) if env else REPO / "build" / "cpp" / "run_saved"
    if not path.is_file():
        pytest.skip(f"{path} is not built (cmake --build build/cpp --target run_saved, or set "
                    "EMBER_RUN_SAVED)")
    return path


def run_saved(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(run_saved_program()), *map(str, args)], capture_output=True,
                          text=True, timeout=120, check=False)


def saved_model(path: Path) -> _C.CompiledModel:
    """Two inputs with a symbolic batch, two outputs of different dtypes."""
    x = ember.symbol(["n", 16], "float32", name="x")
    k = ember.symbol(["n"], "int32", name="k")
    w = ember.randn([16, 8], seed=1)
    b = ember.randn([8], seed=2)
    y = ember.ops.relu(ember.ops.add(ember.ops.matmul(x, w), b))
    z = ember.ops.mul(k, ember.asarray(np.int32(3)))
    g = ember.graph.optimize(ember.trace_from([y, z], [x, k])).build()
    m = _C.CompiledModel(g, ["x", "k"], ["y", "z"], "")
    m.save(str(path))
    return m


def test_run_saved_matches_python(tmp_path: Path) -> None:
    run_saved_program()
    model = tmp_path / "model.ember"
    m = saved_model(model)
    rng = np.random.default_rng(3)
    for batch in [1, 6]:
        x = rng.standard_normal((batch, 16)).astype(np.float32)
        k = rng.integers(-1000, 1000, size=batch, dtype=np.int32)
        np.save(tmp_path / "x.npy", x)
        np.save(tmp_path / "k.npy", k)
        out = tmp_path / f"out{batch}"
        r = run_saved(model, "-i", tmp_path / "x.npy", tmp_path / "k.npy", "-o", out,
                      "--runs", "2", "--threads", "2")
        assert r.returncode == 0, r.stderr
        assert "x: float32[n, 16]" in r.stdout and "z: int32[n]" in r.stdout
        assert "latency" in r.stdout and "median of 2 runs, 2 threads" in r.stdout
        expected = m.run([ember.asarray(x), ember.asarray(k)])
        for name, want in zip(["y", "z"], expected, strict=True):
            got = np.load(out / f"{name}.npy")
            assert same_bits(got, np.asarray(want)), name
        assert same_bits(np.load(out / "z.npy"), k * 3)


@pytest.mark.parametrize(("rules", "op"), [("plain", "Conv2dWinograd"), (None, "Conv2dBlocked")])
def test_run_saved_prepares_conv_filters_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               rules: str | None, op: str) -> None:
    """A 3x3 convolution of 64 channels on 28x28, run as Winograd (the plain rules) or on the
    channel-blocked layout (the default): the file stores the 3x3 weight, and the runtime
    library's loader transforms or reorders it to the same bits as the compiler did."""
    run_saved_program()
    if rules is not None:
        monkeypatch.setenv("EMBER_CONV_ALGORITHM", rules)
    x = ember.symbol([1, 64, 28, 28], "float32", name="x")
    w = ember.randn([64, 64, 3, 3], seed=4)
    y = ember.ops.conv2d(x, w, padding=1)
    optimized = ember.graph.optimize(ember.trace_from([y], [x]))
    assert op in str(optimized)
    m = _C.CompiledModel(optimized.build(), ["x"], ["y"], "")
    model = tmp_path / "conv.ember"
    m.save(str(model))
    # The weights: the 3x3 weight (64 * 64 * 9 floats), not its transform (Winograd's: 4x as
    # large) or its reordered blocks.
    assert len(file_sections(model.read_bytes())["weights"]) <= 64 * 64 * 9 * 4 + 64 * 8
    xv = np.random.default_rng(5).standard_normal((1, 64, 28, 28)).astype(np.float32)
    np.save(tmp_path / "x.npy", xv)
    r = run_saved(model, "-i", tmp_path / "x.npy", "-o", tmp_path / "out", "--runs", "1")
    assert r.returncode == 0, r.stderr
    (want,) = m.run([ember.asarray(xv)])
    assert same_bits(np.load(tmp_path / "out" / "y.npy"), np.asarray(want))


def test_run_saved_made_up_inputs_and_errors(tmp_path: Path) -> None:
    run_saved_program()
    x = ember.symbol([2, 3], "float32", name="x")
    g = ember.graph.optimize(ember.trace_from([ember.ops.relu(x)], [x])).build()
    static = tmp_path / "static.ember"
    m = _C.CompiledModel(g, ["x"], ["out/../y"], "")
    m.save(str(static))

    r = run_saved(static, "-o", tmp_path / "made", "--runs", "0")
    assert r.returncode == 0, r.stderr
    assert "made-up values" in r.stdout and "latency" not in r.stdout
    # The output's name is no file name: out_0.npy.
    assert np.load(tmp_path / "made" / "out_0.npy").shape == (2, 3)

    np.save(tmp_path / "f64.npy", np.zeros((2, 3)))
    r = run_saved(static, "-i", tmp_path / "f64.npy", "-o", tmp_path / "o")
    assert r.returncode == 1 and "float64" in r.stderr and "x" in r.stderr

    r = run_saved(static, "-i", tmp_path / "f64.npy", tmp_path / "f64.npy")
    assert r.returncode == 1 and "the model has 1 input(s) but 2 file(s)" in r.stderr

    symbolic = tmp_path / "symbolic.ember"
    saved_model(symbolic)
    r = run_saved(symbolic)
    assert r.returncode == 1 and "give its values with -i" in r.stderr

    r = run_saved(tmp_path / "f64.npy")
    assert r.returncode == 1 and "not an ember model file" in r.stderr
    r = run_saved(static, "--runs", "many")
    assert r.returncode == 2 and "usage: run_saved" in r.stderr
