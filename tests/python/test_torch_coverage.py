"""Operators ember composes from its basic ones (converters/composites.py): each compiled in
strict mode (so ember must convert it) and compared with eager PyTorch, over a few shapes,
arguments and edge values (nan, +-inf, 0, large)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from _helpers_torch import check
from torch import nn

import ember
import ember.torch

INF, NAN = float("inf"), float("nan")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")

def edgy(*shape, scale=3.0, seed=0):
    """Random values with nan, +-inf, 0 and large values mixed in."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * scale
    flat = x.view(-1)
    specials = [NAN, INF, -INF, 0.0, -0.0, 1e30, -1e30, 1e-30, 88.0, -88.0, 1e-7, 25.0]
    for i, v in enumerate(specials[: max(flat.numel() // 3, 1)]):
        flat[(i * 7) % flat.numel()] = v
    return x


# ---- padding -------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,pads,value", [
    ((2, 3, 5), (1, 2), 0.0),
    ((2, 3, 5), (0, 0, 2, 1, 1, 1), -1.5),
    ((3, 4, 5, 6), (-1, 2, 0, -2), NAN),
    ((4, 5), (2, -3, -1, -1), INF),
    ((5,), (3, 0), None),
])
def test_pad_constant(shape, pads, value):
    x = edgy(*shape)
    if value is None:
        check(lambda x: F.pad(x, pads), x)
    else:
        check(lambda x: F.pad(x, pads, value=value), x)


def test_pad_constant_integer_and_bool():
    i = torch.arange(12).view(3, 4)
    check(lambda i: (F.pad(i, (1, 1), value=7), F.pad(i > 5, (0, 2, 1, 0))), i)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pads", [
    ((2, 3, 7), (2, 3)),
    ((3, 7), (0, 4)),
    ((1, 2, 5, 6), (1, 2, 3, 0)),
    ((2, 5, 6), (3, 1, 2, 2)),
    ((1, 2, 4, 5, 3), (1, 1, 2, 0, 3, 2)),
])
def test_pad_modes(mode, shape, pads):
    check(lambda x: F.pad(x, pads, mode=mode), edgy(*shape))


def test_pad_negative_circular_and_replicate():
    x = edgy(2, 3, 8)
    check(lambda x: (F.pad(x, (-2, 3), mode="circular"), F.pad(x, (2, -3), mode="circular"),
                     F.pad(x, (2, -3), mode="replicate"), F.pad(x, (-2, -3), mode="replicate"),
                     F.pad(x, (-2, 3), mode="reflect")), x)


def test_pad_modules():
    mods = nn.ModuleList([nn.ReflectionPad2d((1, 2, 0, 1)), nn.ConstantPad2d(1, 3.5),
                          nn.ZeroPad2d((0, 1, 2, 0)), nn.CircularPad2d(1)])
    pad1d = nn.ReplicationPad1d(2)
    check(lambda x: (*(m(x) for m in mods), pad1d(x[0])), edgy(2, 3, 4, 5))


# ---- flips, rolls, repeats, transposes ----------------------------------------------------
@pytest.mark.parametrize("shape,dims", [
    ((5,), (0,)), ((3, 4), (1,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, -2, -3)), ((1, 4), (0,)),
])
def test_flip(shape, dims):
    x = edgy(*shape)
    check(lambda x: (torch.flip(x, dims), x.flip(dims)), x)


def test_fliplr_flipud_and_integers():
    i = torch.arange(24).view(4, 6)
    check(lambda x, i: (torch.fliplr(x), torch.flipud(x), i.flip(0, 1), torch.flip(i > 9, (1,))),
          edgy(4, 6), i)


@pytest.mark.parametrize("shifts,dims", [
    (1, 0), (-2, 1), ((1, 3), (0, 2)), (7, None), (-13, None), (5, -1), (0, 1), (9, 1),
])
def test_roll(shifts, dims):
    x = edgy(3, 4, 5)
    if dims is None:
        check(lambda x: (torch.roll(x, shifts), x.roll(shifts)), x)
    else:
        check(lambda x: (torch.roll(x, shifts, dims), x.roll(shifts, dims)), x)


