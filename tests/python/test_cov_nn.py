"""Losses, norms, masked reductions, elementwise composites and products ember composes from
its basic ones (converters/nn_extra.py, converters/elementwise_extra.py): each compiled in
strict mode (so ember must convert it) and compared with eager PyTorch, with edge values
(nan, +-inf, 0), 0-d and empty tensors, negative dims and integer dtypes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _helpers_torch import check

INF, NAN = float("inf"), float("nan")


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def randn(*shape, seed=0, scale=2.0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale


def special(*shape, seed=0):
    """Random values with nan, +-inf, 0 and -0 mixed in."""
    x = randn(*shape, seed=seed)
    flat = x.view(-1)
    for i, v in enumerate([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0][: max(flat.numel() // 2, 1)]):
        flat[(i * 5) % flat.numel()] = v
    return x


def ints(*shape, seed=0, low=-5, high=6, dtype=torch.int64):
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed),
                         dtype=dtype)


# ---- elementwise -----------------------------------------------------------------------------
UNARY_FLOAT = [
    torch.square, torch.deg2rad, torch.rad2deg, torch.sinc, torch.sgn, torch.signbit,
    torch.special.entr, torch.logit, torch.isposinf, torch.isneginf, torch.isreal, torch.angle,
    lambda x: torch.logit(x, 0.2), lambda x: torch.round(x, decimals=2),
    lambda x: torch.round(x, decimals=-1),
]
UNARY_INT = [torch.square, torch.sgn, torch.signbit, torch.isposinf, torch.isneginf, torch.angle,
             torch.deg2rad]
BINARY_FLOAT = [
    torch.logaddexp, torch.logaddexp2, torch.xlogy, torch.special.xlog1py, torch.fmax,
    torch.fmin, torch.float_power, lambda a, b: torch.isclose(a, b, equal_nan=True),
    lambda a, b: torch.isclose(a, b, rtol=0.5, atol=0.1), torch.heaviside,
    lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.8),
    lambda a, b: torch.lerp(a, b, b), lambda a, b: torch.addcmul(a, a, b, value=0.5),
    lambda a, b: torch.addcdiv(a, a, b, value=-2.0), torch.floor_divide,
]


def test_unary():
    def floats(x):
        return tuple(op(x) for op in UNARY_FLOAT) + tuple(torch.frexp(x))

    check(floats, special(4, 6))
    check(floats, torch.tensor(0.0))
    check(lambda x: tuple(op(x) for op in UNARY_INT), ints(3, 4))


def test_binary():
    a, b = special(5, 4, seed=1), special(5, 4, seed=2)
    b[0, 0], a[0, 0] = INF, INF  # equal infinities
    a[1, 1], b[1, 1] = 0.0, NAN  # xlogy(0, nan) is nan
    check(lambda x, y: tuple(op(x, y) for op in BINARY_FLOAT), a, b)
    check(lambda x, y: tuple(op(x, y) for op in BINARY_FLOAT), a, b[0])  # broadcast


def test_ldexp_and_ints():
    check(lambda a, b, c, d: (torch.ldexp(a, b), torch.fmax(b, c), torch.float_power(c, 2),
                              torch.isclose(b, d, rtol=0, atol=0)),
          randn(3, 4), ints(3, 4), ints(3, 4, seed=1), ints(3, 4, seed=2))


@pytest.mark.parametrize("dim,keepdim", [(None, False), (-1, True), ((0, 2), False)])
def test_nan_reductions(dim, keepdim):
    x = special(3, 4, 5)
    x[0, 0, :] = NAN  # a row of NaN: nanmean is NaN there
    check(lambda t, i: (torch.nansum(t, dim, keepdim), torch.nanmean(t, dim, keepdim),
                        torch.count_nonzero(t, dim), torch.nansum(i, dim, keepdim)),
          x, ints(3, 4, 5, dtype=torch.int32))


def test_aminmax_mvlgamma_isin():
    check(lambda t, z, p, a, b, c: (*torch.aminmax(t), *torch.aminmax(t, dim=-1, keepdim=True),
                                    *torch.aminmax(z, dim=0), torch.mvlgamma(p, 3),
                                    torch.isin(a, b), torch.isin(a, c, invert=True)),
          randn(3, 4), torch.tensor(2.0), randn(3, 4).abs() + 1.5, ints(4, 5), ints(3, seed=1),
          ints(2, 2, seed=1))


def test_diff():
    x, p, a = randn(5, 5), randn(1, 5), randn(2, 5)
    check(lambda t, u, v, b: (torch.diff(t), torch.diff(t, 2, 0), torch.diff(t, 3, 1),
                              torch.diff(t, 0, 0, u, v), torch.diff(t, 1, 0, u, v),
                              torch.diff(b, 2, -1)), x, p, a, torch.rand(4, 4) > 0.5)


def test_trapezoid_and_renorm():
    y, x = randn(4, 6), randn(6).cumsum(0)
    check(lambda t, u, v: (torch.trapezoid(t), torch.trapz(t, dx=0.5, dim=0),
                           torch.trapezoid(t, u), torch.trapz(t, v, dim=-1),
                           torch.renorm(t, 2, 0, 1.5), torch.renorm(t, 1, -1, 0.5)),
          y, x, randn(4, 6))


# ---- products --------------------------------------------------------------------------------
def test_vector_products():
    a, b, m, i = randn(5), randn(5, seed=1), randn(4, 5), ints(5)

    def products(a, b, m, i, c, n, s, t3, u3, t2, u2):
        return (torch.dot(a, b), torch.vdot(a, b), torch.dot(i, i), torch.mv(m, a),
                torch.outer(a, c), torch.inner(m, n), torch.inner(s, m),
                torch.linalg.vecdot(m, m, dim=0), torch.tensordot(t3, u3, ([1, 0], [0, 1])),
                torch.tensordot(t2, u2, 1), torch.kron(t2, u2), torch.kron(i, m),
                torch.trace(m), torch.trace(i.view(1, 5).int()))

    check(products, a, b, m, i, randn(3), randn(2, 5), torch.tensor(2.0), randn(3, 4, 2),
          randn(4, 3, 5), randn(3, 4), randn(4, 2))


def test_add_products():
    inp = special(4, 3)
    check(lambda i, x, y: torch.addmv(i[:, 0], x, y, beta=0.5, alpha=2.0), inp, randn(4, 5),
          randn(5))
    check(lambda i, x, y: torch.addr(i, x, y, beta=0), inp, randn(4), randn(3))  # NaN ignored
    check(lambda i, x, y: torch.addbmm(i, x, y, alpha=0.3), randn(4, 3), randn(2, 4, 5),
          randn(2, 5, 3))


def test_cross_matrix_ops():
    check(lambda a, b, c, d, v, w, m, i: (
        torch.linalg.cross(a, b), torch.cross(c, d, dim=0), torch.linalg.cross(a, b[:1]),
        torch.linalg.multi_dot([v, m, w]), torch.linalg.multi_dot([m.T, m]),
        torch.linalg.matrix_power(m[:3, :3], 3), torch.linalg.matrix_power(m[:3, :3], 0),
        torch.linalg.vander(a, N=4), torch.linalg.vander(i)),
        randn(4, 3), randn(4, 3, seed=1), randn(3, 4), randn(3, 4, seed=1), randn(3), randn(4),
        randn(3, 4, scale=0.5), ints(4, low=-3, high=4))
    # empty matrices: an empty inner size gives zeros, an empty outer size an empty result
    check(lambda a, b, c: (torch.linalg.multi_dot([a, b, c]) + 1,
                           torch.linalg.multi_dot([b.T, a.T]), torch.linalg.multi_dot([c[0], c.T])),
          randn(2, 0), randn(0, 3), randn(3, 4))


def test_distances_and_matrix_norms():
    ps = [2.0, 1.0, 0.0, 3.0, INF]
    check(lambda x, y, z, w: tuple(r for p in ps for r in (
        torch.cdist(x, y, p), torch.dist(x[0], z, p), F.pdist(w, p))),
        randn(2, 4, 3), randn(2, 5, 3, seed=1), randn(4, 3, seed=2), randn(5, 3))
    ords = ["fro", 1, -1, INF, -INF]
    check(lambda x, y: tuple(r for o in ords for r in (
        torch.linalg.matrix_norm(x, o), torch.linalg.matrix_norm(y, o, (0, -1), True))),
        randn(2, 3, 4), randn(3, 2, 4))


# ---- activations -------------------------------------------------------------------------------
ACTIVATIONS = [
    F.softsign, F.tanhshrink, lambda x: F.threshold(x, 0.5, -2.0), F.softshrink,
    lambda x: F.softshrink(x, 1.5), F.hardshrink, lambda x: F.hardshrink(x, 0.0), F.glu,
    lambda x: F.glu(x, 0), lambda x: F.prelu(x, torch.tensor([0.25, -0.5, 2.0, 0.1])),
    lambda x: F.prelu(x, torch.tensor([0.3])),
]


def test_activations():
    check(lambda x: tuple(op(x) for op in ACTIVATIONS), special(6, 4))


def test_softmax_backward_and_safe_softmax():
    out = torch.softmax(randn(3, 5), -1)
    check(lambda g, o: torch.ops.aten._softmax_backward_data(g, o, -1, torch.float32),
          randn(3, 5), out)
    x = randn(3, 5)
    x[1] = -INF  # a fully masked row: 0, not NaN
    check(lambda t: torch.ops.aten._safe_softmax(t, 1), x)


# ---- losses ------------------------------------------------------------------------------------
REDUCTIONS = ["mean", "sum", "none"]


def test_pointwise_losses():
    x, y = randn(4, 5), randn(4, 5, seed=1)
    sign = torch.where(randn(4, 5, seed=2) > 0, 1.0, -1.0)
    p = torch.rand(4, 5, generator=torch.Generator().manual_seed(3))
    p[0, 0], p[0, 1] = 0.0, 1.0  # log clamped at -100
    t = torch.rand(4, 5, generator=torch.Generator().manual_seed(4))

    def losses(x, y, sign, p, t):
        out = []
        for r in REDUCTIONS:
            out += [F.soft_margin_loss(x, sign, reduction=r),
                    F.margin_ranking_loss(x, y, sign, 0.5, reduction=r),
                    F.hinge_embedding_loss(x, sign, 1.5, reduction=r),
                    F.binary_cross_entropy(p, t, reduction=r),
                    F.binary_cross_entropy(p, t, t[0], reduction=r),
                    F.binary_cross_entropy_with_logits(x * 20, t, reduction=r),
                    F.binary_cross_entropy_with_logits(x, t, pos_weight=p[0] + 0.5,
                                                       reduction=r),
                    F.multilabel_soft_margin_loss(x, (t > 0.5).float(), p[0], reduction=r)]
        return tuple(out)

    check(losses, x, y, sign, p, t)


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(log_target):
    x = torch.log_softmax(randn(4, 5), -1)
    t = torch.softmax(randn(4, 5, seed=1), -1)
    t[0, 0] = 0.0  # xlogy(0, 0) = 0
    t = t.log() if log_target else t
    check(lambda a, b: tuple(F.kl_div(a, b, reduction=r, log_target=log_target)
                             for r in REDUCTIONS + ["batchmean"]), x, t)


def test_class_losses():
    x = randn(4, 5)
    t = torch.tensor([0, 3, 4, 1])
    ml = torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 1, 2, 3], [4, 4, -1, 0, 0]])

    def losses(x, t, w, ml):
        out = []
        for r in REDUCTIONS:
            out += [F.multi_margin_loss(x, t, reduction=r),
                    F.multi_margin_loss(x, t, 2, 0.5, w, reduction=r),
                    F.multi_margin_loss(x[0], t[:1], reduction=r),
                    F.multilabel_margin_loss(x, ml, reduction=r)]
            if r != "none":  # unbatched "none": torch's shape function says [1], eager []
                out += [F.multi_margin_loss(x[0], t[0], reduction=r),
                        F.multilabel_margin_loss(x[0], ml[0], reduction=r)]
        return tuple(out)

    check(losses, x, t, torch.rand(5), ml)


def test_embedding_losses():
    a, p, n = randn(4, 6), randn(4, 6, seed=1), randn(4, 6, seed=2)
    y = torch.tensor([1.0, -1.0, 1.0, -1.0])

    def losses(a, p, n, y):
        out = []
        for r in REDUCTIONS:
            out += [F.triplet_margin_loss(a, p, n, reduction=r),
                    F.triplet_margin_loss(a, p, n, 0.5, 1, swap=True, reduction=r),
                    F.cosine_embedding_loss(a, p, y, 0.2, reduction=r),
                    F.cosine_embedding_loss(a[0], p[0], y[0], reduction=r)]
        return tuple(out)

    check(losses, a, p, n, y)


# ---- norms -------------------------------------------------------------------------------------
def test_batch_statistics_norms():
    x, w, b = randn(4, 3, 5), randn(3), randn(3)
    check(lambda t, u, v: torch.native_batch_norm(t, u, v, None, None, True, 0.1, 1e-5), x, w, b)
    check(lambda t: torch._native_batch_norm_legit(t, None, None, True, 0.1, 1e-3), x)
    check(lambda t, u, v: F.batch_norm(t, None, None, u, v, training=True), x, w, b)
    rm, rv = randn(3), randn(3).abs() + 0.5
    check(lambda t, m, v: torch.native_batch_norm(t, None, None, m, v, False, 0.1, 1e-5)[0], x,
          rm, rv)
    check(lambda t, u, v: torch.native_layer_norm(t, [5], u, v, 1e-5), x, randn(5), randn(5))
    check(lambda t: torch.native_layer_norm(t, [3, 5], None, None, 1e-5), x)
    check(lambda t, u, v: torch.native_group_norm(t, u, v, 4, 6, 5, 3, 1e-5), randn(4, 6, 5),
          randn(6), randn(6))
    check(lambda t: F.local_response_norm(t, 3), randn(2, 5, 4).abs())
    check(lambda t: F.local_response_norm(t, 4, 1e-2, 0.5, 2.0), randn(2, 5, 3, 2))


def test_bilinear():
    check(lambda a, b, w, c: F.bilinear(a, b, w, c), randn(4, 3), randn(4, 5), randn(2, 3, 5),
          randn(2))
    check(lambda a, b, w: F.bilinear(a, b, w), randn(2, 4, 3), randn(2, 4, 5), randn(6, 3, 5))


def test_running_statistics_are_updated_as_eager():
    """A training batch norm of [N, C] that updates running statistics converts (strict) and
    leaves in them what eager leaves (tests/python/test_running_stats.py has the rest)."""
    x = randn(4, 3)
    ours, theirs = [torch.zeros(3), torch.ones(3)], [torch.zeros(3), torch.ones(3)]
    fn = lambda t, m, v: F.batch_norm(t, m, v, training=True)  # noqa: E731
    f = torch.compile(fn, backend="ember", options={"strict": True})
    with torch.no_grad():
        torch.testing.assert_close(f(x, *ours), fn(x, *theirs))
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b)


# ---- masked reductions ------------------------------------------------------------------------
MASKED = torch.masked._ops
MASKED_REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "var", "std", "logsumexp"]


def _mask(*shape, seed=5):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) > 0.5


@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, True), (-1, False)])
def test_masked_reductions(dim, keepdim):
    m = _mask(3, 4)
    m[0] = False  # a fully masked-out row

    def reductions(t, k, k1):
        out = [MASKED.norm(t, 2.0, dim, keepdim=keepdim, mask=k)]
        for name in MASKED_REDUCTIONS:
            op = getattr(MASKED, name)
            out += [op(t, dim, keepdim=keepdim, mask=k), op(t, dim, keepdim=keepdim, mask=k1),
                    op(t, dim, keepdim=keepdim)]
        return tuple(out)

    check(reductions, randn(3, 4), m, m[:, :1].clone())  # the last mask broadcasts


def test_masked_int_arg_and_normalizations():
    x, m = ints(3, 4), _mask(3, 4)
    f = randn(3, 4)
    m2 = m.clone()
    m2[1] = False

    def ops(x, f, m, m2, g):
        return (MASKED.sum(x.int(), 1, mask=m), MASKED.amax(x, 0, mask=m),
                MASKED.argmax(f, 1, mask=m), MASKED.argmin(f, 0, keepdim=True, mask=m),
                MASKED.var(f, 1, unbiased=False, mask=m), MASKED.norm(f, -INF, 1, mask=m),
                MASKED.norm(f, 1.0, mask=m),
                MASKED.softmax(f, 1, mask=m2), MASKED.log_softmax(f, -2, mask=m2),
                MASKED.softmin(f, 1, mask=m2),
                MASKED.logaddexp(f, g, input_mask=m, other_mask=m2))

    check(ops, x, f, m, m2, randn(3, 4, seed=1))


def test_masked_median():
    """nanmedian with the masked-out elements NaN: a fully masked row gives NaN, a NaN the
    mask keeps is ignored like nanmedian's."""
    m = _mask(4, 6)
    m[0] = False
    f = randn(4, 6)
    f[2, 1] = float("nan")
    check(lambda f, m: (MASKED.median(f, 1, mask=m), MASKED.median(f, 0, keepdim=True, mask=m),
                        MASKED.median(f, mask=m[:, :1].clone()), MASKED.median(f)), f, m)


def test_zero_dim_inputs():
    """torch takes a 0-d input as one sample of one class (margin losses) or one value
    (vander)."""
    check(lambda x, t: (F.multi_margin_loss(x, t), F.multilabel_margin_loss(x, t),
                        torch.linalg.vander(x, N=3)), torch.tensor(1.5), torch.tensor(0))
