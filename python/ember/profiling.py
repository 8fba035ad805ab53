"""Profiles of compiled graphs: the table that says why a model is slow.

``profile_table(graph, inputs)`` runs ``CompiledGraph.profile`` (every kernel launch timed
over ``runs`` runs) and formats it with ``format_profile``: per launch, its time and share
of the total, what it fused, its output shape, and its GFLOP/s and GB/s with the fraction
of this machine's peaks (``machine_peak``: FMA throughput and triad bandwidth, measured
once and kept in the cache directory). A launch is compute-bound or memory-bound by the
larger of the two fractions. ``CompiledModel.profile_table``, ``ember bench`` and the
automatic profiles all print ``format_profile``'s table.

Automatic profiles: with ``EMBER_PROFILE=1`` in the environment (or the torch backend's
``profile`` option), every segment compiled by ``torch.compile(backend="ember")`` and every
model from ``ember.compile`` / ``ember.load`` is profiled on its second call (the first
warms it up) with that call's inputs, over ``EMBER_PROFILE_RUNS`` runs (default 20), and
its table is printed to stderr once. docs/profiling.md explains how to read it.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from ember import _C

__all__ = ["format_profile", "machine_peak", "profile_table"]

DEFAULT_RUNS = 20
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def machine_peak(threads: int | None = None, remeasure: bool = False) -> dict[str, Any]:
    """This machine's peaks with ``threads`` threads (default: ember.get_num_threads()):
    {'gflops' (float32 FMA throughput with the kernels' instruction set), 'gbps' (triad
    memory bandwidth), 'threads', 'isa', 'cpu', 'from_record' (read back, not measured now),
    'record' (the file it is kept in)}. Measured once (well under a second) and kept in
    ember's cache directory; a damaged record is measured again. ``remeasure`` measures
    again and keeps the larger of each figure: a peak measured while other work ran is too
    low (profile_table asks for it when a kernel beats the recorded peak)."""
    return dict(_C.machine_peak(threads or 0, remeasure))


# A kernel this much faster than a recorded peak shows the peak was measured low.
_BEYOND_PEAK = 1.05


def _level(peak: Mapping[str, Any] | None, nbytes: float | None) -> tuple[str, float | None]:
    """The cache level `nbytes` fit in, and that level's bandwidth peak."""
    gbps_peak = peak["gbps"] if peak else None
    if not peak or nbytes is None or "gbps_l2" not in peak:
        return ("-", gbps_peak)
    if nbytes <= peak["l2_bytes"] * peak["threads"]:
        return ("L2", peak["gbps_l2"])
    if nbytes <= peak["llc_bytes"]:
        return ("LLC", peak["gbps_llc"])
    return ("DRAM", gbps_peak)


def _beats_peak(profile: Mapping[str, Any], peak: Mapping[str, Any]) -> bool:
    """Whether a launch ran faster than the peaks say the machine can."""
    for row in profile["launches"]:
        gflops = _rate(row.get("flops"), row["seconds"])
        gbps = _rate(row.get("bytes"), row["seconds"])
        mem_peak = _level(peak, row.get("bytes"))[1]
        if gflops is not None and gflops > _BEYOND_PEAK * peak["gflops"]:
            return True
        if gbps is not None and mem_peak and gbps > _BEYOND_PEAK * mem_peak:
            return True
    return False


def profile_table(graph: Any, inputs: Sequence[Any], runs: int = DEFAULT_RUNS,
                  title: str | None = None) -> str:
    """The profile of ``graph`` (an ember.CompiledGraph) on ``inputs`` (ember tensors) over
    ``runs`` runs, as format_profile's table."""
    profile = graph.profile(list(inputs), runs)
    peak: dict[str, Any] | None
    try:
        peak = machine_peak(profile["threads"])
        if _beats_peak(profile, peak):  # recorded on a busy machine: measure again
            peak = machine_peak(profile["threads"], remeasure=True)
    except Exception as e:  # the table is still worth having without the peaks
        warnings.warn(f"ember could not measure this machine's peaks ({e}); the profile "
                      "shows no fraction of peak", stacklevel=2)
        peak = None
    return format_profile(profile, peak, title)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4f}"


def _rate(amount: float | None, seconds: float) -> float | None:
    if amount is None or seconds <= 0:
        return None
    return amount / seconds * 1e-9


def _shape(shapes: Sequence[Sequence[int]]) -> str:
    if not shapes:
        return "-"
    text = "[" + ", ".join(str(d) for d in shapes[0]) + "]"
    return text + (f" +{len(shapes) - 1}" if len(shapes) > 1 else "")


def _amount(n: float, unit: str) -> str:
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {prefix}{unit}"
    return f"{n:.0f} {unit}"


