"""ember's thread pool: results do not depend on the number of threads, and an invalid
number of threads is a user error."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from _helpers_core import assert_matches

import ember

E = ember.ops


@pytest.fixture
def restore_threads() -> Iterator[int]:
    before = ember.get_num_threads()
    yield before
    ember.set_num_threads(before)


def test_one_and_two_threads_give_identical_results(restore_threads: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 517)).astype(np.float32)
    b = rng.standard_normal((517, 263)).astype(np.float32)
    x = ember.symbol([300, 517])
    y = ember.symbol([517, 263])
    outputs = [x @ y, E.sum(x), E.sum(x, 1), E.max(x, 0), E.softmax(x, -1), E.exp(x) * 2.0]
    compiled = ember.graph.optimize(ember.trace_from(outputs, [x, y])).build()
    inputs = [ember.asarray(a), ember.asarray(b)]
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    one = [o.numpy().copy() for o in compiled.run(inputs)]
    ember.set_num_threads(2)
    assert ember.get_num_threads() == 2
    two = [o.numpy().copy() for o in compiled.run(inputs)]
    for p, q in zip(one, two, strict=True):
        np.testing.assert_array_equal(p, q)
    # ... and both are right.
    d = a.astype(np.float64)
    assert_matches(ember.asarray(two[0]), d @ b, "float32", rtol=1e-5, atol=1e-3)
    assert_matches(ember.asarray(two[1]), np.asarray(d.sum()), "float32", rtol=1e-5, atol=1e-2)
    assert_matches(ember.asarray(two[2]), d.sum(1), "float32", rtol=1e-5, atol=1e-4)
    assert_matches(ember.asarray(two[3]), d.max(0), "float32")


def test_compiled_graph_thread_count(restore_threads: int) -> None:
    x = ember.symbol([64, 64])
    compiled = ember.trace_from(x @ x, x).build()
    compiled.set_num_threads(1)
    assert compiled.num_threads == 1
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    one = compiled.run([ember.asarray(a)])[0].numpy().copy()
    compiled.set_num_threads(2)
    assert compiled.num_threads == 2
    np.testing.assert_array_equal(compiled.run([ember.asarray(a)])[0].numpy(), one)
    with pytest.raises(ember.EmberError) as info:
        compiled.set_num_threads(0)
    assert str(info.value) == (
        "CompiledGraph.set_num_threads: the number of threads must be at least 1, got 0"
    )
    assert compiled.num_threads == 2


@pytest.mark.parametrize("n", [0, -1, 1_000_000])
def test_invalid_thread_count_is_an_error(n: int, restore_threads: int) -> None:
    with pytest.raises(
        ember.EmberError,
        match=r"^set_num_threads: the number of threads must "
        r"be between 1 and \d+, got " + str(n) + r"\.$",
    ):
        ember.set_num_threads(n)
    assert ember.get_num_threads() == restore_threads  # unchanged
