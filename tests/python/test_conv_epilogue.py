"""The blocked convolution's epilogue in registers (ember_rt::ChannelAffine).

A convolution run as conv2d_blocked whose fused epilogue is a per-channel scale and shift
(a folded batch norm, a bias, a constant multiply-add) followed by constant clamps (relu,
relu6, hardtanh, clamp), with or without a residual add, has it applied by the micro-kernel
to its accumulators (codegen::match_channel_affine; the kernel plan says "in the routine's
registers"); other epilogues (hardswish) are still called on each finished row segment. Both
are compared with eager PyTorch, NaN inputs included, on channel counts that fill the
vector block and that leave a partial one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

import ember.torch  # noqa: F401  (registers the backend)

pytestmark = pytest.mark.usefixtures("fresh_dynamo")  # each test compiles its own graph

_IN_REGISTERS = "in the routine's registers"


class _ConvAct(nn.Module):
    def __init__(self, c: int, o: int, act: Callable[[torch.Tensor], torch.Tensor],
                 bn: bool, bias: bool, stride: int, residual: bool) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, o, 3, stride=stride, padding=1, bias=bias)
        self.bn = nn.BatchNorm2d(o) if bn else nn.Identity()
        self.act = act
        self.residual = residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn(self.conv(x))
        if self.residual:
            y = y + x
        return self.act(y)


_ACTS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], bool]] = {
    # name: (activation, whether the epilogue is applied in registers)
    "none": (lambda y: y, True),
    "relu": (torch.relu, True),
    "relu6": (nn.ReLU6(), True),
    "hardtanh": (nn.Hardtanh(-0.5, 2.0), True),
    "clamp_min": (lambda y: torch.clamp(y, min=0.25), True),
    "clamp_max": (lambda y: torch.clamp(y, max=0.5), True),
    "clamp_crossed": (lambda y: torch.clamp(y, min=1.0, max=-1.0), True),
    # its own scale and shift: one map when the convolution has no bias nor batch norm,
    # two (not one fma) after them
    "affine_relu": (lambda y: torch.relu(y * 0.5 + 0.25), True),
    "hardswish": (nn.Hardswish(), False),
}


def _plans(root: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(root.rglob("*.plan.txt")))


@pytest.mark.parametrize("act", sorted(_ACTS))
@pytest.mark.parametrize(("o", "bn", "bias", "stride"),
                         [(16, True, False, 1), (20, True, False, 2), (20, False, True, 1),
                          (20, False, False, 1)])
def test_conv_epilogue_matches_eager(tmp_path: Path, act: str, o: int, bn: bool, bias: bool,
                                     stride: int) -> None:
    fn, in_registers = _ACTS[act]
    if act == "affine_relu":
        in_registers = not bn and not bias
    if act == "none":  # the batch norm or the bias alone; a bare convolution has no epilogue
        in_registers = bn or bias
    torch.manual_seed(o + stride)
    model = _ConvAct(5, o, fn, bn, bias, stride, residual=False).eval()
    with torch.no_grad():
        if bn:
            assert isinstance(model.bn, nn.BatchNorm2d)
            model.bn.running_mean.uniform_(-0.5, 0.5)
            model.bn.running_var.uniform_(0.5, 1.5)
            model.bn.weight.uniform_(-1.5, 1.5)
            model.bn.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 5, 9, 11)
    x[0, 1, 4, 5] = float("nan")  # NaN through the sums and the clamps, as eager
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x)
        expected = model(x)
    assert torch.isnan(expected).any()
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
    plans = _plans(tmp_path)
    # (the 5-channel image is read plain: conv2d_blocked_plain_layout)
    assert "conv2d_blocked_plain_layout" in plans, plans
    assert (_IN_REGISTERS in plans) == in_registers, plans


@pytest.mark.parametrize(("n", "c"), [(1, 16), (2, 16), (2, 20)])
@pytest.mark.parametrize("act", ["relu", "none", "hardswish"])
def test_a_residual_add_is_applied_in_registers(tmp_path: Path, n: int, c: int,
                                                act: str) -> None:
    """y = act(bn(conv(x)) + x), a ResNet block's end: the residual is read at each output
    element by the micro-kernel (hardswish still takes the row epilogue); a batch of one
    image, whose index the kernel folds to 0, too."""
    fn, in_registers = _ACTS[act]
    torch.manual_seed(c)
    model = _ConvAct(c, c, fn, bn=True, bias=False, stride=1, residual=True).eval()
    x = torch.randn(n, c, 8, 7)
    x[n - 1, 2, 3, 4] = float("nan")
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5, equal_nan=True)
    plans = _plans(tmp_path)
    assert "conv2d_blocked_layout" in plans, plans
    line = [ln for ln in plans.splitlines() if _IN_REGISTERS in ln]
    assert bool(line) == in_registers, plans
    if in_registers:
        assert "[output]" in line[0], line


def test_the_plan_names_the_map(tmp_path: Path) -> None:
    """Conv, batch norm, relu6 on 20 channels: the plan names the scale and shift buffers,
    the bounds in order, and the channel count past which the padding lanes stay zero."""
    torch.manual_seed(4)
    model = _ConvAct(5, 20, nn.ReLU6(), bn=True, bias=False, stride=1, residual=False).eval()
    x = torch.randn(1, 5, 6, 6)
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    line = next(ln for ln in _plans(tmp_path).splitlines() if _IN_REGISTERS in ln)
    assert "[channel]" in line and "then max 0x0p+0f, then min 0x1.8p+2f" in line, line
    assert line.endswith("0 from channel 20"), line
