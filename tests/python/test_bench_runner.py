"""benchmarks/run.py against its peers: the small MLP through every non-ember contender
(inductor with freezing, ONNX Runtime, OpenVINO) matches eager, the vs_best column is the
ratio of the recorded medians, and a runtime that cannot be imported shows as n/a with the
reason instead of ending the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
run = pytest.importorskip("benchmarks.run")
from benchmarks import report  # noqa: E402
from benchmarks.models import MODELS  # noqa: E402

PEER_CONTENDERS = ("inductor-frozen", "ort", "openvino")


def _run_runner(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "out.json"
    argv = [sys.executable, str(REPO / "benchmarks" / "run.py"), "--models", "mlp", "--small",
            "--threads", "1", "--repeat", "2", "--min-time", "0.01", "--json", str(out),
            *extra]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def test_peers_match_eager_and_vs_best_is_the_median_ratio(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("openvino")
    pytest.importorskip("onnxscript")  # the dynamo ONNX exporter
    # aot_eager stands in for ember: this tests the runner, not ember's kernels.
    data, table = _run_runner(tmp_path, "--backends", "ember,ort,openvino,inductor-frozen",
                              "--ember-backend", "aot_eager")  # fmt: skip
    (r,) = data["models"]
    assert r["errors"] == {} and r["unavailable"] == {}
    for c in PEER_CONTENDERS:
        acc = r["accuracy"][c]
        assert acc["max_abs_err"] <= 1e-5 * max(1.0, acc["eager_max_abs"]), (c, acc)
    # inductor-frozen compiled a graph of its own (not plain inductor's cached code),
    # and nothing recompiled (without freezing) while timing.
    assert r["compile"]["inductor-frozen"]["graphs"] == 1
    assert r["recompiles_while_timing"] == 0
    assert r["compile"]["ort"]["exporter"] in ("dynamo", "torchscript")
    assert r["compile"]["ort"]["intra_op_num_threads"] == 1
    assert r["compile"]["openvino"]["inference_num_threads"] == 1

    med = {c: v["median_ms"] for c, v in r["latency"].items()}
    assert set(med) == {"eager", "ember", *PEER_CONTENDERS}
    others = {c: ms for c, ms in med.items() if c != "ember"}
    best = min(others, key=others.__getitem__)
    assert r["vs_best"]["peer"] == best
    assert r["vs_best"]["speedup"] == pytest.approx(med[best] / med["ember"], rel=1e-12)
    assert r["speedup_vs"]["eager"] == pytest.approx(med["eager"] / med["ember"], rel=1e-12)
    # The table shows the same ratio and names the peer.
    row = next(line for line in table.splitlines() if line.startswith("mlp "))
    assert f"{r['vs_best']['speedup']:.2f}x {report.SHORT[best]}" in row
    assert data["meta"]["spinning"].startswith("EMBER_SPIN_US=")


def test_missing_runtime_is_na_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails: ImportError
    monkeypatch.setitem(sys.modules, "openvino", None)
    args = run.parse_args(["--models", "mlp", "--small", "--backends", "ember,ort,openvino"])
    spec = MODELS["mlp"]
    inputs = spec.example_inputs(1, small=True)
    res: dict[str, Any] = {"model": "mlp", "compile": {}, "errors": {}, "unavailable": {}}
    assert run.prepare_peers(spec, args, inputs, res) == {}
    assert res["errors"] == {}
    assert res["unavailable"]["ort"].startswith("onnxruntime is not importable (")
    assert res["unavailable"]["openvino"].startswith("openvino is not importable (")

    # Eager and "ember" timed, the two runtimes n/a: the row says so, and why.
    res["latency"] = {"eager": {"median_ms": 2.0}, "ember": {"median_ms": 1.0}}
    res.update(run.ember_speedups({"eager": 2.0, "ember": 1.0}))
    contenders = ["eager", *args.backend_names]
    header = report.table_header(contenders)
    footnotes: list[str] = []
    row = dict(zip(header, report.table_row(res, contenders, footnotes), strict=True))
    assert row["ort_ms"] == "n/a" and row["ov_ms"] == "n/a"
    assert "ort n/a: onnxruntime is not importable" in row["notes"]
    assert "openvino n/a: openvino is not importable" in row["notes"]
    assert row["vs_best"] == "2.00x eager"  # the best of the contenders that ran
    assert any(f.startswith("mlp / ort n/a: onnxruntime is not importable") for f in footnotes)


def test_export_falls_back_to_torchscript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the dynamo exporter fails, the TorchScript exporter writes the file and the
    result says which one did and why."""
    pytest.importorskip("onnx")
    real_export = torch.onnx.export

    def export(*a: Any, **kw: Any) -> Any:
        if kw.get("dynamo"):
            raise RuntimeError("dynamo exporter broke")
        return real_export(*a, **kw)

    monkeypatch.setattr(torch.onnx, "export", export)
    spec = MODELS["mlp"]
    info = run.peers.export_onnx(spec.build(small=True), spec.example_inputs(1, small=True),
                                 tmp_path / "m.onnx")  # fmt: skip
    assert info["exporter"] == "torchscript"
    assert info["dynamo_error"] == "RuntimeError: dynamo exporter broke"
    assert (tmp_path / "m.onnx").stat().st_size > 0


def test_deploy_onnx_mode_checks_against_onnxruntime(tmp_path: Path) -> None:
    """benchmarks/deploy.py --onnx: the export built by ember.compile agrees with onnxruntime
    and eager (the row's errors are measured, not assumed), and the exit status says whether
    every model met the 1e-4 goal."""
    pytest.importorskip("onnxruntime")
    from benchmarks import deploy

    r = deploy.onnx_accuracy("conv1d_net", tmp_path, small=True)
    assert 0.0 <= r["vs_ort"] <= deploy.ONNX_TOL
    assert r["vs_eager"] <= deploy.ONNX_TOL and r["ort_vs_eager"] <= deploy.ONNX_TOL
    # The measure sees a difference of the size it reports.
    ref = torch.randn(50).numpy()
    bad = ref.copy()
    bad[7] += 2e-3 * float(abs(ref).max())
    assert deploy._rel_err(bad, ref) == pytest.approx(2e-3, rel=1e-3)
    argv = [sys.executable, str(REPO / "benchmarks" / "deploy.py"), "--onnx", "--small",
            "--models", "mlp"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert any(line.startswith("| mlp | ") for line in proc.stdout.splitlines())
