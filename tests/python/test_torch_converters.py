"""ember's converters, family by family, compiled in strict mode (so every operator is
converted by ember) and compared with eager PyTorch. Each test compiles one graph holding
many operators, to keep the number of C++ builds small."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _helpers_torch import check
from torch import nn

import ember
import ember.torch


def needs(*names):
    missing = [n for n in names if not hasattr(ember.ops, n)]
    return pytest.mark.skipif(bool(missing), reason=f"ember.ops lacks {', '.join(missing)}")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")

def test_activations():
    x = torch.randn(4, 8) * 4
    check(lambda x: (F.relu(x), torch.relu(x), x.relu(), F.relu6(x), F.hardtanh(x),
                     F.hardswish(x), F.hardsigmoid(x), F.silu(x), F.gelu(x),
                     F.gelu(x, approximate="tanh"), torch.sigmoid(x), x.tanh(), F.leaky_relu(x),
                     torch.clamp(x, -1, 2), x.clamp(min=0.5)), x)


def test_modules_as_activations():
    x = torch.randn(3, 5) * 4
    mods = nn.ModuleList([nn.ReLU(), nn.ReLU6(), nn.SiLU(), nn.Hardswish(), nn.Hardsigmoid(),
                          nn.GELU(), nn.GELU(approximate="tanh"), nn.Tanh(), nn.Sigmoid(),
                          nn.Softmax(dim=-1), nn.Identity(), nn.Dropout(0.3)]).eval()
    check(lambda x: tuple(m(x) for m in mods), x)


def test_arithmetic_comparisons_and_selection():
    a, b = torch.randn(4, 8), torch.rand(4, 8) + 0.5
    i = torch.arange(32).view(4, 8)

    def fn(a, b, i):
        c = a.clone()
        c += b
        return (a + b, a - 2, 3 * a, a / b, a ** 2, torch.pow(b, 0.5), torch.maximum(a, b),
                a > b, a <= 0.1, torch.where(a > 0, a, b), a.masked_fill(a > 0.5, float("-inf")),
                i * 0.5, i // 3 + i, (-i) // 5, i % 7, -a, abs(a), c, torch.exp(a),
                torch.rsqrt(b), i / 3)

    check(fn, a, b, i)


def test_reductions_and_softmax():
    x = torch.randn(4, 6, 8)
    check(lambda x: (x.sum(-1), x.mean((0, 1)), x.amax(1, keepdim=True), x.max(-1)[0],
                     x.max(-1)[1], x.argmax(-1), torch.min(x, 1).values, x.softmax(-1),
                     F.softmax(x, dim=1), F.log_softmax(x, 1), x.var(-1, unbiased=False),
                     x.std(-1), torch.sum(x > 0, dim=2)), x, tol=1e-4)


def test_var_std_positional_unbiased():
    """torch.var(x, False) is the var(input, unbiased) overload: False is unbiased, not dim 0
    (on a 1-d tensor taking it for dim=0 divides by N - 1 instead of N)."""
    x = torch.randn(7)
    m = torch.randn(3, 5)
    check(lambda x, m: (torch.var(x, False), torch.std(x, False), x.var(False), x.std(False),
                        torch.var(x, True), x.std(True), m.var(False), torch.std(m, False),
                        m.var(0, False), m.std(1, False, True), x.var(correction=0),
                        torch.std(m, dim=0, correction=0), m.var(1, correction=2)), x, m, tol=1e-5)
    # Not strict: the 1-d forms alone, which converted to a wrong value rather than failing.
    torch._dynamo.reset()
    check(lambda x: (torch.var(x, False), torch.std(x, False), x.var(False)), x, strict=False)


def test_matrix_products():
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    c, w = torch.randn(2, 3, 5), torch.randn(5, 4)
    check(lambda a, b, c, w: (a @ b, torch.bmm(a, b), torch.matmul(a, b),
                              torch.baddbmm(c, a, b, beta=0.5, alpha=2.0),
                              torch.addmm(c[0], a[0], b[0]), F.linear(a, w),
                              F.linear(a, w, c[0, 0]), a[0].mm(b[0])), a, b, c, w, tol=1e-4)


def test_shapes_and_indexing():
    x = torch.randn(6, 4)
    check(lambda x: (x.view(2, 3, 4).transpose(1, 2).contiguous().reshape(6, 4), x.permute(1, 0),
                     x.t(), x.flatten(), torch.flatten(x.view(2, 3, 4), 1),
                     x.unsqueeze(1).expand(6, 3, 4), x[:, None].expand(-1, 2, -1),
                     x.split(2, dim=-1)[1], torch.split(x, [1, 3], 1)[1],
                     torch.chunk(x, 3, 0)[2], x.chunk(2, dim=1)[0], torch.cat([x, x], 1),
                     torch.stack([x, x]), x[1:, None, :3], x[..., -1], x[2], x[::2, 1:],
                     x.unsqueeze(0).squeeze(0), x.view(-1, 2).squeeze(-1), x.unbind(0)[3],
                     x.narrow(1, 1, 2), x.select(0, -1)), x)


def test_creation_tril_triu_and_dtypes():
    x = torch.randn(6, 6)
    ids = torch.tensor([1, 0, 3])
    check(lambda x, ids: (torch.arange(6) + 1, torch.arange(1, 7, 2, dtype=torch.float32),
                          torch.full((2, 3), 1.5), torch.zeros(2) + x[0, :2],
                          torch.ones(3, 6) * x[0], torch.ones_like(x) * x, torch.zeros_like(ids),
                          torch.full_like(x, 7.0), x.new_ones(3), x.new_zeros(2, 2),
                          torch.tril(x), torch.triu(x, 1), x.tril(-1),
                          x.float().half().float(), x.to(torch.float64), x.double(),
                          x.to(torch.bfloat16).float(), ids.long() + ids.int(), (x > 0).int(),
                          x.type_as(ids), ids.to(x.dtype) * x[0, :3]), x, ids, tol=1e-2)


def test_attention_and_masks():
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8)
    bool_mask = torch.rand(5, 5) > 0.3
    bool_mask[:, 0] = True
    float_mask = torch.randn(2, 1, 5, 5)

    def fn(q, k, v, bool_mask, float_mask):
        causal = torch.tril(torch.ones(5, 5, dtype=torch.bool))
        scores = (q @ k.transpose(-2, -1)).masked_fill(~causal, float("-inf")).softmax(-1)
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True),
                F.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask),
                F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask, scale=0.3),
                scores @ v)

    check(fn, q, k, v, bool_mask, float_mask, tol=1e-4)


def test_normalization_and_dropout():
    x, w, b = torch.randn(4, 8), torch.randn(8), torch.randn(8)
    ln = nn.LayerNorm(8).eval()
    bn = nn.BatchNorm1d(8).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    check(lambda x, w, b: (F.layer_norm(x, (8,), w, b), ln(x), bn(x), F.dropout(x, 0.1, False),
                           F.batch_norm(x, b, w.abs() + 1, w, b, False, 0.1, 1e-5),
                           F.group_norm(x.view(4, 8, 1), 2)), x, w, b, tol=1e-4)


def test_pooling_and_nearest_upsampling():
    x = torch.randn(2, 3, 8, 8)
    check(lambda x: (F.max_pool2d(x, 2), F.avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 1),
                     F.adaptive_avg_pool2d(x, 2), F.interpolate(x, scale_factor=2),
                     F.max_pool1d(x[0], 2), F.adaptive_avg_pool1d(x[0], 1)), x, tol=1e-5)


@needs("max_pool2d", "avg_pool2d")
def test_pooling_with_padding_and_ceil_mode():
    x = torch.randn(1, 2, 9, 9)
    pool = nn.MaxPool2d(3, stride=2, padding=1)
    check(lambda x: (F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1),
                     F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), pool(x)), x, tol=1e-5)


@needs("max_pool2d", "avg_pool2d")
def test_pooling_ceil_mode():
    x = torch.randn(1, 2, 9, 9)
    check(lambda x: (F.max_pool2d(x, 2, ceil_mode=True), F.avg_pool2d(x, 2, ceil_mode=True)), x)


@needs("conv2d")
def test_convolutions():
    x = torch.randn(2, 4, 9, 9)
    convs = nn.ModuleList([
        nn.Conv2d(4, 6, 3), nn.Conv2d(4, 6, 3, stride=2, padding=1),
        nn.Conv2d(4, 8, 3, padding=2, dilation=2, groups=2),
        nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False),  # depthwise
        nn.Conv2d(4, 6, 1), nn.Conv2d(4, 6, 3, padding="same"),
    ]).eval()
    check(lambda x: tuple(c(x) for c in convs) + (F.conv2d(x, convs[0].weight, stride=(1, 2)),),
          x, tol=1e-4)


@needs("conv2d")
def test_depthwise_blocks():
    """MobileNetV2's inverted residual (expand, depthwise 3x3 with batch norm and relu6, linear
    projection, residual add) at stride 1 and 2, and 5x5 / 7x7 depthwise layers with bias on
    a 7x7 map: the depthwise convolutions run as the runtime routine with the batch norm and
    relu6 fused after them."""

    def block(c: int, stride: int, k: int = 3) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(c, 4 * c, 1, bias=False), nn.BatchNorm2d(4 * c), nn.ReLU6(),
            nn.Conv2d(4 * c, 4 * c, k, stride, k // 2, groups=4 * c, bias=False),
            nn.BatchNorm2d(4 * c), nn.ReLU6(),
            nn.Conv2d(4 * c, c, 1, bias=False), nn.BatchNorm2d(c),
        )

    torch.manual_seed(0)
    b1, b2, b5 = block(8, 1).eval(), block(8, 2).eval(), block(8, 1, k=5).eval()
    for m in (b1, b2, b5):
        for bn in m:
            if isinstance(bn, nn.BatchNorm2d):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
    dw7 = nn.Conv2d(24, 24, 7, padding=3, groups=24).eval()
    x, small = torch.randn(2, 8, 15, 15), torch.randn(1, 24, 7, 7)
    check(lambda x, s: (x + b1(x), b2(x), b5(x), F.relu6(dw7(s))), x, small, tol=1e-4)


@needs("conv1d")
def test_conv1d():
    x = torch.randn(2, 4, 17)
    convs = nn.ModuleList([nn.Conv1d(4, 6, 3), nn.Conv1d(4, 6, 5, stride=2, padding=2),
                           nn.Conv1d(4, 4, 3, groups=4, dilation=2)]).eval()
    check(lambda x: tuple(c(x) for c in convs), x, tol=1e-4)


@needs("upsample_bilinear2d")
def test_bilinear_upsampling():
    x = torch.randn(1, 2, 5, 6)
    up = nn.Upsample(scale_factor=2, mode="nearest")
    check(lambda x: (F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False),
                     F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True),
                     up(x)), x, tol=1e-5)


@needs("upsample_bilinear2d", "embedding")
@pytest.mark.parametrize("shape", [(1, 2, 17, 5), (2, 1, 4, 4), (1, 3, 7, 9)])
def test_interpolate_scale_factor_not_whole(shape):
    """A scale_factor whose product with the size is not whole: torch maps coordinates with
    1 / scale_factor, not with in / out."""
    x = torch.randn(*shape)
    up = nn.Upsample(scale_factor=1.7, mode="bilinear")
    near = nn.Upsample(scale_factor=0.6)

    def fn(x):
        out = []
        for s in (0.5, 0.6, 1.7, 2, 3, (0.6, 1.7)):
            out += [F.interpolate(x, scale_factor=s),
                    F.interpolate(x, scale_factor=s, mode="bilinear", align_corners=False),
                    F.interpolate(x, scale_factor=s, mode="bilinear", align_corners=True)]
        out += [F.interpolate(x, scale_factor=1.7, mode="bilinear",
                              recompute_scale_factor=True),
                F.interpolate(x, scale_factor=0.6, recompute_scale_factor=True),
                up(x), near(x), F.interpolate(x.double(), scale_factor=1.7, mode="bilinear")]
        return tuple(out)

    check(fn, x, tol=1e-5)


@needs("embedding")
def test_embedding():
    emb = nn.Embedding(10, 4, padding_idx=0).eval()
    ids = torch.tensor([[1, 0, 9], [3, 3, 2]])
    check(lambda ids: (emb(ids), F.embedding(ids, emb.weight) * 2), ids)


def test_low_precision_compute():
    lin = nn.Linear(16, 8).eval()
    x = torch.randn(4, 16)
    compiled = torch.compile(lambda x: F.gelu(lin(x)).softmax(-1), backend="ember",
                             options={"use_bf16": True})
    with torch.no_grad():
        out = compiled(x)
        expected = F.gelu(lin(x)).softmax(-1)
    assert out.dtype == torch.float32  # inputs and outputs keep their dtype
    torch.testing.assert_close(out, expected, atol=3e-2, rtol=3e-2)


@pytest.mark.parametrize("decompose", [False, True], ids=["export_ir", "core_aten"])
@needs("conv2d", "max_pool2d")
def test_aten_graphs_from_export(decompose):
    """Graphs of ATen overloads (torch.export, and its core-ATen decomposition) convert through
    the ATen converters."""
    from ember.torch.config import Settings
    from ember.torch.interpreter import FxConverter
    from ember.torch.phases.build import build_graph
    from ember.torch.phases.wrap import CompiledSegment

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 16)
            self.ln = nn.LayerNorm(16)
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)

        def forward(self, x, img):
            h = F.gelu(self.ln(self.lin(x)), approximate="tanh").softmax(-1)
            q = h.view(2, 2, 2, 4)
            att = F.scaled_dot_product_attention(q, q, q, is_causal=True)
            y = F.max_pool2d(F.relu(self.bn(self.conv(img))), 2)
            return h, att, y.flatten(1)

    net = Net().eval()
    args = (torch.randn(2, 8), torch.randn(1, 3, 8, 8))
    program = torch.export.export(net, args)
    if decompose:
        program = program.run_decompositions()
    gm = program.module()
    conversion = FxConverter(gm, list(args), Settings(), keep_going=True).run()
    assert not conversion.failures, {n.name: str(f) for n, f in conversion.failures.items()}
    assert any(isinstance(n.target, torch._ops.OpOverload) for n in gm.graph.nodes)
    compiled = build_graph(conversion, Settings(), "export", list(args))
    segment = CompiledSegment(gm, Settings(), "export", conversion, compiled)
    with torch.no_grad():
        for a, e in zip(segment(*args), net(*args), strict=True):
            torch.testing.assert_close(a, e, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", [(40,), (1, 40), (1, 1, 40), (2, 40), (3, 5, 40)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_reads_its_weight_in_place_or_transposed(shape, bias):
    """One row reads the weight as stored (matmul_nt), more rows a transposed copy: both
    must match eager."""
    torch._dynamo.reset()
    layer = nn.Linear(40, 24, bias=bias).eval()
    check(layer, torch.randn(*shape), tol=1e-5)
