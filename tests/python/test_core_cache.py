"""The on-disk kernel cache, seen from separate Python processes: a warm process compiles
nothing, a corrupt or truncated entry is rebuilt (and the results stay right), an unusable
compiler is a clear ember.EmberError, and an entry keeps its generated C++ next to its
module.so.

The processes share a cache directory of their own (not the session's), so the tests know
exactly which entries the graph made.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import ember

CHILD = r"""
import json
import numpy as np
import ember

E = ember.ops
rng = np.random.default_rng(0)
a = rng.standard_normal((5, 7)).astype(np.float32)
w = rng.standard_normal((7, 3)).astype(np.float32)
x = ember.symbol([5, 7], name="x")
y = E.softmax(E.relu(x @ ember.asarray(w)) + 0.5, -1)
s = E.sum(E.tanh(x), 1)
graph = ember.graph.optimize(ember.trace_from([y, s], x))
try:
    compiled = graph.build()
    out = compiled.run([ember.asarray(a)])
    result = {
        "outputs": [o.numpy().tolist() for o in out],
        "kernels": compiled.kernel_names,
    }
except ember.EmberError as e:
    result = {"error": str(e), "type": type(e).__name__}
result["stats"] = ember.cache_stats()
result["cache_dir"] = ember.cache_dir()
print("RESULT " + json.dumps(result))
"""


def expected_outputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(np.float32).astype(np.float64)
    w = rng.standard_normal((7, 3)).astype(np.float32).astype(np.float64)
    z = np.maximum(a @ w, 0) + 0.5
    e = np.exp(z - z.max(-1, keepdims=True))
    return [e / e.sum(-1, keepdims=True), np.tanh(a).sum(1)]


def run_child(cache: Path, wrap: Sequence[str] = (), **env: str) -> dict:
    """Runs CHILD in a new process (its command line prefixed by `wrap`) on this cache."""
    environ = dict(os.environ, EMBER_CACHE_DIR=str(cache), **env)
    proc = subprocess.run(
        [*wrap, sys.executable, "-c", CHILD], env=environ, capture_output=True, text=True,
        timeout=300
    )
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stderr}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    result = json.loads(lines[0].removeprefix("RESULT "))
    assert Path(result["cache_dir"]) == cache
    return result


def assert_outputs_right(result: dict) -> None:
    assert "error" not in result, result.get("error")
    got = result["outputs"]
    for g, ref in zip(got, expected_outputs(), strict=True):
        np.testing.assert_allclose(np.array(g), ref, rtol=1e-5, atol=1e-6)


def entries(cache: Path) -> list[Path]:
    """The published cache entries: kernels/<key[0:2]>/<key>/."""
    kernels = cache / "kernels"
    return sorted(
        p
        for p in kernels.glob("*/*")
        if p.is_dir() and p.parent.name != "tmp" and len(p.name) == 64
    )


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A fresh cache directory after one cold process ran the graph."""
    cache = tmp_path_factory.mktemp("ember-cache")
    cold = run_child(cache)
    return cache, cold


def test_cold_process_builds_and_publishes_one_entry(warm_cache: tuple[Path, dict]) -> None:
    cache, cold = warm_cache
    assert_outputs_right(cold)
    assert cold["stats"]["builds"] >= 1
    assert cold["stats"]["disk_hits"] == 0
    found = entries(cache)
    assert len(found) == cold["stats"]["builds"]
    for entry in found:
        assert entry.name[:2] == entry.parent.name
        files = {p.name for p in entry.iterdir()}
        assert {"module.so", "manifest.txt"} <= files
        sources = [p for p in entry.iterdir() if p.suffix == ".cpp"]
        assert sources, f"no generated .cpp kept in {entry}"
        manifest = (entry / "manifest.txt").read_text()
        assert f"key {entry.name}" in manifest and manifest.rstrip().endswith("end")
        assert f"module.so.size {(entry / 'module.so').stat().st_size}" in manifest
    # The generated code is readable C++ that defines the kernels the graph launches.
    text = "".join(p.read_text() for e in found for p in e.glob("*.cpp"))
    for name in cold["kernels"]:
        assert name in text
    assert 'extern "C"' in text


def test_warm_process_compiles_nothing(warm_cache: tuple[Path, dict]) -> None:
    cache, _ = warm_cache
    before = entries(cache)
    warm = run_child(cache)
    assert_outputs_right(warm)
    assert warm["stats"]["builds"] == 0
    assert warm["stats"]["disk_hits"] >= 1
    assert entries(cache) == before


