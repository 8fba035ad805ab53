"""Tuning through torch.compile and FlowGraph.build: mode="max-autotune" / search_space,
parallel_k, the tuning records, dump_dir's generated sources, and the progress bars.
Every compiled result is compared with eager PyTorch."""

from __future__ import annotations

import glob
import os
import re

import numpy as np
import pytest
import torch
from torch import nn

import ember
import ember.torch

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def mlp(k: int, hidden: int, n: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(k, hidden), nn.ReLU(), nn.Linear(hidden, n)).eval()


def run(model, x, **kwargs):
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="ember", **kwargs)
    with torch.no_grad():
        return compiled(x)


@pytest.fixture
def empty_records(tmp_path, monkeypatch):
    """A kernel cache of this test's own, so no tuning record of an earlier run (or test)
    answers a problem that the test expects to be measured."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "cache"))


def read_dumped(root, name: str) -> str:
    found = glob.glob(os.path.join(root, "**", name), recursive=True)
    assert found, f"no {name} under {root}"
    with open(found[0]) as f:
        return f.read()


@pytest.mark.usefixtures("empty_records")
def test_max_autotune_tunes_every_matmul_and_matches_eager(tmp_path):
    model, x = mlp(64, 96, 32), torch.randn(16, 64)
    ember.torch.dynamo_config.dump_dir(tmp_path)  # torch.compile takes mode or options
    out = run(model, x, mode="max-autotune")
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), atol=1e-4, rtol=1e-4)
    summary = read_dumped(tmp_path, "tuning.txt")
    # Both Linear layers were measured.
    assert len(re.findall(r"\d+ candidates", summary)) == 2, summary
    unit = read_dumped(tmp_path, "unit_0.cpp")
    assert "ember_rt::gemm(" in unit


@pytest.mark.usefixtures("empty_records")
def test_search_space_option_records_its_choices_for_the_next_build(tmp_path):
    model, x = mlp(48, 80, 24), torch.randn(8, 48)
    first, second = tmp_path / "first", tmp_path / "second"
    run(model, x, options={"search_space": 1, "dump_dir": str(first)})
    out = run(model, x, options={"search_space": 1, "dump_dir": str(second)})
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), atol=1e-4, rtol=1e-4)
    assert "from the tuning records" not in read_dumped(first, "tuning.txt")
    assert read_dumped(second, "tuning.txt").count("from the tuning records") == 2


@pytest.mark.parametrize("parallel_k", ["disabled", 2, 3, "search"])
def test_parallel_k_splits_match_eager(tmp_path, parallel_k):
    torch.manual_seed(1)
    w = torch.randn(2048, 16)
    x = torch.randn(8, 2048)
    out = run(lambda a: torch.relu(a @ w), x,
              options={"parallel_k": parallel_k, "dump_dir": str(tmp_path)})
    torch.testing.assert_close(out, torch.relu(x @ w), atol=1e-3, rtol=1e-4)
    unit = read_dumped(tmp_path, "unit_0.cpp")
    if isinstance(parallel_k, int):
        assert f"ember_rt::GemmTuning{{0, 0, 0, -1, {parallel_k}}}" in unit
    if parallel_k == "disabled":
        assert "ember_rt::GemmTuning{0, 0, 0, -1, 1}" in unit


@pytest.mark.usefixtures("empty_records")
def test_dynamic_shapes_tune_at_the_example_size_and_run_at_others(tmp_path):
    model = mlp(32, 64, 16)
    compiled = torch.compile(model, backend="ember", dynamic=True,
                             options={"search_space": 1, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        for rows in (24, 5, 40):
            x = torch.randn(rows, 32)
            torch.testing.assert_close(compiled(x), model(x), atol=1e-4, rtol=1e-4)
    summary = read_dumped(tmp_path, "tuning.txt")
    assert re.search(r"\d+ candidates", summary) and "has no value" not in summary, summary


def test_progress_bars_name_the_phases(monkeypatch):
    from ember import building

    bars: dict[str, list[int]] = {}

    class Recorder(building._NoBar):
        def __init__(self, desc: str, total: int) -> None:
            self.counts = bars.setdefault(desc, [total, 0])

        def update(self, n: int = 1) -> None:
            self.counts[1] += n

    def fake_bar(enabled, total, desc, unit="it"):
        return Recorder(desc, total) if enabled else building._NoBar()

    monkeypatch.setattr(building, "progress_bar", fake_bar)
    model, x = mlp(37, 53, 11), torch.randn(3, 37)  # shapes no other test compiles
    out = run(model, x, options={"search_space": 1})
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), atol=1e-4, rtol=1e-4)
    for phase in ("fusing", "generating kernels", "tuning", "compiling"):
        done = [counts for desc, counts in bars.items() if desc.endswith(phase)]
        assert done and done[0][0] == done[0][1] > 0, (phase, bars)  # ran to its total
    bars.clear()
    run(model, x, options={"search_space": 1, "progress": False})
    assert bars == {}


def test_build_options_are_validated():
    x = ember.symbol([4, 8], "float32", name="x")
    w = ember.asarray(np.ones((8, 3), np.float32))
    g = ember.trace_from([ember.ops.matmul(x, w)], [x])
    with pytest.raises(ember.EmberError, match=r"search_space must be 0, 1 or 2 \(got 5\)"):
        g.build(search_space=5)
    with pytest.raises(ember.EmberError, match="parallel_k must be 'default', 'disabled', "
                       "'search' or a number of parts >= 1, got 'fast'"):
        g.build(parallel_k="fast")
    seen = []
    compiled = g.build(search_space=1, progress=lambda *a: seen.append(a))
    assert ("tuning", 1, 1) in seen and ("generating kernels", 1, 1) in seen
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(compiled.run([ember.asarray(a)])[0].numpy(), a @ np.ones((8, 3)),
                               rtol=1e-6)


def test_search_space_measures_convolution_algorithms_once(monkeypatch, capfd):
    """At search_space 1 each convolution's algorithms are timed (EMBER_LOG=tune shows them)
    and the choice is recorded: the second compile measures nothing, and both match eager."""
    monkeypatch.setenv("EMBER_LOG", "tune")
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 16, 1, stride=2), nn.ReLU()).eval()
    x = torch.randn(1, 8, 23, 21)  # shapes no other test tunes
    for record in glob.glob(os.path.join(ember.cache_dir(), "tuning", "**", "*.txt"),
                            recursive=True):
        with open(record) as f:
            text = f.read()
        if "\nalgorithm " in text and "23, 21]" in text:  # kept from a past run
            os.remove(record)
    for compile_ in ("first", "second"):
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="ember", dynamic=False,
                                 options={"search_space": 1})
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), atol=1e-4, rtol=1e-4)
        log = [line for line in capfd.readouterr().err.splitlines()
               if line.startswith("ember[tune]: conv2d")]
        assert len(log) == 2, log  # the 3x3 and the strided 1x1
        if compile_ == "first":
            assert all(": chose " in line for line in log), log
        else:
            assert all("from the tuning records" in line for line in log), log
