"""N-d pooling, 3-d and transposed convolutions, every interpolate mode, grid sampling,
unfold, take, take_along_dim and padding edge cases through torch.compile(backend="ember")
in strict mode, against eager PyTorch."""

from __future__ import annotations

import itertools
import warnings

import pytest
import torch
import torch.nn.functional as F
from _helpers_torch import check as check_once

R = torch.randn


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def check(fn, *args, **kw):
    """check_once after a Dynamo reset: each call compiles static shapes afresh."""
    torch._dynamo.reset()
    check_once(fn, *args, **kw)


def nan_at(x, *index):
    x = x.clone()
    x[index] = float("nan")
    return x


# ---- pooling -------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_pool_with_indices(k):
    pool = [None, F.max_pool1d, F.max_pool2d, F.max_pool3d][k]
    x = nan_at(R(2, 3, *[7, 6, 5][:k]), 0, 1, *[2] * k)
    for kw in (dict(kernel_size=3, stride=2, ceil_mode=True),
               dict(kernel_size=2, stride=1, padding=1, dilation=2),
               dict(kernel_size=3, stride=(2, 1, 2)[:k], padding=1)):
        check(lambda x, kw=kw: pool(x, return_indices=True, **kw), x)
    check(lambda x: pool(x, 3, 2, 1, return_indices=True), x[0])  # unbatched
    check(lambda x: pool(x, 2), x)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_pooling_indices_of_several_nans_in_a_window(k):
    """torch's pooling kernels take an element when it is larger or NaN, so a window with
    several NaNs answers the last one's index (argmax would give the first): max pooling
    (in 2-d, rows wide enough for the vectors of ember's routine too) and adaptive max
    pooling."""
    pool = [None, F.max_pool1d, F.max_pool2d, F.max_pool3d][k]
    adaptive = [None, F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d][k]
    x = R(2, 3, *[6] * (k - 1), 72)
    x[0, 1, ..., 40:43] = float("nan")  # three NaNs in one window of 4 along the last axis
    x[1, 2, ..., 5] = x[1, 2, ..., 7] = float("nan")
    check(lambda x: pool(x, (1,) * (k - 1) + (4,), return_indices=True), x)
    check(lambda x: pool(x, 3, 2, 1, return_indices=True), x)
    check(lambda x: adaptive(x, [2] * (k - 1) + [18], True), x)


def test_max_pool3d_empty_batch():
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), R(0, 2, 4, 4, 4))


def test_avg_pool3d():
    for kw in (dict(kernel_size=2),
               dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
               dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=True),
               dict(kernel_size=2, stride=1, padding=1, ceil_mode=True, count_include_pad=False,
                    divisor_override=2)):
        check(lambda x, kw=kw: F.avg_pool3d(x, **kw), R(2, 3, 5, 4, 6), tol=1e-4)


def test_avg_pool2d_divisor_override():
    check(lambda x: F.avg_pool2d(x, 3, 1, 1, True, False, 2), R(1, 3, 9, 9), tol=1e-4)
    check(lambda x: F.avg_pool2d(x, (4, 4), (2, 3), 1, False, True, 3), R(3, 9, 9), tol=1e-4)


def test_adaptive_pools():
    check(lambda x: F.adaptive_avg_pool3d(x, (5, 7, 4)), R(2, 8, 8, 8, 8), tol=1e-4)
    check(lambda x: F.adaptive_avg_pool3d(x, (5, None, 3)), R(8, 6, 9, 7), tol=1e-4)
    check(lambda x: F.adaptive_avg_pool3d(x, 2), R(0, 2, 4, 4, 4))
    check(lambda x: F.adaptive_max_pool1d(x, 3, True), R(3, 4, 7))
    check(lambda x: F.adaptive_max_pool2d(x, (2, 3), True), nan_at(R(1, 4, 5, 7), 0, 0, 1, 1))
    check(lambda x: F.adaptive_max_pool3d(x, (None, 2, None), True), R(1, 4, 4, 3, 5))
    check(lambda x: F.adaptive_max_pool2d(x, (3, 2)), R(4, 5, 7))


