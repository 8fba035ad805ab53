"""The profile table (ember.profiling): a row per launch, shares, GFLOP/s and GB/s against
hand counts, the machine's peaks kept in the cache, and EMBER_PROFILE / the ``profile``
option printing the table on a compiled model's second call. No test asserts a speed."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.torch
from ember import profiling

torch = pytest.importorskip("torch")

ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)%" + r"\s+(\S+)" * 6 + r"\s+")


def rows(table: str) -> list[list[str]]:
    """The launch rows of a table: [#, ms, share, GFLOP/s, %FMA, GB/s, mem, %BW, bound]."""
    return [list(m.groups()) for line in table.splitlines() if (m := ROW.match(line))]


def mlp_graph(n: int | str = 64) -> tuple[object, list[object]]:
    """relu(x @ w1 + b1) @ w2, then a sum over rows: a few launches of each kind."""
    rng = np.random.default_rng(0)
    w1 = ember.asarray(rng.standard_normal((128, 256)).astype(np.float32))
    b1 = ember.asarray(rng.standard_normal(256).astype(np.float32))
    w2 = ember.asarray(rng.standard_normal((256, 32)).astype(np.float32))
    x = ember.symbol([n, 128], "float32")
    h = ember.ops.relu(ember.ops.matmul(x, w1) + b1)
    y = ember.ops.matmul(h, w2)
    s = ember.ops.sum(y * y, [1])
    graph = ember.graph.optimize(ember.trace_from([y, s], [x])).build()
    rows_n = 64 if isinstance(n, str) else n
    return graph, [ember.asarray(rng.standard_normal((rows_n, 128)).astype(np.float32))]


@pytest.fixture(scope="module")
def peak() -> dict:
    return ember.machine_peak()


def test_a_row_per_launch_and_shares_sum_to_100(peak: dict) -> None:
    graph, inputs = mlp_graph()
    profile = graph.profile(inputs, 3)
    n = len(graph.launch_ops)
    assert n >= 2 and len(profile["launches"]) == n
    table = profiling.format_profile(profile, peak, title="mlp")
    found = rows(table)
    assert sorted(int(r[0]) for r in found) == list(range(n))
    shares = [float(r[2]) for r in found]
    assert sum(shares) == pytest.approx(100.0, abs=0.05 * n + 0.1)
    ms = [float(r[1]) for r in found]
    assert ms == sorted(ms, reverse=True)  # slowest first
    assert table.startswith("mlp: 3 runs")
    assert "total: launches" in table and "bound: " in table
    for launch in profile["launches"]:
        assert launch["flops"] is not None and launch["bytes"] is not None
        assert launch["kernel"] in table and launch["op"] in table
    # The run's bandwidth fraction: each launch's bytes at its own level's peak, over the
    # launches' time, which is the rows' %BW weighted by their times.
    bw = re.search(r"% of the FMA peak, ([\d.]+)% of the bandwidth of the levels", table)
    assert bw, table
    want = sum(float(r[1]) * float(r[7].rstrip("%")) for r in found) / sum(ms)
    assert float(bw.group(1)) == pytest.approx(want, abs=0.15)


def test_matmul_counts_and_gflops(peak: dict) -> None:
    m, k, n = 384, 256, 320
    rng = np.random.default_rng(1)
    w = ember.asarray(rng.standard_normal((k, n)).astype(np.float32))
    x = ember.symbol([m, k], "float32")
    graph = ember.graph.optimize(ember.trace_from(ember.ops.matmul(x, w), [x])).build()
    profile = graph.profile([ember.asarray(rng.standard_normal((m, k)).astype(np.float32))], 5)
    (launch,) = profile["launches"]
    assert "Matmul" in launch["op"]
    assert launch["flops"] == 2 * m * n * k
    assert launch["bytes"] == (m * k + k * n + m * n) * 4
    assert launch["output_shapes"] == [[m, n]]
    (row,) = rows(profiling.format_profile(profile, peak))
    gflops = 2 * m * n * k / launch["seconds"] / 1e9
    assert float(row[3]) == pytest.approx(gflops, rel=0.01, abs=0.06)
    assert float(row[4].rstrip("%")) == pytest.approx(100 * gflops / peak["gflops"], abs=0.06)
    gbps = launch["bytes"] / launch["seconds"] / 1e9
    assert float(row[5]) == pytest.approx(gbps, rel=0.01, abs=0.06)
    # The bandwidth compared with is the one of the cache level the launch's bytes fit in.
    level, top = (("L2", peak["gbps_l2"]) if launch["bytes"] <= peak["l2_bytes"] * peak["threads"]
                  else ("LLC", peak["gbps_llc"]) if launch["bytes"] <= peak["llc_bytes"]
                  else ("DRAM", peak["gbps"]))
    assert row[6] == level
    assert float(row[7].rstrip("%")) == pytest.approx(100 * gbps / top, rel=0.01, abs=0.06)
    assert row[8] == ("compute" if gflops / peak["gflops"] >= gbps / top else "memory")


def test_symbolic_sizes_are_counted_at_each_runs_sizes() -> None:
    graph, _ = mlp_graph("n")
    rng = np.random.default_rng(2)
    flops = []
    for rows_n in (3, 12):
        x = ember.asarray(rng.standard_normal((rows_n, 128)).astype(np.float32))
        profile = graph.profile([x], 1)
        first = profile["launches"][0]
        assert first["output_shapes"][0][0] == rows_n
        flops.append(first["flops"])
    assert flops[1] == 4 * flops[0]  # every count is linear in the rows here


def test_table_without_peaks_says_so() -> None:
    graph, inputs = mlp_graph()
    table = profiling.format_profile(graph.profile(inputs, 1), None)
    assert "bound: unknown (no machine peaks)" in table
    assert all(r[4] == "-" and r[6] == "-" and r[7] == "-" for r in rows(table))


# ---- the machine's peaks ---------------------------------------------------------------------
def test_peak_is_recorded_and_a_damaged_record_is_measured_again(tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    first = ember.machine_peak(1)
    assert not first["from_record"] and first["threads"] == 1
    assert first["gflops"] > 0 and first["gbps"] > 0 and first["isa"] == ember.isa()
    record = Path(first["record"])
    assert record.is_file() and str(record).startswith(str(tmp_path))
    second = ember.machine_peak(1)
    assert second["from_record"]
    keys = ("gflops", "gbps", "gbps_l2", "gbps_llc")
    assert [second[k] for k in keys] == [first[k] for k in keys]
    assert all(first[k] > 0 for k in keys) and 0 < first["l2_bytes"] <= first["llc_bytes"]
    good = record.read_text()
    for damage in ("garbage\n", good.replace("gflops ", "gflops -"),
                   re.sub(r"gbps \S+", "gbps nan", good), re.sub(r"threads \d+", "threads 7", good),
                   re.sub(r"gbps_l2 \S+", "gbps_l2 0", good), good.replace("gbps_llc", "gbps_x"),
                   ""):
        record.write_text(damage)
        again = ember.machine_peak(1)
        assert not again["from_record"], damage
        assert again["gflops"] > 0 and again["gbps"] > 0
        assert ember.machine_peak(1)["from_record"]  # the damaged record was replaced


def test_a_peak_recorded_too_low_is_measured_again(tmp_path: Path, monkeypatch) -> None:
    """A record measured on a busy machine (here: every figure divided by 1e6, far below
    what the machine does) makes a kernel beat the peak: profile_table measures again,
    keeps the larger figures and records them, so the fractions stay under 100% (bar noise);
    remeasure never lowers a figure."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    n = ember.get_num_threads()  # the profile's
    first = ember.machine_peak(n)
    record = Path(first["record"])
    keys = ("gflops", "gbps", "gbps_l2", "gbps_llc")
    low = record.read_text()
    for k in keys:
        low = re.sub(rf"^{k} \S+$", f"{k} {first[k] / 1e6!r}", low, flags=re.M)
    record.write_text(low)
    stale = ember.machine_peak(n)
    assert stale["from_record"] and stale["gflops"] == pytest.approx(first["gflops"] / 1e6)
    graph, inputs = mlp_graph()
    table = profiling.profile_table(graph, inputs, runs=3)
    fresh = ember.machine_peak(n)
    assert fresh["from_record"]
    assert all(fresh[k] > 1e3 * stale[k] for k in keys), (fresh, stale)
    assert f"{fresh['gflops']:.1f} GFLOP/s FMA" in table, table
    # A second measurement keeps the larger figures: a record above the machine stays.
    high = record.read_text()
    for k in keys:
        high = re.sub(rf"^{k} \S+$", f"{k} {fresh[k] * 1e3!r}", high, flags=re.M)
    record.write_text(high)
    again = ember.machine_peak(n, remeasure=True)
    assert not again["from_record"]
    assert all(again[k] == pytest.approx(fresh[k] * 1e3) for k in keys)


# ---- automatic profiles ----------------------------------------------------------------------
class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.mark.parametrize("how", ["env", "option"])
def test_torch_compile_prints_the_table_on_the_second_call(how: str, fresh_dynamo, capsys,
                                                           monkeypatch) -> None:
    monkeypatch.setenv("EMBER_PROFILE_RUNS", "2")
    options = {}
    if how == "env":
        monkeypatch.setenv("EMBER_PROFILE", "1")
    else:
        monkeypatch.delenv("EMBER_PROFILE", raising=False)
        options = {"profile": True}
    model = MLP().eval()
    compiled = torch.compile(model, backend="ember", options=options)
    x = torch.randn(8, 64)
    with torch.no_grad():
        compiled(x)
        assert "ember segment" not in capsys.readouterr().err  # the first call warms up
        out = compiled(x)
        err = capsys.readouterr().err
        compiled(x)
        assert capsys.readouterr().err == ""  # once per segment
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-5)
    # One table for the one segment. (Its graph number is not asserted: under pytest-xdist
    # the first compile of this file in a worker was once numbered 1, not 0.)
    assert len(re.findall(r"^ember segment graph_\d+: ", err, re.M)) == 1, err
    assert "2 runs" in err and "GFLOP/s" in err and "%BW" in err and "bound: " in err
    assert len(rows(err)) >= 1


def test_training_prints_forward_and_backward_tables_on_the_second_step(fresh_dynamo, capsys,
                                                                         monkeypatch) -> None:
    """A training graph's forward and backward segments run with AOTAutograd's boxed calls;
    each prints its table on its own second call, once (the boxed call had counted every
    call twice, so training graphs never printed one)."""
    monkeypatch.setenv("EMBER_PROFILE_RUNS", "2")
    monkeypatch.delenv("EMBER_PROFILE", raising=False)
    model = MLP()
    compiled = torch.compile(model, backend="ember", options={"profile": True})
    x = torch.randn(8, 64)
    errs = []
    for _ in range(3):
        compiled(x).square().sum().backward()
        errs.append(capsys.readouterr().err)
    assert "ember segment" not in errs[0]  # the first step warms up
    assert re.findall(r"^ember segment graph_\d+_(\w+): ", errs[1], re.M) == [
        "forward", "backward"], errs[1]
    assert "ember segment" not in errs[2]  # once per segment
    grads = [p.grad.clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    model(x).square().sum().backward()  # three steps' gradients, accumulated
    for g, p in zip(grads, model.parameters(), strict=True):
        torch.testing.assert_close(g, 3 * p.grad, rtol=1e-4, atol=1e-4)


def test_no_table_without_profiling(fresh_dynamo, capsys, monkeypatch) -> None:
    monkeypatch.delenv("EMBER_PROFILE", raising=False)
    compiled = torch.compile(MLP().eval(), backend="ember")
    with torch.no_grad():
        for _ in range(3):
            compiled(torch.randn(4, 64))
    assert "ember segment" not in capsys.readouterr().err


def test_bad_environment_values_are_errors(monkeypatch) -> None:
    monkeypatch.setenv("EMBER_PROFILE", "maybe")
    with pytest.raises(ValueError, match="EMBER_PROFILE='maybe'"):
        profiling.enabled_by_env()
    monkeypatch.setenv("EMBER_PROFILE_RUNS", "0")
    with pytest.raises(ValueError, match="EMBER_PROFILE_RUNS='0'"):
        profiling.runs_from_env()


def test_compiled_model_profile_and_saved_counts(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("EMBER_PROFILE", "1")
    monkeypatch.setenv("EMBER_PROFILE_RUNS", "1")
    model = MLP().eval()
    x = torch.randn(4, 64)
    compiled = ember.compile(model, (x,))
    compiled(x)
    compiled(x)
    assert capsys.readouterr().err.count("ember compiled model") == 1
    before = compiled.profile([x.numpy()], 1)["launches"]
    table = compiled.profile_table([x.numpy()], 1)
    assert len(rows(table)) == len(before)

    path = tmp_path / "mlp.ember"
    compiled.save(path)
    loaded = ember.load(path).profile([x.numpy()], 1)["launches"]
    assert [(r["flops"], r["bytes"]) for r in loaded] == [(r["flops"], r["bytes"])
                                                          for r in before]
    # A file without the counts (written before they were recorded) loads; they are unknown.
    data = bytearray(path.read_bytes())
    n_sections = struct.unpack_from("<I", data, 12)[0]
    for i in range(n_sections):
        at = 64 + 32 * i
        if bytes(data[at:at + 8]).rstrip(b"\0") == b"costs":
            data[at:at + 8] = b"unused\0\0"
    old = tmp_path / "old.ember"
    old.write_bytes(ember._C._reseal(bytes(data)))
    loaded_old = ember.load(old)
    launches = loaded_old.profile([x.numpy()], 1)["launches"]
    assert all(r["flops"] is None and r["bytes"] is None for r in launches)
    assert all(r[3] == "-" and r[5] == "-" for r in rows(loaded_old.profile_table([x.numpy()], 1)))


# ---- routine calls (Call stages): the count each operator states for its routine ----------
def _launches(outputs: list[object], inputs: list[object], values: list[np.ndarray]) -> list:
    graph = ember.graph.optimize(ember.trace_from(outputs, inputs)).build()
    return graph.profile([ember.asarray(v) for v in values], 1)["launches"]


def test_attention_counts_its_two_products() -> None:
    b, h, s, d = 2, 3, 40, 16
    rng = np.random.default_rng(3)
    qkv = [rng.standard_normal((b, h, s, d)).astype(np.float32) for _ in range(3)]
    syms = [ember.symbol([b, h, s, d], name=n) for n in "qkv"]
    for causal, pairs in ((False, s * s), (True, s * (s + 1) // 2)):
        (launch,) = _launches([ember.ops.attention(*syms, causal=causal)], syms, qkv)
        assert launch["flops"] == 4 * b * h * pairs * d  # q k^T and p v, 2 * d per pair each
        assert launch["bytes"] == 4 * b * h * s * d * 4  # q, k, v and the output


def test_depthwise_convolution_counts_a_multiply_add_per_tap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", "plain")  # the plain routine: one launch
    n, c, hw, k = 2, 8, 12, 3
    rng = np.random.default_rng(4)
    x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
    w = ember.asarray(rng.standard_normal((c, 1, k, k)).astype(np.float32))
    xs = ember.symbol([n, c, hw, hw], name="x")
    (launch,) = _launches([ember.ops.conv2d(xs, w, stride=2, padding=1, groups=c)], [xs], [x])
    oh = (hw + 2 - k) // 2 + 1
    assert launch["flops"] == 2 * n * c * oh * oh * k * k
    assert launch["bytes"] == (x.size + c * k * k + n * c * oh * oh) * 4


def test_winograd_counts_its_transforms_and_gemms() -> None:
    n, c, size = 1, 64, 28
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, c, size, size)).astype(np.float32)
    w = ember.asarray(rng.standard_normal((c, c, 3, 3)).astype(np.float32))
    xs = ember.symbol([n, c, size, size], name="x")
    y = ember.ops.conv2d(xs, w, padding=1, algo="winograd")
    (launch,) = _launches([y], [xs], [x])
    assert "Winograd" in launch["op"]
    tiles = n * (size // 4) ** 2
    # B^T d B (288 per tile and channel), 36 GEMMs [c, c] x [c, tiles], A^T m A (130).
    assert launch["flops"] == 288 * c * tiles + 2 * 36 * c * c * tiles + 130 * c * tiles


def test_every_routine_call_has_counts() -> None:
    """Scans, sorts, resizing and linear algebra: a GFLOP/s in the table, not '-'."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((5, 6, 6)).astype(np.float32)
    spd = (a @ a.transpose(0, 2, 1) + 6 * np.eye(6)).astype(np.float32)
    img = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    s = ember.symbol([5, 6, 6], name="a")
    im = ember.symbol([2, 3, 8, 8], name="img")
    chol = ember.ops.cholesky(s)
    outs = [ember.ops.cumsum(s, 2), ember.ops.sort(s, 2)[0],
            chol[0] if isinstance(chol, (list, tuple)) else chol,
            ember.ops.upsample_bilinear2d(im, [16, 16])]
    graph = ember.graph.optimize(ember.trace_from(outs, [s, im])).build()
    profile = graph.profile([ember.asarray(spd), ember.asarray(img)], 1)
    by_op = {launch["op"]: launch["flops"] for launch in profile["launches"]}
    assert all(f is not None for f in by_op.values()), by_op
    flops = sorted(by_op.values())
    assert 5 * 6 * 6 in flops  # cumsum: an add per element
    assert 5 * 6 * 6 * 3 in flops  # sort: 6 * ceil(log2 6) comparisons per row, at most
    assert 5 * (6 ** 3 // 3) in flops  # Cholesky: n^3 / 3
    assert 2 * 3 * 3 * 16 * (16 + 8) in flops  # resize: 3 per output and interpolated row
    table = profiling.format_profile(profile, None)
    assert all(r[3] != "-" for r in rows(table))
