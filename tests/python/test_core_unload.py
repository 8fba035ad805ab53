"""Kernel modules are unloaded when nothing holds them: a module that ran a matrix multiply
used to stay mapped forever (its thread_local GEMM scratch pinned it)."""

from __future__ import annotations

import gc
import os

import numpy as np

import ember


def _mapped_modules() -> set[str]:
    with open(f"/proc/{os.getpid()}/maps") as f:
        return {line.split()[-1] for line in f if line.rstrip().endswith("module.so")}


def _resident_mib() -> float:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_modules_that_ran_a_gemm_unload_with_their_graphs():
    """16 graphs, each with a module of its own, built, run and dropped: no module stays
    mapped, and the process does not grow with them (before the fix, each module that ran a
    GEMM kept its mapping and its scratch: +43 MB for 50 such graphs)."""
    rng = np.random.default_rng(0)
    before = _mapped_modules()
    loaded: set[str] = set()
    resident = []
    for k in range(16):
        rows = 61 + k  # a new shape: a new kernel module each time
        a = ember.symbol([rows, 256], "float32")
        w = ember.asarray(rng.standard_normal((256, 256), dtype=np.float32))
        graph = ember.graph.optimize(ember.trace_from(ember.ops.relu(a @ w))).build()
        x = rng.standard_normal((rows, 256), dtype=np.float32)
        out = graph.run([ember.asarray(x)])[0].numpy()
        np.testing.assert_allclose(out, np.maximum(x @ w.numpy(), 0), rtol=1e-4, atol=1e-4)
        loaded |= _mapped_modules() - before
        del graph, out, a, w
        ember.clear_memory_cache()
        gc.collect()
        assert not (_mapped_modules() & loaded), k
        resident.append(_resident_mib())
    assert len(loaded) == 16, "the graphs loaded no kernel module of their own"
    # After the first graphs (the allocator's and the thread pool's first use), 12 more
    # modules come and go without the process growing: a leaked scratch or mapping per
    # module would add about 0.9 MB each.
    assert resident[-1] - resident[3] < 3.0, resident
