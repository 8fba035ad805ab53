"""The report of benchmarks/run.py: the header lines that say how the run was measured, the
results table (one row per model, a column per contender and measure), the footnotes with
the full errors and n/a reasons, and the JSON file of the results.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks import harness as H

# Column prefix of each contender in the table (and the peer named in vs_best).
SHORT = {"eager": "eager", "ember": "ember", "inductor": "ind", "inductor-frozen": "indf",
         "ort": "ort", "openvino": "ov"}  # fmt: skip


def header_lines(meta: dict[str, Any]) -> list[str]:
    ember_threads = "yes" if meta.get("ember_set_num_threads") else "not exposed"
    thr = meta.get("threads")
    who = [f"{c}" for c in meta.get("contenders", [])]
    return [
        f"ember benchmark  torch {meta.get('torch')}  CPU {meta.get('cpu')}  "
        f"load avg {meta.get('loadavg_start', '?')} -> {meta.get('loadavg_end', '?')}",
        f"float32, batch {meta.get('batch')}, {'small' if meta.get('small') else 'full'} "
        f"configs, threads {thr} for every contender (ember.set_num_threads: {ember_threads}), "
        f"warm compile: {meta.get('warm_mode')}, torch.compile mode: {meta.get('mode')}",
        f"contenders: {', '.join(who)}; indf = inductor with freezing; ort = torch.onnx.export "
        f"+ onnxruntime {meta.get('onnxruntime') or '(not installed)'} (CPU provider, "
        f"ORT_ENABLE_ALL, intra-op threads {thr}, inter-op 1); ov = openvino.convert_model + "
        f"openvino {meta.get('openvino') or '(not installed)'} (CPU, f32, LATENCY, {thr} "
        "threads); ort and ov take numpy arrays made from the torch inputs and give back "
        "numpy: the conversions are in their time",
        f"spinning: {meta.get('spinning')}",
        f"latency: ms per forward, median of {meta.get('repeat')} interleaved rounds; "
        "vs_eager = eager_ms / ember_ms, vs_best = fastest other contender's ms / ember_ms, "
        "and which one (> 1: ember faster)",
        "compile: seconds for the first call, cold = empty disk cache, warm = filled disk "
        "cache; err = max |out - eager|, others_err = the largest over the other contenders",
    ]


def table_header(contenders: list[str]) -> list[str]:
    head = ["model", "thr", *(f"{SHORT[c]}_ms" for c in contenders)]
    if "ember" in contenders:
        head += ["vs_eager", "vs_best"]
    for c in ("ember", "inductor"):
        if c in contenders:
            head += [f"{SHORT[c]}_cold_s", f"{SHORT[c]}_warm_s"]
    if "ember" in contenders:
        head.append("ember_err")
    if set(contenders) - {"eager", "ember"}:
        head.append("others_err")
    return [*head, "notes"]


def table_row(r: dict[str, Any], contenders: list[str], footnotes: list[str]) -> list[str]:
    """One table row (columns as table_header) for a model result; appends the full error
    and n/a lines to ``footnotes``."""
    lat, comp, acc, errs, na = (
        r.get(k, {}) for k in ("latency", "compile", "accuracy", "errors", "unavailable")
    )
    notes: list[str] = []
    by_text: dict[str, list[str]] = {}  # one note per distinct error
    for c, text in errs.items():
        by_text.setdefault(text, []).append(c)
    for text, who in by_text.items():
        footnotes.append(f"{r['model']} / {', '.join(who)}: {H.short_error(text, 300)}")
        notes.append(f"{', '.join(who)}: {H.short_error(text, 60)}")
    for c, reason in na.items():
        footnotes.append(f"{r['model']} / {c} n/a: {H.short_error(reason, 300)}")
        notes.append(f"{c} n/a: {H.short_error(reason, 60)}")
    for c, info in comp.items():
        if info.get("graphs", 1) != 1 or info.get("graph_breaks", 0):
            notes.append(f"{c}: {info.get('graphs')} graphs")
        if info.get("warnings"):
            notes.append(f"{c}: {len(info['warnings'])} warning(s)")
        warm_cache = info.get("warm_kernel_cache") or {}
        if warm_cache.get("builds"):
            notes.append(f"{c} warm: built {warm_cache['builds']} kernel(s)")
        if "warm_error" in info:
            notes.append(f"{c} warm: {H.short_error(info['warm_error'], 40)}")
        if info.get("exporter") == "torchscript":
            notes.append(f"{c}: TorchScript exporter (dynamo failed)")
    if r.get("recompiles_while_timing"):
        notes.append(f"{r['recompiles_while_timing']} recompile(s) while timing")
    noisy = max((v.get("spread", 0.0) for v in lat.values()), default=0.0)
    if noisy > 0.1:
        notes.append(f"noisy (IQR {noisy:.0%})")

    def ms(c: str) -> str:
        if c in errs:
            return "ERROR"
        return "n/a" if c in na else H.fmt_ms(lat.get(c, {}).get("median_ms"))

    def cs(c: str, key: str) -> str:
        return H.fmt_s(comp.get(c, {}).get(key))

    cells = [r["model"], str(r.get("threads", "-")), *(ms(c) for c in contenders)]
    if "ember" in contenders:
        best = r.get("vs_best")
        cells.append(H.fmt_ratio(r.get("speedup_vs", {}).get("eager")))
        cells.append(f"{best['speedup']:.2f}x {SHORT[best['peer']]}" if best else "-")
    for c in ("ember", "inductor"):
        if c in contenders:
            cells += [cs(c, "cold_s"), cs(c, "warm_s")]
    if "ember" in contenders:
        cells.append(H.fmt_err(acc.get("ember", {}).get("max_abs_err")))
    others = [c for c in contenders if c not in ("eager", "ember")]
    if others:
        errors = [acc[c]["max_abs_err"] for c in others if c in acc]
        cells.append(H.fmt_err(max(errors) if errors else None))
    return [*cells, "; ".join(notes)]


def report(meta: dict[str, Any], results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    contenders = ["eager", *args.backend_names]
    footnotes: list[str] = []
    header = table_header(contenders)
    rows = [table_row(r, contenders, footnotes) for r in results]
    print()
    print("\n".join(header_lines(meta)))
    print()
    print(H.format_table(header, rows, left={0, len(header) - 1}))
    if footnotes:
        print("\nerrors and contenders that could not run:")
        print("\n".join(f"  {f}" for f in footnotes))
    if args.json:
        write_json(args.json, meta, results)
        print(f"\nJSON written to {args.json}")


def write_json(path: Path, meta: dict[str, Any], results: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps({"meta": meta, "models": results}, indent=2) + "\n")
    tmp.replace(path)
