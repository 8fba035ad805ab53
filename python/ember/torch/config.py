"""Settings of the torch.compile backend: ``ember.torch.dynamo_config`` and ``options=``.

Every setting has one name, used three ways:

- ``ember.torch.dynamo_config.<name>(value)`` changes the process-wide default;
- ``torch.compile(model, backend="ember", options={"<name>": value})`` overrides it for
  one compiled model;
- ``torch.compile(..., mode=...)`` sets a few of them at once (``MODES`` below).

Precedence: dynamo_config < mode < options. The settings are read when Dynamo hands a
graph to ember, which happens the first time the compiled model runs, not when
``torch.compile`` is called. Options are validated: an unknown name, or a value of the
wrong kind, is an error that lists what is accepted.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from typing import Any

from ember import building

__all__ = [
    "MODES",
    "DynamoConfig",
    "InvalidOptionError",
    "Settings",
    "dynamo_config",
    "progress_bar",
    "resolve_settings",
]


def _user_error_base() -> type[Exception]:
    try:
        from ember import EmberError

        return EmberError
    except Exception:  # the extension is missing: still raise a clear error
        return RuntimeError


class InvalidOptionError(_user_error_base(), ValueError):  # type: ignore[misc]
    """A setting name or value that ember does not accept; the message lists valid ones."""


_PARALLEL_K_WORDS = ("default", "disabled", "search")


@dataclasses.dataclass(frozen=True)
class Settings:
    """One snapshot of every setting; what a compile uses from start to end."""

    search_space: int = 0
    correctness_report: bool = False
    print_input_graph: bool = False
    use_fp16: bool = False
    use_fp16_reduction: bool = False
    use_bf16: bool = False
    use_cuda_graph: bool = False
    parallel_k: str | int = "default"
    strict: bool = False
    min_block_size: int = 5
    torch_executed_ops: tuple = ()
    dump_dir: str | None = None
    dryrun: bool = False
    progress: bool = True
    profile: bool = False

    @property
    def low_precision(self) -> str | None:
        """'float16', 'bfloat16', or None: the dtype float32 tensors are computed in."""
        if self.use_bf16:
            return "bfloat16"
        if self.use_fp16:
            return "float16"
        return None

    @property
    def static_call(self) -> bool:
        """The static single-call path (use_cuda_graph / mode='reduce-overhead')."""
        return self.use_cuda_graph

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


# What each setting accepts, as (check, description). A check returns the normalized value
# or raises ValueError.
def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    raise ValueError


def _search_space(v: Any) -> int:
    if isinstance(v, int) and not isinstance(v, bool) and v in (0, 1, 2):
        return v
    raise ValueError


def _parallel_k(v: Any) -> str | int:
    if isinstance(v, str) and v in _PARALLEL_K_WORDS:
        return v
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
        return v
    raise ValueError


def _min_block_size(v: Any) -> int:
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
        return v
    raise ValueError


def _dump_dir(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, (str, os.PathLike)) and str(v):
        return os.fspath(v)
    raise ValueError


def _executed_ops(v: Any) -> tuple:
    if v is None:
        return ()
    if isinstance(v, (str, type)) or callable(v):
        v = [v]
    if not isinstance(v, Iterable):
        raise ValueError
    items = tuple(v)
    for item in items:
        if not (isinstance(item, str) or callable(item)):
            raise ValueError
    return items


_CHECKS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "search_space": (_search_space, "0, 1 or 2"),
    "correctness_report": (_bool, "True or False"),
    "print_input_graph": (_bool, "True or False"),
    "use_fp16": (_bool, "True or False"),
    "use_fp16_reduction": (_bool, "True or False"),
    "use_bf16": (_bool, "True or False"),
    "use_cuda_graph": (_bool, "True or False"),
    "parallel_k": (_parallel_k, "'default', 'disabled', 'search' or an int >= 1"),
    "strict": (_bool, "True or False"),
    "min_block_size": (_min_block_size, "an int >= 1"),
    "torch_executed_ops": (
        _executed_ops,
        "a list of targets: functions, torch.Tensor methods, nn.Module classes, ATen "
        "overloads or their public names as strings",
    ),
    "dump_dir": (_dump_dir, "a directory path, or None"),
    "dryrun": (_bool, "True or False"),
    "progress": (_bool, "True or False"),
    "profile": (_bool, "True or False"),
}

# torch.compile's modes, as settings.
MODES: dict[str, dict[str, Any]] = {
    "default": {"search_space": 0},
    "max-autotune": {"search_space": 2},
    "max-autotune-no-cudagraphs": {"search_space": 2},
    "reduce-overhead": {"use_cuda_graph": True},
}


def _check(name: str, value: Any, where: str) -> Any:
    if name not in _CHECKS:
        valid = ", ".join(sorted(_CHECKS))
        raise InvalidOptionError(
            f"{where}: ember has no setting named {name!r}. Valid settings: {valid}. "
            "See docs/torch-backend.md for what each one does."
        )
    check, accepted = _CHECKS[name]
    try:
        return check(value)
    except (ValueError, TypeError):
        raise InvalidOptionError(
            f"{where}: {name}={value!r} is not accepted; {name} takes {accepted}."
        ) from None


def _check_consistent(values: dict[str, Any], where: str) -> None:
    if values.get("use_fp16") and values.get("use_bf16"):
        raise InvalidOptionError(
            f"{where}: use_fp16 and use_bf16 are both on; choose one low precision "
            "(bfloat16 is the fast one on CPU)."
        )


class DynamoConfig:
    """Process-wide defaults of the ember backend. Every setter returns the config, so calls
    chain: ``dynamo_config.search_space(2).correctness_report()``."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = dataclasses.asdict(Settings())

    # ---- setters, one per setting ---------------------------------------------------------
    def _set(self, name: str, value: Any) -> DynamoConfig:
        value = _check(name, value, f"dynamo_config.{name}")
        trial = dict(self._values, **{name: value})
        _check_consistent(trial, f"dynamo_config.{name}")
        self._values = trial
        return self

    def search_space(self, level: int = 2) -> DynamoConfig:
        """0: each kernel's default schedule, no tuning; 1: tune among a few schedules;
        2: tune in a large space (slower to compile, usually faster to run)."""
        return self._set("search_space", level)

    def correctness_report(self, flag: bool = True) -> DynamoConfig:
        """Print, for each graph ember compiles, every node's error against eager PyTorch."""
        return self._set("correctness_report", flag)

    def print_input_graph(self, flag: bool = True) -> DynamoConfig:
        """Print each FX graph Dynamo hands to ember, as a table."""
        return self._set("print_input_graph", flag)

    def use_fp16(self, flag: bool = True) -> DynamoConfig:
        """Compute float32 models in float16 (inputs and outputs stay float32)."""
        return self._set("use_fp16", flag)

    def use_fp16_reduction(self, flag: bool = True) -> DynamoConfig:
        """Allow reductions to accumulate in float16 (no effect on CPU kernels today)."""
        return self._set("use_fp16_reduction", flag)

    def use_bf16(self, flag: bool = True) -> DynamoConfig:
        """Compute float32 models in bfloat16, the fast low precision on CPU."""
        return self._set("use_bf16", flag)

    def use_cuda_graph(self, flag: bool = True) -> DynamoConfig:
        """The static single-call path: one C++ call per run and no per-call checks of the
        weights (see docs/torch-backend.md); it will select CUDA graphs on a CUDA back end."""
        return self._set("use_cuda_graph", flag)

    def parallel_k(self, strategy: str | int = "default") -> DynamoConfig:
        """How matmul and convolution may split their reduction dimension across threads:
        'default', 'disabled', 'search', or a number of parts."""
        return self._set("parallel_k", strategy)

    def strict(self, flag: bool = True) -> DynamoConfig:
        """Fail with one error listing every operator ember cannot convert, instead of running
        those operators in eager PyTorch."""
        return self._set("strict", flag)

    def min_block_size(self, n: int) -> DynamoConfig:
        """When a graph must be split, the fewest operators an ember segment may have."""
        return self._set("min_block_size", n)

    def torch_executed_ops(self, targets: Iterable[Any]) -> DynamoConfig:
        """Targets that always run in eager PyTorch."""
        return self._set("torch_executed_ops", targets)

    def dump_dir(self, path: str | os.PathLike | None) -> DynamoConfig:
        """Write each graph before and after every pass, and the generated sources, here."""
        return self._set("dump_dir", path)

    def dryrun(self, flag: bool = True) -> DynamoConfig:
        """Report operator coverage and the segments, compile nothing, run eagerly."""
        return self._set("dryrun", flag)

    def progress(self, flag: bool = True) -> DynamoConfig:
        """Progress bars on slow phases (shown only on a terminal)."""
        return self._set("progress", flag)

    def profile(self, flag: bool = True) -> DynamoConfig:
        """Print each compiled segment's profile table (time, GFLOP/s and GB/s of every
        kernel against this machine's peaks) on its second call, as EMBER_PROFILE=1 does."""
        return self._set("profile", flag)

    # ---- reading and resetting ------------------------------------------------------------
    def get(self, name: str) -> Any:
        _check(name, self._values.get(name), "dynamo_config.get")
        return self._values[name]

    def settings(self) -> Settings:
        return Settings(**self._values)

    def reset(self) -> DynamoConfig:
        """Every setting back to its default."""
        self._values = dataclasses.asdict(Settings())
        return self

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"DynamoConfig({body})"


dynamo_config = DynamoConfig()


def resolve_settings(
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    base: Settings | None = None,
) -> Settings:
    """The settings for one compile: dynamo_config, then the mode, then the options."""
    values = dataclasses.asdict(base if base is not None else dynamo_config.settings())
    if mode is not None:
        if mode not in MODES:
            valid = ", ".join(repr(m) for m in MODES)
            raise InvalidOptionError(
                f"torch.compile(backend='ember', mode={mode!r}): unknown mode. ember accepts "
                f"{valid} (or no mode)."
            )
        values.update(MODES[mode])
    if options:
        if not isinstance(options, dict):
            raise InvalidOptionError(
                f"torch.compile(backend='ember', options=...): expected a dict, got "
                f"{type(options).__name__}"
            )
        for name, value in options.items():
            values[name] = _check(name, value, "torch.compile(backend='ember', options=...)")
    _check_consistent(values, "ember settings")
    return Settings(**values)


def progress_bar(settings: Settings, total: int, desc: str, unit: str = "it") -> Any:
    """ember.building.progress_bar, on when the settings' progress is."""
    return building.progress_bar(settings.progress, total, desc, unit)