@pytest.mark.parametrize("shape,reps", [
    ((3,), (2,)), ((3,), (2, 2)), ((2, 3), (1, 1)), ((2, 3), (3, 1, 2)), ((1, 2, 1), (2, 2, 3)),
])
def test_repeat_and_tile(shape, reps):
    x = edgy(*shape)
    check(lambda x: (x.repeat(*reps), x.repeat(reps), torch.tile(x, reps), x.tile(reps[-1:])), x)


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (2, 1, 3, 5)])
def test_transpose_attributes(shape):
    x = edgy(*shape)
    check(lambda x: (x.mT, x.mH, x.mT @ x, x.T if x.dim() == 2 else x.mT), x)


def test_T_and_H_of_matrices_and_vectors():
    check(lambda m, v: (m.T, m.H, v.T, m.T.sum(0)), edgy(3, 5), edgy(4))


# ---- gathers -------------------------------------------------------------------------------
@pytest.mark.parametrize("dim,index", [
    (0, [2, 0, 0, 1]), (1, [3]), (-1, [4, 0, 2, 1, 3, 3]), (1, 2),
])
def test_index_select_constant_index(dim, index):
    x = edgy(3, 4, 5)
    idx = torch.tensor(index)
    check(lambda x: (torch.index_select(x, dim, idx), x.index_select(dim, idx)), x)


def test_index_select_runtime_index():
    x, idx = edgy(5, 6), torch.tensor([4, 0, 3, 3, 1])
    check(lambda x, i: (x.index_select(0, i), torch.index_select(x, 1, i)), x, idx)


def test_index_select_out_of_range_raises():
    x, idx = edgy(5, 6), torch.tensor([4, 5])
    compiled = torch.compile(lambda x, i: x.index_select(0, i) * 2, backend="ember",
                             options={"strict": True})
    with pytest.raises(ember.EmberError), torch.no_grad():
        compiled(x, idx)


@pytest.mark.parametrize("dim,index_shape", [(0, (2, 4)), (1, (3, 6)), (-1, (3, 4)), (1, (2, 1))])
def test_gather(dim, index_shape):
    x = edgy(3, 4)
    size = x.shape[dim]
    idx = torch.randint(0, size, index_shape, generator=torch.Generator().manual_seed(1))
    check(lambda x, i: (torch.gather(x, dim, i), x.gather(dim, i)), x, idx)


def test_gather_3d_constant_index():
    x = edgy(2, 3, 4)
    idx = torch.tensor([[[0, 2], [1, 1]], [[2, 0], [0, 0]]])
    check(lambda x: torch.gather(x, 1, idx), x)


@pytest.mark.parametrize("bad", [-1, 4])
def test_gather_out_of_range_raises(bad):
    x, idx = edgy(3, 4), torch.tensor([[0, bad], [1, 2]])
    compiled = torch.compile(lambda x, i: torch.gather(x, 1, i) + 1, backend="ember",
                             options={"strict": True})
    with pytest.raises(ember.EmberError), torch.no_grad():
        compiled(x, idx)


# ---- activations ---------------------------------------------------------------------------
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 10.0), (0.5, 5.0), (1.0, 1.0)])
def test_softplus(beta, threshold):
    x = edgy(6, 9, scale=10.0)
    check(lambda x: (F.softplus(x, beta, threshold), nn.Softplus(beta, threshold)(x)), x)


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e-6])
def test_smooth_activations(scale):
    x = edgy(5, 12, scale=scale)

    def fn(x):
        return (F.elu(x), F.elu(x, 0.3), F.selu(x), F.celu(x), F.celu(x, 2.5), F.mish(x),
                F.logsigmoid(x), F.hardtanh(x), F.hardtanh(x, -2.0, 0.5), F.relu6(x),
                torch.selu(x), torch.celu(x, 0.7))

    check(fn, x)


