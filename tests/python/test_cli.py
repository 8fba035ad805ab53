"""The ``ember`` command line (ember.cli), run as ``python -m ember`` in a subprocess with a
kernel cache of its own: help, usage errors, exit codes, the cache commands, and compile /
run / bench / info on a small ONNX model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import cli

_PACKAGE_PARENT = str(Path(ember.__file__).resolve().parent.parent)


def run_cli(*args: str, cache: Path, env: dict[str, str] | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m ember *args`` with EMBER_CACHE_DIR=cache, importing this test's ember."""
    full_env = dict(os.environ)
    full_env["EMBER_CACHE_DIR"] = str(cache)
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_PACKAGE_PARENT, full_env.get("PYTHONPATH")) if p)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "ember", *args], env=full_env, text=True,
                          capture_output=True, timeout=600,
                          input=stdin if stdin is not None else "",
                          cwd=str(cache.parent))


def build_kernels(cache: Path) -> None:
    """Compiles a tiny ember graph into `cache` (in a subprocess: this process's in-memory
    module cache would skip the disk)."""
    code = textwrap.dedent("""
        import ember
        a = ember.randn([2, 3])
        x = ember.symbol_like(a)
        ember.graph.optimize(ember.trace_from(ember.ops.relu(x) * 3.0 + 1.0)).build()
    """)
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=600)


def cache_json(cache: Path) -> dict[str, Any]:
    r = run_cli("cache", "info", "--json", cache=cache)
    assert r.returncode == 0, r.stderr
    data: dict[str, Any] = json.loads(r.stdout)
    return data


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def built_cache(cache: Path) -> Path:
    build_kernels(cache)
    return cache


# ---------------------------------------------------------------------------------------------
# Help, usage errors and exit codes.


@pytest.mark.parametrize("command", [[], ["cache"], ["cache", "info"], ["cache", "clear"],
                                     ["cache", "prune"], ["compile"], ["run"], ["bench"],
                                     ["info"]])
def test_every_command_has_help(command: list[str], cache: Path) -> None:
    r = run_cli(*command, "--help", cache=cache)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: " + " ".join(["ember", *command]))


def test_help_lists_exit_codes(cache: Path) -> None:
    r = run_cli("--help", cache=cache)
    assert "3 input file missing or damaged, 4 unsupported model" in " ".join(r.stdout.split())
    for code in ("0", "1", "2", "3", "4", "130"):
        assert f"    {code} " in (cli.__doc__ or "")


@pytest.mark.parametrize("args, message", [
    ([], "choose a command"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["cache"], "choose a cache action"),
    (["cache", "prune"], "the following arguments are required: --max-size"),
    (["cache", "prune", "--max-size", "2X"],
     "--max-size must be a size such as 500M, 2G or 1.5T"),
    (["cache", "prune", "--max-size=-1G"], "got '-1G'"),
    (["compile", "model.onnx"], "the following arguments are required: -o/--output"),
    (["bench", "m.ember", "--runs", "0"], "argument --runs: expected an integer >= 1, got '0'"),
    (["bench", "m.ember", "--threads", "many"], "expected an integer, got 'many'"),
    (["run", "m.ember"], "the following arguments are required: --inputs"),
])
def test_usage_errors_exit_2(args: list[str], message: str, cache: Path) -> None:
    r = run_cli(*args, cache=cache)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert "usage: ember" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [
    ["info", "missing.ember"],
    ["bench", "missing.ember"],
    ["run", "missing.ember", "--inputs", "a.npy"],
    ["compile", "missing.onnx", "-o", "out.ember"],
])
def test_missing_input_file_exits_3(args: list[str], cache: Path) -> None:
    r = run_cli(*args, cache=cache)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert f"'{args[1]}' does not exist" in r.stderr
    assert "Traceback" not in r.stderr


def test_directory_as_model_exits_3(cache: Path) -> None:
    r = run_cli("info", str(cache.parent), cache=cache)
    assert r.returncode == 3
    assert "is a directory, not a file" in r.stderr


def test_ember_error_exits_1_with_traceback_only_when_verbose(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("not a directory")
    r = run_cli("cache", "info", cache=not_a_dir)
    assert r.returncode == 1
    assert r.stderr.startswith("ember: error: ember cannot use")
    assert "EMBER_CACHE_DIR" in r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("--verbose", "cache", "info", cache=not_a_dir)
    assert r.returncode == 1
    assert "Traceback" in r.stderr
    r = run_cli("cache", "info", "--verbose", cache=not_a_dir)  # after the command too
    assert "Traceback" in r.stderr


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ember, "cache_usage", interrupted)
    assert cli.main(["cache", "info"]) == 130
    assert "interrupted" in capsys.readouterr().err


