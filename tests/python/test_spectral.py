"""Complex tensors and the Fourier transforms (torch.fft, torch.stft) through ember, against
eager PyTorch: every transform with its n / s, dim and norm arguments, complex graph inputs
and outputs, complex arithmetic, symbolic lengths, and the fallbacks (a converter that takes
no complex tensors, an axis longer than ember converts)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

import ember
from ember.torch.converters import spectral
from ember.torch.report import EagerFallbackWarning
from tests.python._helpers_torch import check

fft = torch.fft


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


@pytest.fixture(autouse=True)
def _reset() -> None:
    torch._dynamo.reset()


ONE_DIM = [fft.fft, fft.ifft, fft.rfft, fft.irfft, fft.hfft, fft.ihfft]


@pytest.mark.parametrize("op", ONE_DIM, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n, dim, norm", [(None, -1, None), (10, 1, "ortho"), (4, 0, "forward"),
                                          (9, -1, "backward"), (1, 2, None)])
def test_one_dim_transforms_match_torch(op: Any, n: Any, dim: int, norm: Any) -> None:
    # n longer than the axis zero-pads it, shorter cuts it; odd and even lengths
    check(lambda x: op(x, n=n, dim=dim, norm=norm), _x(5, 6, 7), tol=1e-4)


N_DIM = [fft.fft2, fft.ifft2, fft.rfft2, fft.irfft2, fft.hfft2, fft.ihfft2,
         fft.fftn, fft.ifftn, fft.rfftn, fft.irfftn, fft.hfftn, fft.ihfftn]


@pytest.mark.parametrize("op", N_DIM, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kwargs", [{}, {"s": (4, 9)}, {"dim": (0, 2), "norm": "ortho"},
                                    {"s": (3, -1), "dim": (2, 0), "norm": "forward"}],
                         ids=["default", "s", "dim", "s_dim"])
def test_n_dim_transforms_match_torch(op: Any, kwargs: dict) -> None:
    check(lambda x: op(x, **kwargs), _x(5, 6, 7), tol=1e-4)


def test_complex_inputs_outputs_and_arithmetic() -> None:
    z = torch.complex(_x(4, 6), _x(4, 6, seed=1))
    check(lambda z: fft.fft(z), z, tol=1e-4)
    check(lambda z: fft.irfft(z, n=10), z, tol=1e-4)
    check(lambda z: (z * 2 + 1).abs(), z)
    check(lambda z: z.conj() * z - z, z)
    check(lambda z: torch.view_as_real(z.mT * (0.5 - 2j)), z)
    check(lambda z: (z.real, z.imag, torch.angle(z), z.H), z)


def test_a_filter_in_the_frequency_domain() -> None:
    # the pattern users write: transform, multiply by a spectrum, transform back
    def filt(x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        spectrum = fft.rfft(x, n=64) * fft.rfft(h, n=64)
        return fft.irfft(spectrum, n=64)[..., :40].relu()

    check(filt, _x(3, 40), _x(25), tol=1e-4)


def test_complex_constructors() -> None:
    a, b = _x(5, 3), _x(3, seed=1)
    check(lambda a, b: torch.complex(a, b), a, b)
    check(lambda a, b: torch.polar(a.abs(), b), a, b)
    check(lambda a: torch.view_as_complex(a[:, :2].contiguous()), a)
    check(lambda a: (a.cfloat(), a.cdouble()), a)
    check(lambda a: a.chalf(), a)


@pytest.mark.parametrize("kwargs", [
    {"n_fft": 16, "hop_length": 4},
    {"n_fft": 10, "return_complex": False},
    {"n_fft": 16, "onesided": False, "normalized": True, "pad_mode": "constant"},
    {"n_fft": 16, "win_length": 12, "center": False},
    {"n_fft": 8, "pad_mode": "circular"},
    {"n_fft": 8, "pad_mode": "replicate", "hop_length": 3},
], ids=["hop", "real", "twosided_normalized", "win_length", "circular", "replicate"])
def test_stft_matches_torch(kwargs: dict) -> None:
    kwargs = {"return_complex": True, **kwargs}
    window = torch.hann_window(kwargs.get("win_length", kwargs["n_fft"]))
    check(lambda s, w: torch.stft(s, window=w, **kwargs), _x(2, 100), window, tol=1e-4)
    check(lambda s: torch.stft(s, window=torch.hamming_window(kwargs.get(
        "win_length", kwargs["n_fft"])), **kwargs), _x(100), tol=1e-4)


def test_symbolic_lengths() -> None:
    # dynamic=True: the lengths are symbols; the tables are computed in the graph
    def fn(x: torch.Tensor) -> Any:
        return (fft.rfft(x).angle(), fft.irfft(fft.fft(x)), torch.stft(
            x, 16, window=torch.hann_window(16), return_complex=True).abs())

    compiled = torch.compile(fn, backend="ember", dynamic=True, options={"strict": True})
    for shape in [(3, 40), (5, 57)]:
        x = _x(*shape)
        with torch.no_grad():
            for a, e in zip(compiled(x), fn(x), strict=True):
                torch.testing.assert_close(a, e, atol=1e-4, rtol=1e-4)


def test_converters_without_complex_inputs_are_skipped() -> None:
    # sin has no complex converter: it runs in eager PyTorch instead of taking the pair as
    # real numbers, and strict mode names it
    fn = lambda x: torch.sin(fft.fft(x)) * 2  # noqa: E731
    x = _x(4, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            got = torch.compile(fn, backend="ember")(x)
    torch.testing.assert_close(got, fn(x), atol=1e-4, rtol=1e-4)
    messages = [str(w.message) for w in caught if issubclass(w.category, EagerFallbackWarning)]
    assert any("sin" in m for m in messages), messages
    torch._dynamo.reset()
    with pytest.raises(Exception, match="sin"), torch.no_grad():
        torch.compile(fn, backend="ember", options={"strict": True})(x)


def test_a_user_converter_can_take_complex_tensors() -> None:
    from ember.torch.complex_values import ComplexValue
    from ember.torch.registry import HIGH, register_function, remove

    seen = []

    @register_function(torch.exp, priority=HIGH, complex_inputs=True)
    def complex_exp(x: Any) -> Any:
        if not isinstance(x, ComplexValue):
            raise spectral.unsupported("real exp")
        seen.append(x.dtype)
        r = ember.ops.exp(x.real)
        return ComplexValue(ember.ops.mul(r, ember.ops.cos(x.imag)),
                            ember.ops.mul(r, ember.ops.sin(x.imag)))

    try:
        check(lambda x: torch.exp(fft.fft(x)) + 1, _x(3, 8), tol=1e-4)
        assert seen == ["complex64"]
    finally:
        remove(torch.exp, complex_exp)


def test_long_axes_run_eagerly() -> None:
    n = spectral.MAX_DFT + 1
    x = _x(2, n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.no_grad():
            got = torch.compile(lambda x: fft.rfft(x), backend="ember")(x)
    torch.testing.assert_close(got, fft.rfft(x))
    assert any(f"length {n}" in str(w.message) for w in caught)


def test_a_saved_model_cannot_return_a_complex_tensor():
    # ember.compile makes a model to save; its outputs are real tensors only
    with pytest.raises(ember.EmberError, match="complex tensor"):
        ember.compile(lambda x: fft.rfft(x) * 2, (_x(3, 8),), options={"strict": True})