def test_activation_modules():
    mods = nn.ModuleList([nn.ELU(0.5), nn.SELU(), nn.CELU(1.5), nn.Mish(), nn.LogSigmoid(),
                          nn.Softmin(dim=1), nn.Hardtanh(-0.5, 3.0), nn.ReLU6()])
    check(lambda x: tuple(m(x) for m in mods), edgy(4, 7))


def test_small_arguments_are_exact():
    """log1p and expm1 near 0, where log(1 + u) and exp(x) - 1 lose every digit."""
    x = torch.tensor([-30.0, -20.0, -17.0, -1e-3, -1e-6, -1e-9, 1e-9, 1e-6, 0.0, -0.0])
    check(lambda x: (F.softplus(x), F.elu(x), F.celu(x, 3.0), F.selu(x), F.logsigmoid(x),
                     F.logsigmoid(-x), F.mish(x)), x, tol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmin(dim):
    x = edgy(4, 6, scale=5.0)
    x[x.isnan()] = 1.0
    check(lambda x: (F.softmin(x, dim), F.softmin(x, dim, dtype=torch.float64)), x)


# ---- reductions ----------------------------------------------------------------------------
@pytest.mark.parametrize("dim,keepdim", [(1, False), (0, True), ((0, 2), False), (-1, True)])
def test_logsumexp(dim, keepdim):
    x = torch.randn(4, 5, 6) * 50
    x[0, 0, 0] = INF
    x[1, :, 1] = -INF
    x[2, 2, 2] = NAN
    x[3, :, 3] = INF
    check(lambda x: (torch.logsumexp(x, dim, keepdim), x.logsumexp(dim, keepdim=keepdim)), x,
          tol=1e-5)


def test_logsumexp_large_and_integer():
    x = torch.tensor([[1e30, 1e30], [-1e30, 0.0], [88.0, 89.0]])
    check(lambda x, i: (torch.logsumexp(x, 1), torch.logsumexp(i, 0)), x, torch.arange(6))


@pytest.mark.parametrize("kwargs", [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True},
                                    {"dim": 1, "unbiased": False}, {"dim": -1, "correction": 0},
                                    {"dim": 1, "correction": 2}])
def test_var_mean_std_mean(kwargs):
    x = torch.randn(3, 5, 4) * 10 + 100
    check(lambda x: (*torch.var_mean(x, **kwargs), *torch.std_mean(x, **kwargs)), x, tol=1e-4)


def test_var_mean_edges():
    """nan, 0 and large values; not inf, where torch's mean from var_mean is an artifact of
    its Welford updates (nan or inf by the order of the elements; ember gives torch.mean's)."""
    x = edgy(3, 6)
    x[x.isinf()] = 1e30
    check(lambda x, y: (*torch.var_mean(x, 1), *torch.std_mean(y, 0)), x, torch.randn(1, 3))


# ---- rounded division ----------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_rounding_float(mode):
    a = edgy(6, 7, scale=20.0)
    b = edgy(6, 7, seed=3)
    b[0, :3] = torch.tensor([0.0, -0.0, 0.1])
    a[0, 2] = 1.0  # 1 / 0.1: torch's floor division gives 9, floor(1 / 0.1) 10
    check(lambda a, b: (torch.div(a, b, rounding_mode=mode), a.div(2.5, rounding_mode=mode),
                        torch.div(a, -3, rounding_mode=mode)), a, b)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_rounding_integer(mode):
    a = torch.tensor([[-7, 7, -6, 6, 0, -1, 1, 100]]).repeat(2, 1)
    b = torch.tensor([[3, 3, -3, -3, 5, 2, -2, -7], [-3, -3, 3, 3, -5, -2, 2, 7]])
    check(lambda a, b: (torch.div(a, b, rounding_mode=mode), a.div(3, rounding_mode=mode),
                        torch.div(a, -4, rounding_mode=mode)), a, b)


