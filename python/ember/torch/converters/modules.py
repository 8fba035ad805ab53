"""Converters for torch.nn modules (FX ``call_module`` nodes, and module calls that Dynamo
inlined when their function-level pieces cannot be converted: see module_calls.py).

Each one reads the module's settings and weights (``self.param``: ember tensors sharing the
weights' memory) and calls the same converter as the functional form.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ember.torch.converters import functions as fn
from ember.torch.converters import nn_functions as nn_fn
from ember.torch.converters import scalar
from ember.torch.converters import tensors as tn
from ember.torch.registry import ModuleConverter, builtin_registrations, register_module


class LinearConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        return fn.linear(input, self.param("weight"), self.param("bias", optional=True))


class Conv2dConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        if m.padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d with padding_mode={m.padding_mode!r}")
        return nn_fn.conv2d(input, self.param("weight"), self.param("bias", optional=True),
                            m.stride, m.padding, m.dilation, m.groups)


class Conv1dConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        if m.padding_mode != "zeros":
            raise NotImplementedError(f"Conv1d with padding_mode={m.padding_mode!r}")
        return nn_fn.conv1d(input, self.param("weight"), self.param("bias", optional=True),
                            m.stride, m.padding, m.dilation, m.groups)


class BatchNormConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        if m.training or not m.track_running_stats:
            raise NotImplementedError("batch norm in training mode")
        return nn_fn.batch_norm(input, self.param("running_mean"), self.param("running_var"),
                                self.param("weight", optional=True),
                                self.param("bias", optional=True), False, m.momentum, m.eps)


class LayerNormConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        return nn_fn.layer_norm(input, m.normalized_shape, self.param("weight", optional=True),
                                self.param("bias", optional=True), m.eps)


class GroupNormConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        return nn_fn.group_norm(input, m.num_groups, self.param("weight", optional=True),
                                self.param("bias", optional=True), m.eps)


class EmbeddingConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        return nn_fn.embedding(input, self.param("weight"), m.padding_idx, m.max_norm)


def activation_converter(function: Any, *attrs: str) -> type[ModuleConverter]:
    """A module converter calling `function(input, *module attributes)`."""
    class Activation(ModuleConverter):
        def __call__(self, input: Any) -> Any:
            return function(input, *(getattr(self.module, a) for a in attrs))

    Activation.__name__ = Activation.__qualname__ = f"{function.__name__}_module"
    return Activation


class DropoutConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        return tn.dropout(input, self.module.p, self.module.training)


class IdentityConverter(ModuleConverter):
    def __call__(self, input: Any, *args: Any, **kwargs: Any) -> Any:
        return input


class FlattenConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        return tn.flatten(input, self.module.start_dim, self.module.end_dim)


class SoftmaxConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        return fn.softmax(input, self.module.dim)


class MaxPool2dConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        return nn_fn.max_pool2d(input, m.kernel_size, m.stride, m.padding, m.dilation,
                                m.ceil_mode, m.return_indices)


class AvgPool2dConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        return nn_fn.avg_pool2d(input, m.kernel_size, m.stride, m.padding, m.ceil_mode,
                                m.count_include_pad, m.divisor_override)


class AdaptiveAvgPool2dConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        return nn_fn.adaptive_avg_pool2d(input, self.module.output_size)


class MaxPool1dConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        return nn_fn.max_pool1d(input, m.kernel_size, m.stride, m.padding, m.dilation,
                                m.ceil_mode, m.return_indices)


class AvgPool1dConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        return nn_fn.avg_pool1d(input, m.kernel_size, m.stride, m.padding, m.ceil_mode,
                                m.count_include_pad)


class AdaptiveAvgPool1dConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        return nn_fn.adaptive_avg_pool1d(input, self.module.output_size)


class UpsampleConverter(ModuleConverter):
    def __call__(self, input: Any) -> Any:
        m = self.module
        return nn_fn.interpolate(input, m.size, m.scale_factor, m.mode, m.align_corners,
                                 getattr(m, "recompute_scale_factor", None))


def _register_all() -> None:
    table = [
        (nn.Linear, LinearConverter), (nn.Conv2d, Conv2dConverter),
        (nn.Conv1d, Conv1dConverter), (nn.BatchNorm1d, BatchNormConverter),
        (nn.BatchNorm2d, BatchNormConverter), (nn.LayerNorm, LayerNormConverter),
        (nn.GroupNorm, GroupNormConverter), (nn.Embedding, EmbeddingConverter),
        (nn.ReLU, activation_converter(fn.relu)), (nn.ReLU6, activation_converter(fn.relu6)),
        (nn.GELU, activation_converter(fn.gelu, "approximate")),
        (nn.SiLU, activation_converter(fn.silu)),
        (nn.Hardswish, activation_converter(fn.hardswish)),
        (nn.Hardsigmoid, activation_converter(fn.hardsigmoid)),
        (nn.Hardtanh, activation_converter(fn.hardtanh, "min_val", "max_val")),
        (nn.LeakyReLU, activation_converter(fn.leaky_relu, "negative_slope")),
        (nn.Sigmoid, activation_converter(scalar.converter("sigmoid"))),
        (nn.Tanh, activation_converter(scalar.converter("tanh"))),
        (nn.Softmax, SoftmaxConverter), (nn.Dropout, DropoutConverter),
        (nn.Identity, IdentityConverter), (nn.Flatten, FlattenConverter),
        (nn.MaxPool2d, MaxPool2dConverter), (nn.AvgPool2d, AvgPool2dConverter),
        (nn.AdaptiveAvgPool2d, AdaptiveAvgPool2dConverter), (nn.Upsample, UpsampleConverter),
        (nn.MaxPool1d, MaxPool1dConverter), (nn.AvgPool1d, AvgPool1dConverter),
        (nn.AdaptiveAvgPool1d, AdaptiveAvgPool1dConverter),
    ]
    with builtin_registrations():
        for module_class, converter in table:
            register_module(module_class)(converter)


_register_all()
