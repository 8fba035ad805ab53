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


def test_modules_that_ran_a_gemm_unload_with_their_graphs():
    rng = np.random.default_rng(0)
    before = _mapped_modules()
    loaded: set[str] = set()
    for k in range(6):
        rows = 61 + k  # a new shape: a new kernel module each time
        a = ember.symbol([rows, 256], "float32")
        w = ember.asarray(rng.standard_normal((256, 256), dtype=np.float32))
        graph = ember.graph.optimize(ember.trace_from(ember.ops.relu(a @ w))).build()
        x = rng.standard_normal((rows, 256), dtype=np.float32)
        out = graph.run([ember.asarray(x)])[0].numpy()
        np.testing.assert_allclose(out, np.maximum(x @ w.numpy(), 0), rtol=1e-4, atol=1e-4)
        loaded |= _mapped_modules() - before
        del graph, out
    assert loaded, "the graphs loaded no kernel module"
    ember.clear_memory_cache()
    gc.collect()
    assert not (_mapped_modules() & loaded)
