"""A compiler that misbehaves is the machine's problem, reported as an ember.EmberError that
says what happened (never 'a bug in ember'), and a compiler that hangs cannot hang ember."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from test_core_cache import assert_outputs_right, entries, run_child

CXX = shutil.which("g++") or "/usr/bin/g++"


def fake_compiler(tmp_path: Path, body: str) -> str:
    """A compiler that answers --version as the real one and does `body` otherwise."""
    script = tmp_path / "fake-cxx"
    script.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then exec {CXX} --version; fi\n'
                      f"{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


@pytest.mark.parametrize(("body", "words"), [
    # The time-out names the kernels of the source the compiler was stopped on.
    ("exec sleep 60", ["ran longer than 1 s", "EMBER_COMPILE_TIMEOUT",
                       "kernel_0.cpp of graph holds: ember_k_", "Softmax computing"]),
    ("kill -9 $$", ["was killed (signal 9)"]),
    ("exit 0", ["exited successfully but wrote no", "EMBER_CXX"]),
])
def test_a_misbehaving_compiler_is_an_environment_error(tmp_path: Path, body: str,
                                                        words: list[str]) -> None:
    cxx = fake_compiler(tmp_path, body)
    start = time.monotonic()
    result = run_child(tmp_path / "cache", EMBER_CXX=cxx, EMBER_COMPILE_TIMEOUT="1")
    # A compiler that sleeps 60 s holds ember no longer than the time-out allows, its probes
    # (the --version and linker checks) included: far less than the 60 s, even on a slow
    # machine.
    assert time.monotonic() - start < 40
    assert result["type"] == "EmberError", result
    for w in words:
        assert w in result["error"]
    assert "bug in ember" not in result["error"]
    assert not entries(tmp_path / "cache")


def test_a_c_driver_is_an_environment_error(tmp_path: Path) -> None:
    """gcc compiles the kernels as C++ (ember passes -x c++) but links them without C++'s
    standard library: the modules would not load (operator new undefined). ember says so
    before building anything, and leaves no cache entry."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc on PATH")
    result = run_child(tmp_path / "cache", EMBER_CXX=gcc)
    assert result["type"] == "EmberError", result
    assert "is a C driver: it does not link C++'s standard library" in result["error"]
    assert "Set EMBER_CXX to its C++ driver" in result["error"]
    assert "bug in ember" not in result["error"]
    assert not entries(tmp_path / "cache")
    # Its C++ driver builds the same graph.
    assert_outputs_right(run_child(tmp_path / "cache", EMBER_CXX=CXX))


def test_an_invalid_timeout_is_an_error(tmp_path: Path) -> None:
    result = run_child(tmp_path / "cache", EMBER_COMPILE_TIMEOUT="soon")
    assert result["type"] == "EmberError"
    assert "EMBER_COMPILE_TIMEOUT must be a positive number of seconds, got 'soon'" in (
        result["error"])


def test_stale_precompiled_header_temporaries_are_removed(tmp_path: Path) -> None:
    """A process killed while precompiling the header leaves all.h.gch.tmp.* behind; the next
    process that precompiles in that directory removes it (once older than a build can
    run), and leaves a recent one (another process may be writing it) alone."""
    cache = tmp_path / "cache"
    run_child(cache)
    headers = [p.parent for p in cache.rglob("all.h.gch")]
    assert len(headers) == 1
    pch_dir = headers[0]
    stale, fresh = pch_dir / "all.h.gch.tmp.dead", pch_dir / "all.h.gch.tmp.busy"
    stale.write_bytes(b"x" * 1000)
    fresh.write_bytes(b"y")
    day_ago = stale.stat().st_mtime - 86400
    os.utime(stale, (day_ago, day_ago))
    (pch_dir / "all.h.gch").unlink()
    shutil.rmtree(cache / "kernels")
    result = run_child(cache)
    assert "error" not in result, result
    assert not stale.exists()
    assert fresh.exists()


def test_a_warm_cache_works_without_a_compiler(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cold = run_child(cache)
    assert "error" not in cold, cold
    assert (cache / "compiler").read_text().startswith("/")
    # No compiler on PATH, none named: the kernels are found by the compiler that built them.
    warm = run_child(cache, PATH=str(tmp_path / "no-bin"))
    assert_outputs_right(warm)
    assert warm["stats"]["builds"] == 0
    # A kernel that is not there still needs a compiler, and says so.
    for entry in entries(cache):
        shutil.rmtree(entry)
    result = run_child(cache, PATH=str(tmp_path / "no-bin"))
    assert result["type"] == "EmberError"
    assert "no C++ compiler was found" in result["error"]


def test_a_read_only_warm_cache_is_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert "error" not in run_child(cache)
    modes = {p: p.stat().st_mode for p in [cache, *cache.rglob("*")]}
    wrap: list[str] = []
    try:
        for p in modes:
            p.chmod(p.stat().st_mode & ~0o222)
        if os.access(cache, os.W_OK):
            # root writes through the permission bits: the child runs in a mount namespace
            # of its own, where the cache is a read-only bind mount.
            mount = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
            wrap = ["unshare", "-m", "sh", "-c", mount, str(cache)]
            probe = subprocess.run([*wrap, "touch", str(cache / "probe")],
                                   capture_output=True, text=True) if shutil.which(
                                       "unshare") else None
            if probe is None or "Read-only file system" not in probe.stderr:
                pytest.skip("this user (root) writes into read-only directories, and cannot "
                            "mount the cache read-only (unshare -m)")
        warm = run_child(cache, wrap)
        assert_outputs_right(warm)
        assert warm["stats"]["builds"] == 0
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_an_invalid_cxx_is_an_error_not_ignored(tmp_path: Path) -> None:
    result = run_child(tmp_path / "cache", CXX="/nonexistent/c++")
    assert result["type"] == "EmberError"
    assert "CXX is set to '/nonexistent/c++', which is not an executable file" in (
        result["error"])
