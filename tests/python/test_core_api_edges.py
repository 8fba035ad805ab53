"""Small API edges: one tensor passed to run(), slice bounds of the wrong type, the thread
count a graph runs with, and a clean exit with module-level graphs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import ember


def test_run_takes_one_tensor_as_one_input():
    x = ember.symbol([3, 2])
    graph = ember.graph.optimize(ember.trace_from(x * 2.0)).build()
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    (out,) = graph.run(ember.asarray(a))
    np.testing.assert_array_equal(out.numpy(), a * 2)
    (out,) = graph.run([ember.asarray(a)])
    np.testing.assert_array_equal(out.numpy(), a * 2)


@pytest.mark.parametrize("clamp", [True, False])
def test_slice_bounds_of_the_wrong_type_are_an_error(clamp):
    t = ember.asarray(np.ones((2, 2), np.float32))
    with pytest.raises(ember.EmberError, match="slice: stops must be .*got \\[1.5\\]"):
        ember.ops.slice(t, [0], [0], [1.5], None, clamp)
    with pytest.raises(ember.EmberError, match="slice: starts must be"):
        ember.ops.slice(t, [0], [object()], [1], None, clamp)
    if clamp:  # a string bound was a std::bad_cast (unclamped, it names a symbolic size)
        with pytest.raises(ember.EmberError,
                           match="slice: stops must be an int or a list of ints, got \\['a'\\]"):
            ember.ops.slice(t, [0], [0], ["a"], None, clamp)


def test_a_graph_follows_the_process_thread_count_unless_set():
    saved = ember.get_num_threads()
    try:
        x = ember.symbol([4])
        graph = ember.graph.optimize(ember.trace_from(x + 1.0)).build()
        ember.set_num_threads(1)
        assert graph.num_threads == 1
        ember.set_num_threads(2)
        assert graph.num_threads == 2
        graph.set_num_threads(1)
        ember.set_num_threads(2)
        assert graph.num_threads == 1
        out = graph.run([ember.asarray(np.zeros(4, np.float32))])[0]
        np.testing.assert_array_equal(out.numpy(), np.ones(4, np.float32))
    finally:
        ember.set_num_threads(saved)


def test_exit_with_module_level_graphs_is_quiet():
    code = (
        "import ember, numpy as np\n"
        "x = ember.symbol([3])\n"
        "G = ember.graph.optimize(ember.trace_from(x * 3.0)).build()\n"
        "T = G.run([ember.asarray(np.ones(3, np.float32))])\n"
        "print(T[0].numpy().tolist())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[3.0, 3.0, 3.0]"
    assert "leaked" not in proc.stderr
