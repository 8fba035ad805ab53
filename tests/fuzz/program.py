"""Random programs: the data structure and the standalone source (the generator is in
generate.py).

A Program is a list of tensor specs (function inputs and module parameters, each made from
its own seed) and a list of operations. An operation is a Python expression template
(``"torch.relu({0})"``) over earlier values, so the same Program is

- run in eager and compiled (``to_source()`` defines ``Model`` and ``make_inputs``), and
- written as a standalone repro script (``to_script()``: the source plus a check).

The generator evaluates every candidate operation eagerly on the real tensors of both input
configurations (config 0 and config 1, where the batch dimension differs) and keeps it only
if PyTorch accepts it for both, so every program is valid by construction and its shapes are
exactly PyTorch's. Seeds make programs reproducible: ``generate(seed)`` is deterministic.
"""

from __future__ import annotations

import dataclasses
import json

# Sizes of the batch dimension in the two configurations (other dimensions avoid them, so
# Dynamo's duck sizing does not tie a static size to the batch).
BATCH = (5, 7)
SIZES = (1, 2, 3, 4, 6, 8)
MAX_NUMEL = 6000


@dataclasses.dataclass
class TensorSpec:
    """A function input (``param=False``) or a module parameter; made from its own seed."""

    name: str
    shapes: tuple[list[int], list[int]]  # config 0, config 1 (equal for parameters)
    kind: str  # randn | randint | mask | pos | index
    seed: int
    high: int = 8  # randint: [-high, high); index: [0, high)
    param: bool = False


@dataclasses.dataclass
class Op:
    """``out = expr.format(*args)``; ``converted``: an operator ember converts."""

    name: str
    expr: str
    args: list[str]
    out: str
    shapes: tuple[list[int], list[int]]
    dtype: str
    converted: bool = True
    exact: bool = False  # the value is computed without rounding (values.Val.exact)


@dataclasses.dataclass
class Program:
    seed: int
    tensors: list[TensorSpec]
    ops: list[Op]
    outputs: list[str]
    converted_only: bool = False

    # ---- serialization ---------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @staticmethod
    def from_json(text: str) -> Program:
        d = json.loads(text)
        tensors = [TensorSpec(**{**t, "shapes": tuple(t["shapes"])}) for t in d["tensors"]]
        ops = [Op(**{**o, "shapes": tuple(o["shapes"])}) for o in d["ops"]]
        return Program(d["seed"], tensors, ops, d["outputs"], d["converted_only"])

    # ---- queries ---------------------------------------------------------------------
    def inputs(self) -> list[TensorSpec]:
        return [t for t in self.tensors if not t.param]

    def params(self) -> list[TensorSpec]:
        return [t for t in self.tensors if t.param]

    def op_names(self) -> list[str]:
        return [op.name for op in self.ops]

    def unconverted(self) -> list[str]:
        return [op.name for op in self.ops if not op.converted]

    # ---- source ----------------------------------------------------------------------
    def _ref(self, name: str) -> str:
        return f"self.{name}" if any(t.name == name and t.param for t in self.tensors) else name

    def to_source(self) -> str:
        """Python source defining ``Model`` (a torch.nn.Module) and ``make_inputs(config)``."""
        lines = [
            "import torch",
            "import torch.nn.functional as F",
            "",
            "",
            "def make(shape, kind, seed, high):",
            "    g = torch.Generator().manual_seed(seed)",
            "    if kind == 'randn':",
            "        return torch.randn(shape, generator=g)",
            "    if kind == 'pos':",
            "        return torch.rand(shape, generator=g) + 0.5",
            "    if kind == 'mask':",
            "        return torch.rand(shape, generator=g) > 0.5",
            "    if kind == 'index':",
            "        return torch.randint(0, high, shape, generator=g)",
            "    return torch.randint(-high, high, shape, generator=g)",
            "",
            "",
            "class Model(torch.nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
        ]
        for t in self.params():
            lines.append(f"        self.{t.name} = torch.nn.Parameter(make({t.shapes[0]}, "
                         f"{t.kind!r}, {t.seed}, {t.high}), requires_grad=False)")
        if not self.params():
            lines.append("        pass")
        args = ", ".join(["self"] + [t.name for t in self.inputs()])
        lines += ["", f"    def forward({args}):"]
        for op in self.ops:
            expr = op.expr.format(*[self._ref(a) for a in op.args])
            note = "" if op.converted else "  # not converted by ember"
            lines.append(f"        {op.out} = {expr}{note}")
        outs = ", ".join(self._ref(o) for o in self.outputs)
        lines.append(f"        return ({outs},)")
        lines += ["", "", "def make_inputs(config):"]
        if not self.inputs():
            lines.append("    return []")
        else:
            lines.append("    return [")
            for t in self.inputs():
                lines.append(f"        make({t.shapes[0]} if config == 0 else {t.shapes[1]}, "
                             f"{t.kind!r}, {t.seed} + 1000003 * config, {t.high}),")
            lines.append("    ]")
        return "\n".join(lines) + "\n"

    def to_script(self, modes: list[str], strict: bool, header: str = "") -> str:
        """A standalone repro script: exits 1 (printing why) while the failure persists."""
        doc = header.strip().replace('"""', "'''")
        return (f'"""{doc}\n"""\n' if doc else "") + self.to_source() + "\n\n" + _CHECK + (
            f"\n\nif __name__ == '__main__':\n"
            f"    raise SystemExit(main({modes!r}, strict={strict!r}))\n")


