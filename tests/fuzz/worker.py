"""The worker process: runs programs eagerly and through ember, and judges them.

Reads one JSON request per line on stdin ({"program", "modes", "strict"}) and answers one
JSON line on its original stdout (everything printed while running goes to stderr). The
parent (``runner.Worker``) restarts it after a crash or a hang.
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
import warnings
from typing import Any

import torch

from tests.fuzz.program import CHECK_SOURCE, Program

_FALLBACK = re.compile(r"ember: (\d+) of (\d+) operators")
_INTERNAL = ("This is a bug in ember", "ember failed to run", "ember could not compile")


def _is_strict_error(e: BaseException) -> bool:
    from ember.torch import registry

    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, registry.UnsupportedOperatorsError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "(strict mode)" in str(e)


def _short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text[:4000]


def _fails_without_ember(model: Any, ns: dict[str, Any], mode: str, config: int) -> bool:
    """Whether torch.compile with the "eager" backend (Dynamo's tracing, no ember) raises on
    the program too: then the exception is torch's, not a finding about ember."""
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="eager", dynamic=(mode == "dynamic"))
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled(*ns["make_inputs"](config))
    except Exception:
        return True
    finally:
        torch._dynamo.reset()
    return False


def run_program(prog: Program, modes: list[str], strict: bool) -> dict[str, Any]:
    """{"class": ok|mismatch|exception|internal|strict|invalid, "mode", "detail",
    "fallback": bool, "eager_ops": int, "graph_ops": int}."""
    ns: dict[str, Any] = {}
    exec(compile(prog.to_source() + CHECK_SOURCE, f"<fuzz seed {prog.seed}>", "exec"), ns)
    result: dict[str, Any] = {"class": "ok", "mode": "", "detail": "", "fallback": False,
                              "eager_ops": 0, "graph_ops": 0}
    model = ns["Model"]().eval()
    for mode in modes:
        torch._dynamo.reset()
        options = {"strict": True} if strict else {}
        compiled = torch.compile(model, backend="ember", dynamic=(mode == "dynamic"),
                                 options=options)
        for config in [0] if mode == "static" else [0, 1]:
            with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    expected = model(*ns["make_inputs"](config))
                except Exception as e:
                    return {**result, "class": "invalid", "mode": mode,
                            "detail": f"eager failed: {_short(e)}"}
                try:
                    actual = compiled(*ns["make_inputs"](config))
                except Exception as e:
                    cls = "strict" if strict and _is_strict_error(e) else "exception"
                    detail = _short(e) + "\n" + "".join(traceback.format_exc(limit=-6))[-3000:]
                    if cls == "exception" and _fails_without_ember(model, ns, mode, config):
                        # Dynamo itself fails on it (seed 2754: a view of batch_norm's
                        # output that torch's fake tensors stride apart from eager's).
                        return {**result, "class": "invalid", "mode": mode,
                                "detail": "torch.compile(backend='eager') fails too: " + detail}
                    return {**result, "class": cls, "mode": mode, "detail": detail}
            for w in caught:
                text = str(w.message)
                m = _FALLBACK.search(text)
                if m and mode == modes[0]:
                    result["fallback"] = True
                    result["eager_ops"] += int(m.group(1))
                    result["graph_ops"] += int(m.group(2))
                if any(k in text for k in _INTERNAL) and result["class"] == "ok":
                    result.update({"class": "internal", "mode": mode, "detail": text[:4000]})
            why = ns["compare"](actual, expected)
            if why is not None:
                reference = ns["float64_reference"](model, ns["make_inputs"](config))
                why = ns["compare"](actual, expected, reference)
            if why is not None:
                return {**result, "class": "mismatch", "mode": mode,
                        "detail": f"config {config}: {why}"}
    return result


def main() -> int:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # prints from ember go to stderr
    torch.set_num_threads(1)
    import ember.torch  # noqa: F401  (registers the backend for a source checkout)

    for line in sys.stdin:
        req = json.loads(line)
        prog = Program.from_json(req["program"])
        try:
            res = run_program(prog, req["modes"], req["strict"])
        except Exception as e:  # the harness itself failed: report, keep serving
            res = {"class": "invalid", "mode": "", "detail": f"harness: {_short(e)}\n"
                   + traceback.format_exc()[-3000:], "fallback": False, "eager_ops": 0,
                   "graph_ops": 0}
        out.write(json.dumps(res) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