def format_profile(profile: Mapping[str, Any], peak: Mapping[str, Any] | None = None,
                   title: str | None = None) -> str:
    """The table of a profile (CompiledGraph.profile's dict), slowest launch first.

    Columns: launch index, median ms, share of the sum of launches, GFLOP/s and its
    fraction of the bandwidth peak of the level its data fits in (``mem``: L2 when its bytes
    fit in the threads' level-2 caches, LLC in the last-level cache, else DRAM), the bound
    (the larger fraction: compute or memory), the first output's shape (``+k``: k more
    outputs), and the kernel with the operators it fused. Then the totals, and which bound the
    whole run is closer to (its bytes against the bandwidth of the level each launch's data
    fits in). A '-' is a count the kernel cannot
    state (a sort's operations), or a fraction without ``peak``."""
    launches = list(profile["launches"])
    total = sum(row["seconds"] for row in launches)
    share_base = total or 1.0
    gflops_peak = peak["gflops"] if peak else None

    def frac(value: float | None, top: float | None) -> float | None:
        return None if value is None or not top else value / top

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    header = ["#", "ms", "share", "GFLOP/s", "%FMA", "GB/s", "mem", "%BW", "bound", "shape"]
    rows = []
    time_by_bound = {"compute": 0.0, "memory": 0.0}
    for i, row in sorted(enumerate(launches), key=lambda r: -r[1]["seconds"]):
        gflops = _rate(row.get("flops"), row["seconds"])
        gbps = _rate(row.get("bytes"), row["seconds"])
        mem, mem_peak = _level(peak, row.get("bytes"))
        f_frac, b_frac = frac(gflops, gflops_peak), frac(gbps, mem_peak)
        bound = "-"
        if f_frac is not None or b_frac is not None:
            bound = "compute" if (f_frac or 0.0) >= (b_frac or 0.0) else "memory"
            time_by_bound[bound] += row["seconds"]
        rows.append([str(i), _ms(row["seconds"]), f"{100 * row['seconds'] / share_base:.1f}%",
                     num(gflops), pct(f_frac), num(gbps), mem, pct(b_frac), bound,
                     _shape(row.get("output_shapes", [])), f"{row['kernel']}: {row['op']}"])
    widths = [max(len(h), *(len(r[c]) for r in rows)) if rows else len(h)
              for c, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        parts = [cells[c].rjust(widths[c]) if c < 8 else cells[c].ljust(widths[c])
                 for c in range(len(header))]
        return "  ".join(parts + list(cells[len(header):])).rstrip()

    out = []
    head = title or "ember profile"
    about = f"{profile['runs']} runs, {profile.get('threads', '?')} threads"
    if peak:
        about += (f"; peaks ({peak['isa']}, {peak['threads']} threads): "
                  f"{peak['gflops']:.1f} GFLOP/s FMA, triad "
                  + (f"{peak['gbps_l2']:.1f} GB/s L2, {peak['gbps_llc']:.1f} GB/s LLC, "
                     if "gbps_l2" in peak else "")
                  + f"{peak['gbps']:.1f} GB/s DRAM")
    out.append(f"{head}: {about}")
    out.append(line(header + ["kernel: what it computes"]))
    out.append(line(["-" * w for w in widths] + ["-" * 24]))
    out += [line(r) for r in rows]

    known_flops = [r["flops"] for r in launches if r.get("flops") is not None]
    known_bytes = [r["bytes"] for r in launches if r.get("bytes") is not None]
    flops, nbytes = sum(known_flops), sum(known_bytes)
    run = profile["run_seconds"]
    out.append(f"total: launches {_ms(total)} ms; whole run {_ms(run)} ms (median of "
               f"{profile['runs']}, no timers); {_amount(flops, 'FLOP')}, "
               f"{_amount(nbytes, 'B')} moved per run")
    run_gflops, run_gbps = _rate(flops, total), _rate(nbytes, total)
    f_frac = frac(run_gflops, gflops_peak)
    # The time the launches' bytes take at the bandwidth of the level each one's data fits
    # in, over the launches' time (data that lives in a cache is not held to DRAM's peak).
    needed = [row["bytes"] / (level_peak * 1e9) for row in launches
              if row.get("bytes") is not None
              and (level_peak := _level(peak, row["bytes"])[1])]
    b_frac = sum(needed) / total if needed and total > 0 else None
    if f_frac is None or b_frac is None:
        out.append(f"bound: unknown (no machine peaks); {num(run_gflops)} GFLOP/s, "
                   f"{num(run_gbps)} GB/s over the launches")
    else:
        which = "compute" if f_frac >= b_frac else "memory"
        split = ", ".join(f"{100 * t / share_base:.0f}% of the time in {b}-bound kernels"
                          for b, t in time_by_bound.items() if t > 0)
        out.append(f"bound: {which} ({pct(f_frac)} of the FMA peak, {pct(b_frac)} of the "
                   f"bandwidth of the levels the launches' data fits in); {split}")
    return "\n".join(out)


# ---- automatic profiles (EMBER_PROFILE) -----------------------------------------------------
def enabled_by_env() -> bool:
    """EMBER_PROFILE: 1/true/yes/on profiles compiled models on their second call; unset,
    empty or 0/false/no/off does not. Another value is a ValueError."""
    value = os.environ.get("EMBER_PROFILE", "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"EMBER_PROFILE={os.environ['EMBER_PROFILE']!r}: use 1 to profile "
                     "compiled models on their second call, or 0")


def runs_from_env() -> int:
    """EMBER_PROFILE_RUNS: the runs of an automatic profile (default 20); an int >= 1."""
    value = os.environ.get("EMBER_PROFILE_RUNS", "").strip()
    if not value:
        return DEFAULT_RUNS
    try:
        runs = int(value)
    except ValueError:
        runs = 0
    if runs < 1:
        raise ValueError(f"EMBER_PROFILE_RUNS={value!r}: expected a number of runs >= 1")
    return runs


class AutoProfile:
    """Counts a compiled callable's calls; on the second one, when profiling is asked for
    (``option`` or EMBER_PROFILE), prints the profile of ``graph`` on that call's inputs
    to stderr. A profile that fails is a warning: the call itself goes on."""

    def __init__(self, name: str, option: bool = False) -> None:
        self.name = name
        self.option = option
        self.calls = 0

    def due(self) -> bool:
        """Counts this call; whether it is the one to profile."""
        self.calls += 1
        return self.calls == 2 and (self.option or enabled_by_env())

    def run(self, graph: Any, inputs: Sequence[Any]) -> None:
        try:
            table = profile_table(graph, inputs, runs_from_env(), title=self.name)
        except Exception as e:
            warnings.warn(f"ember could not profile {self.name}: {type(e).__name__}: {e}",
                          stacklevel=3)
            return
        print(table, file=sys.stderr, flush=True)
