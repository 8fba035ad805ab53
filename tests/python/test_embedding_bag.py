"""F.embedding_bag and nn.EmbeddingBag through torch.compile(backend="ember") in strict mode,
against eager PyTorch: every mode, bags from offsets (empty ones included, the last offset
included or not) and from the rows of a 2-d input, padding indices (negative too),
per-sample weights, sizes that change under dynamic=True; max_norm runs eagerly, with the
reason in the warning."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F

import ember
import ember.torch  # noqa: F401  (registers the backend)
from ember.torch.report import EagerFallbackWarning

WEIGHT = torch.randn(12, 5, generator=torch.Generator().manual_seed(0))
INDICES = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 11, 0])

CASES = [
    ("offsets", INDICES, torch.tensor([0, 4, 7]), {}),
    ("empty bags", INDICES, torch.tensor([0, 0, 4, 4, 10]), {}),
    ("last offset", INDICES, torch.tensor([0, 3, 3, 8]), {"include_last_offset": True}),
    ("padding", INDICES, torch.tensor([0, 2, 2, 5]), {"padding_idx": 2}),
    ("negative padding", INDICES, torch.tensor([0, 5]), {"padding_idx": -1}),
    ("only padding", torch.tensor([2, 2, 1]), torch.tensor([0, 2]), {"padding_idx": 2}),
    ("2-d", INDICES.reshape(2, 5), None, {}),
    ("2-d padding", INDICES.reshape(5, 2), None, {"padding_idx": 4}),
]


def _compiled(fn: Any, **kwargs: Any) -> Any:
    torch._dynamo.reset()
    return torch.compile(fn, backend="ember", options={"strict": True}, **kwargs)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize(("name", "indices", "offsets", "kwargs"), CASES,
                         ids=[c[0] for c in CASES])
def test_embedding_bag_matches_eager(name: str, indices: torch.Tensor, offsets: Any,
                                     kwargs: dict[str, Any], mode: str) -> None:
    def fn(i: torch.Tensor, o: Any) -> torch.Tensor:
        return F.embedding_bag(i, WEIGHT, o, mode=mode, **kwargs)

    torch.testing.assert_close(_compiled(fn)(indices, offsets), fn(indices, offsets),
                               rtol=1e-6, atol=1e-6)


def test_per_sample_weights_and_the_module() -> None:
    weights = torch.rand(10, generator=torch.Generator().manual_seed(1))
    offsets = torch.tensor([0, 6])

    def fn(i: torch.Tensor, o: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.embedding_bag(i, WEIGHT, o, mode="sum", per_sample_weights=w, padding_idx=4)

    torch.testing.assert_close(_compiled(fn)(INDICES, offsets, weights),
                               fn(INDICES, offsets, weights), rtol=1e-6, atol=1e-6)
    module = torch.nn.EmbeddingBag(12, 5, mode="mean").eval()
    x = INDICES.reshape(2, 5)
    with torch.no_grad():
        torch.testing.assert_close(_compiled(module)(x), module(x), rtol=1e-6, atol=1e-6)


def test_sizes_that_change_under_dynamic_shapes() -> None:
    def fn(i: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
        return F.embedding_bag(i, WEIGHT, o, mode="mean", padding_idx=3,
                               include_last_offset=True)

    compiled = _compiled(fn, dynamic=True)
    gen = torch.Generator().manual_seed(2)
    for n, offsets in ((8, [0, 4, 8]), (11, [0, 3, 3, 7, 11]), (5, [0, 1, 2, 5])):
        i = torch.randint(0, 12, (n,), generator=gen)
        o = torch.tensor(offsets)
        torch.testing.assert_close(compiled(i, o), fn(i, o), rtol=1e-6, atol=1e-6)


def test_max_norm_runs_eagerly_and_says_why() -> None:
    weight = WEIGHT.clone()

    def fn(i: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
        return F.embedding_bag(i, weight, o, max_norm=1.0)

    torch._dynamo.reset()
    expected = fn(INDICES, torch.tensor([0, 4]))
    compiled = torch.compile(fn, backend="ember")
    with pytest.warns(EagerFallbackWarning, match="embedding_bag with max_norm"):
        got = compiled(INDICES, torch.tensor([0, 4]))
    torch.testing.assert_close(got, expected)


def test_offsets_that_do_not_start_at_zero_are_a_data_error() -> None:
    """torch raises for them; ember's scatter reports the index of the positions before the
    first bag (-1) as out of range instead of writing anywhere."""
    def fn(i: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
        return F.embedding_bag(i, WEIGHT, o, mode="sum")

    with pytest.raises(RuntimeError, match="offsets"):
        fn(INDICES, torch.tensor([1, 4]))
    with pytest.raises(ember.DataError, match="index -1 is out of range"):
        _compiled(fn)(INDICES, torch.tensor([1, 4]))