# Shared by the worker (exec'd) and the repro scripts (pasted), so both judge alike.
CHECK_SOURCE = '''
def compare(actual, expected, reference=None):
    """None if ember's outputs match eager's, else what differs. Floats: rtol 1e-4 and
    atol 1e-4 scaled by the output's largest magnitude (1e-2 for 16-bit floats), NaN equal
    to NaN; integers and booleans exactly. reference: the same program's outputs in float64
    (float64_reference), or None; a float element that differs from eager's is right if it
    matches the float64 one (eager's float32 rounding moved it: gelu(-5.8) is -2e-8, and
    eager's float32 gelu gives +0.0, which atan2 then turns into pi instead of -pi)."""
    import torch
    if type(actual) is not type(expected) and not (
            isinstance(actual, (tuple, list)) and isinstance(expected, (tuple, list))):
        return f"type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            return f"{len(actual)} outputs != {len(expected)}"
        refs = reference if isinstance(reference, (tuple, list)) and len(reference) == len(
            expected) else [None] * len(expected)
        for i, (a, e, r) in enumerate(zip(actual, expected, refs)):
            why = compare(a, e, r)
            if why is not None:
                return f"output {i}: {why}"
        return None
    if not isinstance(expected, torch.Tensor):
        return None if actual == expected else f"{actual!r} != {expected!r}"
    if actual.shape != expected.shape:
        return f"shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} != {expected.dtype}"
    if not expected.is_floating_point():
        bad = actual != expected
        if bool(bad.any()):
            i = int(bad.flatten().nonzero()[0])
            return (f"{int(bad.sum())} of {bad.numel()} elements differ, e.g. flat index {i}: "
                    f"{actual.flatten()[i].item()} != {expected.flatten()[i].item()}")
        return None
    a, e = actual.double(), expected.double()
    tol = 1e-2 if expected.dtype in (torch.float16, torch.bfloat16) else 1e-4
    finite = e[torch.isfinite(e)]
    scale = max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
    ok = torch.isclose(a, e, rtol=tol, atol=tol * scale, equal_nan=True)
    if isinstance(reference, torch.Tensor) and reference.shape == expected.shape:
        ok |= torch.isclose(a, reference.double(), rtol=tol, atol=tol * scale, equal_nan=True)
    if not bool(ok.all()):
        i = int((~ok).flatten().nonzero()[0])
        err = float(((a - e).abs() / (e.abs() + scale)).nan_to_num(float("inf")).max())
        return (f"{int((~ok).sum())} of {ok.numel()} elements differ (max error {err:.3g}), "
                f"e.g. flat index {i}: {a.flatten()[i].item()!r} != {e.flatten()[i].item()!r}"
                + ("" if reference is None else " (and from float64's)"))
    return None


def float64_reference(model, inputs):
    """The model's outputs in float64 (a copy of it, float inputs cast), or None where the
    program does not run in float64."""
    import copy
    import torch
    try:
        with torch.no_grad():
            return copy.deepcopy(model).double()(
                *[x.double() if x.is_floating_point() else x for x in inputs])
    except Exception:
        return None
'''

_CHECK = CHECK_SOURCE.strip() + '''


def main(modes, strict=False):
    import warnings
    failed = False
    for mode in modes:
        torch._dynamo.reset()
        model = Model().eval()
        options = {"strict": True} if strict else {}
        compiled = torch.compile(model, backend="ember", dynamic=(mode == "dynamic"),
                                 options=options)
        for config in ([0] if mode == "static" else [0, 1]):
            inputs = make_inputs(config)
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("always")
                expected = model(*make_inputs(config))
                actual = compiled(*inputs)
            why = compare(actual, expected)
            if why is not None:
                why = compare(actual, expected, float64_reference(model, make_inputs(config)))
            print(f"{mode} config {config}: {why or 'ok'}")
            failed = failed or why is not None
    return 1 if failed else 0
'''