def test_corrupt_module_is_rebuilt(warm_cache: tuple[Path, dict]) -> None:
    cache, _ = warm_cache
    (entry,) = entries(cache)
    so = entry / "module.so"
    data = bytearray(so.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    data[:16] = b"\x00" * 16  # not even an ELF header any more
    so.write_bytes(bytes(data))
    rebuilt = run_child(cache)
    assert_outputs_right(rebuilt)
    assert rebuilt["stats"]["builds"] >= 1
    assert so.read_bytes()[:4] == b"\x7fELF"  # a good module is back in place
    again = run_child(cache)
    assert again["stats"]["builds"] == 0 and again["stats"]["disk_hits"] >= 1
    assert_outputs_right(again)


def test_truncated_manifest_is_rebuilt(warm_cache: tuple[Path, dict]) -> None:
    cache, _ = warm_cache
    (entry,) = entries(cache)
    manifest = entry / "manifest.txt"
    text = manifest.read_text()
    manifest.write_text(text[: len(text) // 2])
    rebuilt = run_child(cache)
    assert_outputs_right(rebuilt)
    assert rebuilt["stats"]["builds"] >= 1
    assert manifest.read_text().rstrip().endswith("end")
    again = run_child(cache)
    assert again["stats"]["builds"] == 0 and again["stats"]["disk_hits"] >= 1


def test_missing_compiler_is_a_clear_error(tmp_path: Path) -> None:
    result = run_child(tmp_path / "fresh", EMBER_CXX="/nonexistent")
    assert result["type"] == "EmberError"
    text = result["error"]
    assert text.startswith("no C++ compiler was found: EMBER_CXX is set to '/nonexistent'")
    for words in ("no C++ compiler", "EMBER_CXX", "not an executable file", "C++ compiler"):
        assert words in text
    assert result["stats"]["builds"] == 0
    assert not entries(tmp_path / "fresh")


def test_a_failed_publish_is_an_error_not_a_lost_race(tmp_path: Path) -> None:
    """Publishing renames the built entry into place; only an existing entry means another
    process won the race. Any other failure (here a file where the entry's shard directory
    should be, ENOTDIR) is a clear error naming the paths, and the built files are removed."""
    cache = tmp_path / "cache"
    assert "error" not in run_child(cache)
    shards = {e.parent for e in entries(cache)}
    assert shards
    for entry in entries(cache):
        shutil.rmtree(entry)
    for shard in shards:
        shard.rmdir()
        shard.write_text("not a directory\n")
    result = run_child(cache)
    assert result["type"] == "EmberError", result
    assert "ember cannot publish the kernel module it built into its cache" in result["error"]
    assert "(Not a directory)" in result["error"]
    assert "EMBER_CACHE_DIR" in result["error"]
    assert "bug in ember" not in result["error"]
    assert not list((cache / "kernels" / "tmp").iterdir())


def test_kernels_are_cached_in_memory_and_on_disk() -> None:
    """In one process: a repeated imperative call compiles nothing; a graph built twice
    finds its module in memory, and after the in-memory cache is cleared, on disk."""
    x = ember.asarray(np.linspace(-2, 2, 37, dtype=np.float32))
    first = ember.ops.tanh(x)  # compiled now, or found on disk
    ember.reset_cache_stats()
    second = ember.ops.tanh(x)
    assert ember.cache_stats()["builds"] == 0
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    np.testing.assert_allclose(second.numpy(), np.tanh(x.numpy().astype(np.float64)), rtol=1e-6)

    s = ember.symbol([37])
    graph = ember.trace_from(ember.ops.tanh(s) * 3.0, s)
    graph.build()
    ember.reset_cache_stats()
    graph.build()
    stats = ember.cache_stats()
    assert stats["builds"] == 0 and stats["memory_hits"] >= 1
    ember.clear_memory_cache()
    ember.reset_cache_stats()
    compiled = graph.build()
    stats = ember.cache_stats()
    assert stats["builds"] == 0 and stats["disk_hits"] >= 1
    np.testing.assert_allclose(
        compiled.run([x])[0].numpy(), np.tanh(x.numpy().astype(np.float64)) * 3, rtol=1e-6
    )
    # Imperative operators forget their compiled graphs too: the next call goes to disk.
    ember.reset_cache_stats()
    third = ember.ops.tanh(x)
    assert ember.cache_stats()["disk_hits"] >= 1 and ember.cache_stats()["builds"] == 0
    np.testing.assert_array_equal(third.numpy(), first.numpy())
