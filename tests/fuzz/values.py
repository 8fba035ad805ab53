"""The generator's state: values drawn so far with their eager tensors for both input
configurations (``Val``), the program being built (``Gen``), and predicates on values.
"""

from __future__ import annotations

import dataclasses
import random
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

from tests.fuzz.program import MAX_NUMEL, Op, TensorSpec


@dataclasses.dataclass
class Val:
    name: str
    t: tuple[torch.Tensor, torch.Tensor]
    exact: bool  # computed without rounding (safe to compare, cast to int, argmax)
    param: bool = False


class Gen:
    def __init__(self, seed: int, converted_only: bool) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.converted_only = converted_only
        self.vals: list[Val] = []
        self.tensors: list[TensorSpec] = []
        self.ops: list[Op] = []
        self.counter = 0

    # ---- values ----------------------------------------------------------------------
    def new_tensor(self, shapes: tuple[list[int], list[int]], kind: str, param: bool,
                   high: int = 8) -> Val:
        name = f"{'p' if param else 'x'}{len(self.tensors)}"
        spec = TensorSpec(name, (list(shapes[0]), list(shapes[1])), kind,
                          self.rng.randrange(1, 2**31), high, param)
        self.tensors.append(spec)
        t0 = make_tensor(spec, 0)
        t1 = t0 if param else make_tensor(spec, 1)
        v = Val(name, (t0, t1), exact=True, param=param)
        self.vals.append(v)
        return v

    def param(self, shape: list[int], kind: str = "randn") -> Val:
        return self.new_tensor((shape, shape), kind, True)

    def pick(self, pred: Callable[[Val], bool]) -> Val | None:
        """A non-parameter value satisfying pred, preferring recent ones."""
        cands = [v for v in self.vals if not v.param and pred(v)]
        if not cands:
            return None
        weights = [1.0 + 3.0 * i for i in range(len(cands))]
        return self.rng.choices(cands, weights)[0]

    def emit(self, name: str, expr: str, args: list[Val], exact: bool = False,
             converted: bool = True) -> bool:
        """Evaluates expr on both configurations; keeps the operation if torch accepts it."""
        if self.converted_only and not converted:
            return False
        outs = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # degenerate calls (var of one row) are out
                for c in (0, 1):
                    env: dict[str, Any] = {"torch": torch, "F": F}
                    env.update({v.name: v.t[c] for v in args})
                    outs.append(eval(expr.format(*[v.name for v in args]), env))
        except Exception:
            return False
        o0, o1 = outs
        if not (isinstance(o0, torch.Tensor) and isinstance(o1, torch.Tensor)):
            return False
        if o0.dim() != o1.dim() or max(o0.numel(), o1.numel()) > MAX_NUMEL:
            return False
        if o0.dtype.is_complex or o0.numel() == 0 or o1.numel() == 0:
            return False
        out = f"v{self.counter}"
        self.counter += 1
        self.ops.append(Op(name, expr, [v.name for v in args], out,
                           (list(o0.shape), list(o1.shape)), str(o0.dtype).split(".")[-1],
                           converted, exact))
        self.vals.append(Val(out, (o0, o1), exact))
        return True


def make_tensor(spec: TensorSpec, config: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(spec.seed + 1000003 * config)
    shape = spec.shapes[config]
    if spec.kind == "randn":
        return torch.randn(shape, generator=g)
    if spec.kind == "pos":
        return torch.rand(shape, generator=g) + 0.5
    if spec.kind == "mask":
        return torch.rand(shape, generator=g) > 0.5
    if spec.kind == "index":
        return torch.randint(0, spec.high, shape, generator=g)
    return torch.randint(-spec.high, spec.high, shape, generator=g)


def is_float(v: Val) -> bool:
    return v.t[0].dtype == torch.float32


def is_int(v: Val) -> bool:
    return v.t[0].dtype in (torch.int64, torch.int32)


def is_bool(v: Val) -> bool:
    return v.t[0].dtype == torch.bool


def rank_of(v: Val) -> int:
    return v.t[0].dim()
