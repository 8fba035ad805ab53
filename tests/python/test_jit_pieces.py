"""The pieces of the runtime's routines (ember_rt/pieces.h: the GEMM's micro-kernels, the
blocked convolutions' micro-kernel tables) are compiled once per flag set, into the
precompiled header's directory, and linked into every module: modules with different
products and convolutions compile them once and compute what numpy does; a module keeps only
the pieces its kernels reach (its machine code is the size of one that compiles them itself);
a damaged object is removed and the module still builds and computes the right values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember

pytestmark = pytest.mark.skipif(ember.isa() == "scalar",
                                reason="the scalar ISA has no precompiled header to test")

# Multiplies matrices of the given (M, K, N) in a fresh process with its own kernel cache
# (one GEMM module each), and checks each product against numpy in float64.
CHILD = """
import json, sys
import numpy as np
import ember
rng = np.random.default_rng(0)
for m, k, n in json.loads(sys.argv[1]):
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    got = ember.ops.matmul(ember.asarray(a), ember.asarray(b)).numpy()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * k)
print("ok")
"""


# A convolution and a depthwise one on the blocked layout (their micro-kernel tables are
# pieces too), through the torch backend, against eager.
CONV_CHILD = """
import torch, ember
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.Conv2d(32, 32, 3, padding=1, groups=32)).eval()
x = torch.randn(2, 16, 12, 12)
with torch.no_grad():
    got = torch.compile(model, backend="ember", options={"strict": True})(x)
    torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-4)
print("ok")
"""


def run_child(cache: Path, shapes: list[tuple[int, int, int]], program: str = CHILD) -> list[str]:
    """The lines of the child's debug log about the pieces."""
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache), EMBER_LOG="debug",
               EMBER_CONV_ALGORITHM="blocked")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(program), json.dumps(shapes)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if "pieces" in ln]
    assert r.stdout.strip().endswith("ok"), r.stdout
    return lines


def modules(cache: Path) -> dict[str, int]:
    """The size of each module.so in the cache, by the text of its first unit."""
    return {(p.parent / "kernel_0.cpp").read_text(): p.stat().st_size
            for p in (cache / "kernels").rglob("module.so")}


def test_pieces_compile_once_and_every_module_links_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    log = run_child(cache, [(5, 24, 40), (64, 96, 80), (1, 300, 7)])
    built = [ln for ln in log if "compiled the pieces" in ln]
    assert len(built) == 1, log
    objects = list(cache.glob("pch/*/pieces.o"))
    assert len(objects) == 1
    units = [p.read_text() for p in cache.rglob("kernel_0.cpp")]
    assert len(units) == 3 and all('#include "ember_rt/pieces.h"' in u for u in units)
    # A second process finds the object and compiles no pieces, for products and for
    # convolutions on the blocked layout.
    log = run_child(cache, [(3, 17, 29)])
    assert not [ln for ln in log if "compiled the pieces" in ln], log
    before = set(cache.rglob("kernel_0.cpp"))
    log = run_child(cache, [], CONV_CHILD)
    assert not [ln for ln in log if "compiled the pieces" in ln], log
    conv = "".join(p.read_text() for p in set(cache.rglob("kernel_*.cpp")) - before)
    assert "ember_rt::lib::conv2d_blocked" in conv and "depthwise_conv2d_blocked" in conv


def test_a_module_keeps_only_the_pieces_it_calls(tmp_path: Path) -> None:
    """The same graphs built where there is no precompiled header (a file where its
    directory would be), whose modules compile the pieces themselves: the modules linked with
    the prebuilt object are no larger (a few hundred bytes of calls aside), where linking every
    piece would add tens of KB."""
    shapes = [(5, 24, 40), (64, 96, 80)]
    run_child(tmp_path / "prebuilt", shapes)
    inline = tmp_path / "inline"
    inline.mkdir()
    (inline / "pch").write_text("not a directory")
    log = run_child(inline, shapes)
    assert not [ln for ln in log if "compiled the pieces" in ln], log
    prebuilt, own = modules(tmp_path / "prebuilt"), modules(inline)
    assert prebuilt.keys() == own.keys() and len(own) == 2
    for unit, size in prebuilt.items():
        assert size <= own[unit] + 2048, (size, own[unit])


def test_a_damaged_pieces_object_is_replaced(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_child(cache, [(5, 24, 40)])
    (obj,) = cache.glob("pch/*/pieces.o")
    obj.write_bytes(b"not an object file")
    log = run_child(cache, [(6, 24, 40)])  # a new module, with the damaged object
    assert any("retrying without them" in ln for ln in log), log
    assert any("removing" in ln and "pieces.o" in ln for ln in log), log
    assert not obj.exists()
    log = run_child(cache, [(7, 24, 40)])  # the next module builds it again
    assert [ln for ln in log if "compiled the pieces" in ln], log
    assert obj.exists() and obj.read_bytes()[:4] == b"\x7fELF"
