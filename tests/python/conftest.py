"""pytest configuration shared by ember's Python tests.

Kernels compiled by a test session go to a fresh temporary cache, so tests never read
kernels left by an earlier run or another checkout. EMBER_CACHE_DIR is set here, at import
time and before any test imports ember, because the C++ side reads it from the environment;
when it is already set (to inspect or reuse a cache) it is left alone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

_OWN_CACHE: str | None = None
if not os.environ.get("EMBER_CACHE_DIR"):
    _OWN_CACHE = tempfile.mkdtemp(prefix="ember-test-cache-")
    os.environ["EMBER_CACHE_DIR"] = _OWN_CACHE


@pytest.fixture(scope="session")
def ember_cache_dir() -> str:
    """The kernel cache of this test session."""
    return os.environ["EMBER_CACHE_DIR"]


def pytest_unconfigure(config: pytest.Config) -> None:
    """The temporary cache is removed when the process that made it ends its session. (With
    pytest-xdist that is the controller: its workers, started after this module set
    EMBER_CACHE_DIR, inherit it and share the one cache.)"""
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


@pytest.fixture
def fresh_dynamo() -> Iterator[None]:
    """A test of torch.compile from a clean state: Dynamo's caches and ember's Dynamo
    configuration reset before and after it, and the converter registry given back as it
    was (the test may register converters of its own). Test files that need it for every
    test name it in their pytestmark."""
    import torch

    import ember.torch
    from ember.torch import registry

    torch._dynamo.reset()
    ember.torch.dynamo_config.reset()
    saved = {k: list(v) for k, v in registry._REGISTRY.table.items()}
    yield
    registry._REGISTRY.table.clear()
    registry._REGISTRY.table.update(saved)
    ember.torch.dynamo_config.reset()
    torch._dynamo.reset()


@pytest.fixture
def plain_conv_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """The convolution rules without the blocked algorithms (EMBER_CONV_ALGORITHM=plain), for
    tests of the plain forms' rules (Winograd, the implicit GEMM, gemm1x1)."""
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", "plain")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--opinfo-all", action="store_true", default=False,
                     help="test_opinfo.py: every sample of every OpInfo operator (slow); "
                          "by default each operator runs its first sample only")
    parser.addoption("--full", action="store_true", default=False,
                     help="also the test cases marked `full` (parameter combinations that "
                          "repeat a code path another case covers) and the long loss curves "
                          "of test_training.py; the default run (CI) leaves them out")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "full: a case that repeats a code path another case covers; run with --full")


# The files that take longest (seconds of one worker in a CI run on the 2-core machine,
# 2026-11-28), longest first. pytest-xdist's --dist loadfile hands files to the workers in
# collection order, so these go first: a long file collected last kept one worker busy for
# minutes while the other had nothing left to run. A stale list only costs balance.
LONGEST_FIRST = ["test_opinfo.py", "test_conv_algorithms.py", "test_training.py",
                 "test_cov_linalg.py", "test_torch_coverage.py", "test_hf_models.py",
                 "test_fuzz_smoke.py", "test_spectral.py", "test_onnx_ops.py", "test_deploy.py"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without --full, the cases marked `full` are deselected (reported as deselected). The
    longest files are moved to the front (LONGEST_FIRST), the rest keep their order."""
    if not config.getoption("--full"):
        dropped = [item for item in items if item.get_closest_marker("full") is not None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item.get_closest_marker("full") is None]
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of the ember graphs built (FlowGraph.build calls) while a test runs."""
    from ember.torch.phases import build

    built: list[str] = []
    real = build.build_graph

    def counting(conversion: Any, settings: Any, label: str, *rest: Any) -> Any:
        built.append(label)
        return real(conversion, settings, label, *rest)

    monkeypatch.setattr(build, "build_graph", counting)
    return built
