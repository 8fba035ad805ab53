"""Symbolic sizes (dynamic=True) that converters need in another form, against eager
PyTorch: a convolution's symbolic weight sizes and scalar arguments a converter branches on
are fixed with Dynamo guards (one graph per value, never a wrong answer; a graph compiled at
its first call, as in training, runs such a call eagerly instead); sizes of different inputs
that must be equal but have symbols of their own are unified (proven by torch's guards, or
checked by ember on every call); broadcasts over symbolic sizes. Padding in the reflect,
replicate and circular modes, nearest and linear interpolation, and bilinear, over symbolic
sizes, compile in strict mode without compiling again for new sizes."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.utils import counters

import ember.torch  # noqa: F401 (registers the backend)

STRICT = {"strict": True}

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


@pytest.fixture(autouse=True)
def _fresh_counters() -> None:
    counters.clear()  # torch._dynamo.reset() keeps them


def compiles() -> int:
    """Graphs Dynamo has compiled in this test."""
    return int(counters["stats"]["unique_graphs"])


def check_calls(fn: Callable[..., Any], calls: list[tuple], *, tol: float = 1e-5,
                options: dict | None = None, dynamic: bool | None = True) -> None:
    compiled = torch.compile(fn, backend="ember", dynamic=dynamic,
                             options=STRICT if options is None else options)
    for args in calls:
        got, want = compiled(*args), fn(*args)
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


@pytest.fixture
def no_duck_sizing() -> Any:
    """Every input dimension a symbol of its own (Dynamo otherwise gives equal sizes one
    symbol), so that torch's shape checks must guard them equal."""
    from torch.fx.experimental import _config

    with _config.patch(use_duck_shape=False):
        yield


def test_a_size_torch_spells_apart_from_ember_is_one_size() -> None:
    """A valid convolution's output height over a symbolic input height: torch spells it
    "(s + -2)", ember's inference of the view after it "(s - 2)"; the two are one size (the
    graph compiled with an internal error before: fuzz seed 859)."""
    w, b = torch.randn(4, 4, 3, 3), torch.randn(4)

    def f(x):
        return F.conv2d(x, w, b).permute(0, 1, 2, 3) * 2

    check_calls(f, [(torch.randn(5, 4, 8, 4),), (torch.randn(7, 4, 9, 5),)], tol=1e-4)


