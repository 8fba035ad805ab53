"""Settings of the torch backend: dynamo_config, torch.compile's mode and options, their
validation and precedence. Nothing here compiles a graph."""

from __future__ import annotations

import pytest
import torch

import ember.torch
from ember.torch.config import MODES, InvalidOptionError, Settings, resolve_settings

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def test_defaults():
    s = resolve_settings()
    assert s == Settings()
    assert (s.search_space, s.strict, s.min_block_size, s.use_cuda_graph) == (0, False, 5, False)
    assert s.low_precision is None


def test_dynamo_config_setters_chain_and_reset():
    cfg = ember.torch.dynamo_config
    assert cfg.search_space(2).correctness_report().print_input_graph(True) is cfg
    cfg.use_bf16().parallel_k("search").min_block_size(3).dump_dir("/tmp/x").strict()
    s = cfg.settings()
    assert (s.search_space, s.correctness_report, s.print_input_graph) == (2, True, True)
    assert (s.low_precision, s.parallel_k, s.min_block_size, s.dump_dir, s.strict) == (
        "bfloat16", "search", 3, "/tmp/x", True)
    assert cfg.get("search_space") == 2
    cfg.reset()
    assert cfg.settings() == Settings()


@pytest.mark.parametrize(
    ("mode", "changes"),
    [("default", {"search_space": 0}), ("max-autotune", {"search_space": 2}),
     ("max-autotune-no-cudagraphs", {"search_space": 2}),
     ("reduce-overhead", {"use_cuda_graph": True})],
)
def test_modes(mode, changes):
    s = resolve_settings(mode=mode)
    for name, value in changes.items():
        assert getattr(s, name) == value
    assert MODES[mode] == changes


def test_precedence_config_then_mode_then_options():
    ember.torch.dynamo_config.search_space(1).min_block_size(7)
    s = resolve_settings(mode="max-autotune", options={"search_space": 0})
    assert (s.search_space, s.min_block_size) == (0, 7)
    assert resolve_settings(mode="max-autotune").search_space == 2
    assert resolve_settings().search_space == 1


def test_unknown_option_lists_valid_ones():
    with pytest.raises(InvalidOptionError) as info:
        resolve_settings(options={"serach_space": 2})
    message = str(info.value)
    assert "no setting named 'serach_space'" in message
    for name in ("search_space", "strict", "min_block_size", "dump_dir", "use_fp16",
                 "correctness_report", "torch_executed_ops", "dryrun"):
        assert name in message
    assert isinstance(info.value, ember.EmberError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [("search_space", 3, "0, 1 or 2"), ("strict", "yes", "True or False"),
     ("min_block_size", 0, "an int >= 1"), ("parallel_k", "fast", "'default', 'disabled'"),
     ("dump_dir", 5, "a directory path"), ("profile", 1, "True or False")],
)
def test_bad_values_say_what_is_accepted(name, value, accepted):
    with pytest.raises(InvalidOptionError, match=accepted):
        resolve_settings(options={name: value})
    setter = getattr(ember.torch.dynamo_config, name)
    with pytest.raises(InvalidOptionError, match=accepted):
        setter(value)


def test_unknown_mode_and_conflicting_precisions():
    with pytest.raises(InvalidOptionError, match="unknown mode"):
        resolve_settings(mode="turbo")
    with pytest.raises(InvalidOptionError, match="choose one low precision"):
        resolve_settings(options={"use_fp16": True, "use_bf16": True})


def test_unknown_option_through_torch_compile():
    f = torch.compile(lambda x: x + 1, backend="ember", options={"bogus": 1})
    with pytest.raises(Exception, match="no setting named 'bogus'"):
        f(torch.randn(3))


def test_backend_receives_mode_and_options_as_torch_compile_passes_them():
    seen = {}
    original = ember.torch.backend.resolve_settings

    def spy(mode=None, options=None, base=None):
        seen["mode"], seen["options"] = mode, options
        return original(mode, options, base)

    ember.torch.backend.resolve_settings = spy
    ember.torch.dynamo_config.dryrun()  # analyse only: nothing to build
    try:
        f = torch.compile(lambda x: x * 2, backend="ember", mode="max-autotune")
        x = torch.randn(2)
        assert torch.equal(f(x), x * 2)
    finally:
        ember.torch.backend.resolve_settings = original
    assert seen == {"mode": "max-autotune", "options": None}


def test_progress_bars_only_on_a_terminal(monkeypatch):
    from ember import building
    from ember.torch import config

    settings = Settings()
    monkeypatch.setattr(building, "_stderr_is_terminal", lambda: False)
    assert isinstance(config.progress_bar(settings, 10, "phase"), building._NoBar)
    monkeypatch.setattr(building, "_stderr_is_terminal", lambda: True)
    bar = config.progress_bar(settings, 10, "phase")
    assert not isinstance(bar, building._NoBar)
    bar.close()
    quiet = settings.replace(progress=False)
    assert isinstance(config.progress_bar(quiet, 10, "phase"), building._NoBar)
