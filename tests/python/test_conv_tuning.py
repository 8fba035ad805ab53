"""Convolution algorithms chosen by measurement (search_space >= 1, passes::measure_algorithms):
every algorithm that applies is timed once, the fastest is kept in the tuning records (kind
"algorithm") and read back by the next compile; damaged records are measured again."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _helpers_conv import reference as _reference
from _helpers_conv import weights as _weights

import ember
from ember import ops

# Tuning (search_space >= 1): the algorithms that apply are measured, the fastest is kept in
# the tuning records (kind "algorithm") and read back by the next compile.

def _tuned(x_shape: tuple[int, ...], w: np.ndarray, search_space: int,
           **kw: object) -> ember.FlowGraph:
    x = ember.symbol(list(x_shape), name="x")
    y = ops.relu(ops.conv2d(x, ember.asarray(w), **kw))
    return ember.graph.optimize(ember.trace_from([y], [x]), search_space=search_space)


def _algorithm_records(about: str) -> list[Path]:
    """The tuning records of algorithm choices whose problem text contains `about`."""
    root = Path(ember.cache_dir()) / "tuning"
    return [p for p in root.rglob("*.txt")
            if "\nalgorithm " in p.read_text() and about in p.read_text()]


def test_tuned_choice_is_measured_once_and_read_back(monkeypatch: pytest.MonkeyPatch,
                                                     capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("EMBER_LOG", "tune")
    c, size = 64, 27  # a problem no other test tunes: its record is this test's
    w = _weights(c, c, 3, seed=27)
    x = np.random.default_rng(27).standard_normal((1, c, size, size)).astype(np.float32)
    for old in _algorithm_records(f"[1, {c}, {size}, {size}]"):  # a cache kept from a past run
        old.unlink()
    first = _tuned(x.shape, w, 1, padding=1)
    log = capfd.readouterr().err
    # Every algorithm that applies was timed; the log names the rules' choice.
    lines = [line for line in log.splitlines() if f"[1, {c}, {size}, {size}]" in line]
    assert len(lines) == 1 and ": chose " in lines[0], log
    for algo in ("winograd", "implicit", "wide", "im2col", "blocked"):
        assert re.search(rf"{algo} [0-9.e+-]+ ms", lines[0]), lines[0]
    chosen = re.search(r": chose (\w+) \(the rules': blocked\)", lines[0])
    assert chosen, lines[0]
    assert f"algo={chosen[1]}" in str(first), str(first)
    records = _algorithm_records(f"[1, {c}, {size}, {size}]")
    assert len(records) == 1 and f"algorithm {chosen[1]}\n" in records[0].read_text()

    second = _tuned(x.shape, w, 1, padding=1)
    log = capfd.readouterr().err
    assert "from the tuning records" in log and ": chose " not in log, log
    assert str(second) == str(first)
    got = second(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = np.maximum(_reference(x, w, None, padding=1), 0.0)
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-5 * float(np.abs(ref).max()))


@pytest.mark.parametrize("damage", [
    "garbage\n",
    "ember-tuning 1\nalgorithm direct\nseconds 1 1 4\n",  # not an algorithm that applies
    "ember-tuning 1\nconfig 0 0 0 -1 0\nseconds 1 1 4\n",  # a GEMM blocking's kind
])
def test_damaged_algorithm_record_is_ignored_with_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                            capfd: pytest.CaptureFixture[str],
                                                            damage: str) -> None:
    monkeypatch.setenv("EMBER_LOG", "tune")
    # This test's own problem, the same in each case: the candidates compile once (a case
    # may find the record another case left; each damages it and checks the re-measure).
    c, size = 24, 20
    w = _weights(c, c, 5, seed=size)
    x = np.random.default_rng(size).standard_normal((1, c, size, size)).astype(np.float32)
    _tuned(x.shape, w, 1, padding=2)
    capfd.readouterr()
    records = _algorithm_records(f"[1, {c}, {size}, {size}]")
    assert len(records) == 1
    records[0].write_text(damage)
    again = _tuned(x.shape, w, 1, padding=2)
    err = capfd.readouterr().err
    assert "ember: warning: ignoring the damaged tuning record" in err, err
    assert ": chose " in err, err  # measured again, and recorded again
    assert "\nalgorithm " in records[0].read_text()
    got = again(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = np.maximum(_reference(x, w, None, padding=2), 0.0)
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-5 * float(np.abs(ref).max()))


@pytest.mark.usefixtures("plain_conv_rules")
def test_search_space_0_keeps_the_rules_and_measures_nothing(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("EMBER_LOG", "tune")
    w = _weights(64, 64, 3, seed=28)
    graph = _tuned((1, 64, 28, 28), w, 0, padding=1)
    assert "algo=winograd" in str(graph), str(graph)  # the rules' choice (winograd_wins)
    assert "ember[tune]" not in capfd.readouterr().err
    with pytest.raises(ember.EmberError, match=r"search_space must be 0, 1 or 2 \(got 3\)"):
        _tuned((1, 64, 28, 28), w, 3, padding=1)


def test_one_algorithm_that_applies_is_not_measured(monkeypatch: pytest.MonkeyPatch,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    """A depthwise convolution with channel multiplier 2 has one algorithm (depthwise_blocked
    takes multiplier 1 only): nothing to measure."""
    monkeypatch.setenv("EMBER_LOG", "tune")
    w = _weights(32, 1, 3, seed=16)
    graph = _tuned((1, 16, 20, 20), w, 1, padding=1, groups=16)
    assert "algo=depthwise" in str(graph)
    assert "ember[tune]" not in capfd.readouterr().err


@pytest.mark.usefixtures("plain_conv_rules")
def test_gemm1x1_is_not_measured_against_copies_of_its_input(
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """1x1, stride 1, unpadded: the other dense forms would run the same GEMM on a copy of x."""
    monkeypatch.setenv("EMBER_LOG", "tune")
    c, o, size = 20, 40, 31  # this test's own problem
    w = _weights(o, c, 1, seed=size)
    x = np.random.default_rng(size).standard_normal((1, c, size, size)).astype(np.float32)
    graph = _tuned(x.shape, w, 1)
    assert "algo=gemm1x1" in str(graph), str(graph)
    err = capfd.readouterr().err
    assert not re.search(r"(implicit|wide|im2col) [0-9.e+-]+ ms", err), err
    assert _algorithm_records(f"[1, {c}, {size}, {size}]") == []
    got = graph(ember.asarray(x))
    got = (got[0] if isinstance(got, (list, tuple)) else got).numpy().astype(np.float64)
    ref = np.maximum(_reference(x, w, None), 0.0)
    np.testing.assert_allclose(got, ref, rtol=0, atol=2e-5 * float(np.abs(ref).max()))