# ---- normalization -------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 8), (2, 4, 5, 6), (1, 2, 3, 4, 2)])
def test_instance_norm(shape):
    x = torch.randn(*shape) * 5 + 2
    w, b = torch.randn(shape[1]), torch.randn(shape[1])
    check(lambda x: (F.instance_norm(x), F.instance_norm(x, weight=w, bias=b, eps=1e-3)), x,
          tol=1e-4)


def test_instance_norm_modules_and_running_stats():
    x = torch.randn(2, 4, 5, 6)
    m = nn.InstanceNorm2d(4, affine=True).eval()
    with torch.no_grad():
        m.weight.normal_()
        m.bias.normal_()
    rm, rv = torch.randn(4), torch.rand(4) + 0.5
    check(lambda x: (m(x), F.instance_norm(x, rm, rv, use_input_stats=False)), x, tol=1e-4)


@pytest.mark.parametrize("shape,normalized", [((2, 8), (8,)), ((2, 3, 4), (3, 4)), ((5,), (5,))])
def test_rms_norm(shape, normalized):
    x = edgy(*shape, scale=10.0)
    x[x.isnan() | x.isinf()] = 1.0
    x.view(-1)[-1] = 0.0
    w = torch.randn(normalized)
    check(lambda x: (F.rms_norm(x, normalized), F.rms_norm(x, normalized, w, eps=1e-3),
                     nn.RMSNorm(normalized)(x), F.rms_norm(torch.zeros_like(x), normalized)),
          x, tol=1e-5)


# ---- norms and distances -------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 1, INF, -INF, "fro", 0, 3.0, 0.5, -1.0, -2.5])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_vector_norms(p, dim):
    x = edgy(3, 4, 5)
    if p == "fro":
        check(lambda x: (torch.norm(x, p, dim), x.norm(p, dim, keepdim=True)), x, tol=1e-5)
        return
    check(lambda x: (torch.linalg.vector_norm(x, p, dim), torch.norm(x, p, dim),
                     x.norm(p=p, dim=dim, keepdim=True)), x, tol=1e-5)


def test_norm_defaults_and_linalg_norm():
    x = torch.randn(4, 6) * 3
    check(lambda x, v: (torch.norm(x), x.norm(), torch.linalg.norm(x, dim=1),
                        torch.linalg.norm(v), torch.linalg.norm(x), torch.linalg.norm(v, 1),
                        torch.linalg.vector_norm(x, dim=-1, keepdim=True),
                        torch.linalg.vector_norm(x, dtype=torch.float64)),
          x, torch.tensor([3.0, -4.0, 1e30, 0.0]))


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, -1), (INF, 0), (3.0, 1)])
def test_normalize(p, dim):
    x = edgy(4, 6)
    x[1] = 0.0
    check(lambda x: F.normalize(x, p, dim), x)


@pytest.mark.parametrize("p", [2.0, 1.0, INF])
def test_pairwise_distance_and_cosine_similarity(p):
    a, b = edgy(5, 8), torch.randn(5, 8)
    b[2] = a[2]
    c = torch.zeros(1, 8)

    def fn(a, b, c):
        return (F.pairwise_distance(a, b, p), F.pairwise_distance(a, c, p, keepdim=True),
                F.pairwise_distance(a[0], b[0], p), F.cosine_similarity(a, b),
                F.cosine_similarity(a, c, dim=-1), F.cosine_similarity(a, b, 0, eps=1e-3),
                nn.PairwiseDistance(p)(a, b), nn.CosineSimilarity()(a, b))

    check(fn, a, b, c)


# ---- einsum --------------------------------------------------------------------------------
@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 5, 8)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 5), (2, 3, 5, 8)]),
    ("i,i->", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ijk->k", [(2, 3, 4)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("bn,anm->bam", [(2, 3), (4, 3, 5)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]),
    ("abc,cd->dba", [(2, 3, 4), (4, 5)]),
    ("ii->i", [(4, 4)]),  # repeated indices: diagonals
    ("iij,jk->ik", [(3, 3, 4), (4, 5)]),
    ("bji,bii->bj", [(2, 3, 4), (2, 4, 4)]),
])
def test_einsum(equation, shapes):
    g = torch.Generator().manual_seed(2)
    xs = [torch.randn(*s, generator=g) for s in shapes]
    check(lambda *xs: torch.einsum(equation, *xs), *xs, tol=1e-4)


