"""The neural-network operators of ember.ops compared with torch.nn.functional.

Each test traces its cases into ONE graph (every case its own symbolic inputs and output) and
compiles it once, so that dozens of kernels cost one compiler run instead of one each; the
outputs are then compared case by case with torch. Zero-input factories (arange, full) run
imperatively. float32 results must match to ~1e-4 (convolutions relative to the output's
magnitude); integer and index-only operators must match exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

import ember
from ember import ops


@dataclass
class Case:
    name: str
    ember_fn: Callable[..., ember.Tensor]
    torch_fn: Callable[..., torch.Tensor]
    inputs: Sequence[torch.Tensor]
    rel: bool = False  # tolerance relative to the output's magnitude (convolutions)


def run_cases(cases: Sequence[Case], atol: float = 1e-4) -> None:
    """Builds one graph computing every case, runs it, and compares each output with torch."""
    symbols, outputs, values = [], [], []
    for case in cases:
        syms = [ember.symbol(list(t.shape), dtype=t.dtype) for t in case.inputs]
        outputs.append(case.ember_fn(*syms))
        symbols += syms
        values += [ember.from_torch(t.contiguous()) for t in case.inputs]
    compiled = ember.trace_from(outputs, symbols).build()
    results = compiled.run(values)
    assert len(results) == len(cases)
    for case, result in zip(cases, results, strict=True):
        got = result.torch()
        want = case.torch_fn(*case.inputs)
        assert got.shape == want.shape, (
            f"{case.name}: shape {tuple(got.shape)} != {tuple(want.shape)}"
        )
        assert got.dtype == want.dtype, f"{case.name}: dtype {got.dtype} != {want.dtype}"
        if not want.is_floating_point():
            assert torch.equal(got, want), f"{case.name}: values differ"
            continue
        scale = max(1.0, want.abs().max().item()) if case.rel and want.numel() else 1.0
        err = (got.double() - want.double()).abs().max().item() if want.numel() else 0.0
        assert err <= atol * scale, f"{case.name}: max error {err:.3g} > {atol * scale:.3g}"


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + 1000 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g, dtype=dtype)


# ---- convolution ----


def conv2d_case(x_shape, w_shape, stride=1, padding=0, dilation=1, groups=1, dtype=torch.float32):
    x, w = randn(*x_shape, dtype=dtype), randn(*w_shape, dtype=dtype, seed=1)
    name = f"conv2d x{list(x_shape)} w{list(w_shape)} s{stride} p{padding} d{dilation} g{groups}"
    name += f" {dtype}"
    return Case(
        name,
        lambda a, b: ops.conv2d(
            a, b, stride=stride, padding=padding, dilation=dilation, groups=groups
        ),
        lambda a, b: F.conv2d(
            a, b, stride=stride, padding=padding, dilation=dilation, groups=groups
        ),
        [x, w],
        rel=True,
    )


def test_conv2d() -> None:
    run_cases(
        [
            conv2d_case((2, 3, 9, 7), (4, 3, 3, 3)),  # no padding
            conv2d_case((1, 4, 10, 12), (6, 4, 3, 3), padding=1),  # wide im2col rows
            conv2d_case((2, 3, 11, 9), (5, 3, 3, 3), stride=2, padding=1),
            conv2d_case((1, 3, 16, 13), (8, 3, 7, 7), stride=2, padding=3),  # ResNet's stem
            conv2d_case((1, 4, 12, 10), (4, 4, 3, 3), padding=(1, 3), dilation=2),
            conv2d_case(
                (1, 2, 9, 11), (3, 2, 2, 3), stride=(2, 1), padding=(0, 1), dilation=(1, 2)
            ),
            conv2d_case((2, 8, 5, 6), (16, 8, 1, 1)),  # 1x1: one GEMM on x itself
            conv2d_case((1, 8, 7, 7), (4, 8, 1, 1), stride=2),  # strided 1x1
            conv2d_case((1, 4, 9, 8), (6, 2, 3, 3), padding=1, groups=2),
            conv2d_case((2, 6, 8, 7), (6, 1, 3, 3), stride=2, padding=1, groups=6),  # depthwise
            conv2d_case((1, 6, 9, 9), (12, 1, 5, 5), padding=2, groups=6),  # depthwise multiplier 2
            conv2d_case((1, 3, 5, 5), (2, 3, 5, 5)),  # the kernel covers the input: 1x1 output
            conv2d_case((1, 2, 1, 1), (3, 2, 3, 3), padding=1),  # one pixel, all padding around
            conv2d_case((0, 3, 6, 6), (4, 3, 3, 3), padding=1),  # empty batch
            conv2d_case((1, 3, 8, 6), (4, 3, 3, 3), padding=1, dtype=torch.float64),  # reduction
        ]
    )


def test_conv1d() -> None:
    def case(x_shape, w_shape, stride=1, padding=0, dilation=1, groups=1):
        x, w = randn(*x_shape), randn(*w_shape, seed=1)
        kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        return Case(
            f"conv1d {x_shape} {w_shape} {kw}",
            lambda a, b: ops.conv1d(a, b, **kw),
            lambda a, b: F.conv1d(a, b, **kw),
            [x, w],
            rel=True,
        )

    run_cases(
        [
            case((2, 4, 20), (6, 4, 3), padding=1),
            case((1, 3, 17), (5, 3, 4), stride=2, padding=2, dilation=2),
            case((1, 4, 9), (4, 1, 3), padding=1, groups=4),
            case((2, 8, 10), (3, 8, 1)),
            case((1, 2, 6), (3, 2, 6)),  # full-length kernel
        ]
    )


# ---- pooling ----


def pool_case(fn_name: str, shape, seed: int = 0, **kw) -> Case:
    x = randn(*shape, seed=seed)
    ember_fn, torch_fn = getattr(ops, fn_name), getattr(F, fn_name)
    return Case(
        f"{fn_name} {shape} {kw}", lambda a: ember_fn(a, **kw), lambda a: torch_fn(a, **kw), [x]
    )


def test_max_pool2d() -> None:
    cases = [
        pool_case("max_pool2d", (1, 3, 12, 12), kernel_size=3, stride=2, padding=1),  # ResNet
        pool_case("max_pool2d", (2, 2, 7, 9), kernel_size=2),
        pool_case("max_pool2d", (1, 2, 9, 8), kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)),
        pool_case("max_pool2d", (1, 2, 11, 10), kernel_size=3, stride=2, dilation=2, padding=1),
        pool_case("max_pool2d", (1, 2, 6, 7), kernel_size=3, stride=2, ceil_mode=True),
        pool_case("max_pool2d", (1, 2, 5, 5), kernel_size=2, stride=2, padding=1, ceil_mode=True),
        pool_case("max_pool2d", (3, 6, 6), kernel_size=2),  # no batch dimension
        pool_case("max_pool2d", (0, 2, 4, 4), kernel_size=2),  # empty batch
    ]
    xi = torch.randint(-100, 100, (1, 2, 6, 6), dtype=torch.int32)
    cases.append(
        Case(
            "max_pool2d int32",
            lambda a: ops.max_pool2d(a, 3, 2, 1),
            lambda a: F.max_pool2d(a, 3, 2, 1),
            [xi],
        )
    )
    run_cases(cases)


def test_avg_pool2d() -> None:
    cases = []
    for include_pad in (True, False):
        for ceil_mode in (False, True):
            kw = dict(ceil_mode=ceil_mode, count_include_pad=include_pad)
            cases += [
                pool_case("avg_pool2d", (1, 2, 7, 9), kernel_size=3, stride=2, padding=1, **kw),
                pool_case(
                    "avg_pool2d",
                    (2, 2, 6, 5),
                    kernel_size=(2, 3),
                    stride=(2, 2),
                    padding=(1, 1),
                    **kw,
                ),
                pool_case("avg_pool2d", (1, 2, 8, 8), kernel_size=2, **kw),
            ]
    cases.append(pool_case("avg_pool2d", (2, 5, 5), kernel_size=5))  # one window: the mean
    run_cases(cases)


def test_adaptive_avg_pool2d() -> None:
    run_cases(
        [
            pool_case("adaptive_avg_pool2d", (2, 4, 7, 7), output_size=1),  # global average
            pool_case("adaptive_avg_pool2d", (1, 3, 8, 12), output_size=(2, 3)),  # even windows
            pool_case("adaptive_avg_pool2d", (1, 3, 7, 10), output_size=(3, 4)),  # overlapping
            pool_case("adaptive_avg_pool2d", (1, 2, 5, 3), output_size=(7, 6)),  # larger output
            pool_case("adaptive_avg_pool2d", (2, 6, 6), output_size=(6, 6)),  # identity
        ]
    )


# ---- resizing ----


def test_upsample() -> None:
    cases = []
    for shape, size in [
        ((1, 2, 4, 5), (8, 10)),
        ((1, 3, 5, 7), (13, 4)),
        ((2, 1, 3, 3), (3, 3)),
        ((1, 2, 7, 6), (3, 11)),
        ((1, 1, 1, 4), (5, 9)),
    ]:
        x = randn(*shape)
        cases.append(
            Case(
                f"nearest {shape}->{size}",
                lambda a, s=size: ops.upsample_nearest2d(a, s),
                lambda a, s=size: F.interpolate(a, size=s, mode="nearest"),
                [x],
            )
        )
        for align in (False, True):
            cases.append(
                Case(
                    f"bilinear {shape}->{size} align_corners={align}",
                    lambda a, s=size, al=align: ops.upsample_bilinear2d(a, s, align_corners=al),
                    lambda a, s=size, al=align: F.interpolate(
                        a, size=s, mode="bilinear", align_corners=al
                    ),
                    [x],
                )
            )
    xi = torch.randint(0, 255, (1, 2, 3, 5), dtype=torch.uint8)
    cases.append(
        Case(
            "nearest uint8",
            lambda a: ops.upsample_nearest2d(a, (7, 8)),
            lambda a: F.interpolate(a, size=(7, 8), mode="nearest"),
            [xi],
        )
    )
    run_cases(cases, atol=1e-5)


# ---- embedding, tril / triu, clamp, activations ----


def test_embedding() -> None:
    w = randn(10, 6)
    cases = []
    for dtype in (torch.int32, torch.int64):
        for shape in [(5,), (2, 3), ()]:
            idx = torch.randint(0, 10, shape, dtype=dtype)
            cases.append(
                Case(
                    f"embedding {dtype} {shape}",
                    ops.embedding,
                    lambda w_, i: F.embedding(i, w_),
                    [w, idx],
                )
            )
    run_cases(cases, atol=0)


# The code generator runs a stage whose loads all read at the output's index as one flat loop,
# and then meets tril's condition on the (row, column) index variables unbound.
def test_tril_triu() -> None:
    cases = []
    for shape in [(4, 4), (3, 5), (2, 5, 3)]:
        for k in (-1, 0, 2, 7):
            x = randn(*shape)
            cases.append(
                Case(
                    f"tril {shape} k={k}",
                    lambda a, k=k: ops.tril(a, k),
                    lambda a, k=k: torch.tril(a, k),
                    [x],
                )
            )
            cases.append(
                Case(
                    f"triu {shape} k={k}",
                    lambda a, k=k: ops.triu(a, k),
                    lambda a, k=k: torch.triu(a, k),
                    [x],
                )
            )
    xb = torch.rand(3, 4) > 0.3
    cases.append(Case("tril bool", lambda a: ops.tril(a, 1), lambda a: torch.tril(a, 1), [xb]))
    xi = torch.randint(-9, 9, (4, 4), dtype=torch.int64)
    cases.append(Case("triu int64", lambda a: ops.triu(a, -1), lambda a: torch.triu(a, -1), [xi]))
    run_cases(cases, atol=0)


def test_clamp_and_activations() -> None:
    x = randn(3, 33) * 5
    cases = [
        Case(
            "clamp both",
            lambda a: ops.clamp(a, -1.5, 2.0),
            lambda a: torch.clamp(a, -1.5, 2.0),
            [x],
        ),
        Case("clamp min", lambda a: ops.clamp(a, min=0.5), lambda a: torch.clamp(a, min=0.5), [x]),
        Case(
            "clamp max", lambda a: ops.clamp(a, max=-0.5), lambda a: torch.clamp(a, max=-0.5), [x]
        ),
        Case(
            "clamp min>max",
            lambda a: ops.clamp(a, 2.0, 1.0),
            lambda a: torch.clamp(a, 2.0, 1.0),
            [x],
        ),
        Case("relu6", ops.relu6, F.relu6, [x]),
        Case("hardsigmoid", ops.hardsigmoid, F.hardsigmoid, [x]),
        Case("hardswish", ops.hardswish, F.hardswish, [x]),
    ]
    xi = torch.randint(-20, 20, (4, 5), dtype=torch.int32)
    cases.append(
        Case("clamp int32", lambda a: ops.clamp(a, -3, 7), lambda a: torch.clamp(a, -3, 7), [xi])
    )
    cases.append(Case("relu6 int64", ops.relu6, F.relu6, [xi.long()]))
    run_cases(cases, atol=1e-6)


# ---- normalization ----


def test_layer_norm() -> None:
    cases = []
    for shape, k in [((4, 32), 1), ((2, 3, 40), 1), ((2, 5, 6), 2), ((3, 7), 2)]:
        x = randn(*shape) * 3 + 2
        norm_shape = shape[-k:]
        w, b = randn(*norm_shape, seed=1), randn(*norm_shape, seed=2)
        cases += [
            Case(
                f"layer_norm {shape} k={k}",
                lambda a, k=k: ops.layer_norm(a, k),
                lambda a, s=norm_shape: F.layer_norm(a, s),
                [x],
            ),
            Case(
                f"layer_norm {shape} k={k} affine",
                lambda a, w_, b_, k=k: ops.layer_norm(a, k, w_, b_, eps=1e-6),
                lambda a, w_, b_, s=norm_shape: F.layer_norm(a, s, w_, b_, eps=1e-6),
                [x, w, b],
            ),
            Case(
                f"layer_norm {shape} k={k} weight only",
                lambda a, w_, k=k: ops.layer_norm(a, k, weight=w_),
                lambda a, w_, s=norm_shape: F.layer_norm(a, s, weight=w_),
                [x, w],
            ),
            Case(
                f"layer_norm {shape} k={k} bias only",
                lambda a, b_, k=k: ops.layer_norm(a, k, bias=b_),
                lambda a, b_, s=norm_shape: F.layer_norm(a, s, bias=b_),
                [x, b],
            ),
        ]
    run_cases(cases)


def test_batch_norm() -> None:
    cases = []
    for shape in [(2, 3, 5, 4), (4, 6), (2, 3, 7)]:
        c = shape[1]
        x = randn(*shape)
        mean, var = randn(c, seed=1), torch.rand(c) + 0.5
        w, b = randn(c, seed=2), randn(c, seed=3)
        cases += [
            Case(
                f"batch_norm {shape}",
                lambda a, m, v, w_, b_: ops.batch_norm(a, m, v, w_, b_),
                lambda a, m, v, w_, b_: F.batch_norm(a, m, v, w_, b_, training=False),
                [x, mean, var, w, b],
            ),
            Case(
                f"batch_norm {shape} no affine",
                lambda a, m, v: ops.batch_norm(a, m, v, eps=1e-3),
                lambda a, m, v: F.batch_norm(a, m, v, training=False, eps=1e-3),
                [x, mean, var],
            ),
        ]
    run_cases(cases)


@pytest.mark.parametrize("affine", ["weight and bias", "weight", "none"])
def test_batch_norm_constant_parameters_fold_to_scale_shift(affine: str) -> None:
    """Constant float32 parameters fold into one scale and one shift per channel at build
    time (the graph shows ScaleShift, no BatchNorm); the values still match torch in float64.
    With the statistics as inputs of the graph, or in float64, the node stays BatchNorm."""
    x = randn(2, 5, 6, 3)
    mean, var = randn(5, seed=1), torch.rand(5, generator=torch.Generator().manual_seed(4)) + 0.1
    w = randn(5, seed=2) if affine != "none" else None
    b = randn(5, seed=3) if affine == "weight and bias" else None
    eps = 1e-3

    def want(t: torch.Tensor) -> torch.Tensor:
        dbl = [None if p is None else p.double() for p in (mean, var, w, b)]
        return F.batch_norm(t.double(), *dbl[:2], *dbl[2:], training=False, eps=eps)

    params = [ember.from_torch(p) for p in (mean, var, w, b) if p is not None]
    xs = ember.symbol(list(x.shape))
    graph = ember.graph.optimize(ember.trace_from([ops.batch_norm(xs, *params, eps=eps)], [xs]))
    assert "ScaleShift" in str(graph) and "BatchNorm" not in str(graph), str(graph)
    got = graph.build().run([ember.from_torch(x)])[0].torch().double()
    assert (got - want(x)).abs().max().item() <= 1e-5 * want(x).abs().max().item()

    # Statistics given as graph inputs: nothing to fold, same values.
    syms = [ember.symbol([5]) for _ in params]
    kept = ember.graph.optimize(ember.trace_from([ops.batch_norm(xs, *syms, eps=eps)],
                                                 [xs, *syms]))
    assert "BatchNorm" in str(kept) and "ScaleShift" not in str(kept)
    got = kept.build().run([ember.from_torch(x), *params])[0].torch().double()
    assert (got - want(x)).abs().max().item() <= 1e-5 * want(x).abs().max().item()

    # float64 parameters are left as they are.
    x64 = x.double()
    p64 = [ember.from_torch(p.double()) for p in (mean, var, w, b) if p is not None]
    xs64 = ember.symbol(list(x.shape), dtype=torch.float64)
    g64 = ember.graph.optimize(ember.trace_from([ops.batch_norm(xs64, *p64, eps=eps)], [xs64]))
    assert "BatchNorm" in str(g64)
    got = g64.build().run([ember.from_torch(x64)])[0].torch()
    assert (got - want(x)).abs().max().item() <= 1e-12 * want(x).abs().max().item()


# ---- factories (imperative: they have no inputs to trace from) ----


@pytest.mark.parametrize(
    "start, stop, step, dtype",
    [
        (0, 10, 1, "int64"),
        (10, -3, -4, "int32"),
        (0.0, 1.0, 0.1, "float32"),
        (-2.5, 3, 0.75, "float64"),
        (4, 4, 1, "int64"),
    ],
)
def test_arange(start, stop, step, dtype) -> None:
    got = ops.arange(start, stop, step, dtype=dtype).torch()
    want = torch.arange(start, stop, step, dtype=getattr(torch, dtype))
    assert got.dtype == want.dtype and torch.equal(got, want)


@pytest.mark.parametrize(
    "shape, value, dtype",
    [([2, 3], 1.5, "float32"), ([4], -7, "int64"), ([2, 0, 3], 2.0, "float32"), ([3], 1, "bool")],
)
def test_full(shape, value, dtype) -> None:
    got = ops.full(shape, value, dtype=dtype).torch()
    want = torch.full(shape, value, dtype=getattr(torch, dtype))
    assert got.dtype == want.dtype and torch.equal(got, want)


# ---- imperative use and a fused graph ----


def test_imperative_calls_and_int_or_pair_arguments() -> None:
    x, w = randn(1, 2, 6, 5), randn(3, 2, 3, 3, seed=1)
    got = ops.conv2d(ember.from_torch(x), ember.from_torch(w), stride=(2, 1), padding=1).torch()
    torch.testing.assert_close(got, F.conv2d(x, w, stride=(2, 1), padding=1), rtol=1e-4, atol=1e-4)
    got = ops.max_pool2d(ember.from_torch(x), [2, 3], stride=None).torch()
    assert torch.equal(got, F.max_pool2d(x, [2, 3]))


def test_conv_bias_relu_graph() -> None:
    x, w, b = randn(2, 3, 16, 15), randn(8, 3, 3, 3, seed=1), randn(8, seed=2)
    sx, sw, sb = (ember.symbol(list(t.shape)) for t in (x, w, b))
    y = ops.relu(ops.conv2d(sx, sw, padding=1) + ops.reshape(sb, [1, 8, 1, 1]))
    graph = ember.graph.optimize(ember.trace_from(y, [sx, sw, sb]))
    assert "Conv2d" in str(graph)
    got = graph.build()(*(ember.from_torch(t) for t in (x, w, b))).torch()
    want = F.relu(F.conv2d(x, w, b, padding=1))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_symbolic_sizes_compile_once() -> None:
    sx, sw = ember.symbol(["n", 3, "h", "w"]), ember.symbol([4, 3, 3, 3])
    y = ops.max_pool2d(ops.relu(ops.conv2d(sx, sw, padding=1)), 2)
    z = ops.avg_pool2d(ops.conv2d(sx, sw, stride=2), 2, count_include_pad=False)
    assert ops.conv2d(sx, sw, padding=1).shape == ("n", 4, "h", "w")  # "same" keeps h, w
    compiled = ember.graph.optimize(ember.trace_from([y, z], [sx, sw])).build()
    w = randn(4, 3, 3, 3)
    for shape in [(2, 3, 8, 10), (1, 3, 13, 7)]:
        x = randn(*shape)
        got_y, got_z = compiled(ember.from_torch(x), ember.from_torch(w))
        want_y = F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2)
        want_z = F.avg_pool2d(F.conv2d(x, w, stride=2), 2, count_include_pad=False)
        torch.testing.assert_close(got_y.torch(), want_y, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(got_z.torch(), want_z, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_accumulates_in_float32(dtype) -> None:
    x, w = randn(1, 4, 9, 8).to(dtype), randn(6, 4, 3, 3, seed=1).to(dtype)
    cases = [
        Case("conv2d", lambda a, b: ops.conv2d(a, b, padding=1), None, [x, w]),
        Case("layer_norm", lambda a: ops.layer_norm(a, 1), None, [x]),
        Case("max_pool2d", lambda a: ops.max_pool2d(a, 3, 2, 1), None, [x]),
    ]
    syms = [[ember.symbol(list(t.shape), dtype=dtype) for t in c.inputs] for c in cases]
    graph = ember.trace_from(
        [c.ember_fn(*s) for c, s in zip(cases, syms, strict=True)], [s for ss in syms for s in ss]
    )
    conv, ln, mp = graph.build().run([ember.from_torch(t) for c in cases for t in c.inputs])
    tol = 1e-2 if dtype == torch.bfloat16 else 2e-3  # one rounding of the output
    want = F.conv2d(x.float(), w.float(), padding=1)
    assert conv.torch().dtype == dtype
    assert (conv.torch().float() - want).abs().max() <= tol * want.abs().max()
    want = F.layer_norm(x.float(), (8,))
    assert (ln.torch().float() - want).abs().max() <= tol * 4
    assert torch.equal(mp.torch(), F.max_pool2d(x, 3, 2, 1))


# ---- errors ----


def test_errors_name_the_op_and_shapes() -> None:
    x = ember.symbol([1, 3, 8, 8])
    with pytest.raises(
        ember.EmberError, match=r"conv2d: .* the input has 3 channels but the weight expects 2"
    ):
        ops.conv2d(x, ember.symbol([4, 2, 3, 3]))
    with pytest.raises(ember.EmberError, match=r"max_pool2d: padding \[2, 2\] is more than half"):
        ops.max_pool2d(x, 3, stride=1, padding=2)
    with pytest.raises(ember.EmberError, match="clamp: at least one of min and max must be given"):
        ops.clamp(x)
    with pytest.raises(ember.EmberError, match="embedding: the indices must be int32 or int64"):
        ops.embedding(ember.symbol([10, 4]), ember.symbol([3]))
    with pytest.raises(ember.EmberError, match="arange: the bounds"):
        ops.arange(0, 5, -1)
