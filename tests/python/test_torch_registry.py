"""The converter registry: registration forms, candidate order (priority, validators),
replacement, removal, signature errors and public names. These tests convert FX graphs to
ember graphs without compiling them, so they are fast."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import ember
import ember.torch
from ember.torch import registry
from ember.torch.config import Settings
from ember.torch.context import ConversionFailure
from ember.torch.interpreter import FxConverter
from ember.torch.registry import (
    HIGH,
    STANDARD,
    ModuleConverter,
    register_function,
    register_method,
    register_module,
)


@pytest.fixture(autouse=True)
def restore_registry():
    saved = {k: list(v) for k, v in registry._REGISTRY.table.items()}
    forms = dict(registry._REGISTRY.aten_forms)
    yield
    registry._REGISTRY.table.clear()
    registry._REGISTRY.table.update(saved)
    registry._REGISTRY.aten_forms.clear()
    registry._REGISTRY.aten_forms.update(forms)


def convert(fn, *examples, keep_going=False, **settings):
    gm = torch.fx.symbolic_trace(fn)
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    for node, x in zip(placeholders, examples, strict=True):
        node.meta["example_value"] = x
    # symbolic_trace records no results: give each node the eager result, as Dynamo does.
    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            n.meta["example_value"] = out
            return out

    Recorder(gm).run(*examples)
    return FxConverter(gm, list(examples), Settings(**settings), keep_going=keep_going).run()


def converter_names(target):
    return [c.name for c in registry.converters(target)]


# ---- registration forms ------------------------------------------------------------------
def test_function_method_module_and_aten_targets_register():
    @register_function(torch.nn.functional.softsign)
    def softsign(x):
        return x / (ember.ops.abs(x) + 1.0)

    @register_method(torch.Tensor.softmax)
    def my_softmax(self, dim, dtype=None):
        return ember.ops.softmax(self, dim)

    @register_module(nn.Softsign)
    class SoftsignConverter(ModuleConverter):
        def __call__(self, x):
            return softsign(x)

    @register_function(torch.ops.aten.gelu.default)
    def aten_gelu(x, approximate="none"):
        return ember.ops.gelu(x, approximate)

    assert converter_names(F.softsign)[0] == "test_function_method_module_and_aten_targets_" \
        "register.<locals>.softsign"
    assert registry.converters("softmax")[0].fn is my_softmax
    assert registry.converters(torch.Tensor.softmax)[0].fn is my_softmax
    assert registry.converters(nn.Softsign)[0].fn is SoftsignConverter
    assert registry.converters(torch.ops.aten.gelu.default)[0].fn is aten_gelu
    conversion = convert(lambda x: F.softsign(x).softmax(-1), torch.randn(2, 3))
    assert not conversion.failures


def test_registration_errors_are_explained():
    with pytest.raises(ember.EmberError, match="not a torch.Tensor method"):
        register_method("no_such_method")
    with pytest.raises(ember.EmberError, match="register_module"):
        register_function(nn.Linear)
    with pytest.raises(ember.EmberError, match="not an nn.Module class"):
        register_module(torch.relu)
    with pytest.raises(ember.EmberError, match="ModuleConverter"):
        register_module(nn.ReLU)(lambda x: x)
    with pytest.raises(ember.EmberError, match="priority must be"):
        register_function(torch.relu, priority=3)(lambda x: x)


# ---- candidate order -----------------------------------------------------------------------
def test_high_priority_first_standard_appended_default_replaced():
    calls = []

    def make(tag):
        def conv(input, inplace=False):
            calls.append(tag)
            return ember.ops.relu(input)

        conv.__qualname__ = tag
        return conv

    register_function(F.relu, priority=STANDARD)(make("standard"))
    register_function(F.relu)(make("default"))  # replaces ember's default in place
    register_function(F.relu, priority=HIGH)(make("high1"))
    register_function(F.relu, priority=HIGH)(make("high2"))
    assert converter_names(F.relu) == ["high2", "high1", "default", "standard"]
    convert(lambda x: F.relu(x), torch.randn(3))
    assert calls == ["high2"]


def test_last_default_registration_takes_effect():
    register_function(F.relu)(lambda input, inplace=False: ember.ops.relu(input))
    second = register_function(F.relu)(lambda input, inplace=False: ember.ops.relu(input))
    defaults = [c for c in registry.converters(F.relu) if c.is_default]
    assert len(defaults) == 1 and defaults[0].fn is second


def test_validator_decides_between_candidates():
    used = []

    def tanh_only(node, settings):
        return node.kwargs.get("approximate") == "tanh"

    @register_function(F.gelu, priority=HIGH, capability_validator=tanh_only)
    def custom_gelu(input, approximate="none"):
        used.append(approximate)
        return ember.ops.gelu(input, approximate)

    convert(lambda x: F.gelu(x, approximate="tanh"), torch.randn(4))
    assert used == ["tanh"]
    result = convert(lambda x: F.gelu(x), torch.randn(4))
    assert used == ["tanh"] and not result.failures
    gelu_node = next(n for n in result.converted if n.name == "gelu")
    assert result.converted[gelu_node] == "gelu"  # ember's standard converter


def test_validators_see_aten_arguments_for_aten_registrations():
    seen = []

    def validator(node, settings):
        seen.append((node.target, dict(node.kwargs)))
        return node.kwargs.get("approximate") == "tanh"

    @register_function(torch.ops.aten.gelu.default, priority=HIGH, capability_validator=validator)
    def aten_gelu(x, *, approximate="none"):
        return ember.ops.gelu(x, "tanh")

    result = convert(lambda x: F.gelu(x, approximate="tanh"), torch.randn(4))
    node = next(n for n in result.converted if n.name == "gelu")
    assert result.converted[node].endswith("aten_gelu")
    assert seen[0] == (torch.ops.aten.gelu.default, {"approximate": "tanh"})


def test_supports_dynamic_shapes_false_skips_converter_for_symbolic_shapes():
    @register_function(F.relu, priority=HIGH, supports_dynamic_shapes=False)
    def static_relu(input, inplace=False):
        raise AssertionError("must not be used for symbolic shapes")

    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    gm = torch.fx.symbolic_trace(lambda x: F.relu(x))
    fake = FakeTensorMode(shape_env=ShapeEnv()).from_tensor(torch.randn(5, 3),
                                                            static_shapes=False)
    for n in gm.graph.nodes:
        n.meta["example_value"] = fake
    result = FxConverter(gm, [None], Settings()).run()
    (relu_node,) = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert result.converted[relu_node] == "relu"  # ember's standard converter
    assert [isinstance(d, str) for d in result.inputs[0][1].shape] == [True, True]


# ---- errors ----------------------------------------------------------------------------------
def test_no_binding_signature_lists_candidate_signatures():
    registry.remove(F.relu)

    @register_function(F.relu)
    def relu_two(x, y):
        return ember.ops.relu(x)

    with pytest.raises(ConversionFailure) as info:
        convert(lambda x: F.relu(x), torch.randn(3))
    message = str(info.value)
    assert info.value.kind == "signature"
    assert "relu_two(x, y)" in message and "matches no converter's signature" in message


def test_rejection_by_every_validator_is_reported():
    registry.remove(F.relu)
    register_function(F.relu, capability_validator=lambda n, s: False)(
        lambda input, inplace=False: ember.ops.relu(input))
    result = convert(lambda x: F.relu(x) + 1, torch.randn(3), keep_going=True)
    (failure,) = result.failures.values()
    assert failure.kind == "rejected" and "capability_validator returned False" in str(failure)


def test_unmapped_targets_are_all_collected():
    registry.remove(F.relu)
    registry.remove(operator.add)
    result = convert(lambda x: F.relu(x) + x, torch.randn(3), keep_going=True)
    assert sorted(f.kind for f in result.failures.values()) == ["unmapped", "unmapped"]


def test_converter_result_checked_against_torch_shape():
    @register_function(torch.flatten, priority=HIGH)
    def wrong_flatten(input, start_dim=0, end_dim=-1):
        return input  # forgets to flatten

    with pytest.raises(ConversionFailure, match="has shape"):
        convert(lambda x: torch.flatten(x), torch.randn(2, 3))


# ---- removal -------------------------------------------------------------------------------
def test_remove_one_or_all_converters():
    extra = register_function(F.relu, priority=HIGH)(
        lambda input, inplace=False: ember.ops.relu(input))
    removed = registry.remove(F.relu, extra)
    assert [c.fn for c in removed] == [extra]
    assert registry.converters(F.relu)  # ember's default stays
    registry.remove(F.relu)
    assert registry.converters(F.relu) == []
    assert registry.remove(torch.Tensor.flatten)
    assert registry.converters("flatten") == []
    assert registry.remove(nn.Linear)
    assert not registry.has_module_converter(nn.Linear)


def test_module_converter_param_shares_memory():
    lin = nn.Linear(3, 2)
    conv = registry.candidates_for("module", nn.Linear)[0][0].fn(lin)
    w = conv.param("weight")
    assert tuple(w.shape) == (2, 3)
    assert w.torch().data_ptr() == lin.weight.data_ptr()
    assert conv.param("nothing", optional=True) is None
    with pytest.raises(ember.EmberError, match="no parameter or buffer"):
        conv.param("nothing")


def test_call_module_nodes_use_module_converters():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.act = nn.Hardswish()

        def forward(self, x):
            return self.act(self.lin(x))

    net = Net()
    gm = torch.fx.symbolic_trace(net)
    x = torch.randn(2, 4)
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            n.meta["example_value"] = x
    result = FxConverter(gm, [x], Settings()).run()
    assert sorted(result.converted[n] for n in gm.graph.nodes if n.op == "call_module") == [
        "LinearConverter", "hardswish_module"]


# ---- names ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "name"),
    [
        (operator.add, "operator.add"),
        (F.relu, "torch.nn.functional.relu"),
        (torch.relu, "torch.relu"),
        (torch._C._nn.linear, "torch.nn.functional.linear"),
        (torch.Tensor.flatten, "torch.Tensor.flatten"),
        ("flatten", "torch.Tensor.flatten"),
        (nn.Linear, "torch.nn.Linear"),
        (torch.ops.aten.gelu.default, "torch.ops.aten.gelu.default"),
        (torch.ops.aten.gelu, "torch.ops.aten.gelu"),
    ],
)
def test_public_names(target, name):
    assert registry.public_name(target) == name