def test_einsum_list_operands():
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    check(lambda a, b: torch.einsum("ij,jk->ik", [a, b]), a, b, tol=1e-4)


# ---- losses --------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(4, 5), (2, 5, 3), (5,)])
def test_cross_entropy_and_nll(reduction, shape):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(*shape, generator=g) * 3
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    t = torch.randint(0, c, tshape, generator=g)
    w = torch.rand(c, generator=g) + 0.1
    logp = F.log_softmax(x, 1 if len(shape) > 1 else 0)

    def fn(x, t, logp):
        return (F.cross_entropy(x, t, reduction=reduction),
                F.cross_entropy(x, t, weight=w, reduction=reduction),
                F.nll_loss(logp, t, reduction=reduction),
                F.nll_loss(logp, t, weight=w, reduction=reduction))

    check(fn, x, t, logp, tol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_ignore_index(reduction):
    x = edgy(6, 4)
    x[x.isnan()] = 0.0
    x[x.isinf()] = 5.0
    t = torch.tensor([0, -100, 3, 2, 1, 1])
    w = torch.tensor([0.5, 1.0, 2.0, 0.25])
    check(lambda x, t: (F.cross_entropy(x, t, reduction=reduction),
                        F.cross_entropy(x, t.clamp(min=0), w, ignore_index=1,
                                        reduction=reduction),
                        nn.CrossEntropyLoss(reduction=reduction)(x, t),
                        F.nll_loss(x, t, ignore_index=-100, reduction=reduction)), x, t)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(6, 5), (2, 5, 3, 4), (5,)])
def test_cross_entropy_probability_targets_and_label_smoothing(reduction, shape):
    # torch's normalizations: a probability target's mean divides by the number of samples,
    # label smoothing mixes nll with the (weighted) mean log-probability over classes, whose
    # mean divides by the weights of the targets not ignored
    g = torch.Generator().manual_seed(7)
    x = torch.randn(*shape, generator=g) * 2
    cd = 1 if len(shape) > 1 else 0
    c = shape[cd]
    probs = torch.softmax(torch.randn(*shape, generator=g), cd)
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    t = torch.randint(0, c, tshape, generator=g)
    if t.dim():
        t.view(-1)[1] = -100
    w = torch.rand(c, generator=g) + 0.1

    def fn(x, t, p):
        return (F.cross_entropy(x, p, reduction=reduction),
                F.cross_entropy(x, p, weight=w, reduction=reduction, label_smoothing=0.2),
                F.cross_entropy(x, t, reduction=reduction, label_smoothing=0.1),
                F.cross_entropy(x, t, weight=w, reduction=reduction, label_smoothing=0.3))

    check(fn, x, t, probs, tol=1e-5)


def test_nll_loss_all_ignored_is_nan():
    x, t = torch.randn(3, 4), torch.full((3,), -100)
    check(lambda x, t: F.nll_loss(x, t), x, t)


def test_nll_loss_target_out_of_range_raises():
    x, t = torch.randn(3, 4), torch.tensor([0, 4, 1])
    compiled = torch.compile(lambda x, t: F.nll_loss(x, t) * 2, backend="ember",
                             options={"strict": True})
    with pytest.raises(ember.EmberError), torch.no_grad():
        compiled(x, t)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
def test_pointwise_losses(reduction, beta):
    a, b = edgy(4, 6), edgy(4, 6, seed=5) * 0.1

    def fn(a, b):
        out = (F.mse_loss(a, b, reduction=reduction), F.l1_loss(a, b, reduction=reduction),
               F.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
               nn.MSELoss(reduction=reduction)(a, b), nn.L1Loss(reduction=reduction)(a, b))
        if beta > 0:
            out += (F.huber_loss(a, b, reduction=reduction, delta=beta),)
        return out

    check(fn, a, b)
    finite = torch.randn(3, 5), torch.randn(3, 5)
    check(fn, *finite)