def test_sizes_fixed_by_guards_recorded_before_a_replacement() -> None:
    """Sizes Dynamo's guards fix although its shape environment does not simplify them to a
    number (fuzz seeds 39547, 39606): a guard ``Eq(s20*s42, 144)`` recorded before s42 was
    replaced by 6 fixes the view's ``6*s20`` to 144, which a [1, 144] weight multiplies; a
    strided convolution's output width ``((s - 3)//2) + 1`` is fixed to 2 by the guards of a
    linear layer of 2 inputs after it (s itself stays free: 5 and 6 both give 2)."""

    class ViewTimesWeight(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p = torch.nn.Parameter(torch.randn(1, 144), requires_grad=False)
            self.conv = torch.nn.Conv2d(6, 2, 3, padding=1).requires_grad_(False)

        def forward(self, x, mask, scalar, z):  # noqa: ANN001, ANN202
            # x's 6 and z's channels are one symbol (Dynamo's duck sizing), replaced by 6
            # when the convolution's weight guards z's channels, after the view's guard
            return mask, scalar, x.view(-1, 144) * self.p, self.conv(z)

    model = ViewTimesWeight()
    compiled = torch.compile(model, backend="ember", dynamic=True, options=STRICT)
    for n in (5, 7):
        args = (torch.randn(n, 24, 6), torch.rand(n, 24, 6) > 0.5, torch.randn(()),
                torch.randn(n, 6, 2, 3))
        for got, want in zip(compiled(*args), model(*args), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    w, b, lw, lb = torch.randn(2, 2, 3, 3), torch.randn(2), torch.randn(1, 2), torch.randn(1)

    def conv_then_linear(x: torch.Tensor) -> torch.Tensor:
        return F.linear(F.conv2d(x, w, b, stride=2), lw, lb)

    check_calls(conv_then_linear, [(torch.randn(5, 2, 4, 6),), (torch.randn(7, 2, 4, 6),),
                                   (torch.randn(3, 2, 4, 5),)], tol=1e-4)


def test_matmul_pairs_sizes_spelled_apart() -> None:
    """A strided convolution's output height ``((s58 - 1)//2) + 1`` that torch guards equal
    to another input's ``s24`` (fuzz seed 39971): ember reads floor division in sizes as
    torch's guards spell it, and matmul spells the second operand's rows as the first's
    columns."""
    w, b = torch.randn(2, 2, 1, 1), torch.randn(2)

    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.stack([torch.matmul(y, F.conv2d(x, w, b, stride=2))] * 2, dim=3)

    check_calls(f, [(torch.randn(n, 2, 8, 4), torch.randn(n, 2, 4, 4)) for n in (5, 7)],
                tol=1e-4)


def test_conv_weight_sizes_are_fixed_by_guards() -> None:
    """A weight with symbolic sizes (a kernel size passed as data): the graph is built for
    the traced weight shape and Dynamo compiles again for another one, while new spatial
    sizes reuse it."""

    def conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, w, b, padding=1)

    def call(k: int, cin: int, h: int) -> tuple:
        return torch.randn(3, cin, h, h + 2), torch.randn(4, cin, k, k), torch.randn(4)

    check_calls(conv, [call(3, 2, 9), call(3, 2, 11)], tol=1e-4)
    assert compiles() == 1
    check_calls(conv, [call(5, 2, 9), call(3, 2, 13), call(5, 2, 12)], tol=1e-4)
    assert compiles() == 2  # the 5x5 weight: one more graph; 3x3 again reuses the first


def test_grouped_conv_input_channels_are_fixed_with_the_weight() -> None:
    """torch does not guard a grouped convolution's input channels against its symbolic
    weight: ember fixes them too (the channel count is a parameter of the kernel)."""
    check_calls(lambda x, w: F.conv2d(x, w, groups=2),
                [(torch.randn(2, 4, 7, 6), torch.randn(6, 2, 3, 3)),
                 (torch.randn(3, 4, 9, 5), torch.randn(6, 2, 3, 3))], tol=1e-4)


def test_conv1d_and_conv3d_weight_sizes_are_fixed_by_guards() -> None:
    check_calls(lambda x, w: F.conv1d(x, w, stride=2),
                [(torch.randn(2, 3, 17), torch.randn(5, 3, 4)),
                 (torch.randn(2, 3, 17), torch.randn(5, 3, 2))], tol=1e-4)
    torch._dynamo.reset()
    counters.clear()
    # automatic dynamic shapes: the second call makes the changed kernel depth symbolic
    x = torch.randn(2, 3, 4, 5, 6)
    check_calls(lambda x, w: F.conv3d(x, w, padding=1),
                [(x, torch.randn(4, 3, 3, 3, 3)), (x, torch.randn(4, 3, 2, 3, 3)),
                 (x, torch.randn(4, 3, 3, 3, 3))], dynamic=None, tol=1e-4)
    assert compiles() == 2  # static, then the depth 2 fixed by a guard; 3 reuses the first


def test_conv_with_symbolic_weight_compiled_at_first_call_runs_eagerly() -> None:
    """A training graph is compiled at its first call, after Dynamo made its guards: a
    guard added then would never be checked, so the convolution runs eagerly (with the
    warning) and every weight shape gets eager's gradients."""

    def conv(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, w, padding=1).square().sum()

    compiled = torch.compile(conv, backend="ember", dynamic=True)
    for k in (3, 5, 1):
        x = torch.randn(2, 3, 8, 8)
        w = torch.randn(4, 3, k, k, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loss = compiled(x, w)
            loss.backward()
        # The backward's other operators compile: the saved output's size (8 - k + 3, a
        # symbol of its own there, since no input carries k) is the size the graph computes.
        failed = [str(w.message) for w in caught if "could not compile" in str(w.message)]
        assert not failed, failed
        want_w = w.detach().clone().requires_grad_(True)
        want = conv(x, want_w)
        want.backward()
        torch.testing.assert_close(loss, want, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(w.grad, want_w.grad, rtol=1e-4, atol=1e-3)


def test_expression_symbols_tell_expressions_apart() -> None:
    """A size expression no input can spell gets a symbol named after it: equal expressions
    share the name, expressions with the same symbols and numbers (s53 - s27 + 3 and
    s53 + s27 + 3) do not."""
    import sympy

    from ember.torch.context import expression_symbol

    s27, s53 = sympy.symbols("s27 s53", integer=True, positive=True)
    minus, plus = expression_symbol(s53 - s27 + 3), expression_symbol(s53 + s27 + 3)
    assert minus == expression_symbol(3 + s53 - s27)
    assert minus != plus
    assert minus.startswith("e_s27_s53_3_") and minus.isidentifier()


def test_scalar_arguments_the_converter_branches_on_are_fixed_by_guards() -> None:
    """A norm's order or a dim that Dynamo made a SymInt: fixed to its value by a guard (one
    graph per value, as torch's decompositions branch on it); a correction that is only
    arithmetic is read at run time."""
    check_calls(lambda x, p: torch.linalg.vector_norm(x, ord=p, dim=1),
                [(torch.randn(3, 7), 3), (torch.randn(4, 9), 4), (torch.randn(5, 2), 3)])
    assert compiles() == 2
    torch._dynamo.reset()
    counters.clear()
    check_calls(lambda x, d: torch.cumsum(x, dim=d),
                [(torch.randn(3, 7, 2), 2), (torch.randn(4, 9, 2), 0), (torch.randn(4, 9, 3), 2)])
    assert compiles() == 2
    torch._dynamo.reset()
    check_calls(lambda x, c: torch.var(x, dim=1, correction=c),
                [(torch.randn(3, 7), 0.5), (torch.randn(4, 9), 2.5)])


@pytest.mark.usefixtures("no_duck_sizing")
def test_sizes_that_torch_checks_equal_unify() -> None:
    """Sizes of different inputs that must be equal but have symbols of their own (a
    source and its destination, a target and its input): ember spells them as one symbol,
    proven equal by torch's guards or checked by ember on every call."""
    def index_amax(x: torch.Tensor, idx: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        return x.index_reduce(1, idx, src, "amax", include_self=False)

    check_calls(index_amax, [(torch.randn(5, 6), torch.randint(0, 6, (9,)), torch.randn(5, 9)),
                             (torch.randn(4, 7), torch.randint(0, 7, (3,)), torch.randn(4, 3))])
    torch._dynamo.reset()
    check_calls(lambda x, t: F.cross_entropy(x, t),
                [(torch.randn(3, 5, 4, 6), torch.randint(0, 5, (3, 4, 6))),
                 (torch.randn(2, 7, 5, 3), torch.randint(0, 7, (2, 5, 3)))], tol=1e-5)
    torch._dynamo.reset()
    check_calls(lambda a, b: torch.linalg.cross(a, b),
                [(torch.randn(4, 3), torch.randn(1, 3)), (torch.randn(6, 3), torch.randn(6, 3))])


@pytest.mark.usefixtures("no_duck_sizing")
def test_values_and_weights_spelled_by_other_symbols() -> None:
    def put(x: torch.Tensor, i: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return x.index_put((i,), v, accumulate=True)

    check_calls(put, [(torch.randn(6, 5), torch.randint(0, 6, (4,)), torch.randn(4, 5)),
                      (torch.randn(8, 3), torch.randint(0, 8, (7,)), torch.randn(7, 3))])
    torch._dynamo.reset()
    # values whose symbolic size must equal a constant size of the destination: fixed by
    # a guard (the call is compiled, and matches)
    x = torch.randn(6, 5)
    torch._dynamo.mark_static(x, 1)
    check_calls(put, [(x, torch.randint(0, 6, (4,)), torch.randn(4, 5))])
    torch._dynamo.reset()
    check_calls(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                [(torch.randn(2, 3, 5, 4), torch.randn(3), torch.randn(3)),
                 (torch.randn(3, 4, 6, 5), torch.randn(4), torch.randn(4))], tol=1e-4)
    torch._dynamo.reset()
    check_calls(lambda x, s: torch.diagonal_scatter(x, s, 1),
                [(torch.randn(4, 5), torch.randn(4)), (torch.randn(6, 9), torch.randn(6))])


@pytest.mark.usefixtures("no_duck_sizing")
def test_a_call_that_breaks_unified_sizes_gets_torchs_error() -> None:
    """No guard says an index_add source matches its destination (torch checks it in the
    kernel): ember's check of the unified sizes fails, the graph runs eagerly, and the user
    gets torch's own error; later calls still match eager."""
    def add(x: torch.Tensor, i: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return x.index_add(1, i, s) * 2

    compiled = torch.compile(add, backend="ember", dynamic=True)
    good = (torch.randn(5, 6), torch.randint(0, 6, (9,)), torch.randn(5, 9))
    torch.testing.assert_close(compiled(*good), add(*good))
    bad = (torch.randn(5, 6), torch.randint(0, 6, (9,)), torch.randn(4, 9))
    with pytest.raises(RuntimeError) as eager_error:
        add(*bad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as compiled_error:
            compiled(*bad)
        assert str(eager_error.value).splitlines()[0] in str(compiled_error.value)
        other = (torch.randn(7, 6), torch.randint(0, 6, (3,)), torch.randn(7, 3))
        torch.testing.assert_close(compiled(*other), add(*other))


def test_cosine_similarity_broadcasts_symbolic_shapes() -> None:
    """The operands broadcast before the norms: a size-1 dimension d counts once per
    element of the other operand."""
    check_calls(lambda a, b: F.cosine_similarity(a, b, dim=1),
                [(torch.randn(4, 5, 6), torch.randn(4, 1, 6)),
                 (torch.randn(3, 7, 2), torch.randn(3, 1, 2)),
                 (torch.randn(3, 7, 2), torch.randn(1, 7, 2)),
                 (torch.randn(5, 3), torch.randn(5, 3))])


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_mode_padding_of_symbolic_sizes_by_symbolic_widths(mode: str) -> None:
    def pad(x: torch.Tensor, a: int, b: int) -> torch.Tensor:
        return F.pad(x, (a, b, b, 0), mode=mode) * 2

    check_calls(pad, [(torch.randn(2, 3, 5, 6), 2, 3), (torch.randn(3, 4, 7, 9), 4, 2),
                      (torch.randn(3, 4, 7, 9), 3, 5)])
    assert compiles() == 1  # new sizes and widths reuse the graph (Dynamo fixes 0 and 1)


def test_reflect_padding_of_three_symbolic_axes_compiles_quickly() -> None:
    """Each axis gathers with ember's gather (no permute and reshapes around the lookup,
    whose index arithmetic nested per axis: this call generated 70 MB of C++ and did not
    finish compiling)."""
    check_calls(lambda x: F.pad(x, (1, 1, 1, 1, 1, 1), mode="reflect"),
                [(torch.randn(3, 3, 5, 5),), (torch.randn(2, 4, 6, 7),)])


@pytest.mark.parametrize("mode,pad", [("reflect", (-1, 2)), ("replicate", (-1, 2)),
                                      ("circular", (2, -1)), ("circular", (-2, 1, 1, -1)),
                                      ("constant", (-1, 2, 1, -2))])
def test_mode_padding_that_crops_a_symbolic_size(mode: str, pad: tuple) -> None:
    """A negative width crops; the gathered positions are computed from the size (circular:
    torch crops first, then wraps around what is left)."""
    check_calls(lambda x: F.pad(x, pad, mode=mode) + 1,
                [(torch.arange(18.0).reshape(1, 3, 6),), (torch.randn(4, 5, 9),)])


def test_bilinear_with_a_symbolic_weight() -> None:
    check_calls(F.bilinear, [(torch.randn(4, 3), torch.randn(4, 5), torch.randn(6, 3, 5),
                              torch.randn(6)),
                             (torch.randn(7, 2), torch.randn(7, 9), torch.randn(6, 2, 9),
                              torch.randn(6))], tol=1e-4)


@pytest.mark.parametrize(("mode", "kwargs"), [
    ("nearest", {"scale_factor": 2.0}),
    ("nearest", {"scale_factor": 0.6}),  # in * 0.6 not whole: torch maps by 1 / 0.6
    ("nearest-exact", {"scale_factor": 1.7}),
    ("nearest", {"size": (5, 4)}),
    ("bilinear", {"scale_factor": 2.0}),
    ("bilinear", {"scale_factor": 0.7, "align_corners": True}),
    ("bilinear", {"size": (7, 9)}),
])
def test_interpolate_of_symbolic_spatial_sizes(mode: str, kwargs: dict) -> None:
    """The source positions (and linear weights) are computed in the graph as torch's CPU
    kernels compute them; an output length ember cannot spell (floor(0.6 * s)) is carried
    into the graph on each call."""
    check_calls(lambda x: F.interpolate(x, mode=mode, **kwargs),
                [(torch.randn(2, 3, 8, 6),), (torch.randn(3, 2, 13, 5),),
                 (torch.randn(4, 5, 4, 17),)], tol=1e-5)
    assert compiles() == 1  # (Dynamo compiles again for a size of 1, which it fixes)


def test_interpolate_1d_and_3d_of_symbolic_sizes() -> None:
    check_calls(lambda x: F.interpolate(x, scale_factor=2.5, mode="linear"),
                [(torch.randn(2, 3, 7),), (torch.randn(1, 2, 11),)])
    torch._dynamo.reset()
    check_calls(lambda x: F.interpolate(x, scale_factor=(2.0, 1.5, 0.5), mode="trilinear"),
                [(torch.randn(1, 2, 4, 6, 8),), (torch.randn(1, 1, 3, 5, 9),)])
    torch._dynamo.reset()
    check_calls(lambda x: F.interpolate(x, scale_factor=3, mode="nearest"),
                [(torch.randint(0, 9, (2, 2, 3, 4, 5), dtype=torch.uint8),),
                 (torch.randint(0, 9, (2, 3, 2, 6, 3), dtype=torch.uint8),)])
    torch._dynamo.reset()
    check_calls(lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear",
                                        recompute_scale_factor=True),
                [(torch.randn(2, 3, 8, 6),), (torch.randn(3, 2, 13, 5),)])


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear"])
def test_output_size_from_a_scale_factor_passed_at_run_time(mode: str) -> None:
    """With recompute_scale_factor=True the output length is floor(in * s) of a scale that
    Dynamo passes as a 0-d input (read with .item()): ember computes it on each call, so new
    scales run without compiling again."""
    x = torch.randn(2, 3, 7)
    check_calls(lambda x, s: F.interpolate(x, scale_factor=s, mode=mode,
                                           recompute_scale_factor=True),
                [(x, s) for s in (1.7, 2.3, 0.6, 3.01, 1.7)], dynamic=None)
    assert compiles() == 2  # the first call's constant scale, then any scale


@pytest.mark.parametrize("fn", [
    lambda x, s: F.interpolate(x, scale_factor=s, mode="bicubic"),
    lambda x, s: F.interpolate(x, scale_factor=s, mode="bicubic", align_corners=True,
                               antialias=True),
    lambda x, s: F.interpolate(x, scale_factor=s, mode="area"),
    lambda x, s: F.interpolate(x, scale_factor=s, mode="bilinear", antialias=True),
], ids=["bicubic", "bicubic-aa", "area", "bilinear-aa"])
def test_scale_factors_tables_are_built_from_are_fixed_by_guards(fn: Any) -> None:
    """Modes whose weights ember builds at compile time from the scale factor fix a scale
    passed at run time by a guard: one graph per scale, each right."""
    x = torch.randn(1, 2, 9, 7)
    check_calls(fn, [(x, s) for s in (1.5, 0.6, 2.25, 1.5)], tol=1e-4, dynamic=None)
    assert compiles() == 3  # 1.5 (a constant), then 0.6 and 2.25 each fixed by a guard


def test_matrix_powers_and_0d_gather_and_topk_of_symbolic_sizes() -> None:
    """matrix_power with n = 0 (an identity of the symbolic size) and n < 0 (the inverse's
    power); gather and topk of a 0-d tensor (torch takes it as one element)."""
    g = torch.Generator().manual_seed(3)

    def square(b: int, n: int) -> torch.Tensor:
        return torch.randn(b, n, n, generator=g) + 3 * torch.eye(n)  # well conditioned

    for power in (0, -1, -2):
        torch._dynamo.reset()
        check_calls(lambda x, p=power: torch.linalg.matrix_power(x, p),
                    [(square(2, 3),), (square(3, 5),)], tol=1e-4)
    torch._dynamo.reset()
    check_calls(lambda x, i: torch.gather(x, 0, i), [(torch.randn(()), torch.tensor([0]))],
                dynamic=False)
    torch._dynamo.reset()
    check_calls(lambda x, i: torch.gather(x, 0, i), [(torch.randn(()), torch.tensor(0))],
                dynamic=False)
    torch._dynamo.reset()
    check_calls(lambda x, k: torch.topk(x, k)[0], [(torch.randn(()), 1), (torch.randn(()), 0)],
                dynamic=None)


@pytest.mark.parametrize("dim,size,step", [(0, 2, 1), (1, 3, 2), (2, 4, 3)])
def test_unfold_of_a_symbolic_dim(dim: int, size: int, step: int) -> None:
    """(n - size) // step + 1 windows of a symbolic n, gathered at positions computed in
    the graph: new sizes run without compiling again."""
    check_calls(lambda x: x.unfold(dim, size, step) * 2,
                [(torch.randn(5, 6, 7),), (torch.randn(4, 8, 9),), (torch.randn(6, 5, 10),)])
    assert compiles() == 1


def test_operators_of_empty_inputs_are_computed_by_torch_at_compile_time() -> None:
    """An input with a dimension that is 0 in every call (the others symbolic): what an
    operator computes from it does not depend on its values, so torch computes it once
    (a matrix norm of a [0, n] matrix is 0 for every order torch accepts)."""
    for order in (2, 1, float("inf"), "nuc"):
        torch._dynamo.reset()
        check_calls(lambda x, o=order: torch.linalg.norm(x, o, keepdim=True) + x.sum(),
                    [(torch.randn(0, 5),), (torch.randn(0, 7),)])
    torch._dynamo.reset()
    check_calls(lambda x, p: torch.linalg.vector_norm(x, p),  # an order passed at run time
                [(torch.randn(0), p) for p in (2.0, 0.5, 3.5)], dynamic=None)


def test_linear_cross_entropy_and_adaptive_pooling_to_a_symbolic_size() -> None:
    """linear_cross_entropy's graph tests sizes that Dynamo decided (not (s == s)): their
    traced answers. adaptive_avg_pool2d to (None, 3) keeps the input's symbolic height,
    fixed by a guard."""
    g = torch.Generator().manual_seed(5)
    check_calls(lambda x, w, t: F.linear_cross_entropy(x, w, t, reduction="sum"),
                [(torch.randn(n, 3, generator=g), torch.randn(4, 3, generator=g),
                  torch.randint(0, 4, (n,), generator=g)) for n in (8, 5)], tol=1e-4)
    torch._dynamo.reset()
    check_calls(lambda x: F.adaptive_avg_pool2d(x, (None, 3)),
                [(torch.randn(2, 3, 5, 7),), (torch.randn(3, 2, 6, 7),)])


@pytest.mark.parametrize("dim,start,end,step", [(0, None, None, 1), (1, 1, None, 2),
                                                (1, -3, None, 1), (1, 2, -1, 1),
                                                (1, 0, 100, 3)])
def test_slice_scatter_of_a_symbolic_size(dim: int, start: Any, end: Any, step: int) -> None:
    """The positions start <= p < end (clamped as torch slices, negative bounds counted from
    the end) with (p - start) % step == 0 read src, computed in the graph."""
    def calls() -> list[tuple]:
        out = []
        for n in (8, 11, 13):
            x = torch.randn(n, n + 1)
            src = torch.randn_like(x[(slice(None),) * dim + (slice(start, end, step),)])
            out.append((x, src))
        return out

    check_calls(lambda x, y: torch.slice_scatter(x, y, dim, start, end, step), calls())


def test_slice_scatter_at_a_position_known_at_run_time() -> None:
    """A KV cache written at a position that grows: one graph for every position."""
    cache = torch.zeros(2, 10, 4)
    check_calls(lambda c, new, pos: torch.slice_scatter(c, new, 1, pos, pos + new.shape[1]),
                [(cache, torch.randn(2, 2, 4), pos) for pos in (0, 3, 7, 8)])
    assert compiles() <= 2  # (Dynamo fixes the first position, then makes it a symbol)


def test_scatters_and_tensordot_with_sizes_spelled_apart() -> None:
    """diagonal_scatter's source and slice_scatter's of symbolic sizes torch guards equal
    to the input's; tensordot contracting a size 1 against a larger one (torch broadcasts
    it: a sum over the other side)."""
    check_calls(lambda x, y: torch.diagonal_scatter(x, y, 1),
                [(torch.randn(5, 6), torch.randn(5)), (torch.randn(7, 9), torch.randn(7))])
    torch._dynamo.reset()
    check_calls(lambda a, b: torch.tensordot(a, b, ([0, 1], [2, 0])),
                [(torch.randn(1, 1, 3), torch.randn(2, 4, 2))], dynamic=False, tol=1e-4)
    torch._dynamo.reset()
    check_calls(lambda a, b: torch.tensordot(a, b, ([0, 1], [2, 0])),
                [(torch.randn(2, 3, 3), torch.randn(1, 4, 2))], dynamic=False, tol=1e-4)


def test_layer_norm_eps_passed_at_run_time_or_negative() -> None:
    """torch accepts any eps, negative too (ember's fused layer_norm only eps >= 0): the
    composed form, with eps a run-time value or a constant."""
    x = 3 * torch.randn(5, 8, generator=torch.Generator().manual_seed(4))  # variance > 0.5
    check_calls(lambda x, e: F.layer_norm(x, (8,), eps=e),
                [(x, e) for e in (1e-5, -0.5, 0.25)], dynamic=None, tol=1e-4)
    torch._dynamo.reset()
    check_calls(lambda x: F.layer_norm(x, (8,), eps=-0.5), [(x,)], dynamic=False, tol=1e-4)


def test_norm_order_passed_at_run_time() -> None:
    """A norm's order that changes between calls reaches the graph as a 0-d input (Dynamo
    does not specialize the float): every order torch has (inf, -inf, 0, negative,
    fractional) converts."""
    x = torch.randn(4, 6)
    x[1, 2] = 0.0  # a zero: order 0 counts it, negative orders give 0 for row 1
    orders = [3.0, 1.5, 0.0, float("inf"), float("-inf"), -1.0, 2.0, -2.5]
    check_calls(lambda x, p: torch.linalg.vector_norm(x, ord=p, dim=1),
                [(x, p) for p in orders], tol=1e-4, dynamic=None)
    # (Dynamo itself compiles again for some orders: the count is its business)
    for fn in (lambda x, p: torch.norm(x, p=p),
               lambda x, p: torch.linalg.norm(x, ord=p, dim=0, keepdim=True),
               lambda x, p: F.pairwise_distance(x, x.flip(0), p=p)):
        torch._dynamo.reset()
        check_calls(fn, [(x, p) for p in (3.0, 0.5, float("inf"), 1.0)], tol=1e-4,
                    dynamic=None)


def test_spacing_and_correction_passed_at_run_time() -> None:
    y = torch.randn(3, 7)
    check_calls(lambda y, d: torch.trapezoid(y, dx=d), [(y, d) for d in (0.5, 1.5, 3.0)],
                dynamic=None)
    torch._dynamo.reset()
    mask = torch.rand(3, 7) > 0.3
    mask[:, :3] = True
    check_calls(lambda y, c: torch.masked._ops.var(y, 1, correction=c, mask=mask),
                [(y, c) for c in (0.0, 1.0, 2.5)], tol=1e-4, dynamic=None)


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool3d(x, 2, ceil_mode=True),
    lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=False),
    lambda x: F.adaptive_max_pool2d(x[:, :, 0], (3, 2)),
    lambda x: F.interpolate(x[:, :, 0], scale_factor=1.5, mode="bicubic"),
    lambda x: F.interpolate(x, size=(2, 3, 4), mode="area"),
], ids=["max_pool3d", "avg_pool3d", "adaptive_max_pool2d", "bicubic", "area"])
def test_spatial_sizes_are_fixed_by_guards_and_the_batch_stays_symbolic(fn: Any) -> None:
    """Pooling windows and resampling tables are built from the spatial sizes at compile
    time: symbolic ones are fixed by guards (a graph per spatial size, as inductor does for
    adaptive pooling), while the batch and channels keep the one graph."""
    calls = [(torch.randn(2, 3, 5, 6, 7),), (torch.randn(4, 2, 5, 6, 7),),
             (torch.randn(3, 5, 5, 6, 7),)]
    check_calls(fn, calls, tol=1e-5)
    assert compiles() == 1
    check_calls(fn, [(torch.randn(2, 3, 6, 8, 9),)], tol=1e-5)
    assert compiles() == 2


def test_conv3d_and_transposed_convs_of_symbolic_sizes() -> None:
    """Symbolic spatial sizes are fixed by guards; a symbolic batch stays symbolic, also
    in the phases of a strided transposed convolution whose phase has no taps (its zeros
    came out with a batch of min(1, size) and failed to convert)."""
    # (sizes that differ from the weights': Dynamo gives equal sizes one symbol, so fixing
    # a kernel size of 2 would fix a batch of 2 with it)
    w3, wt = torch.randn(4, 3, 3, 2, 3), torch.randn(3, 4, 3, 3)
    check_calls(lambda x: F.conv3d(x, w3, padding=(1, 0, 1)),
                [(torch.randn(b, 3, 9, 6, 7),) for b in (5, 8, 10)], tol=1e-4)
    assert compiles() == 1
    torch._dynamo.reset()
    counters.clear()
    check_calls(lambda x: F.conv_transpose2d(x, wt, stride=(2, 4), padding=1),
                [(torch.randn(b, 3, 5, 6),) for b in (2, 7, 8)], tol=1e-4)
    assert compiles() == 1
    check_calls(lambda x: F.conv_transpose2d(x, wt, stride=(2, 4), padding=1),
                [(torch.randn(2, 3, 7, 4),)], tol=1e-4)


def test_batch_stays_symbolic_where_only_other_sizes_are_needed() -> None:
    """pixel_shuffle needs only its channels; 2-d interpolation by a scale factor torch maps
    with 1 / scale needs only the spatial sizes (static here): a new batch or image size
    reuses the graph."""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (F.pixel_shuffle(x, 2), F.interpolate(x[:, :, :6, :6], scale_factor=1.7),
                F.interpolate(x[:, :, :6, :6], scale_factor=0.7, mode="bilinear"))

    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    for n, h, w in ((2, 7, 9), (3, 8, 11), (5, 9, 7)):
        x = torch.randn(n, 8, h, w)
        for got, want in zip(compiled(x), fn(x), strict=True):
            torch.testing.assert_close(got, want)
    assert compiles() == 1


def test_static_shapes_are_fixed_by_guards() -> None:
    """Converters that build constants from a shape (block_diag's offsets, pdist's pairs)
    fix it by guards; addmm with beta=0 broadcasts over a symbolic batch instead."""
    check_calls(lambda x: torch.block_diag(x, x[:1].T), [(torch.randn(4, 3),),
                                                        (torch.randn(6, 3),)])
    torch._dynamo.reset()
    check_calls(F.pdist, [(torch.randn(5, 3),), (torch.randn(7, 3),)], tol=1e-4)
    torch._dynamo.reset()
    counters.clear()
    w, b = torch.randn(5, 3), torch.randn(3)
    check_calls(lambda x: torch.addmm(b, x, w, beta=0), [(torch.randn(n, 5),) for n in (2, 7)],
                tol=1e-4)
    assert compiles() == 1


@pytest.mark.parametrize("mode", ["constant", "replicate", "reflect", "circular"])
def test_pad_widths_known_at_run_time_and_negative(mode: str) -> None:
    """Widths Dynamo makes SymInts after they change: non-negative ones stay run-time sizes;
    a negative one (a crop) is fixed with its pair by guards, since ember binds symbols as
    sizes, which are never negative."""
    x = torch.randn(2, 3, 7)
    check_calls(lambda x, a, b: F.pad(x, (a, b), mode=mode),
                [(x, 1, 2), (x, 2, 3), (x, -1, 2), (x, 2, -2), (x, 3, 1)], dynamic=None)


def test_gather_with_a_smaller_index_and_diff_of_several_orders() -> None:
    """gather's index may be shorter than the input off the gathered axis (torch checks it
    only in its kernel): sizes ember cannot prove equal are fixed by guards to compare them.
    diff with n > 1 may empty a symbolic axis: its size is fixed too."""
    def fn(x: torch.Tensor, i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.gather(x, 1, i), torch.diff(x, n=2, dim=1)

    calls = []
    for rows, cols, k in ((5, 7, 3), (6, 9, 4)):
        x = torch.randn(rows, cols)
        calls.append((x, torch.randint(0, cols, (rows - 2, k))))

    compiled = torch.compile(fn, backend="ember", dynamic=True, options=STRICT)
    for args in calls:
        for got, want in zip(compiled(*args), fn(*args), strict=True):
            torch.testing.assert_close(got, want)


def test_run_time_numbers_that_dynamo_guards_are_constants() -> None:
    """A matrix norm's order that Dynamo passes as a 0-d input (read with .item()) and
    guards (torch's meta function branches on it) is that number in the graph: one graph
    per order, each right, none eager."""
    x = torch.randn(4, 5)
    compiled = torch.compile(lambda x, p: torch.linalg.norm(x, ord=p), backend="ember",
                             options=STRICT)
    for p in (1.0, 2.0, -1.0, float("inf"), 2.0):
        torch.testing.assert_close(compiled(x, p), torch.linalg.norm(x, ord=p), rtol=1e-4,
                                   atol=1e-4)
    assert compiles() == 4  # 1.0 as a constant, then one graph per new order
