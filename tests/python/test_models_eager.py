"""Eager checks of the benchmark models (benchmarks/models): no compiler involved.

Small variants must build, run, give finite float32 outputs of the documented shapes, and be
reproducible from their seed. Full-size variants are only instantiated on the meta device
to check that their parameter counts match the published architectures.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch.utils._pytree import tree_leaves

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.models import MODELS, get_model  # noqa: E402

NAMES = sorted(MODELS)

# Parameter counts of the reference architectures (tied GPT-2 head counted once).
PUBLISHED_PARAMS = {
    "resnet18": 11_689_512,
    "resnet50": 25_557_032,
    "mobilenet_v2": 3_504_872,
    "bert": 109_482_240,
    "gpt2": 124_439_808,
    "gpt2_sdpa": 124_439_808,
}


def run_small(name: str, batch: int = 1) -> list[torch.Tensor]:
    spec = MODELS[name]
    model = spec.build(small=True)
    inputs = spec.example_inputs(batch_size=batch, small=True)
    with torch.inference_mode():
        return list(tree_leaves(model(*inputs)))


@pytest.mark.parametrize("name", NAMES)
def test_small_variant_runs_with_expected_shapes(name: str) -> None:
    outputs = run_small(name)
    assert [tuple(t.shape) for t in outputs] == MODELS[name].expected_output_shapes(1, True)
    for t in outputs:
        assert t.dtype == torch.float32
        assert torch.isfinite(t).all(), f"{name}: non-finite outputs"
        assert t.abs().max() > 0, f"{name}: all-zero output"


@pytest.mark.parametrize("name", NAMES)
def test_batch_size_is_honoured(name: str) -> None:
    outputs = run_small(name, batch=3)
    assert [tuple(t.shape) for t in outputs] == MODELS[name].expected_output_shapes(3, True)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_across_constructions(name: str) -> None:
    spec = MODELS[name]
    a, b = spec.build(small=True), spec.build(small=True)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), f"{name}: {key} differs between builds"
    xa, xb = spec.example_inputs(2, small=True), spec.example_inputs(2, small=True)
    for ta, tb in zip(xa, xb, strict=True):
        assert torch.equal(ta, tb)
    with torch.inference_mode():
        for oa, ob in zip(tree_leaves(a(*xa)), tree_leaves(b(*xb)), strict=True):
            assert torch.equal(oa, ob)


@pytest.mark.parametrize("name", NAMES)
def test_built_in_eval_mode(name: str) -> None:
    model = MODELS[name].build(small=True)
    assert not any(m.training for m in model.modules())


def test_build_leaves_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(4)
    torch.manual_seed(123)
    MODELS["mlp"].build(small=True)
    MODELS["mlp"].example_inputs(small=True)
    assert torch.equal(torch.rand(4), expected)


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_full_size_matches_published_parameter_count(name: str) -> None:
    spec = MODELS[name]
    with torch.device("meta"):
        model = spec.factory(spec.full)
    assert sum(p.numel() for p in model.parameters()) == PUBLISHED_PARAMS[name]


def test_full_size_inputs() -> None:
    assert MODELS["resnet50"].example_inputs()[0].shape == (1, 3, 224, 224)
    ids, mask = MODELS["bert"].example_inputs()
    assert ids.shape == mask.shape == (1, 128) and ids.dtype == mask.dtype == torch.int64
    (gpt_ids,) = MODELS["gpt2"].example_inputs()
    assert gpt_ids.shape == (1, 128) and gpt_ids.dtype == torch.int64


def test_bert_attention_mask_hides_padding() -> None:
    spec = MODELS["bert"]
    model = spec.build(small=True)
    ids, mask = spec.example_inputs(small=True)
    keep = mask[0].bool()
    assert not keep.all(), "example inputs should contain padding"
    other = ids.clone()
    other[:, ~keep] = 7  # change only padded tokens
    with torch.inference_mode():
        seq_a, pooled_a = model(ids, mask)
        seq_b, pooled_b = model(other, mask)
    torch.testing.assert_close(seq_a[:, keep], seq_b[:, keep])
    torch.testing.assert_close(pooled_a, pooled_b)


@pytest.mark.parametrize("name", ["gpt2", "gpt2_sdpa"])
def test_gpt2_is_causal(name: str) -> None:
    spec = MODELS[name]
    model = spec.build(small=True)
    (ids,) = spec.example_inputs(small=True)
    other = ids.clone()
    other[:, -1] = (other[:, -1] + 1) % spec.small.vocab_size
    with torch.inference_mode():
        a, b = model(ids), model(other)
    torch.testing.assert_close(a[:, :-1], b[:, :-1])
    assert not torch.allclose(a[:, -1], b[:, -1])


def test_gpt2_attention_paths_agree() -> None:
    explicit, sdpa = MODELS["gpt2"], MODELS["gpt2_sdpa"]
    (ids,) = explicit.example_inputs(small=True)
    with torch.inference_mode():
        a = explicit.build(small=True)(ids)
        b = sdpa.build(small=True)(ids)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_gpt2_head_is_tied() -> None:
    model = MODELS["gpt2"].build(small=True)
    assert model.lm_head.weight is model.wte.weight


def test_unknown_model_error_lists_valid_names() -> None:
    with pytest.raises(KeyError, match="unknown model 'resnet19'; valid models: mlp, resnet18"):
        get_model("resnet19")