def test_helpers_are_exact_where_naive_forms_are_not():
    """The identities behind softplus and elu at values where log(1 + u) or exp(x) - 1
    lose precision entirely."""
    x = torch.tensor([-40.0, -25.0, 1e-8, -1e-8])
    out = torch.compile(lambda x: (F.softplus(x), F.elu(x)), backend="ember",
                        options={"strict": True})(x)
    assert out[0][0].item() == pytest.approx(math.exp(-40.0), rel=1e-6)
    assert out[1][2].item() == pytest.approx(1e-8, rel=1e-6)
    assert out[1][3].item() == pytest.approx(math.expm1(-1e-8), rel=1e-6)


def test_constant_pad_of_symbolic_sizes():
    compiled = torch.compile(lambda x: F.pad(x, (1, 2, 0, 1), value=-2.0) * 2, backend="ember",
                             options={"strict": True}, dynamic=True)
    with torch.no_grad():
        for n in (3, 5, 8):
            x = torch.randn(2, n, n + 1)
            torch.testing.assert_close(compiled(x), F.pad(x, (1, 2, 0, 1), value=-2.0) * 2)


def test_rms_norm_half_uses_float32_eps():
    x = torch.randn(4, 6).half()
    check(lambda x: (F.rms_norm(x, (6,)), F.rms_norm(x * 0, (6,))), x, tol=1e-3)


def test_what_cannot_be_exact_runs_eagerly():
    """float64 floor division is rejected by its converter: without strict it runs in eager
    PyTorch, with the same results; with strict the error names it."""
    a, d = torch.randn(4, 4), torch.randn(5, dtype=torch.float64)
    t = torch.tensor([0, 1, 3, 2])

    def fn(a, d, t):
        return (torch.einsum("ii->i", a) + 1, torch.div(d, 0.1, rounding_mode="floor") * 2,
                F.cross_entropy(a, t) + 1)

    with pytest.warns(ember.torch.report.EagerFallbackWarning), torch.no_grad():
        actual = torch.compile(fn, backend="ember")(a, d, t)
    for x, y in zip(actual, fn(a, d, t), strict=True):
        torch.testing.assert_close(x, y)
    with pytest.raises(Exception, match="floor division of float64"), torch.no_grad():
        torch._dynamo.reset()
        torch.compile(fn, backend="ember", options={"strict": True})(a, d, t)


def test_squeeze_of_no_dims_and_of_a_0d_tensor():
    """dim=() squeezes nothing; a 0-d tensor takes dim 0 and stays 0-d (torch's rules)."""
    x = torch.randn(5, 1, 5, 1)
    check(lambda t: (t.squeeze(()) * 2, torch.squeeze(t, (1, 3)) + 1, t.squeeze((1, 2)) - 1), x)
    check(lambda t: (t.sum().squeeze(0) * 2, torch.squeeze(t.sum(), (0,)) + 1), x)