def test_format_bytes_and_assignments() -> None:
    assert cli.format_bytes(0) == "0 B"
    assert cli.format_bytes(1023) == "1023 B"
    assert cli.format_bytes(1536) == "1.5 KiB"
    assert cli.format_bytes(3 << 30) == "3.0 GiB"
    assert cli.format_shape((2, "n")) == "(2, n)"
    assert cli.format_shape((5,)) == "(5,)"
    assert cli.parse_assignments(["x=1x3x224x224", "y=7"], "--input-shape", False) == {
        "x": (1, 3, 224, 224), "y": (7,)}
    assert cli.parse_assignments(["batch=8"], "--shape", True) == {"batch": 8}
    for bad in ("batch", "=3", "b=x", "b=2x", "b=-1"):
        with pytest.raises(cli.CliError, match="takes NAME=VALUE") as info:
            cli.parse_assignments([bad], "--shape", True)
        assert info.value.code == 2
    with pytest.raises(cli.CliError, match="got 'b=2x3'"):
        cli.parse_assignments(["b=2x3"], "--shape", True)


# ---------------------------------------------------------------------------------------------
# The cache commands.


def test_cache_info_counts_the_kernels_built(built_cache: Path) -> None:
    data = cache_json(built_cache)
    assert data["dir"] == str(built_cache)
    assert set(data["categories"]) == {"kernels", "pch", "tuning", "tmp"}
    assert data["categories"]["kernels"]["entries"] >= 1
    assert data["categories"]["kernels"]["bytes"] > 0
    assert data["total_bytes"] == sum(c["bytes"] for c in data["categories"].values())
    # The same numbers as a walk of the kernel entries.
    entries = [d for d in (built_cache / "kernels").glob("??/*") if d.is_dir()]
    assert data["categories"]["kernels"]["entries"] == len(entries)
    assert data["categories"]["kernels"]["bytes"] == sum(
        f.stat().st_size for d in entries for f in d.rglob("*") if f.is_file())
    r = run_cli("cache", "info", cache=built_cache)
    assert r.returncode == 0
    assert f"cache directory: {built_cache}" in r.stdout
    lines = {line.split()[0]: line.split()[1] for line in r.stdout.splitlines()[3:]}
    assert lines["kernels"] == str(data["categories"]["kernels"]["entries"])


def test_cache_clear_asks_and_refuses_without_a_terminal(built_cache: Path) -> None:
    before = cache_json(built_cache)
    r = run_cli("cache", "clear", cache=built_cache)
    assert r.returncode == 2
    assert "standard input is not a terminal: pass --yes" in r.stderr
    assert cache_json(built_cache) == before
    r = run_cli("cache", "clear", "--yes", cache=built_cache)
    assert r.returncode == 0, r.stderr
    kernels = before["categories"]["kernels"]["entries"]
    assert f"removed {kernels} kernel module(s)" in r.stdout
    after = cache_json(built_cache)
    assert after["categories"]["kernels"]["entries"] == 0
    assert after["categories"]["pch"]["entries"] == 0
    assert after["total_bytes"] == 0


def test_cache_prune_evicts_down_to_the_size(built_cache: Path) -> None:
    before = cache_json(built_cache)
    r = run_cli("cache", "prune", "--max-size", "1T", cache=built_cache)
    assert r.returncode == 0, r.stderr
    assert "removed 0 kernel module(s), 0 precompiled header(s)" in r.stdout
    assert cache_json(built_cache) == before
    r = run_cli("cache", "prune", "--max-size", "0", cache=built_cache)
    assert r.returncode == 0, r.stderr
    assert f"removed {before['categories']['kernels']['entries']} kernel module(s)" in r.stdout
    assert cache_json(built_cache)["total_bytes"] == 0


def test_cache_max_size_from_the_environment(cache: Path) -> None:
    r = run_cli("cache", "info", cache=cache, env={"EMBER_CACHE_MAX_SIZE": "1k"})
    assert r.returncode == 0  # read by builds, not by cache info
    code = "import ember; ember.graph.optimize(ember.trace_from(ember.ops.exp(" \
           "ember.symbol([4])))).build()"
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache), EMBER_CACHE_MAX_SIZE="1k",
               PYTHONPATH=_PACKAGE_PARENT)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=600)
    assert cache_json(cache)["total_bytes"] <= 1024
    env["EMBER_CACHE_MAX_SIZE"] = "huge"
    bad = subprocess.run([sys.executable, "-c", code], env=env, timeout=600, text=True,
                         capture_output=True)
    assert bad.returncode != 0
    assert "EMBER_CACHE_MAX_SIZE must be a size such as 500M, 2G or 1.5T" in bad.stderr


# ---------------------------------------------------------------------------------------------
# compile, run, bench and info on an ONNX model (ember.compile and ember.CompiledModel).

needs_compiled_model = pytest.mark.skipif(not hasattr(ember, "CompiledModel"),
                                          reason="needs ember.compile and ember.CompiledModel")


def export_tiny_model(path: Path, dynamic: bool) -> Any:
    """An ONNX file of Linear(4, 3) + ReLU with input 'x' and output 'y'; returns the model."""
    pytest.importorskip("onnx")
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    torch.onnx.export(model, (torch.randn(2, 4),), str(path), input_names=["x"],
                      output_names=["y"], dynamo=False,
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}} if dynamic else None)
    return model