def test_pooling_falls_back_on_integer_avg():
    x = torch.arange(2 * 27, dtype=torch.int64).reshape(2, 1, 3, 3, 3)
    compiled = torch.compile(lambda x: F.adaptive_max_pool3d(x, 2), backend="ember",
                             options={"strict": True})
    with pytest.raises(Exception, match="adaptive_max_pool3d of a int64 tensor"):
        compiled(x)


# ---- convolutions --------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 3])
def test_same_padding_of_an_even_kernel(k):
    """padding="same" where d * (K - 1) is odd: torch puts the extra zero after the input
    (along each such dimension). Static shapes, then other batches and spatial sizes."""
    conv = [None, F.conv1d, F.conv2d, F.conv3d][k]
    kernel, dilation = [4, 2, 3][:k], [1, 3, 2][:k]
    w, b = R(4, 3, *kernel), R(4)
    for batch, size in ((2, 7), (1, 7), (3, 9)):
        x = R(batch, 3, *[size - i for i in range(k)])
        check_once(lambda x, w, b: conv(x, w, b, padding="same", dilation=dilation), x, w, b,
                   tol=1e-4)
        check_once(lambda x: conv(x, w, None, padding="same"), x, tol=1e-4)
    torch._dynamo.reset()


def test_conv3d():
    check(lambda x, w, b: F.conv3d(x, w, b, padding="same"), R(1, 1, 4, 4, 4),
          R(1, 1, 1, 1, 1), R(1), tol=1e-4)
    check(lambda x, w, b: F.conv3d(x, w, b, padding="same"), R(2, 4, 4, 4), R(3, 2, 3, 3, 3),
          R(3), tol=1e-4)
    w = R(6, 2, 3, 2, 3)
    check(lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 2), padding=(1, 0, 1),
                                   dilation=(2, 1, 1), groups=2), R(2, 4, 7, 6, 8), w, R(6),
          tol=1e-4)
    check(lambda x: F.conv3d(x, w, None, groups=2), R(2, 4, 3, 6, 8), tol=1e-4)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_conv_transpose(k):
    f = [None, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][k]
    sp = (4,) * k
    check(lambda x, w, b: f(x, w, b, stride=2, padding=2, output_padding=1), R(1, 3, *sp),
          R(3, 3, *(3,) * k), R(3), tol=1e-4)
    check(lambda x, w, b: f(x, w, b, stride=2, padding=2, output_padding=1), R(3, *sp),
          R(3, 3, *(3,) * k), R(3), tol=1e-4)
    w = R(4, 3, *(2,) * k)
    # groups, dilation, output_padding past the full output: constant and graph weights
    check(lambda x: f(x, w, None, 3, 1, 2, 2, 2), R(2, 4, *sp), tol=1e-4)
    check(lambda x, w: f(x, w, None, 3, 1, 2, 2, 2), R(2, 4, *sp), w, tol=1e-4)
    # padding within the full convolution's (a 3x3 layer's input gradient; stride 2 with
    # output_padding), and beyond it (the full output sliced)
    w3 = R(4, 3, *(3,) * k)
    check(lambda x, w: f(x, w, None, padding=1), R(2, 4, *sp), w3, tol=1e-4)
    check(lambda x, w: f(x, w, None, stride=2, padding=1, output_padding=1), R(2, 4, *sp), w3,
          tol=1e-4)
    check(lambda x, w: f(x, w, None, stride=1, padding=2), R(2, 4, *sp), w, tol=1e-4)
    # stride == kernel: the matrix-product form
    check(lambda x, w, b: f(x, w, b, stride=2), R(2, 4, *sp), w, R(3), tol=1e-4)
    check(lambda x: f(x, w, None, stride=2, padding=1, output_padding=1), R(2, 4, *sp),
          tol=1e-4)