# ---- advanced indexing -----------------------------------------------------------------
@pytest.mark.parametrize("case", [
    "pooled", "after_relu", "2d_index", "ellipsis", "apart", "adjacent_int", "int_apart",
    "list_and_0d", "int32_index", "three_dims"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_getitem_with_index_tensors(case, dynamic):
    g = torch.Generator().manual_seed(1)
    cases = {
        # CLIP's pooled token: one row per batch element at the argmax position
        "pooled": (lambda x, i: x[torch.arange(x.shape[0]), i.argmax(-1)],
                   torch.randn(3, 5, 4, generator=g), torch.randn(3, 5, generator=g)),
        "after_relu": (lambda x, i: torch.relu(x)[:, i], torch.randn(4, 6, generator=g),
                       torch.tensor([0, 5, -1, 2])),
        "2d_index": (lambda x, i: x[i], torch.randn(5, 3, generator=g),
                     torch.tensor([[0, 4], [-2, 1]])),
        "ellipsis": (lambda x, i: x[..., i], torch.randn(2, 3, 5, generator=g),
                     torch.tensor([4, 0])),
        "apart": (lambda x, i: x[i, :, i], torch.randn(4, 3, 4, generator=g),
                  torch.tensor([1, 3])),
        "adjacent_int": (lambda x, i: x[:, i, 1], torch.randn(2, 5, 3, generator=g),
                         torch.tensor([[1], [4]])),
        "int_apart": (lambda x, i: x[1, :, i], torch.randn(3, 2, 5, generator=g),
                      torch.tensor([0, 4, 2])),
        "list_and_0d": (lambda x, i: x[[0, 2], i], torch.randn(3, 4, generator=g),
                        torch.tensor(3)),
        "int32_index": (lambda x, i: x[i.to(torch.int32)], torch.arange(12).reshape(6, 2),
                       torch.tensor([5, 0, 3])),
        "three_dims": (lambda x, i: x[i, i, i], torch.randn(3, 3, 3, generator=g),
                       torch.tensor([2, 0, 1])),
    }
    fn, x, i = cases[case]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="ember", dynamic=dynamic, options={"strict": True})
    with torch.no_grad():
        out, ref = compiled(x, i), fn(x, i)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    assert torch.equal(out, ref)


def test_getitem_with_an_index_out_of_range_raises():
    compiled = torch.compile(lambda x, i: x[:, i] * 2, backend="ember", options={"strict": True})
    with torch.no_grad():
        compiled(torch.randn(2, 4), torch.tensor([3, -4]))
        with pytest.raises(ember.DataError, match="out of range"):
            compiled(torch.randn(2, 4), torch.tensor([1, 4]))
        with pytest.raises(ember.DataError, match="out of range"):
            compiled(torch.randn(2, 4), torch.tensor([-5, 0]))


def test_repeat_interleave_and_constant_pad_nd():
    x = torch.arange(12.0).reshape(3, 4)
    check(lambda t: (torch.repeat_interleave(t, 2), t.repeat_interleave(3, dim=1),
                     torch.repeat_interleave(t, torch.tensor([1, 0, 2]), dim=0),
                     torch.repeat_interleave(t, 2, dim=-1)), x)
    check(lambda t: (torch.constant_pad_nd(t, [1, 2]), torch.constant_pad_nd(t, [0, 1, 2, 0], 2.5),
                     torch.constant_pad_nd(t, [-1, 1])), x)
    check(lambda t: torch.constant_pad_nd(t, [1, 1], 7), torch.arange(6).reshape(2, 3))


@pytest.mark.parametrize("dynamic", [False, True])
def test_softmax_of_0d_and_empty_dims_unbatched_conv_and_group_norm(dynamic):
    # A 0-d softmax is 1 (log_softmax 0); over a dimension of size 0 there is nothing to
    # compute; conv1d/conv2d take an input without its batch dim; group_norm's reshape to
    # [N, G, C // G * rest] converts when C is symbolic.
    # (Modules: Dynamo keeps parameters' shapes static under dynamic=True.)
    conv1, conv2 = nn.Conv1d(3, 2, 3, padding=1), nn.Conv2d(3, 4, 3)

    def fn(x, img, seq):
        return (torch.softmax(x.sum(), 0), F.log_softmax(x.sum(), 0), torch.softmax(x[:, :0], 1),
                F.log_softmax(x[:, :0], 1), conv1(seq), conv2(img),
                F.group_norm(x.reshape(2, 4, -1), 2))

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="ember", dynamic=dynamic, options={"strict": True})
    for n in (3, 5):
        args = (torch.randn(2, 4 * n), torch.randn(3, 6, n + 2), torch.randn(3, n + 4))
        with torch.no_grad():
            out, ref = compiled(*args), fn(*args)
        for a, e in zip(out, ref, strict=True):
            assert a.shape == e.shape
            torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)
