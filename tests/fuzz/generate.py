"""The random-program generator: ``generate(seed)`` draws 3 to 15 operations from what
models use, evaluating each candidate eagerly on both input configurations and keeping it
only when PyTorch accepts it (so every program is valid and its shapes are PyTorch's);
``prune`` drops what no output uses. The data structures are in program.py.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tests.fuzz.program import BATCH, SIZES, Program
from tests.fuzz.values import Gen, Val, is_bool, is_float, is_int, rank_of

# ---- operation families ----------------------------------------------------------------
# (name, template, converted, keeps exactness)
_UNARY: list[tuple[str, str, bool, bool]] = [
    ("relu", "torch.relu({0})", True, True),
    ("relu_method", "{0}.relu()", True, True),
    ("gelu", "F.gelu({0})", True, False),
    ("gelu_tanh", "F.gelu({0}, approximate='tanh')", True, False),
    ("silu", "F.silu({0})", True, False),
    ("tanh", "torch.tanh({0})", True, False),
    ("sigmoid", "torch.sigmoid({0})", True, False),
    ("abs", "{0}.abs()", True, True),
    ("neg", "-{0}", True, True),
    ("sin", "torch.sin({0})", True, False),
    ("cos", "torch.cos({0})", True, False),
    ("exp", "torch.exp({0}.clamp(max=8.0))", True, False),
    ("sqrt", "torch.sqrt({0}.abs())", True, False),
    ("rsqrt", "torch.rsqrt({0}.abs() + 1)", True, False),
    ("log", "torch.log({0}.abs() + 0.5)", True, False),
    ("erf", "torch.erf({0})", True, False),
    ("hardtanh", "F.hardtanh({0})", True, True),
    ("relu6", "F.relu6({0} * 4)", True, False),
    ("leaky_relu", "F.leaky_relu({0}, 0.1)", True, False),
    ("hardsigmoid", "F.hardsigmoid({0})", True, False),
    ("hardswish", "F.hardswish({0})", True, False),
    ("clamp", "{0}.clamp(-0.5, 0.75)", True, True),
    ("clamp_min", "torch.clamp_min({0}, 0.25)", True, True),
    ("square", "{0} * {0}", True, False),
    ("pow", "{0} ** 2", True, False),
    ("pow3", "torch.pow({0}, 3)", True, False),
    ("reciprocal", "torch.reciprocal({0}.abs() + 1)", True, False),
    ("dropout_eval", "F.dropout({0}, 0.5, training=False)", True, True),
    ("softplus", "F.softplus({0})", False, False),
    ("elu", "F.elu({0})", False, False),
    ("log1p", "torch.log1p({0}.abs())", False, False),
    ("floor", "torch.floor({0} * 4)", False, False),
    ("sign", "torch.sign({0})", False, True),
    ("mish", "F.mish({0})", False, False),
]

_INT_UNARY: list[tuple[str, str, bool]] = [
    ("int_abs", "{0}.abs()", True),
    ("int_neg", "-{0}", True),
    ("int_mul", "{0} * 3", True),
    ("int_mod", "{0} % 3", True),
    ("int_floordiv", "{0} // 2", True),
    ("int_clamp", "{0}.clamp(-2, 3)", True),
    ("int_sign", "torch.sign({0})", False),
]

_BINARY: list[tuple[str, str, bool]] = [
    ("add", "{0} + {1}", True),
    ("sub", "{0} - {1}", True),
    ("mul", "{0} * {1}", True),
    ("div", "{0} / ({1}.abs() + 1)", True),
    ("maximum", "torch.maximum({0}, {1})", True),
    ("minimum", "torch.minimum({0}, {1})", True),
    ("torch_add_alpha", "torch.add({0}, {1}, alpha=0.5)", True),
    ("atan2", "torch.atan2({0}, {1})", False),
]

_SCALAR: list[tuple[str, str, bool]] = [
    ("add_scalar", "{0} + 1.5", True),
    ("rsub_scalar", "2 - {0}", True),
    ("mul_scalar", "{0} * -0.75", True),
    ("div_scalar", "{0} / 4", True),
    ("mul_size", "{0} * {0}.shape[0]", True),
    ("add_size", "{0} + {0}.size(-1)", True),
]


# Steps (sign, floor) turn a last-bit difference of an inexact input into a whole unit: they
# take exact inputs only, as comparisons do.
_STEPS = {"sign", "floor"}


def _unary(g: Gen) -> bool:
    v = g.pick(is_float)
    if v is None:
        return False
    name, expr, conv, keep = g.rng.choice(_UNARY)
    if name in _STEPS and not v.exact:
        v = g.pick(lambda v: is_float(v) and v.exact)
        if v is None:
            return False
    return g.emit(name, expr, [v], exact=v.exact and keep, converted=conv)


def _int_unary(g: Gen) -> bool:
    v = g.pick(is_int)
    if v is None:
        return False
    name, expr, conv = g.rng.choice(_INT_UNARY)
    return g.emit(name, expr, [v], exact=True, converted=conv)


def _broadcast_partner(g: Gen, a: Val, pred: Callable[[Val], bool]) -> Val | None:
    def fits(v: Val) -> bool:
        if v is a and g.rng.random() < 0.7:
            return False
        try:
            return all(torch.broadcast_shapes(a.t[c].shape, v.t[c].shape) == a.t[c].shape
                       or g.rng.random() < 0.3 for c in (0, 1))
        except RuntimeError:
            return False
    return g.pick(lambda v: pred(v) and fits(v))


def _binary(g: Gen) -> bool:
    a = g.pick(lambda v: is_float(v) or is_int(v))
    if a is None:
        return False
    r = g.rng.random()
    if r < 0.3:
        name, expr, conv = g.rng.choice(_SCALAR)
        if not is_float(a) and name in ("div_scalar",):
            return False
        return g.emit(name, expr, [a], exact=False, converted=conv)
    if r < 0.45:
        # A broadcast against a fresh parameter shaped like some trailing dims (1 where
        # the dimension differs between the configurations).
        s0, s1 = list(a.t[0].shape), list(a.t[1].shape)
        k = g.rng.randint(0, len(s0))
        pshape = [1 if x != y or g.rng.random() < 0.3 else x
                  for x, y in zip(s0[len(s0) - k:], s1[len(s1) - k:], strict=True)]
        b = g.param(pshape)
    else:
        b = _broadcast_partner(g, a, lambda v: is_float(v) or is_int(v))
        if b is None:
            return False
    name, expr, conv = g.rng.choice(_BINARY)
    if name == "div" and not is_float(b):
        return False
    args = [a, b] if g.rng.random() < 0.8 else [b, a]
    if name == "atan2" and not args[0].exact:
        # atan2(y, x) jumps from pi to -pi as y crosses 0 where x < 0: a y that is 0 in
        # exact arithmetic (a normalized row's sum) lands on either side by rounding alone.
        # An inexact y meets only x > 0, where atan2 is continuous.
        name, expr = "atan2_right", "torch.atan2({0}, {1}.abs() + 0.5)"
    exact = a.exact and b.exact and name in ("maximum", "minimum")
    if is_int(a) and is_int(b) and name in ("add", "sub", "mul"):
        exact = True
    return g.emit(name, expr, args, exact=exact, converted=conv)


def _compare(g: Gen) -> bool:
    a = g.pick(lambda v: v.exact and (is_float(v) or is_int(v)))
    if a is None:
        return False
    op = g.rng.choice([">", "<", ">=", "<=", "==", "!="])
    if g.rng.random() < 0.6:
        return g.emit(f"cmp_scalar{op}", f"{{0}} {op} 0", [a], exact=True)
    b = _broadcast_partner(g, a, lambda v: v.exact and (is_float(v) or is_int(v)))
    if b is None:
        return False
    return g.emit(f"cmp{op}", f"{{0}} {op} {{1}}", [a, b], exact=True)


def _logical(g: Gen) -> bool:
    a = g.pick(is_bool)
    if a is None:
        return False
    r = g.rng.random()
    if r < 0.3:
        return g.emit("logical_not", g.rng.choice(["~{0}", "torch.logical_not({0})"]), [a],
                      exact=True)
    b = _broadcast_partner(g, a, is_bool)
    if b is None:
        return False
    name, expr = g.rng.choice([("and", "{0} & {1}"), ("or", "{0} | {1}"),
                               ("logical_and", "torch.logical_and({0}, {1})"),
                               ("logical_or", "torch.logical_or({0}, {1})"),
                               ("xor", "{0} ^ {1}")])
    return g.emit(name, expr, [a, b], exact=True, converted=name != "xor")


def _where(g: Gen) -> bool:
    c = g.pick(is_bool)
    if c is None:
        c = g.new_tensor(_shapes_like(g.pick(lambda v: True)), "mask", False)
    a = g.pick(lambda v: is_float(v) or is_int(v))
    if a is None:
        return False
    r = g.rng.random()
    if r < 0.35:
        return g.emit("masked_fill", "{0}.masked_fill({1}, -1.5)"
                      if is_float(a) else "{0}.masked_fill({1}, -1)", [a, c], exact=a.exact)
    if r < 0.55:
        return g.emit("where_scalar", "torch.where({0}, {1}, 0.0)", [c, a], exact=a.exact)
    b = _broadcast_partner(g, a, lambda v: is_float(v) or is_int(v))
    if b is None:
        return False
    return g.emit("where", "torch.where({0}, {1}, {2})", [c, a, b], exact=a.exact and b.exact)


def _shapes_like(v: Val | None) -> tuple[list[int], list[int]]:
    if v is None:
        return ([BATCH[0], 4], [BATCH[1], 4])
    return (list(v.t[0].shape), list(v.t[1].shape))


def _cast(g: Gen) -> bool:
    r = g.rng.random()
    if r < 0.4:
        v = g.pick(lambda v: is_float(v) and v.exact)
        if v is None:
            return False
        name, expr = g.rng.choice([("to_int64", "{0}.to(torch.int64)"), ("long", "{0}.long()"),
                                   ("to_int32", "{0}.int()"), ("to_bool", "{0}.bool()"),
                                   ("half_roundtrip", "{0}.half().float()"),
                                   ("bf16_roundtrip", "{0}.to(torch.bfloat16).float()")])
        return g.emit(name, expr, [v], exact=True)
    if r < 0.7:
        v = g.pick(lambda v: is_int(v) or is_bool(v))
        if v is None:
            return False
        name, expr = g.rng.choice([("int_to_float", "{0}.float()"),
                                   ("to_float32", "{0}.to(torch.float32)"),
                                   ("type_as", "{0}.to(torch.float32) * 1.0")])
        return g.emit(name, expr, [v], exact=True)
    v = g.pick(is_float)
    if v is None:
        return False
    name, expr = g.rng.choice([("to_double", "{0}.double().sum(-1).float()"),
                               ("to_half", "{0}.half()"), ("to_bf16", "{0}.bfloat16()")])
    return g.emit(name, expr, [v], exact=v.exact)


def _matmul(g: Gen) -> bool:
    a = g.pick(lambda v: is_float(v) and rank_of(v) >= 1)
    if a is None:
        return False
    k = a.t[0].shape[-1]
    if a.t[1].shape[-1] != k:
        return False
    n = g.rng.choice([1, 3, 4, 8, 16])
    r = g.rng.random()
    if r < 0.35:
        w = g.param([n, k])
        if g.rng.random() < 0.6:
            b = g.param([n])
            return g.emit("linear", "F.linear({0}, {1}, {2})", [a, w, b])
        return g.emit("linear_nobias", "F.linear({0}, {1})", [a, w])
    if r < 0.6:
        w = g.param([k, n])
        return g.emit("matmul", g.rng.choice(["{0} @ {1}", "torch.matmul({0}, {1})"]), [a, w])
    if r < 0.7 and rank_of(a) == 3:
        return g.emit("bmm", "torch.bmm({0}, {0}.transpose(1, 2))", [a])
    if r < 0.8 and rank_of(a) == 2:
        w = g.param([k, n])
        b = g.param([n])
        return g.emit("addmm", "torch.addmm({2}, {0}, {1})", [a, w, b])
    b = g.pick(lambda v: is_float(v) and rank_of(v) >= 2 and v is not a)
    if b is None:
        return False
    return g.emit("matmul2", "torch.matmul({0}, {1})", [a, b])


def _conv(g: Gen) -> bool:
    a = g.pick(lambda v: is_float(v) and rank_of(v) in (3, 4))
    if a is None:
        return _to_image(g)
    cin = a.t[0].shape[1]
    if a.t[1].shape[1] != cin:
        return False
    groups = g.rng.choice([1, 1, 1, cin]) if cin > 1 else 1
    cout = g.rng.choice([2, 4, 8]) * (groups if groups > 1 else 1)
    k = g.rng.choice([1, 3, 3, 2])
    stride = g.rng.choice([1, 1, 2])
    pad = g.rng.choice([0, 1]) if k > 1 else 0
    nd = rank_of(a) - 2
    w = g.param([cout, cin // groups] + [k] * nd)
    b = g.param([cout])
    fn = "conv2d" if nd == 2 else "conv1d"
    return g.emit(fn, f"F.{fn}({{0}}, {{1}}, {{2}}, stride={stride}, padding={pad}, "
                      f"groups={groups})", [a, w, b])


def _to_image(g: Gen) -> bool:
    """No image-like value yet: adds an (N, C, H, W) input for the next convolution."""
    c, h = g.rng.choice([1, 2, 3, 4]), g.rng.choice([5, 6, 8])
    g.new_tensor(([BATCH[0], c, h, h], [BATCH[1], c, h, h]), "randn", False)
    return False


def _pool(g: Gen) -> bool:
    a = g.pick(lambda v: is_float(v) and rank_of(v) == 4)
    if a is None:
        return False
    name, expr = g.rng.choice([
        ("max_pool2d", "F.max_pool2d({0}, 2)"),
        ("max_pool2d_s1", "F.max_pool2d({0}, 3, stride=1, padding=1)"),
        ("avg_pool2d", "F.avg_pool2d({0}, 2)"),
        ("avg_pool2d_pad", "F.avg_pool2d({0}, 3, stride=2, padding=1)"),
        ("adaptive_avg_pool2d", "F.adaptive_avg_pool2d({0}, 1)"),
        ("adaptive_avg_pool2d_2", "F.adaptive_avg_pool2d({0}, (2, 2))"),
        ("global_mean", "{0}.mean((-1, -2))"),
        ("upsample_nearest", "F.interpolate({0}, scale_factor=2)"),
        ("upsample_bilinear", "F.interpolate({0}, scale_factor=2, mode='bilinear')"),
        ("resize_bilinear", "F.interpolate({0}, size=(5, 3), mode='bilinear', "
                            "align_corners=True)"),
    ])
    return g.emit(name, expr, [a], exact=a.exact and name.startswith("max"))


def _reduce(g: Gen) -> bool:
    a = g.pick(lambda v: (is_float(v) or is_int(v)) and rank_of(v) >= 1)
    if a is None:
        return False
    nd = rank_of(a)
    dim = g.rng.randrange(-nd, nd)
    keep = g.rng.random() < 0.5
    r = g.rng.random()
    if r < 0.1:
        return g.emit("sum_all", "{0}.sum()", [a], exact=is_int(a))
    if r < 0.2 and nd >= 2:
        d2 = (dim + 1) % nd
        if d2 == dim % nd:
            return False
        return g.emit("sum_dims", f"torch.sum({{0}}, ({dim}, {d2}), keepdim={keep})", [a],
                      exact=is_int(a))
    if r < 0.3 and a.exact and is_float(a):
        return g.emit("argmax", f"{{0}}.argmax({dim}, keepdim={keep})", [a], exact=True)
    if r < 0.4 and a.exact:
        return g.emit("max_dim", f"{{0}}.max({dim}, keepdim={keep}).values", [a], exact=True,
                      converted=True)
    name, expr = g.rng.choice([("sum", "{0}.sum"), ("mean", "torch.mean"), ("amax", "{0}.amax"),
                               ("amin", "torch.amin"), ("var", "torch.var"),
                               ("std", "{0}.std"), ("prod", "torch.prod"),
                               ("cumsum", "torch.cumsum"), ("logsumexp", "torch.logsumexp")])
    if name in ("mean", "var", "std", "logsumexp") and not is_float(a):
        return False
    if name == "prod" and (nd == 0 or a.t[0].shape[dim] > 4):
        return False
    callee = expr.format("{0}")
    first = "" if callee.startswith("{0}") else "{0}, "
    if name == "cumsum":
        return g.emit(name, f"torch.cumsum({{0}}, {dim})", [a], exact=is_int(a),
                      converted=False)
    if name == "prod":
        return g.emit(name, f"torch.prod({{0}}, {dim}, keepdim={keep})", [a], exact=is_int(a))
    return g.emit(name, f"{callee}({first}{dim}, keepdim={keep})", [a],
                  exact=(name in ("amax", "amin") and a.exact) or
                  (name == "sum" and is_int(a)),
                  converted=name != "logsumexp")


def _softmax(g: Gen) -> bool:
    a = g.pick(lambda v: is_float(v) and rank_of(v) >= 1)
    if a is None:
        return False
    dim = g.rng.randrange(-rank_of(a), rank_of(a))
    name, expr = g.rng.choice([("softmax", f"torch.softmax({{0}}, {dim})"),
                               ("softmax_f", f"F.softmax({{0}}, dim={dim})"),
                               ("log_softmax", f"F.log_softmax({{0}}, dim={dim})"),
                               ("softmax_method", f"{{0}}.softmax({dim})")])
    return g.emit(name, expr, [a])


def _norm(g: Gen) -> bool:
    a = g.pick(lambda v: is_float(v) and rank_of(v) >= 1)
    if a is None:
        return False
    r = g.rng.random()
    if r < 0.5:
        last = list(a.t[0].shape[-1:]) if rank_of(a) < 2 or g.rng.random() < 0.7 \
            else list(a.t[0].shape[-2:])
        if list(a.t[1].shape[-len(last):]) != last:
            return False
        if g.rng.random() < 0.7:
            w, b = g.param(last), g.param(last)
            return g.emit("layer_norm", f"F.layer_norm({{0}}, {last}, {{1}}, {{2}})", [a, w, b])
        return g.emit("layer_norm_noaffine", f"F.layer_norm({{0}}, {last}, eps=1e-3)", [a])
    if rank_of(a) < 2:
        return False
    c = a.t[0].shape[1]
    if a.t[1].shape[1] != c:
        return False
    if r < 0.85:
        rm, rv = g.param([c]), g.param([c], "pos")
        w, b = g.param([c]), g.param([c])
        return g.emit("batch_norm", "F.batch_norm({0}, {1}, {2}, {3}, {4}, training=False)",
                      [a, rm, rv, w, b])
    groups = g.rng.choice([x for x in (1, 2, c) if c % x == 0])
    w, b = g.param([c]), g.param([c])
    return g.emit("group_norm", f"F.group_norm({{0}}, {groups}, {{1}}, {{2}})", [a, w, b])


def _shape(g: Gen) -> bool:
    a = g.pick(lambda v: rank_of(v) >= 1)
    if a is None:
        return False
    nd = rank_of(a)
    s0 = list(a.t[0].shape)
    r = g.rng.random()
    d = g.rng.randrange(nd)
    if r < 0.15:
        perm = list(range(nd))
        g.rng.shuffle(perm)
        return g.emit("permute", f"{{0}}.permute({', '.join(map(str, perm))})", [a],
                      exact=a.exact)
    if r < 0.27 and nd >= 2:
        d2 = g.rng.randrange(nd)
        return g.emit("transpose", g.rng.choice([f"{{0}}.transpose({d}, {d2})",
                                                 f"torch.transpose({{0}}, {d}, {d2})"]), [a],
                      exact=a.exact)
    if r < 0.37:
        return g.emit("unsqueeze", f"{{0}}.unsqueeze({g.rng.randrange(-nd - 1, nd + 1)})", [a],
                      exact=a.exact)
    if r < 0.45:
        ones = [i for i, s in enumerate(s0) if s == 1]
        if ones:
            return g.emit("squeeze_dim", f"{{0}}.squeeze({g.rng.choice(ones)})", [a],
                          exact=a.exact)
        return g.emit("squeeze", "torch.squeeze({0})", [a], exact=a.exact)
    if r < 0.55 and nd >= 2:
        start = g.rng.randrange(nd - 1)
        return g.emit("flatten", f"{{0}}.flatten({start}, {start + 1})"
                      if g.rng.random() < 0.6 else "torch.flatten({0}, 1)", [a], exact=a.exact)
    if r < 0.75:
        # Reshape that keeps the batch dimension symbolic: split or merge the last dims.
        last = s0[-1]
        divs = [k for k in (2, 3, 4) if last % k == 0 and last > k]
        verb = g.rng.choice(["reshape", "view"])
        if divs and g.rng.random() < 0.5:
            k = g.rng.choice(divs)
            return g.emit(verb, f"{{0}}.{verb}(*{{0}}.shape[:-1], {k}, {last // k})"
                          if g.rng.random() < 0.5 else
                          f"{{0}}.{verb}(-1, {k}, {last // k})", [a], exact=a.exact)
        if nd >= 2:
            return g.emit(verb, f"{{0}}.{verb}(-1, {s0[-1] * s0[-2]})"
                          if g.rng.random() < 0.5 else f"{{0}}.{verb}({{0}}.shape[0], -1)",
                          [a], exact=a.exact)
        return g.emit("reshape", "{0}.reshape(-1, 1)", [a], exact=a.exact)
    if r < 0.82:
        ones = [i for i, s in enumerate(s0) if s == 1]
        if not ones:
            return False
        i = g.rng.choice(ones)
        shape = ["-1"] * nd
        shape[i] = str(g.rng.choice([2, 3]))
        return g.emit("expand", f"{{0}}.expand({', '.join(shape)})", [a], exact=a.exact)
    if r < 0.9 and nd == 2:
        return g.emit("t", "{0}.t()", [a], exact=a.exact)
    if r < 0.95:
        return g.emit("contiguous", "{0}.transpose(0, -1).contiguous()", [a], exact=a.exact)
    return g.emit("flip", f"torch.flip({{0}}, [{d}])", [a], exact=a.exact, converted=False)


def _slice(g: Gen) -> bool:
    a = g.pick(lambda v: rank_of(v) >= 1)
    if a is None:
        return False
    nd = rank_of(a)
    d = g.rng.randrange(nd)
    size = min(a.t[0].shape[d], a.t[1].shape[d])
    pre = ":, " * d
    r = g.rng.random()
    if r < 0.3:
        lo = g.rng.randrange(0, max(1, size))
        hi = g.rng.choice([None, lo + 1, lo + 2, -1])
        step = g.rng.choice([1, 1, 2])
        hi_s = "" if hi is None else str(hi)
        step_s = "" if step == 1 else f":{step}"
        return g.emit("slice", f"{{0}}[{pre}{lo}:{hi_s}{step_s}]", [a], exact=a.exact)
    if r < 0.45:
        i = g.rng.randrange(-size, size)
        return g.emit("select", f"{{0}}[{pre}{i}]" if g.rng.random() < 0.5
                      else f"{{0}}.select({d}, {i})", [a], exact=a.exact)
    if r < 0.55:
        return g.emit("slice_neg", "{0}[..., -2:]", [a], exact=a.exact)
    if r < 0.65 and size > 1:
        return g.emit("narrow", f"torch.narrow({{0}}, {d}, 1, {size - 1})", [a], exact=a.exact)
    if r < 0.75:
        n = g.rng.choice([2, 3])
        i = g.rng.randrange(n)
        return g.emit("chunk", f"{{0}}.chunk({n}, {d})[{i}]", [a], exact=a.exact)
    if r < 0.82:
        return g.emit("none_index", "{0}[None, ..., None]", [a], exact=a.exact)
    # Indexing with an index tensor (ember does not convert gather-like indexing).
    n0 = a.t[0].shape[d]
    if a.t[1].shape[d] != n0:
        return False
    idx = g.new_tensor(([3], [3]), "index", False, high=n0)
    if g.rng.random() < 0.5:
        return g.emit("index_select", f"torch.index_select({{0}}, {d}, {{1}})", [a, idx],
                      exact=a.exact, converted=False)
    return g.emit("tensor_index", f"{{0}}[{pre}{{1}}]", [a, idx], exact=a.exact,
                  converted=False)


def _cat(g: Gen) -> bool:
    a = g.pick(lambda v: rank_of(v) >= 1 and not is_bool(v))
    if a is None:
        return False
    nd = rank_of(a)
    d = g.rng.randrange(-nd, nd)

    def fits(v: Val) -> bool:
        if rank_of(v) != nd or v.t[0].dtype != a.t[0].dtype:
            return False
        return all(i == d % nd or v.t[c].shape[i] == a.t[c].shape[i]
                   for c in (0, 1) for i in range(nd))
    b = g.pick(fits) or a
    if g.rng.random() < 0.7:
        n = g.rng.choice([2, 3])
        args = [a, b, a][:n]
        body = ", ".join(f"{{{i}}}" for i in range(n))
        return g.emit("cat", f"torch.cat([{body}], dim={d})", args,
                      exact=a.exact and b.exact)
    if b.t[0].shape != a.t[0].shape or b.t[1].shape != a.t[1].shape:
        b = a
    return g.emit("stack", f"torch.stack([{{0}}, {{1}}], dim={g.rng.randrange(nd + 1)})",
                  [a, b], exact=a.exact and b.exact)


def _embedding(g: Gen) -> bool:
    rows = g.rng.choice([5, 10])
    dim = g.rng.choice([4, 8])
    idx = g.new_tensor(([BATCH[0], 3], [BATCH[1], 3]), "index", False, high=rows)
    table = g.param([rows, dim])
    return g.emit("embedding", "F.embedding({0}, {1})", [idx, table], exact=True)


def _attention(g: Gen) -> bool:
    a = g.pick(lambda v: is_float(v) and rank_of(v) in (3, 4))
    if a is None:
        return False
    causal = g.rng.random() < 0.5
    return g.emit("sdpa", f"F.scaled_dot_product_attention({{0}}, {{0}} * 0.5, {{0}}, "
                          f"is_causal={causal})", [a])


_GENERATORS: list[tuple[Callable[[Gen], bool], float]] = [
    (_unary, 4.0), (_int_unary, 1.0), (_binary, 4.0), (_compare, 1.0), (_logical, 0.5),
    (_where, 1.0), (_cast, 1.0), (_matmul, 2.0), (_conv, 1.2), (_pool, 0.8), (_reduce, 2.0),
    (_softmax, 1.0), (_norm, 1.2), (_shape, 3.0), (_slice, 2.0), (_cat, 1.0),
    (_embedding, 0.2), (_attention, 0.3),
]


def _initial(g: Gen) -> None:
    for _ in range(g.rng.choice([1, 1, 2, 3])):
        r = g.rng.random()
        if r < 0.25:
            rest = [g.rng.choice([2, 3, 4]), g.rng.choice([4, 6, 8]), g.rng.choice([4, 6, 8])]
        else:
            rest = [g.rng.choice(SIZES) for _ in range(g.rng.choice([0, 1, 1, 2, 2, 3]))]
        batched = g.rng.random() < 0.85
        s0 = ([BATCH[0]] if batched else []) + rest
        s1 = ([BATCH[1]] if batched else []) + rest
        if not s0:
            s0, s1 = [4], [4]
        kind = g.rng.choices(["randn", "randint", "mask"], [0.8, 0.12, 0.08])[0]
        g.new_tensor((s0, s1), kind, False)


def generate(seed: int, converted_only: bool = False) -> Program:
    """The random program of this seed (deterministic)."""
    g = Gen(seed, converted_only)
    _initial(g)
    n_ops = g.rng.randint(3, 15)
    funcs = [f for f, _ in _GENERATORS]
    weights = [w for _, w in _GENERATORS]
    tries = 0
    while len(g.ops) < n_ops and tries < 400:
        tries += 1
        f = g.rng.choices(funcs, weights)[0]
        f(g)
    used = {a for op in g.ops for a in op.args}
    sinks = [op.out for op in g.ops if op.out not in used]
    outputs = sinks[-4:] if sinks else [g.vals[-1].name]
    prog = Program(seed, list(g.tensors), list(g.ops), outputs, converted_only)
    return prune(prog)


def prune(prog: Program) -> Program:
    """Drops operations and tensors that no output depends on."""
    live = set(prog.outputs)
    ops = []
    for op in reversed(prog.ops):
        if op.out in live:
            ops.append(op)
            live.update(op.args)
    ops.reverse()
    tensors = [t for t in prog.tensors if t.name in live]
    return Program(prog.seed, tensors, ops, list(prog.outputs), prog.converted_only)

