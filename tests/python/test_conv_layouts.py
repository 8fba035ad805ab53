"""The layout pass (choose_layouts, src/graph/passes/choose_layouts.cpp) on blocked convolutions.

With EMBER_CONV_ALGORITHM=blocked every dense convolution on a constant weight runs as
conv2d_blocked on the channel-blocked layout; chains of them and the elementwise operators
between them (bias, batch norm, relu, residual add) and the pools (max pool, the mean over H
and W) stay blocked, and the graph converts only
where a chain meets an operator that needs plain tensors. Results are compared with eager
PyTorch.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import ember
from ember import ops


class _Block(nn.Module):
    """A ResNet basic block with a downsampling branch, after a stem with a max pool."""

    def __init__(self, c: int = 12, o: int = 20) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(c)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv1 = nn.Conv2d(c, o, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(o)
        self.conv2 = nn.Conv2d(o, o, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(o)
        self.down = nn.Sequential(nn.Conv2d(c, o, 1, stride=2, bias=False), nn.BatchNorm2d(o))
        self.fc = nn.Linear(o, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.bn0(self.stem(x))))
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        y = torch.relu(y + self.down(x))
        return self.fc(torch.flatten(torch.mean(y, dim=(2, 3), keepdim=True), 1))


def _randomized(model: nn.Module) -> nn.Module:
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model.eval()


def test_resnet_block_stays_blocked_between_its_ends(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", "blocked")
    torch.manual_seed(0)
    model = _randomized(_Block())
    x = torch.randn(2, 3, 17, 18)
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x)
        expected = model(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    layouts = [p.read_text() for p in tmp_path.rglob("*_choose_layouts.txt")]
    assert len(layouts) == 1, layouts
    text = layouts[0]
    assert text.count("Conv2dBlocked") == 4, text
    # The stem reads the 3-channel image as it is (plain) and writes blocked; back to plain
    # after the mean over H and W (a [N, C, 1, 1] result): the max pool and the mean read and
    # write blocked values, with no conversion around them.
    assert text.count("ToLayout") == 1, text
    assert re.search(r"\{nChw\d+c\} = Conv2dBlocked\(l_x_,", text), text
    assert re.search(r"\{nChw\d+c\} = MaxPool2d\(", text), text
    assert re.search(r"\{nChw\d+c\} = Mean\(", text), text


class _InvertedResidual(nn.Module):
    """Two MobileNetV2 inverted residual blocks: 1x1 expand -> depthwise 3x3 -> 1x1 project,
    batch norms and relu6, the second with its residual add; the first downsamples."""

    def __init__(self, c: int = 17, t: int = 6) -> None:
        super().__init__()

        def block(cin: int, cout: int, stride: int) -> nn.Sequential:
            h = cin * t
            return nn.Sequential(
                nn.Conv2d(cin, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
                nn.Conv2d(h, h, 3, stride=stride, padding=1, groups=h, bias=False),
                nn.BatchNorm2d(h), nn.ReLU6(),
                nn.Conv2d(h, cout, 1, bias=False), nn.BatchNorm2d(cout))

        self.b1 = block(c, 24, 2)
        self.b2 = block(24, 24, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.b1(x)
        return y + self.b2(y)


@pytest.mark.parametrize(("algos", "depthwise_blocked"),
                         [("blocked", True), ("blocked,depthwise", False)])
def test_mobilenet_v2_chain_stays_blocked_through_the_depthwise_convs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, algos: str,
        depthwise_blocked: bool) -> None:
    """EMBER_CONV_ALGORITHM=blocked runs the depthwise convolutions blocked too
    (conv2d_depthwise_blocked), so the whole chain converts once in and once out; naming
    `depthwise` after it keeps them plain, converted around each."""
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", algos)
    torch.manual_seed(1)
    model = _randomized(_InvertedResidual())
    x = torch.randn(2, 17, 15, 14)
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x)
        expected = model(x)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    layouts = [p.read_text() for p in tmp_path.rglob("*_choose_layouts.txt")]
    assert len(layouts) == 1, layouts
    text = layouts[0]
    assert text.count("Conv2dBlocked") == 4, text
    if depthwise_blocked:
        assert text.count("Conv2dDepthwiseBlocked") == 2, text
        assert text.count("ToLayout") == 2, text
    else:
        assert "Conv2dDepthwiseBlocked" not in text, text
        assert text.count("ToLayout") == 2 + 2 * 2, text  # out of and back into blocked twice


@pytest.mark.parametrize(("c", "o", "size", "k", "stride", "pad"),
                         [(3, 32, 30, 3, 2, 1), (3, 24, 29, 7, 2, 3), (1, 20, 12, 1, 1, 0),
                          (5, 17, 11, 3, 1, 0), (2, 40, 9, 3, 2, 2)])
def test_few_channel_input_of_the_graph_is_read_plain(c: int, o: int, size: int, k: int,
                                                      stride: int, pad: int) -> None:
    """A graph input with fewer channels than a block (a network's image) is read as it is by
    the blocked convolution (no ToLayout into the blocked layout, whose padded copy would be
    block / C times larger): the result matches float64, 1x1 (rows regrouped) and with column
    padding or none; a value of few channels made inside the graph stays blocked between
    blocked convolutions."""
    rng = np.random.default_rng(c * 100 + k)
    xs = rng.standard_normal((2, c, size, size)).astype(np.float32)
    w1 = rng.standard_normal((o, c, k, k)).astype(np.float32)
    w2 = rng.standard_normal((c, o, 3, 3)).astype(np.float32)
    w3 = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    x = ember.symbol(list(xs.shape), name="x")
    y = ops.relu(ops.conv2d(x, ember.asarray(w1), stride=stride, padding=pad))
    z = ops.conv2d(ops.conv2d(y, ember.asarray(w2), padding=1), ember.asarray(w3), padding=1)
    graph = ember.graph.optimize(ember.trace_from([y, z], x))
    text = str(graph)
    assert text.count("algo=blocked") == 3, text
    # (the first fused with its relu)
    assert re.search(r"\{nChw\d+c\} = Fused\(x, c_conv_blocked_filter, fused=\[Conv2dBlocked",
                     text), text
    # Only the two results go back to plain: z's input of c channels stays blocked.
    assert text.count("ToLayout") == 2, text
    got_y, got_z = (t.numpy() for t in graph.build()(ember.asarray(xs)))
    t64 = torch.from_numpy
    ref_y = torch.relu(torch.nn.functional.conv2d(t64(xs).double(), t64(w1).double(),
                                                  stride=stride, padding=pad))
    ref_z = torch.nn.functional.conv2d(
        torch.nn.functional.conv2d(ref_y, t64(w2).double(), padding=1), t64(w3).double(),
        padding=1)
    for got, ref in ((got_y, ref_y), (got_z, ref_z)):
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-4,
                                   atol=1e-4 * float(ref.abs().max()))


def test_conversions_back_and_forth_cancel() -> None:
    """conv -> relu -> conv: one conversion in, one out; the relu reads and writes blocked."""
    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((19, 6, 3, 3)) / 6).astype(np.float32)
    w2 = (rng.standard_normal((9, 19, 1, 1)) / 5).astype(np.float32)
    b1 = rng.standard_normal((19, 1, 1)).astype(np.float32)
    xs = ember.symbol([2, 6, 9, 10], name="x")
    y = ops.relu(ops.add(ops.conv2d(xs, ember.asarray(w1), padding=(1, 1), algo="blocked"),
                         ember.asarray(b1)))
    z = ops.conv2d(y, ember.asarray(w2), algo="blocked")
    traced = ember.trace_from([z, y], [xs])
    before = str(traced)
    assert before.count("ToLayout") == 4, before
    graph = ember.graph.optimize(traced)
    dumps = str(graph)
    # x in; z and y (a graph output too) out.
    assert dumps.count("ToLayout") == 3, dumps
    x = rng.standard_normal((2, 6, 9, 10)).astype(np.float32)
    got_z, got_y = (t.numpy() for t in graph(ember.asarray(x)))
    tx = torch.from_numpy(x).double()
    ref_y = torch.relu(torch.conv2d(tx, torch.from_numpy(w1).double(), padding=1)
                       + torch.from_numpy(b1).double())
    ref_z = torch.conv2d(ref_y, torch.from_numpy(w2).double())
    np.testing.assert_allclose(got_y, ref_y.numpy(), rtol=0, atol=1e-5 * float(ref_y.abs().max()))
    np.testing.assert_allclose(got_z, ref_z.numpy(), rtol=0, atol=1e-5 * float(ref_z.abs().max()))


def test_unknown_algorithm_in_the_environment_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", "direct")
    xs = ember.symbol([1, 4, 8, 8], name="x")
    y = ops.conv2d(xs, ember.asarray(np.ones((4, 4, 3, 3), np.float32)))
    with pytest.raises(ember.EmberError,
                       match=r"EMBER_CONV_ALGORITHM: unknown convolution algorithm 'direct'; "
                             r"known: blocked, gemm1x1, winograd"):
        ember.graph.optimize(ember.trace_from([y], [xs]))


def _loaded_matches_eager(path: Path, model: nn.Module, x: torch.Tensor) -> None:
    got = ember.load(path)(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(torch.as_tensor(np.asarray(got)), expected, rtol=1e-4, atol=1e-4)


def test_saved_mobilenet_v2_chain_loads_and_matches_eager(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose depthwise convolutions run blocked (no prepared weight: the kernel reads
    the depthwise weight as it is) saves and loads like any other."""
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", "blocked")
    torch.manual_seed(2)
    model = _randomized(_InvertedResidual(c=8, t=4))
    x = torch.randn(1, 8, 12, 11)
    compiled = ember.compile(model, [x], options={"dump_dir": str(tmp_path / "dump")})
    text = next((tmp_path / "dump").rglob("*_choose_layouts.txt")).read_text()
    assert text.count("Conv2dDepthwiseBlocked") == 2, text
    compiled.save(tmp_path / "m.ember")
    monkeypatch.delenv("EMBER_CONV_ALGORITHM")
    _loaded_matches_eager(tmp_path / "m.ember", model, x)


class _SharedIntoBlocked(nn.Module):
    """A value (the slice v2) that a blocked convolution reads and a reduction reads too: the
    group computing it must not also store it beside its blocked copy (one layout per group;
    found by the fuzzer, seed 12)."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w = nn.Parameter(torch.randn(2, 1, 2, 2, generator=g), requires_grad=False)
        self.b = nn.Parameter(torch.randn(2, generator=g), requires_grad=False)
        self.lw = nn.Parameter(torch.randn(16, 4, generator=g), requires_grad=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        v2 = torch.softmax(x.clamp(-0.5, 0.75), -3)[:, 1:-1]
        return (torch.nn.functional.conv2d(v2, self.w, self.b, stride=2, padding=1),
                torch.nn.functional.linear(v2.sum(1), self.lw))


def test_value_read_by_a_blocked_chain_and_a_plain_reader(fresh_dynamo: None) -> None:
    model = _SharedIntoBlocked().eval()
    x = torch.randn(5, 3, 6, 4, generator=torch.Generator().manual_seed(1))
    compiled = torch.compile(model, backend="ember", dynamic=False, options={"strict": True})
    with torch.no_grad():
        got, expected = compiled(x), model(x)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)


class _Conv1dChain(nn.Module):
    """conv1d layers as an audio or sequence model stacks them: a first layer on the input's
    few channels, batch norms, relu and silu, a strided and a dilated layer and a residual
    add, between plain ends (the graph's input and a flatten)."""

    def __init__(self, c: int, o: int, k: int, stride: int, pad: int, dil: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(c, o, k, stride=stride, padding=pad, dilation=dil)
        self.bn1 = nn.BatchNorm1d(o)
        self.conv2 = nn.Conv1d(o, o, 3, padding=dil, dilation=dil, bias=False)
        self.bn2 = nn.BatchNorm1d(o)
        self.conv3 = nn.Conv1d(o, o + 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + y)
        return torch.flatten(nn.functional.silu(self.conv3(y)), 1)


@pytest.mark.parametrize(("c", "o", "length", "k", "stride", "pad", "dil"),
                         [(8, 64, 61, 7, 1, 3, 1), (3, 20, 33, 5, 3, 2, 1),
                          (20, 16, 31, 4, 2, 0, 2), (17, 33, 9, 1, 1, 0, 1)])
def test_conv1d_runs_blocked_on_ncw_values(tmp_path: Path, c: int, o: int, length: int, k: int,
                                           stride: int, pad: int, dil: int) -> None:
    """Dense conv1d on a constant weight runs as conv2d_blocked over a height of 1, its
    values [N, C, L] laid out nCw<b>c (the memory of nChw<b>c with H = 1), the weight
    prepared from [O, C, K]; batch norm, relu, silu and the residual add stay blocked in its
    epilogues. Against float64, with channels that fill no block exactly, a first layer on
    fewer channels than a block, stride, padding, dilation and 1x1."""
    torch.manual_seed(c + o + k)
    model = _randomized(_Conv1dChain(c, o, k, stride, pad, dil))
    x = torch.randn(2, c, length)
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x)
        expected = model.double()(x.double())
    torch.testing.assert_close(got.double(), expected, rtol=1e-4, atol=1e-4)
    layouts = [p.read_text() for p in tmp_path.rglob("*_choose_layouts.txt")]
    assert len(layouts) == 1, layouts
    text = layouts[0]
    assert text.count("Conv2dBlocked") == 3, text
    assert len(re.findall(r"\{nCw\d+c\} = Conv2dBlocked\(", text)) == 3, text
    # Into blocked nowhere but at the first layer (plain reads of few channels, else one
    # conversion), and back to plain once, before the flatten.
    block = int(re.findall(r"nCw(\d+)c", text)[0])  # the ISA's float lanes
    assert text.count("ToLayout") == (1 if c < block else 2), text


def test_saved_conv1d_model_prepares_its_blocked_weights_at_load(tmp_path: Path) -> None:
    """A saved model keeps conv1d's weights [O, C, K] and prepares them again at load, for
    the block of the loading machine's kernels."""
    torch.manual_seed(5)
    model = _randomized(_Conv1dChain(6, 24, 5, 2, 2, 1))
    x = torch.randn(1, 6, 40)
    compiled = ember.compile(model, [x], options={"dump_dir": str(tmp_path / "dump")})
    text = next((tmp_path / "dump").rglob("*_choose_layouts.txt")).read_text()
    assert text.count("Conv2dBlocked") == 3, text
    compiled.save(tmp_path / "m.ember")
    _loaded_matches_eager(tmp_path / "m.ember", model, x)


class _Decoder(nn.Module):
    """A UNet decoder step: a convolution, a bilinear 2x upsampling (with relu) joined to the
    skip connection, and a convolution over the join."""

    def __init__(self, c: int, skip: int, align: bool) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=align)
        self.out = nn.Conv2d(c + skip, 8, 3, padding=1)

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.up(self.conv(x)))
        return self.out(torch.cat([y, s], 1))


