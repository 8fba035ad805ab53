"""The benchmark models (benchmarks/models, small configurations) compiled by
torch.compile(backend="ember") in strict mode match eager PyTorch."""

from __future__ import annotations

import os
import sys
import warnings

import pytest
import torch

import ember
import ember.torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
models = pytest.importorskip("benchmarks.models")

# ember operators a model needs beyond the basic ones (its test is skipped until they exist).
NEEDS = {
    "resnet18": ["conv2d", "max_pool2d"],
    "resnet50": ["conv2d", "max_pool2d"],
    "mobilenet_v2": ["conv2d"],
    "bert": ["embedding"],
    "gpt2": ["embedding"],
    "gpt2_sdpa": ["embedding"],
    "conv1d_net": ["conv1d"],
    "unet_block": ["conv2d", "upsample_bilinear2d"],
}


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _skip_if_missing(name):
    missing = [op for op in NEEDS.get(name, []) if not hasattr(ember.ops, op)]
    if missing:
        pytest.skip(f"ember.ops lacks {', '.join(missing)}")


def _flat(x):
    if isinstance(x, torch.Tensor):
        return [x]
    return [t for item in x for t in _flat(item)]


@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_small_model_matches_eager(name):
    _skip_if_missing(name)
    spec = models.MODELS[name]
    model = spec.build(small=True)
    inputs = spec.example_inputs(batch_size=2, small=True)
    compiled = torch.compile(model, backend="ember", options={"strict": True})
    with torch.no_grad():
        actual = _flat(compiled(*inputs))
        expected = _flat(model(*inputs))
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        torch.testing.assert_close(a, e, atol=2e-4, rtol=2e-4)


def test_bert_with_dynamic_sequence_length():
    _skip_if_missing("bert")
    spec = models.MODELS["bert"]
    model = spec.build(small=True)
    compiled = torch.compile(model, backend="ember", dynamic=True)
    cfg = spec.config(small=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seq in (5, 11):
            ids = torch.randint(0, cfg.vocab_size, (2, seq))
            mask = torch.ones(2, seq, dtype=torch.long)
            mask[1, seq - 2:] = 0
            for a, e in zip(_flat(compiled(ids, mask)), _flat(model(ids, mask)), strict=True):
                torch.testing.assert_close(a, e, atol=2e-4, rtol=2e-4)


@pytest.mark.parametrize("name", ["gpt2", "gpt2_sdpa"])
def test_gpt2_with_dynamic_sequence_length(name):
    _skip_if_missing(name)
    spec = models.MODELS[name]
    model = spec.build(small=True)
    compiled = torch.compile(model, backend="ember", dynamic=True)
    cfg = spec.config(small=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seq in (4, 13):
            ids = torch.randint(0, cfg.vocab_size, (2, seq))
            torch.testing.assert_close(compiled(ids), model(ids), atol=2e-4, rtol=2e-4)
