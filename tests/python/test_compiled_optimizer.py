"""Optimizer steps compiled with ember: ``torch.compile(optimizer.step, backend="ember")``
for SGD with momentum (and Nesterov, weight decay) and AdamW (amsgrad off and on), with
the single-tensor step (the default on the CPU) and ``foreach=True`` (the _foreach_*
operators). Dynamo puts the parameters and the optimizer's state in the graph as tensor
attributes that the step updates in place; ember writes them back. Ten steps are compared
with the same steps in eager PyTorch."""

from __future__ import annotations

import warnings
from unittest import mock

import pytest
import torch
from torch import nn

import ember.torch
from ember.torch import report
from ember.torch.phases import wrap
from ember.torch.report import EagerFallbackWarning

OPTIONS = {"progress": False}
STEPS = 10


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _sgd(params, **kw):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.01, **kw)


def _sgd_nesterov(params, **kw):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True,
                           **kw)


def _adamw(params, **kw):
    return torch.optim.AdamW(params, lr=0.01, weight_decay=0.05, **kw)


def _adamw_amsgrad(params, **kw):
    return torch.optim.AdamW(params, lr=0.01, weight_decay=0.05, amsgrad=True, **kw)


OPTIMIZERS = {"SGD": _sgd, "SGD nesterov": _sgd_nesterov, "AdamW": _adamw,
              "AdamW amsgrad": _adamw_amsgrad}
FOREACH = {"single-tensor": {}, "foreach": {"foreach": True}}


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 4))


def _run(model, step, steps=STEPS):
    """`steps` steps with the same gradients for every model (drawn from a fixed seed, not
    computed from the parameters: what is compared is the step itself)."""
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for p in model.parameters():
            p.grad = torch.randn(p.shape, generator=gen)
        step()


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def _compare(model, opt, reference, ref_opt, tol, what):
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        assert _rel(p.detach(), q.detach()) <= tol, f"{what}: parameter {name}"
        state, ref_state = opt.state[p], ref_opt.state[q]
        assert state.keys() == ref_state.keys()
        for key in state:
            assert _rel(state[key], ref_state[key]) <= tol, f"{what}: {key} of {name}"


@pytest.mark.parametrize("foreach", sorted(FOREACH))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_compiled_step_matches_eager(name, foreach):
    """Ten steps in ember against ten steps of the same graphs run by PyTorch (Dynamo's
    "eager" backend) within 1e-6 relative, and against the eager optimizer: SGD within
    1e-6, AdamW within 1e-5 (a compiled AdamW, whatever the backend, computes its bias
    corrections 1 - beta ** step from the float32 step tensor; eager AdamW in float64)."""
    make, kw = OPTIMIZERS[name], FOREACH[foreach]
    models = [_model() for _ in range(3)]
    opts = [make(m.parameters(), **kw) for m in models]
    ember_step = torch.compile(opts[0].step, backend="ember", options=OPTIONS)
    graph_step = torch.compile(opts[1].step, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error", EagerFallbackWarning)
        warnings.filterwarnings("error", message=".*ember")
        with mock.patch.object(wrap.CompiledSegment, "__call__", autospec=True,
                               side_effect=wrap.CompiledSegment.__call__) as calls:
            _run(models[0], ember_step)
    assert calls.call_count >= STEPS  # every step ran in ember
    _run(models[1], graph_step)
    _run(models[2], opts[2].step)
    _compare(models[0], opts[0], models[1], opts[1], 1e-6, "against the same graphs")
    tol = 1e-6 if name.startswith("SGD") else 1e-5
    _compare(models[0], opts[0], models[2], opts[2], tol, "against eager")


@pytest.mark.parametrize("foreach", sorted(FOREACH))
@pytest.mark.parametrize("name", ["SGD nesterov", "AdamW amsgrad"])
def test_dryrun_reports_the_whole_step_in_ember(name, foreach, capsys):
    """Every operator of the step's graphs converts: only the write-backs of the updated
    parameters and state run in PyTorch."""
    report.dryrun_reports.clear()
    model = _model()
    opt = OPTIMIZERS[name](model.parameters(), **FOREACH[foreach])
    step = torch.compile(opt.step, backend="ember", options=dict(OPTIONS, dryrun=True))
    _run(model, step, steps=2)
    assert report.dryrun_reports
    for analysis in report.dryrun_reports:
        assert analysis.percent == 100.0, capsys.readouterr().out


def test_unconvertible_foreach_operator_falls_back_with_the_warning():
    """A _foreach_ operator ember cannot convert runs in PyTorch with the usual warning,
    and the step stays exact."""
    from ember.torch import registry

    saved = {k: list(v) for k, v in registry._REGISTRY.table.items()}
    try:
        registry.remove(torch._foreach_add_)
        models = [_model() for _ in range(2)]
        opts = [_sgd(m.parameters(), foreach=True) for m in models]
        step = torch.compile(opts[0].step, backend="ember", options=OPTIONS)
        with pytest.warns(EagerFallbackWarning, match="_foreach_add_"):
            _run(models[0], step, steps=3)
        _run(models[1], opts[1].step, steps=3)
        _compare(models[0], opts[0], models[1], opts[1], 1e-6, "with a fallback")
    finally:
        registry._REGISTRY.table.clear()
        registry._REGISTRY.table.update(saved)


def test_updated_tensor_attribute_is_written_back():
    """A tensor attribute of the graph (a get_attr node, as Dynamo gives an optimizer's
    parameters and state) that the graph updates in place changes as in eager PyTorch, call
    after call; a second get_attr of it reads the updated value."""
    import operator

    class Counter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("total", torch.zeros(3))

        def forward(self, x):
            self.total.mul_(0.5).add_(x.sum(0))
            return (self.total * 2,)

    graph = torch.fx.Graph()  # forward's graph, one get_attr per read of self.total
    x = graph.placeholder("x")
    halved = graph.call_method("mul_", (graph.get_attr("total"), 0.5))
    graph.call_method("add_", (halved, graph.call_method("sum", (x, 0))))
    graph.output((graph.call_function(operator.mul, (graph.get_attr("total"), 2)),))
    gm = torch.fx.GraphModule(Counter(), graph)
    reference = Counter()
    compiled = ember.torch.ember_backend(gm, [torch.randn(4, 3)], options=OPTIONS)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*could not compile")
        for i in range(3):
            x = torch.randn(4, 3) + i
            torch.testing.assert_close(compiled(x), reference(x))
            torch.testing.assert_close(gm.total, reference.total)