@pytest.mark.parametrize(("c", "skip", "size", "align"),
                         [(16, 16, 9, False), (20, 12, 8, True), (5, 3, 7, False)])
def test_bilinear_upsampling_keeps_the_blocked_layout(tmp_path: Path, c: int, skip: int,
                                                      size: int, align: bool) -> None:
    """upsample_bilinear2d keeps its input's layout: between blocked convolutions it reads and
    writes blocked values (resize_bilinear_blocked_layout, relu as its epilogue), with no
    conversion around it; the join and the next convolution stay blocked."""
    torch.manual_seed(c + skip)
    model = _Decoder(c, skip, align).eval()
    x, s = torch.randn(2, c, size, size), torch.randn(2, skip, 2 * size, 2 * size)
    compiled = torch.compile(model, backend="ember", dynamic=False,
                             options={"strict": True, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x, s)
        expected = model.double()(x.double(), s.double())
    torch.testing.assert_close(got.double(), expected, rtol=1e-4, atol=1e-4)
    text = next(tmp_path.rglob("*_choose_layouts.txt")).read_text()
    assert re.search(r"\{nChw\d+c\} = UpsampleBilinear2d\(", text), text
    # In: the skip connection, and the input unless it has fewer channels than a block (read
    # plain); out: the result.
    block = int(re.findall(r"nChw(\d+)c", text)[0])
    assert text.count("ToLayout") == (2 if c < block else 3), text


@pytest.mark.parametrize(("shape", "size", "align"), [
    ((2, 20, 17, 23), (9, 10), False), ((1, 16, 32, 32), (64, 64), False),
    ((2, 3, 17, 23), (40, 31), True), ((1, 5, 300, 3), (1000, 5), False)])
def test_bilinear_upsampling_of_blocked_values(shape: tuple, size: tuple, align: bool) -> None:
    """On blocks of the ISA's vector width (channels that fill no block, align_corners, a
    downscale, several blocks of rows per plane), with a relu and an add fused after it,
    against torch; other layouts are refused."""
    lanes = 16 if ember.isa() == "avx512" else 8
    layout = f"nChw{lanes}c"
    for other in ("nChw4c", "channels_last"):
        with pytest.raises(ember.EmberError, match=re.escape(
                "upsample_bilinear2d: takes a plain input, or a float32 one in the "
                f"channel-blocked layout of this ISA's vectors (nChw{lanes}c), got ")):
            ops.upsample_bilinear2d(ops.to_layout(ember.symbol(list(shape)), other),
                                    list(size), align)
    rng = np.random.default_rng(len(shape) + shape[1])
    xs = rng.standard_normal(shape).astype(np.float32)
    rs = rng.standard_normal((shape[0], shape[1], *size)).astype(np.float32)
    x = ember.symbol(list(shape), name="x")
    r = ember.symbol(list(rs.shape), name="r")
    up = ops.upsample_bilinear2d(ops.to_layout(x, layout), list(size), align)
    y = ops.to_layout(ops.relu(up) + ops.to_layout(r, layout), "plain")
    graph = ember.graph.optimize(ember.trace_from(y, [x, r]))
    got = graph.build()(ember.asarray(xs), ember.asarray(rs)).numpy()
    # torch's float32 source positions (not float64's: a 300 -> 1000 scale of 0.3 rounds).
    ref = torch.relu(nn.functional.interpolate(torch.from_numpy(xs), size=size,
                                               mode="bilinear", align_corners=align))
    np.testing.assert_allclose(got, (ref + torch.from_numpy(rs)).numpy(), rtol=1e-5, atol=1e-5)


class _Conv1dPools(nn.Module):
    """conv1d layers with the 1-d pools between them that ember converts as an unsqueeze, a
    2-d pool and a squeeze."""

    def __init__(self, c: int, o: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(c, o, 5, padding=2)
        self.bn = nn.BatchNorm1d(o)
        self.conv2 = nn.Conv1d(o, o, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.max_pool1d(torch.relu(self.bn(self.conv1(x))), 2)
        y = nn.functional.avg_pool1d(self.conv2(y), 3, stride=2, padding=1)
        return torch.flatten(y, 1)


@pytest.mark.parametrize(("c", "o", "length"), [(8, 32, 41), (20, 24, 64)])
def test_conv1d_values_stay_blocked_through_the_1d_pools(tmp_path: Path, c: int, o: int,
                                                         length: int) -> None:
    """The unsqueeze and squeeze around a 1-d pool only add and remove a size-1 dimension
    after the channel: they keep the blocked layout (nCw<b>c <-> nChw<b>c, the same memory),
    so the pools run blocked and the chain converts only at its ends; the squeeze runs no
    kernel (it reads its input's memory)."""
    torch.manual_seed(o)
    model = _randomized(_Conv1dPools(c, o))
    x = torch.randn(2, c, length)
    compiled = ember.compile(model, [x], options={"dump_dir": str(tmp_path)})
    got = compiled(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    with torch.no_grad():
        expected = model.double()(x.double())
    torch.testing.assert_close(torch.as_tensor(np.asarray(got)).double(), expected, rtol=1e-4,
                               atol=1e-4)
    text = next(tmp_path.rglob("*_choose_layouts.txt")).read_text()
    assert len(re.findall(r"\{nChw\d+c\} = (MaxPool2d|AvgPool2d)\(", text)) == 2, text
    assert len(re.findall(r"\{nChw\d+c\} = Unsqueeze\(", text)) == 2, text
    assert len(re.findall(r"\{nCw\d+c\} = Squeeze\(", text)) == 2, text
    block = int(re.findall(r"nCw(\d+)c", text)[0])
    assert text.count("ToLayout") == (1 if c < block else 2), text
    # 2 convolutions, 2 pools, the conversions; the squeeze before the second convolution is
    # a view (no kernel), the last one the prologue of the conversion back to plain.
    launches = compiled.graph.launch_ops
    assert len(launches) == 5 + (c >= block), launches
    assert [op for op in launches if "Squeeze" in op] == [launches[-1]], launches
    assert "ToLayout" in launches[-1], launches


def test_squeeze_and_unsqueeze_keep_a_layout_only_after_the_channel() -> None:
    x = ember.symbol([2, 20, 1, 9], name="x")
    blocked = ops.to_layout(x, "nChw16c")
    assert ops.squeeze(blocked, [2]).layout == "nCw16c"
    assert ops.unsqueeze(ops.squeeze(blocked, [2]), [3]).layout == "nChw16c"
    for make in (lambda: ops.squeeze(ops.to_layout(ember.symbol([1, 20, 1, 9]), "nChw16c")),
                 lambda: ops.unsqueeze(blocked, [1]),
                 lambda: ops.unsqueeze(ops.unsqueeze(blocked, [2]), [2])):
        with pytest.raises(ember.EmberError, match="it may only remove or add size-1 dimensions "
                                                   "after the channel, keeping 3 to 5"):
            make()