@pytest.mark.parametrize("kernel,stride,padding,output_padding,groups,size", [
    (1, 2, 0, 1, 1, 5),  # phases no tap reaches: zeros
    (3, 2, 1, 1, 2, 4),  # a ResNet downsampling layer's input gradient, grouped
    (4, 3, 2, 0, 1, 5),  # phases of 2 and 1 taps, the first inputs cropped
    (2, 3, 0, 2, 1, 1),  # one input
    (3, 3, 2, 1, 2, 4),
])
def test_strided_conv_transpose_by_phases(kernel, stride, padding, output_padding, groups, size):
    """A strided transposed convolution runs as one stride-1 convolution per output phase,
    interleaved: every phase, with its taps and crops, matches torch."""
    w = R(4, 6 // groups, kernel, kernel)
    check(lambda x, w: F.conv_transpose2d(x, w, None, stride, padding, output_padding, groups),
          R(2, 4, size, size + 1), w, tol=1e-4)
    check(lambda x: F.conv_transpose1d(x, w[..., 0], None, stride, padding, output_padding,
                                       groups), R(2, 4, size + 2), tol=1e-4)


# ---- resampling ----------------------------------------------------------------------------
MODES = [
    ("nearest", 1, {}), ("nearest", 3, {}), ("nearest-exact", 2, {}),
    ("linear", 1, {"align_corners": True}), ("linear", 1, {"align_corners": False}),
    ("area", 3, {}),
    ("bicubic", 2, {"align_corners": True}), ("bicubic", 2, {"align_corners": False}),
    ("trilinear", 3, {"align_corners": False}),
    ("bilinear", 2, {"antialias": True, "align_corners": False}),
    ("bicubic", 2, {"antialias": True, "align_corners": False}),
]


@pytest.mark.parametrize("mode,k,kw", MODES)
def test_interpolate(mode, k, kw):
    x = R(2, 3, *[4, 6, 5][:k])
    check(lambda x: F.interpolate(x, size=(7,) * k, mode=mode, **kw), x, tol=1e-4)
    # scale_factor: torch maps with 1 / scale_factor unless recompute_scale_factor
    for recompute in (None, True):
        check(lambda x, r=recompute: F.interpolate(x, scale_factor=1.7, mode=mode,
                                                   recompute_scale_factor=r, **kw), x, tol=1e-4)
    check(lambda x: F.interpolate(x, scale_factor=0.6, mode=mode, **kw), x, tol=1e-4)


def test_interpolate_integer_nearest():
    x = torch.randint(0, 255, (1, 2, 5), dtype=torch.uint8)
    check(lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest"), x)


def test_upsample_functions():
    check(lambda x: F.upsample_bilinear(x, scale_factor=1.7), R(2, 3, 4, 4), tol=1e-4)
    check(lambda x: F.upsample_nearest(x, size=5), R(2, 3, 4))
    check(lambda x: torch.ops.aten._upsample_bilinear2d_aa(x, (3, 3), False, None),
          R(6, 3, 10, 20), tol=1e-4)
    check(lambda x: torch.ops.aten._upsample_bilinear2d_aa(x, None, False, (1.7, 0.9)),
          R(6, 3, 10, 20), tol=1e-4)


# ---- im2col, gathers, padding ---------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, 1, 5, 5), (2, 3, 5, 5), (3, 5, 6)])
def test_unfold(shape):
    for args in [(2, 1, 0, 1), (2, 2, 0, (1, 2)), ((2, 3), (1, 2), (1, 0), (2, 1))]:
        check(lambda x, a=args: F.unfold(x, *a), R(*shape))


def test_take_and_take_along_dim():
    for x, i in [(R(3, 3), torch.tensor([0, -1, 4])), (R(()), torch.tensor(0)),
                 (R(1), torch.tensor([[0, -1]])), (R(3, 2), torch.zeros(0, dtype=torch.long))]:
        check(lambda x, i: torch.take(x, i), x, i)
        check(lambda x, i: x.take(i), x, i)
    for x, i, d in [(R(5, 5), torch.randint(0, 5, (5, 5)), 0),
                    (R(5, 5), torch.tensor([[1, 2]]), 1), (R(1, 5), torch.randint(0, 5, (5, 2)), 1),
                    (R(5, 5), torch.randint(0, 25, (5, 2)), None),
                    (R(5, 5), torch.randint(0, 5, (5, 5)), -1),
                    (R(5, 5), torch.randint(-5, 5, (5, 2)), 1),  # negative: from the end
                    (R(4, 6), torch.randint(-6, 6, (1, 3)), -1)]:
        check(lambda x, i, d=d: torch.take_along_dim(x, i, d), x, i)


def test_index_select_0d():
    check(lambda x, i: torch.index_select(x, 0, i), R(()), torch.tensor([0]))
    check(lambda x, i: torch.index_select(x, 0, i), R(()), torch.tensor(0))


def test_pad_replicate_negative_and_empty_circular():
    for shape, p in [((5, 3, 4, 4), (-4, 5, 0, 0)), ((5, 6, 4, 4), (5, -4, -4, 3)),
                     ((8, 1, 5, 5), (-2, -1, -1, -3))]:
        check(lambda x, p=p: F.pad(x, p, mode="replicate"), R(*shape))
    for shape, p in [((0, 3, 3), (1, 2)), ((0, 3, 3, 3), (0, 2, 0, 1))]:
        check(lambda x, p=p: F.pad(x, p, mode="circular"), R(*shape))


def test_bicubic_of_symbolic_sizes_in_training_matches_eager():
    """Window and weight tables need known spatial sizes, which ember fixes with guards under
    Dynamo's call (test_dynamic_converters.py). A training graph is compiled at its first
    call, after Dynamo made its guards: there the forward is torch's decomposition and what
    ember cannot convert of it runs eagerly; values and gradients match eager."""
    f = torch.compile(lambda x: F.interpolate(x, scale_factor=2.0, mode="bicubic").sum(),
                      backend="ember", dynamic=True)
    for shape in ((2, 3, 5, 4), (3, 2, 6, 7)):
        x = R(*shape).requires_grad_(True)
        want_x = x.detach().clone().requires_grad_(True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = f(x)
            got.backward()
        want = F.interpolate(want_x, scale_factor=2.0, mode="bicubic").sum()
        want.backward()
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(x.grad, want_x.grad)


# ---- grid sampling ---------------------------------------------------------------------------
_GRID_CASES = [  # the rest of the product runs with --full
    ("bilinear", "zeros", False), ("bilinear", "border", True), ("bilinear", "reflection", False),
    ("bilinear", "reflection", True), ("nearest", "zeros", True), ("nearest", "reflection", False),
    ("bicubic", "zeros", False), ("bicubic", "reflection", True),
]


@pytest.mark.parametrize("mode,padding_mode,align_corners", [
    case if case in _GRID_CASES else pytest.param(*case, marks=pytest.mark.full)
    for case in itertools.product(["bilinear", "nearest", "bicubic"],
                                  ["zeros", "border", "reflection"], [False, True])])
def test_grid_sample(mode, padding_mode, align_corners):
    """2-d and 3-d (bicubic: 2-d, as torch), grid points outside [-1, 1] (zeros, clipped or
    reflected) and one exactly half-way between two pixels (nearest rounds half to even)."""
    g2 = torch.rand(2, 4, 6, 2) * 2.6 - 1.3
    g2[0, 0, 0] = torch.tensor([-1 + 3 / 7, 0.0])  # x = 2.5 pixels (align_corners=False, W=7)
    cases = [(R(2, 3, 5, 7), g2), (R(2, 2, 4, 5, 3), torch.rand(2, 3, 2, 4, 3) * 2.6 - 1.3)]
    for x, g in cases[:1] if mode == "bicubic" else cases:
        check(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding_mode,
                                         align_corners=align_corners), x, g)


def test_grid_sampler_aten_and_symbolic_sizes():
    """aten's integer modes, and one graph for every input and grid size (dynamic=True)."""
    x, g = R(2, 3, 5, 7), torch.rand(2, 4, 6, 2) * 2.6 - 1.3
    check(lambda x, g: torch.grid_sampler_2d(x, g, 1, 2, False), x, g)
    torch._dynamo.reset()
    def fn(x, g):
        return F.grid_sample(x, g, padding_mode="reflection", align_corners=False)

    f = torch.compile(fn, backend="ember", dynamic=True, options={"strict": True})
    for n, h, w, q in ((2, 5, 7, 4), (3, 6, 9, 5), (4, 8, 3, 6)):
        x, g = R(n, 2, h, w), torch.rand(n, q, q + 1, 2) * 3 - 1.5
        torch.testing.assert_close(f(x, g), fn(x, g), rtol=1e-5, atol=1e-5)
