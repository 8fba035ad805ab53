"""The torch examples run and print what the guides say they print."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ember

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


def run_example(name: str) -> str:
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], capture_output=True,
                         text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_add_operator_mapping_example():
    text = run_example("add_operator_mapping.py")
    parts = text.split("ember cannot convert these operators yet")
    assert len(parts) == 3
    first_listed = parts[1].split("Why")[0]
    for name in ("operator.add", "torch.Tensor.flatten", "torch.nn.functional.linear",
                 "torch.nn.Linear", "torch.nn.functional.relu"):
        assert name in first_listed
    second_listed = parts[2].split("Why")[0]
    assert "torch.Tensor.flatten" in second_listed and "operator.add" not in second_listed
    assert parts[2].count("success!") == 2
    assert "converters of F.relu now: ['relu_again']" in parts[2]


def test_overload_converter_example():
    text = run_example("overload_converter.py")
    assert text.count("using the custom tanh GELU converter") == 1
    assert "tanh approximations agree: True" in text
    before_exact = text.split("exact GELU")[0]
    assert "using the custom tanh GELU converter" in before_exact
    assert "candidates for F.gelu, in order: ['custom_gelu', 'gelu']" in text


@pytest.mark.skipif(not all(hasattr(ember.ops, n) for n in ("conv2d", "batch_norm")),
                    reason="ember.ops lacks conv2d or batch_norm")
def test_torch_quickstart_example():
    text = run_example("torch_quickstart.py")
    assert "opcode" in text and "attention" in text
    assert "dynamic batch sizes 1, 3, 8: match eager" in text
