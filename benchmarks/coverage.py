"""Dry-run coverage of every benchmark model: how many of its operators ember converts and
the segments that result, with static and with dynamic shapes. Compiles nothing.

    python benchmarks/coverage.py [--models a,b] [--small] [--dynamic]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.models import MODELS  # noqa: E402
from ember.torch import report  # noqa: E402


def coverage(name: str, small: bool, dynamic: bool) -> str:
    spec = MODELS[name]
    model = spec.build(small)
    inputs = spec.example_inputs(batch_size=1, small=small)
    torch._dynamo.reset()
    report.dryrun_reports.clear()
    compiled = torch.compile(model, backend="ember", dynamic=dynamic, options={"dryrun": True})
    # The per-graph reports the dry run prints are summarized in one line instead.
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        compiled(*inputs)
    total = sum(a.total for a in report.dryrun_reports)
    converted = sum(a.converted for a in report.dryrun_reports)
    # A graph converted whole is one segment (the report lists segments only after a split).
    segments = sum(len(a.segments) or int(not a.failures) for a in report.dryrun_reports)
    missing = sorted({n for a in report.dryrun_reports for n in a.unconverted})
    pct = 100.0 * converted / total if total else 100.0
    kind = "dynamic" if dynamic else "static"
    return (f"{name:14s} {kind:7s} graphs {len(report.dryrun_reports)}  operators {total:4d}  "
            f"converted {converted:4d} ({pct:5.1f}%)  ember segments "
            f"{segments}  unconverted: {', '.join(missing) or '-'}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--small", action="store_true", help="reduced model sizes")
    p.add_argument("--dynamic", action="store_true", help="also with dynamic=True")
    args = p.parse_args()
    for name in [m for m in args.models.split(",") if m]:
        for dynamic in (False, True) if args.dynamic else (False,):
            print(coverage(name, args.small, dynamic), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