def reference(model: Any, x: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        out: np.ndarray = model(torch.from_numpy(x)).numpy()
    return out


@needs_compiled_model
def test_compile_info_run_bench(tmp_path: Path, cache: Path) -> None:
    model = export_tiny_model(tmp_path / "tiny.onnx", dynamic=False)
    out = tmp_path / "tiny.ember"
    r = run_cli("compile", str(tmp_path / "tiny.onnx"), "-o", str(out), cache=cache)
    assert r.returncode == 0, r.stderr
    assert out.is_file()
    assert f"wrote {out}" in r.stdout

    r = run_cli("info", "--json", str(out), cache=cache)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["inputs"] == [{"name": "x", "shape": [2, 4], "dtype": "float32"}]
    assert info["outputs"] == [{"name": "y", "shape": [2, 3], "dtype": "float32"}]
    assert info["file_bytes"] == out.stat().st_size
    assert info["kernels"] >= 1
    assert info["weight_bytes"] >= (4 * 3 + 3) * 4
    assert info["ember_version"] == ember.__version__
    r = run_cli("info", str(out), cache=cache)
    assert r.returncode == 0, r.stderr
    for word in ("inputs:", "outputs:", "isa", "format version", "kernels", "weights"):
        assert word in r.stdout

    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = run_cli("run", str(out), "--inputs", str(tmp_path / "x.npy"), "--output-dir",
                str(tmp_path / "outs"), cache=cache)
    assert r.returncode == 0, r.stderr
    assert "y: shape (2, 3) float32" in r.stdout
    np.testing.assert_allclose(np.load(tmp_path / "outs" / "y.npy"), reference(model, x),
                               rtol=1e-5, atol=1e-6)

    r = run_cli("bench", str(out), "--runs", "5", "--warmup", "1", "--threads", "1",
                cache=cache)
    assert r.returncode == 0, r.stderr
    for word in ("5 runs after 1 warm-up", "min", "p50", "p90", "p99", "max", "throughput",
                 "GFLOP/s", "%FMA", "GB/s", "%BW", "bound: "):
        assert word in r.stdout

    r = run_cli("run", str(out), "--inputs", str(tmp_path / "x.npy"), str(tmp_path / "x.npy"),
                cache=cache)
    assert r.returncode == 2
    assert "the model takes 1 input(s) (x), but --inputs gives 2" in r.stderr
    (tmp_path / "bad.npy").write_bytes(b"not an array")
    r = run_cli("run", str(out), "--inputs", str(tmp_path / "bad.npy"), cache=cache)
    assert r.returncode == 3
    assert "cannot read the input" in r.stderr


@needs_compiled_model
def test_dynamic_batch(tmp_path: Path, cache: Path) -> None:
    model = export_tiny_model(tmp_path / "tiny.onnx", dynamic=True)
    out = tmp_path / "tiny.ember"
    r = run_cli("compile", str(tmp_path / "tiny.onnx"), "-o", str(out), "--dynamic", cache=cache)
    assert r.returncode == 0, r.stderr
    info = json.loads(run_cli("info", "--json", str(out), cache=cache).stdout)
    (batch, four), = [spec["shape"] for spec in info["inputs"]]
    assert isinstance(batch, str) and four == 4
    r = run_cli("bench", str(out), "--runs", "2", cache=cache)
    assert r.returncode == 2
    assert f"--shape {batch}=VALUE" in r.stderr
    r = run_cli("bench", str(out), "--runs", "2", "--shape", f"{batch}=3", cache=cache)
    assert r.returncode == 0, r.stderr
    assert "(3, 4)" in r.stdout
    x = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = run_cli("run", str(out), "--inputs", str(tmp_path / "x.npy"), "--output-dir",
                str(tmp_path), cache=cache)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), reference(model, x),
                               rtol=1e-5, atol=1e-6)


@needs_compiled_model
def test_damaged_files_exit_3(tmp_path: Path, cache: Path) -> None:
    export_tiny_model(tmp_path / "tiny.onnx", dynamic=False)
    out = tmp_path / "tiny.ember"
    assert run_cli("compile", str(tmp_path / "tiny.onnx"), "-o", str(out),
                   cache=cache).returncode == 0
    damaged = tmp_path / "damaged.ember"
    damaged.write_bytes(out.read_bytes()[: out.stat().st_size // 2])
    for command in ("info", "bench"):
        r = run_cli(command, str(damaged), cache=cache)
        assert r.returncode == 3, (command, r.stderr)
        assert "Traceback" not in r.stderr
    (tmp_path / "garbage.onnx").write_bytes(b"\x08\x07garbage, not a protobuf\xff\xff")
    r = run_cli("compile", str(tmp_path / "garbage.onnx"), "-o", str(out), cache=cache)
    assert r.returncode == 3, r.stderr


@needs_compiled_model
def test_unsupported_operator_exits_4(tmp_path: Path, cache: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("EmberNoSuchOperator", ["x"], ["y"])
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / "odd.onnx"))
    r = run_cli("compile", str(tmp_path / "odd.onnx"), "-o", str(tmp_path / "odd.ember"),
                cache=cache)
    assert r.returncode == 4, r.stderr
    assert "EmberNoSuchOperator" in r.stderr
    assert "Traceback" not in r.stderr
