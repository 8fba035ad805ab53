"""ember.ops.conv2d_weight_grad, the gradient of a convolution's weight that the training
backward uses (convolution_backward's second output): compared with torch's in float64 for
odd sizes, strides, padding, dilation, groups, non-square kernels and batch sizes whose rows
are not a multiple of the chunk. float32 reads the input in place (a phased copy about the
input's size) where few positions are junk, and otherwise sums in chunks of output rows (a
few MB of windows at a time); a pointwise convolution's is one GEMM per image on dy and x in
place: the CASES take all three forms. Either way its workspace stays far
below the whole im2col, and it gives the same bits at one and two threads."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import ember
from ember import ops

CHUNK_BYTES = 4 << 20  # the windows' chunk (kWindowChunkFloats float32, src/ops/conv_grad.cpp)


@pytest.fixture
def restore_threads():
    before = ember.get_num_threads()
    yield before
    ember.set_num_threads(before)


def reference(dy: np.ndarray, x: np.ndarray, kernel, **kw) -> np.ndarray:
    """torch's weight gradient in float64."""
    w = torch.zeros(dy.shape[1], x.shape[1] // kw.get("groups", 1), *kernel, dtype=torch.float64)
    kw = {"stride": 1, "padding": 0, "dilation": 1, "groups": 1} | kw
    pair = lambda v: [v, v] if isinstance(v, int) else list(v)  # noqa: E731
    _, dw, _ = torch.ops.aten.convolution_backward(
        torch.from_numpy(dy).double(), torch.from_numpy(x).double(), w, None,
        pair(kw["stride"]), pair(kw["padding"]), pair(kw["dilation"]), False, [0, 0],
        kw["groups"], [False, True, False])
    return dw.numpy()


def case(n, c, h, w, o, kernel, seed=0, dtype=np.float32, **kw):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    out = F.conv2d(torch.zeros(1, c, h, w), torch.zeros(o, c // kw.get("groups", 1), *kernel),
                   **kw).shape[2:]
    dy = rng.standard_normal((n, o, *out)).astype(dtype)
    return dy, x


def check(dy, x, kernel, rtol=1e-4, **kw):
    got = ops.conv2d_weight_grad(ember.asarray(dy), ember.asarray(x), kernel, **kw).numpy()
    ref = reference(dy, x, kernel, **kw)
    assert got.shape == ref.shape
    # float32 sums of N*OH*OW products: relative to the gradient's magnitude
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


CASES = [
    # (n, c, h, w, o, kernel, conv kwargs): several chunks with a last one cut short
    (3, 32, 37, 37, 16, (3, 3), {"padding": 1}),
    (5, 16, 75, 61, 6, (5, 3), {"stride": 2, "padding": (2, 1), "dilation": (2, 1),
                                "groups": 2}),
    (1, 3, 64, 64, 8, (7, 7), {"stride": 2, "padding": 3}),  # a stem
    (2, 12, 15, 9, 10, (1, 1), {"stride": 2}),  # a downsampling 1x1
    (3, 6, 11, 13, 9, (2, 4), {"stride": (1, 3), "padding": (0, 2), "dilation": (3, 1)}),
    (7, 8, 5, 6, 12, (3, 3), {"padding": 2, "groups": 4}),
    (1, 1, 1, 1, 1, (1, 1), {}),
    # pointwise (1x1, stride 1, no padding) with planes of 128 positions or more: one GEMM per
    # image on dy and x as they are; grouped and dilated (which changes nothing) too
    (3, 20, 12, 13, 24, (1, 1), {}),
    (2, 12, 16, 9, 8, (1, 1), {"groups": 2, "dilation": 2}),
    (2, 8, 5, 5, 6, (1, 1), {}),  # a plane of 25: by windows
    # depthwise (one reduction, no windows): MobileNet's 3x3, stride 1 and 2, a multiplier
    (4, 24, 29, 31, 24, (3, 3), {"padding": 1, "groups": 24}),
    (2, 16, 20, 21, 16, (3, 3), {"stride": 2, "padding": 1, "groups": 16}),
    (3, 5, 9, 12, 10, (5, 3), {"padding": (2, 1), "dilation": (1, 2), "groups": 5}),
]


@pytest.mark.parametrize("n,c,h,w,o,kernel,kw", CASES)
def test_float32_weight_grad_matches_float64(n, c, h, w, o, kernel, kw) -> None:
    dy, x = case(n, c, h, w, o, kernel, **kw)
    check(dy, x, kernel, **kw)


def test_float64_weight_grad() -> None:  # the generic reduction
    kw = {"stride": 2, "padding": 1, "dilation": (1, 2), "groups": 3}
    dy, x = case(3, 6, 9, 11, 9, (3, 2), dtype=np.float64, **kw)
    check(dy, x, (3, 2), rtol=1e-12, **kw)


# In place (56x56 outputs: 9% of the positions read are junk) and by windows (14x14: 39%).
@pytest.mark.parametrize("c,hw,o,in_place", [(16, 56, 16, True), (256, 14, 256, False)])
def test_workspace_is_far_below_the_whole_im2col(c, hw, o, in_place) -> None:
    n, k = 8, (3, 3)
    dy, x = case(n, c, hw, hw, o, k, padding=1)
    sdy, sx = ember.symbol(list(dy.shape)), ember.symbol(list(x.shape))
    graph = ember.trace_from(ops.conv2d_weight_grad(sdy, sx, k, padding=1), [sdy, sx])
    compiled = graph.build()
    got = compiled.run([ember.asarray(dy), ember.asarray(x)])[0].numpy()
    ref = reference(dy, x, k, padding=1)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    im2col = n * c * k[0] * k[1] * hw * hw * 4  # 14.5 MB
    workspace = compiled.memory_stats["workspace_bytes"]
    assert 0 < workspace < im2col / 2
    if in_place:  # copies of x and dy with their padding, and dw transposed
        assert workspace <= 1.3 * (x.nbytes + dy.nbytes) + ref.nbytes
    else:  # the chunk's windows and its slice of dy
        assert workspace <= CHUNK_BYTES * 1.2


@pytest.mark.parametrize(("h", "w", "routine"), [
    (12, 11, "conv2d_weight_grad_pointwise's"), (7, 7, "conv2d_weight_grad's"),
    ("h", "w", "conv2d_weight_grad_pointwise's")])  # sizes known at run time only
def test_pointwise_weight_grads_read_dy_and_x_in_place(tmp_path, h, w, routine) -> None:
    """A 1x1 convolution's weight gradient is one GEMM per image (no scratch) where the plane
    has 128 positions or more, or is known only at run time; a 7x7 plane goes by windows."""
    sdy, sx = ember.symbol([3, 24, h, w]), ember.symbol([3, 16, h, w])
    graph = ember.trace_from(ops.conv2d_weight_grad(sdy, sx, (1, 1)), [sdy, sx])
    compiled = graph.build(dump_dir=str(tmp_path))
    for hw in ([(12, 11), (9, 20)] if h == "h" else [(h, w)]):
        dy, x = case(3, 16, *hw, 24, (1, 1), seed=hw[1])
        got = compiled.run([ember.asarray(dy), ember.asarray(x)])[0].numpy()
        ref = reference(dy, x, (1, 1))
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    plans = "".join(f.read_text() for f in (tmp_path / "kernels").glob("*.plan.txt"))
    assert routine in plans, plans
    if "pointwise" in routine:
        assert compiled.memory_stats["workspace_bytes"] == 0


def test_one_and_two_threads_give_identical_bits(restore_threads: int) -> None:
    dy, x = case(4, 24, 41, 39, 20, (3, 3), stride=1, padding=1)
    sdy, sx = ember.symbol(list(dy.shape)), ember.symbol(list(x.shape))
    compiled = ember.trace_from(ops.conv2d_weight_grad(sdy, sx, (3, 3), padding=1),
                                [sdy, sx]).build()
    inputs = [ember.asarray(dy), ember.asarray(x)]
    results = []
    for threads in (1, 2):
        ember.set_num_threads(threads)
        results.append(compiled.run(inputs)[0].numpy().copy())
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("args,message", [
    (((0, 3), {}), "kernel must be the weight's (KH, KW)"),
    (((3, 3), {"groups": 5}), "not divisible by groups"),
    (((5, 5), {}), "is not the convolution's output"),
])
def test_bad_arguments_are_errors(args, message) -> None:
    dy, x = case(2, 10, 8, 8, 4, (3, 3))
    kernel, kw = args
    with pytest.raises(ember.EmberError, match=re.escape(message)):
        ops.conv2d_weight_grad(ember.asarray(dy), ember.asarray(x), list(kernel), **kw)


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(16, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 8, (3, 5), stride=2, padding=(1, 2), dilation=(1, 2),
                               groups=2)

    def forward(self, x):
        return self.conv2(torch.relu(self.conv1(x))).square().mean()


@pytest.mark.usefixtures("fresh_dynamo")
def test_training_backward_uses_it_and_matches_eager() -> None:
    """The compiled backward's weight gradients match eager's; its workspace stays below the
    first layer's whole im2col (8 x 144 x 56 x 56 float32: 14.5 MB)."""
    from ember.torch.phases.wrap import WORKSPACES

    torch.manual_seed(0)
    model, x = ConvNet(), torch.randn(8, 16, 56, 56)
    reference_model = ConvNet()
    reference_model.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="ember", options={"progress": False})
    WORKSPACES.clear()
    compiled(x).backward()
    reference_model(x).backward()
    for p, r in zip(model.parameters(), reference_model.parameters(), strict=True):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5)
    im2col = 8 * 16 * 9 * 56 * 56 * 4
    assert 0 < WORKSPACES.stats["idle_bytes"] < im2col / 2
