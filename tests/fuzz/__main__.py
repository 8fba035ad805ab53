"""Random-program fuzzing of ember's torch.compile backend.

    python -m tests.fuzz --programs 10000 --jobs 2     # a long campaign from seed 0
    python -m tests.fuzz --converted-only --seed 500   # only operators ember converts, strict
    python -m tests.fuzz --show 42                     # print the program of seed 42

Each program runs in eager PyTorch and through torch.compile(backend="ember") under
torch.no_grad(), static and with dynamic=True (a second batch size), in a worker subprocess
with a timeout. Outputs must match eager's (floats within 1e-4; a float element that differs
but matches the program run in float64 counts as right: eager's float32 rounding moved it).
Findings (mismatch, exception, crash, hang, internal = ember fell back to
eager after an internal error, strict = --converted-only and ember did not convert the
program) are minimized and written as standalone repro scripts to --out. A program that
fails in eager PyTorch, or under torch.compile with the "eager" backend too (Dynamo's own
limits), is invalid: it says nothing about ember.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.fuzz.campaign import run_campaign
from tests.fuzz.generate import generate
from tests.fuzz.runner import FINDINGS


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz",
                                description=(__doc__ or "").splitlines()[1])
    p.add_argument("--programs", type=int, default=100, help="how many seeds (default 100)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--converted-only", action="store_true",
                   help="only operators ember converts; compile with strict=True")
    p.add_argument("--modes", default="static,dynamic", help="static, dynamic or both")
    p.add_argument("--out", type=Path, default=Path("fuzz-failures"),
                   help="directory for repro scripts (default fuzz-failures/)")
    p.add_argument("--timeout", type=float, default=180.0,
                   help="seconds per program run, scaled up by the load average over the cores")
    p.add_argument("--minimize-runs", type=int, default=40,
                   help="most runs spent minimizing one failure (0: do not minimize)")
    p.add_argument("--jobs", type=int, default=1,
                   help="programs run at once, each in its own worker process (default 1)")
    p.add_argument("--show", type=int, metavar="SEED", help="print a program and exit")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    args = p.parse_args(argv)
    if args.show is not None:
        print(generate(args.show, args.converted_only).to_source())
        return 0
    modes = tuple(m for m in args.modes.split(",") if m)
    if not modes or any(m not in ("static", "dynamic") for m in modes):
        p.error("--modes takes static, dynamic or static,dynamic")
    seeds = list(range(args.seed, args.seed + args.programs))
    summary = run_campaign(seeds, converted_only=args.converted_only, modes=modes,
                           out_dir=args.out, timeout=args.timeout,
                           minimize_runs=args.minimize_runs, jobs=args.jobs,
                           log=(lambda s: None) if args.quiet else
                           (lambda s: print(s, flush=True)))
    mode = "converted-only (strict)" if args.converted_only else "all operators"
    print(summary.text(f"ember fuzz, {mode}, seeds {args.seed}..{seeds[-1]}"), flush=True)
    return 1 if any(summary.classes[c] for c in FINDINGS) else 0


if __name__ == "__main__":
    sys.exit(main())
