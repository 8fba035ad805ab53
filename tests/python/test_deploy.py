"""ember.compile, CompiledModel.save and ember.load: every benchmark model (small
configurations) compiled whole, saved, loaded in this process and in a new one with outputs
equal bit for bit; argument and output structures; dynamic shapes; damaged, truncated,
foreign and newer files; ISA mismatch (kernels rebuilt from the saved sources); models that
cannot be compiled whole."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest
import torch

import ember

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)
models = pytest.importorskip("benchmarks.models")

QUIET = {"progress": False}


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _run_python(code: str, env: dict | None = None) -> str:
    """Runs `code` in a new interpreter (the same ember, the same kernel cache)."""
    full_env = dict(os.environ, **(env or {}))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=full_env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _sections(data: bytes) -> dict[str, bytes]:
    """A saved model's sections by tag (the layout docs/deploy.md describes)."""
    n = struct.unpack_from("<I", data, 12)[0]
    table = [struct.unpack_from("<8sQQQ", data, 64 + 32 * i) for i in range(n)]
    return {tag.rstrip(b"\0").decode(): data[off:off + size] for tag, off, size, _ in table}


# ---- every benchmark model -------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_benchmark_model_saves_and_loads_bit_for_bit(name, tmp_path):
    spec = models.MODELS[name]
    model, inputs = spec.build(small=True), spec.example_inputs(small=True)
    compiled = ember.compile(model, inputs, options=QUIET)
    with torch.no_grad():
        expected = _flat(model(*inputs))
    got = _flat(compiled(*inputs))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)

    path = tmp_path / f"{name}.ember"
    compiled.save(path)
    info = compiled.info()
    assert info["file_bytes"] == os.path.getsize(path)
    # The plan holds each weight once, as it is or as the GEMM's prepared panels (zero-padded
    # to whole panels, counted apart), and a weight read both ways (GPT-2's tied embedding:
    # gathered, and multiplied by the output projection) once each way (folding may shrink
    # them: batch norm into the conv).
    tensors = list(model.named_parameters(remove_duplicate=False)) + list(model.named_buffers())
    weights = sum(t.numel() * t.element_size() for _, t in tensors)
    assert info["weight_bytes"] - info["prepared_weight_bytes"] <= weights * 1.05
    # The file stores one form of each: its weights are no larger than the model's.
    stored = len(_sections(path.read_bytes())["weights"])
    assert stored <= weights * 1.02 + 64 * len(tensors)
    loaded = ember.load(path)
    for a, b in zip(_flat(loaded(*inputs)), got, strict=True):
        assert torch.equal(a, b)

    # A new process, with numpy in and out.
    np.savez(tmp_path / "in.npz", *[x.numpy() for x in inputs])
    _run_python(f"""
        import numpy as np, ember
        m = ember.load({str(path)!r})
        ins = np.load({str(tmp_path / "in.npz")!r})
        outs = m.run([ins[k] for k in sorted(ins.files, key=lambda k: int(k.split("_")[1]))])
        np.savez({str(tmp_path / "out.npz")!r}, *outs)
    """)
    outs = np.load(tmp_path / "out.npz")
    for i, g in enumerate(got):
        assert np.array_equal(outs[f"arr_{i}"], g.numpy())


# ---- structure, names, kinds of tensors -------------------------------------------------------
class Structured(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 0.5))

    def forward(self, x, extra, unused):
        y = torch.relu(self.fc(x)) * self.scale + extra["bias"]
        return {"y": y, "stats": [x.sum(0), y.amax()]}


def _structured_inputs(n=5):
    g = torch.Generator().manual_seed(n)
    return (torch.randn(n, 4, generator=g), {"bias": torch.randn(3, generator=g)},
            torch.randn(2, generator=g))


def test_structure_names_and_tensor_kinds(tmp_path):
    model = Structured().eval()
    args = _structured_inputs()
    compiled = ember.compile(model, args, options=QUIET)
    assert [s.name for s in compiled.inputs] == ["x", "extra.bias", "unused"]
    assert [s.name for s in compiled.outputs] == ["y", "stats.0", "stats.1"]
    assert compiled.inputs[0].shape == (5, 4) and compiled.inputs[0].dtype == "float32"
    text = repr(compiled)
    assert "x: float32[5, 4]" in text and "stats.1: float32[]" in text and "Matmul" in text

    expected = model(*args)
    out = compiled(*args)
    assert set(out) == {"y", "stats"} and isinstance(out["stats"], list)
    torch.testing.assert_close(out["y"], expected["y"])
    torch.testing.assert_close(out["stats"][1], expected["stats"][1])

    flat = [args[0].numpy(), args[1]["bias"].numpy(), args[2].numpy()]
    as_numpy = compiled(*flat)  # numpy in: numpy out, flat
    assert isinstance(as_numpy, tuple) and isinstance(as_numpy[0], np.ndarray)
    assert np.array_equal(as_numpy[0], out["y"].numpy())
    as_ember = compiled(*[ember.asarray(a) for a in flat])
    assert isinstance(as_ember[0], ember.Tensor)
    assert np.array_equal(as_ember[0].numpy(), out["y"].numpy())
    # The flat torch inputs work too.
    assert torch.equal(compiled(*[torch.from_numpy(a) for a in flat])["y"], out["y"])

    compiled.save(tmp_path / "s.ember")
    loaded = ember.load(tmp_path / "s.ember")
    assert [s.name for s in loaded.inputs] == ["x", "extra.bias", "unused"]
    again = loaded(*args)
    assert torch.equal(again["y"], out["y"]) and torch.equal(again["stats"][0], out["stats"][0])
    with pytest.raises(TypeError, match="3 inputs"):
        loaded(*flat[:2])


def test_dynamic_batch(tmp_path):
    model = Structured().eval()
    compiled = ember.compile(model, _structured_inputs(5), dynamic=True, options=QUIET)
    assert isinstance(compiled.inputs[0].shape[0], str)
    compiled.save(tmp_path / "d.ember")
    loaded = ember.load(tmp_path / "d.ember")
    for n in (3, 11):
        args = _structured_inputs(n)
        torch.testing.assert_close(loaded(*args)["y"], model(*args)["y"])
    assert loaded.info()["symbols"]


def test_dynamic_shapes_spec():
    model = Structured().eval()
    n = torch.export.Dim("n")
    compiled = ember.compile(model, _structured_inputs(4),
                             dynamic=({0: n}, {"bias": None}, None), options=QUIET)
    assert isinstance(compiled.inputs[0].shape[0], str) and compiled.inputs[2].shape == (2,)
    args = _structured_inputs(7)
    torch.testing.assert_close(compiled(*args)["y"], model(*args)["y"])


def test_static_model_checks_shapes():
    compiled = ember.compile(Structured().eval(), _structured_inputs(5), options=QUIET)
    with pytest.raises(ember.EmberError, match="dimension 0 must be 5"):
        compiled(*_structured_inputs(6))


# ---- what cannot be compiled whole -------------------------------------------------------------
def test_unsupported_operator_is_listed():
    def fn(x):
        return torch.nn.functional.grid_sample(x, torch.zeros(1, 2, 2, 2), align_corners=False)

    with pytest.raises(Exception, match="grid_sample") as info:
        ember.compile(fn, (torch.randn(1, 1, 4, 4),), options=QUIET)
    assert "strict" in str(info.value)


def test_graph_break_is_an_error():
    def fn(x):
        if x.sum() > 0:  # data-dependent control flow
            return x + 1
        return x - 1

    with pytest.raises(ember.EmberError, match="one graph"):
        ember.compile(fn, (torch.randn(3),), options=QUIET)


def test_output_that_is_an_input_is_an_error():
    with pytest.raises(ember.EmberError, match="returned unchanged"):
        ember.compile(lambda x, y: (x + y, x), (torch.randn(3), torch.randn(3)), options=QUIET)


def test_path_must_be_onnx():
    with pytest.raises(ValueError, match="ONNX"):
        ember.compile("model.ember")


# ---- damaged files ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    torch._dynamo.reset()
    model = Structured().eval()
    path = tmp_path_factory.mktemp("saved") / "m.ember"
    ember.compile(model, _structured_inputs(), options=QUIET).save(path)
    return path.read_bytes()


def _load_bytes(tmp_path, data, name="x.ember"):
    p = tmp_path / name
    p.write_bytes(data)
    return ember.load(p)




def test_truncated_file(saved, tmp_path):
    with pytest.raises(ember.ArtifactError, match="truncated"):
        _load_bytes(tmp_path, saved[: len(saved) // 2])
    with pytest.raises(ember.ArtifactError, match="not an ember model file"):
        _load_bytes(tmp_path, saved[:10])


def test_flipped_byte_fails_the_checksum(saved, tmp_path):
    """A changed byte in the section table or in any section (the padding between sections
    is not read)."""
    n = struct.unpack_from("<I", saved, 12)[0]
    table = [struct.unpack_from("<8sQQQ", saved, 64 + 32 * i) for i in range(n)]
    positions = [64 + 3, 64 + 32 + 9] + [off + size // 2 for _, off, size, _ in table if size]
    for pos in positions:
        damaged = bytearray(saved)
        damaged[pos] ^= 0x40
        with pytest.raises(ember.ArtifactError, match="checksum"):
            _load_bytes(tmp_path, bytes(damaged))


def test_foreign_and_newer_files(saved, tmp_path):
    with pytest.raises(ember.ArtifactError, match="not an ember model file"):
        _load_bytes(tmp_path, b"\x7fELF" + bytes(200))
    newer = saved[:8] + struct.pack("<I", 99) + saved[12:]
    with pytest.raises(ember.ArtifactError, match="version 99.*newer ember"):
        _load_bytes(tmp_path, newer)
    with pytest.raises(ember.EmberError, match="cannot open"):
        ember.load(tmp_path / "missing.ember")


def test_damage_behind_a_valid_checksum_is_an_error_not_a_crash(saved, tmp_path):
    """Random damage to the records (with the checksum recomputed, as a buggy writer would
    leave them): every load either works or raises ember's error. Runs in a subprocess so
    that a crash fails the test instead of killing pytest."""
    path = tmp_path / "good.ember"
    path.write_bytes(saved)
    out = _run_python(f"""
        import random, struct, ember
        data = open({str(path)!r}, "rb").read()
        n_sections = struct.unpack_from("<I", data, 12)[0]
        table = [struct.unpack_from("<8sQQQ", data, 64 + 32 * i) for i in range(n_sections)]
        spans = {{tag.rstrip(b"\\0").decode(): (off, size) for tag, off, size, _ in table}}
        rng = random.Random(0)
        errors = ok = 0
        for trial in range(300):
            d = bytearray(data)
            off, size = spans[rng.choice(["meta", "plan", "plan", "sources", "costs"])]
            for _ in range(rng.randint(1, 4)):
                pos = off + rng.randrange(size)
                d[pos] = rng.randrange(256) if rng.random() < 0.7 else d[pos] ^ 0x80
            open({str(tmp_path / "bad.ember")!r}, "wb").write(ember._C._reseal(bytes(d)))
            try:
                ember.load({str(tmp_path / "bad.ember")!r})
                ok += 1
            except (ember.EmberError, ember.InternalError, UnicodeDecodeError, ValueError):
                errors += 1
        print(errors, ok)
    """)
    errors, ok = map(int, out.split())
    assert errors + ok == 300 and errors > 100


def test_section_outside_the_file(saved, tmp_path):
    bad = bytearray(saved)
    struct.pack_into("<Q", bad, 64 + 8, len(saved) * 4)  # the first section's offset
    with pytest.raises(ember.ArtifactError, match="checksum of its section table"):
        _load_bytes(tmp_path, bytes(bad))
    with pytest.raises(ember.ArtifactError, match="outside the file"):
        _load_bytes(tmp_path, ember._C._reseal(bytes(bad)))


def test_saving_is_atomic(tmp_path, saved):
    """A save replaces the file in one step and leaves no temporary behind; a save that
    cannot write leaves the old file as it was."""
    target = tmp_path / "m.ember"
    target.write_bytes(saved)
    model = ember.load(target)
    model.save(target)
    assert sorted(os.listdir(tmp_path)) == ["m.ember"]
    assert target.read_bytes() == saved  # saving a loaded model writes the same bytes
    with pytest.raises(ember.EmberError, match="cannot write"):
        model.save(tmp_path / "no-such-dir" / "m.ember")


# ---- what the file stores --------------------------------------------------------------------
class TiedLM(torch.nn.Module):
    """An embedding tied to the output layer (GPT-2's wte), and a Linear with few outputs,
    whose prepared panels would be mostly padding."""

    def __init__(self, vocab=1000, dim=64):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight
        self.small = torch.nn.Linear(dim, 3)

    def forward(self, ids):
        h = torch.tanh(self.embed(ids))
        return self.head(h), self.small(h)


def _tied(tmp_path):
    model = TiedLM().eval()
    ids = torch.randint(0, 1000, (2, 7), generator=torch.Generator().manual_seed(0))
    compiled = ember.compile(model, (ids,), options=QUIET)
    path = tmp_path / "tied.ember"
    compiled.save(path)
    return model, ids, compiled, path


def test_tied_weight_is_stored_once(tmp_path):
    model, ids, compiled, path = _tied(tmp_path)
    embed = model.embed.weight.numel() * 4
    small = model.small.weight.numel() * 4 + model.small.bias.numel() * 4
    info = compiled.info()
    # In memory the embedding is there twice (gathered, and as the head's prepared panels);
    # the file stores it once (as the panels, padded to whole panels by at most 1/16), and
    # the small Linear's weight unpadded.
    assert info["weight_bytes"] >= 2 * embed
    assert len(_sections(path.read_bytes())["weights"]) <= embed * 17 // 16 + small + 64 * 4
    loaded = ember.load(path)
    assert loaded.info()["weight_bytes"] == info["weight_bytes"]
    for a, b in zip(loaded(ids), compiled(ids), strict=True):
        assert torch.equal(a, b)
    with torch.no_grad():
        for a, b in zip(loaded(ids), model(ids), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    loaded.save(tmp_path / "again.ember")
    assert (tmp_path / "again.ember").read_bytes() == path.read_bytes()


def test_tied_weight_file_rebuilds_for_another_isa(tmp_path):
    """Kernels compiled again (EMBER_ISA below the saved one) prepare the panels from the
    embedding unpacked from the stored ones, and the small Linear from its stored source."""
    if ember.isa() == "scalar":
        pytest.skip("this CPU has no SIMD ISA to save with")
    model, ids, compiled, path = _tied(tmp_path)
    np.save(tmp_path / "ids.npy", ids.numpy())
    _run_python(f"""
        import numpy as np, ember
        m = ember.load({str(path)!r})
        assert m.info()["rebuilt"], m.info()
        np.savez({str(tmp_path / "out.npz")!r}, *m.run([np.load({str(tmp_path / "ids.npy")!r})]))
    """, env={"EMBER_ISA": "scalar"})
    outs = np.load(tmp_path / "out.npz")
    for i, e in enumerate(compiled(ids)):
        np.testing.assert_allclose(outs[f"arr_{i}"], e.numpy(), rtol=1e-5, atol=1e-5)


def test_machine_code_is_stripped_and_compressed(tmp_path):
    *_, path = _tied(tmp_path)
    sections = _sections(path.read_bytes())
    for tag in ("module", "sources"):
        (size,) = struct.unpack_from("<q", sections[tag])
        raw = zlib.decompress(sections[tag][8:])
        assert len(raw) == size > len(sections[tag])
    so = zlib.decompress(sections["module"][8:])
    assert so[:4] == b"\x7fELF"
    e_shoff, = struct.unpack_from("<Q", so, 0x28)
    e_shnum, = struct.unpack_from("<H", so, 0x3C)
    assert e_shoff == 0 and e_shnum == 0  # no section headers, no symbol table


def _container(version: int, sections: dict[str, bytes]) -> bytes:
    """A model file of `sections` (the layout docs/deploy.md describes; checksums by
    ember._C._reseal)."""
    align = lambda n: (n + 63) // 64 * 64  # noqa: E731
    offset = align(64 + 32 * len(sections))
    table, body = b"", b""
    for tag, data in sections.items():
        table += struct.pack("<8sQQQ", tag.encode(), offset, len(data), 0)
        body += data + bytes(align(len(data)) - len(data))
        offset += align(len(data))
    header = b"EMBERMDL" + struct.pack("<IIQQ", version, len(sections), offset, 0)
    head = header + bytes(64 - len(header)) + table
    return ember._C._reseal(head + bytes(align(len(head)) - len(head)) + body)


def _records_before_version_4(prepared: bytes) -> bytes:
    """A "prepared" section of GEMM panels as format versions 2 and 3 wrote it: each record
    without the preparation that version 4 starts it with."""
    (n,) = struct.unpack_from("<I", prepared)
    out, at = prepared[:4], 4
    for _ in range(n):
        (kind,) = struct.unpack_from("<q", prepared, at)
        assert kind == 0  # GEMM panels: 13 more fields
        out += prepared[at + 8:at + 14 * 8]
        at += 14 * 8
    assert at == len(prepared)
    return out


@pytest.mark.parametrize("version", [2, 3])
def test_older_format_versions_still_load(tmp_path, version):
    """A version 2 file (machine code and sources stored as they are, every constant in the
    form the kernels read) and a version 3 one (each "prepared" record without its kind)
    load and run the same."""
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU()).eval()
    x = torch.randn(4, 32)
    compiled = ember.compile(model, (x,), options=QUIET)
    compiled.save(tmp_path / "v4.ember")
    sections = _sections((tmp_path / "v4.ember").read_bytes())
    sections["prepared"] = _records_before_version_4(sections["prepared"])
    if version == 2:
        for tag in ("module", "sources"):
            sections[tag] = zlib.decompress(sections[tag][8:])
    old = tmp_path / f"v{version}.ember"
    old.write_bytes(_container(version, sections))
    loaded = ember.load(old)
    assert loaded.info()["format_version"] == version
    assert torch.equal(loaded(x), compiled(x))


# ---- Winograd filters: stored as their 3x3 weights, transformed at load ----------------------
class WinogradNet(torch.nn.Module):
    """Two 3x3 convolutions of 64 channels on 28x28 images (Winograd), batch norm folded into
    the first; a 1x1 convolution between them."""

    def __init__(self, c=64):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(c)
        self.mix = torch.nn.Conv2d(c, c, 1)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)

    def forward(self, x):
        return self.conv2(self.mix(torch.relu(self.bn(self.conv1(x)))))


def _winograd(tmp_path):
    torch.manual_seed(0)
    model = WinogradNet().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 64, 28, 28, generator=torch.Generator().manual_seed(1))
    compiled = ember.compile(model, (x,), options=QUIET)
    assert repr(compiled).count("Conv2dWinograd") == 2, repr(compiled)
    path = tmp_path / "winograd.ember"
    compiled.save(path)
    return model, x, compiled, path


def test_winograd_filters_are_stored_as_their_weights(tmp_path):
    """The file holds the 3x3 weights, not their transforms (4x larger); a new process
    transforms them at load to the same bits as the compiling process."""
    model, x, compiled, path = _winograd(tmp_path)
    weights = sum(p.numel() * 4 for p in model.parameters())
    stored = len(_sections(path.read_bytes())["weights"])
    assert stored <= weights + 64 * 8, (stored, weights)
    expected = compiled(x)
    with torch.no_grad():
        torch.testing.assert_close(expected, model(x), rtol=1e-4, atol=1e-4)
    loaded = ember.load(path)
    assert loaded.info()["weight_bytes"] == compiled.info()["weight_bytes"]
    assert torch.equal(loaded(x), expected)
    loaded.save(tmp_path / "again.ember")
    assert (tmp_path / "again.ember").read_bytes() == path.read_bytes()
    np.save(tmp_path / "x.npy", x.numpy())
    _run_python(f"""
        import numpy as np, ember
        m = ember.load({str(path)!r})
        np.save({str(tmp_path / "y.npy")!r}, m.run([np.load({str(tmp_path / "x.npy")!r})])[0])
    """)
    assert np.array_equal(np.load(tmp_path / "y.npy"), expected.numpy())


def test_winograd_file_rebuilds_for_another_isa(tmp_path):
    """Kernels compiled again (EMBER_ISA below the saved one) read the same transformed
    filters: the transform does not depend on the ISA."""
    if ember.isa() == "scalar":
        pytest.skip("this CPU has no SIMD ISA to save with")
    model, x, compiled, path = _winograd(tmp_path)
    np.save(tmp_path / "x.npy", x.numpy())
    _run_python(f"""
        import numpy as np, ember
        m = ember.load({str(path)!r})
        assert m.info()["rebuilt"], m.info()
        np.save({str(tmp_path / "y.npy")!r}, m.run([np.load({str(tmp_path / "x.npy")!r})])[0])
    """, env={"EMBER_ISA": "scalar"})
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), compiled(x).numpy(), rtol=1e-4,
                               atol=1e-4)


def _prepared_records(prepared: bytes) -> list[tuple[int, int, int, int]]:
    """(offset, kind, value, source) of each record of a version 4 "prepared" section."""
    (n,) = struct.unpack_from("<I", prepared)
    records, at = [], 4
    for _ in range(n):
        kind, value, source = struct.unpack_from("<qqq", prepared, at)
        records.append((at, kind, value, source))
        at += 3 * 8 + (0 if kind == 1 else 11 * 8)
    assert at == len(prepared)
    return records


def test_damaged_winograd_record_is_an_error(tmp_path):
    """A record naming an unknown preparation, or a Winograd filter whose source is not
    the 3x3 weight it is made from, is an ArtifactError naming the section."""
    *_, path = _winograd(tmp_path)
    sections = _sections(path.read_bytes())
    records = _prepared_records(sections["prepared"])
    winograd = [r for r in records if r[1] == 1]
    assert len(winograd) == 2

    def load_with(prepared: bytes) -> None:
        _load_bytes(tmp_path, _container(4, {**sections, "prepared": prepared}))

    at, _, _, source = winograd[0]
    unknown = bytearray(sections["prepared"])
    struct.pack_into("<q", unknown, at, 7)
    with pytest.raises(ember.ArtifactError, match="prepared section.*unknown preparation 7"):
        load_with(bytes(unknown))
    other_source = bytearray(sections["prepared"])
    struct.pack_into("<q", other_source, at + 16, winograd[1][2])  # the other filter [36, O, C]
    with pytest.raises(ember.ArtifactError,
                       match="prepared section.*Winograd filter does not match its source"):
        load_with(bytes(other_source))
    as_gemm = bytearray(sections["prepared"])
    struct.pack_into("<q", as_gemm, at, 0)  # read as GEMM panels: the fields run on
    with pytest.raises(ember.ArtifactError, match="prepared section"):
        load_with(bytes(as_gemm))


# ---- another CPU ----------------------------------------------------------------------------
def test_isa_mismatch_rebuilds_from_the_saved_sources(tmp_path):
    """A file whose kernels need more than EMBER_ISA allows (as on a CPU without them) is
    rebuilt from its sources for the allowed ISA, with the same results."""
    best = ember.isa()
    if best == "scalar":
        pytest.skip("this CPU has no SIMD ISA to save with")
    model = Structured().eval()
    args = _structured_inputs()
    compiled = ember.compile(model, args, options=QUIET)
    path = tmp_path / "m.ember"
    compiled.save(path)
    expected = compiled(*args)["y"].numpy()
    np.save(tmp_path / "x.npy", args[0].numpy())
    np.save(tmp_path / "b.npy", args[1]["bias"].numpy())
    np.save(tmp_path / "u.npy", args[2].numpy())
    out = _run_python(f"""
        import numpy as np, ember
        m = ember.load({str(path)!r})
        info = m.info()
        print(info["isa"]); print(info["rebuilt"])
        d = {str(tmp_path)!r}
        y = m.run([np.load(d + "/x.npy"), np.load(d + "/b.npy"), np.load(d + "/u.npy")])[0]
        np.save(d + "/y.npy", y)
    """, env={"EMBER_ISA": "scalar"})
    isa, why = out.splitlines()[:2]
    assert isa == "scalar"
    assert f"built for {best}" in why and "EMBER_ISA allows at most scalar" in why
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-5, atol=1e-6)


# ---- ONNX files -----------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", ["mlp", "resnet18", "bert"])
def test_onnx_file_compiles_saves_and_matches_onnxruntime(name, tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    spec = models.MODELS[name]
    model, inputs = spec.build(small=True), spec.example_inputs(small=True)
    path = tmp_path / f"{name}.onnx"
    names = [f"input_{i}" for i in range(len(inputs))]
    with torch.no_grad():
        torch.onnx.export(model, inputs, str(path), dynamo=False, input_names=names,
                          dynamic_axes={n: {0: "batch"} for n in names})
    compiled = ember.compile(path, options=QUIET)
    assert compiled.info()["frontend"] == "onnx"
    assert [s.name for s in compiled.inputs] == names
    assert compiled.inputs[0].shape[0] == "batch"
    feeds = {n: x.numpy() for n, x in zip(names, inputs, strict=True)}
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    got = compiled.run([x.numpy() for x in inputs])
    for g, e in zip(got, expected, strict=True):
        assert np.abs(g - e).max() <= 1e-4 * max(np.abs(e).max(), 1e-6)
    compiled.save(tmp_path / "m.ember")
    loaded = ember.load(tmp_path / "m.ember")
    assert loaded.info()["frontend"] == "onnx"
    for a, b in zip(loaded.run([x.numpy() for x in inputs]), got, strict=True):
        assert np.array_equal(a, b)


def test_onnx_options_are_checked(tmp_path):
    pytest.importorskip("onnx")
    with pytest.raises(ember.EmberError, match=r"(?s)unknown options.*search_space"):
        ember.compile(tmp_path / "m.onnx", options={"strict": True})


# ---- more errors ----------------------------------------------------------------------------
def test_compile_argument_errors():
    with pytest.raises(ember.EmberError, match="dryrun compiles nothing"):
        ember.compile(lambda x: x + 1, (torch.randn(3),), options={"dryrun": True})
    with pytest.raises(TypeError, match="needs example inputs"):
        ember.compile(lambda x: x + 1)
    with pytest.raises(ember.EmberError, match="computes no tensor"):
        ember.compile(lambda x: 2, (torch.randn(3),), options=QUIET)


def test_call_with_other_arguments_is_a_type_error():
    compiled = ember.compile(Structured().eval(), _structured_inputs(), options=QUIET)
    x, extra, unused = _structured_inputs()
    with pytest.raises(TypeError, match="arguments it was compiled with"):
        compiled(x, {"other": extra["bias"]}, unused)
    with pytest.raises(TypeError, match="arguments it was compiled with"):
        compiled(x, extra=extra)
    # A model without an argument structure (an ONNX file's, one built from a graph).
    a = ember.symbol([3], ember.float32)
    plain = ember.CompiledModel(ember._C.CompiledModel(
        ember.graph.optimize(ember.trace_from([a * 2.0], [a])).build(), ["a"], ["y"], ""))
    with pytest.raises(TypeError, match="positional inputs only"):
        plain(a=np.ones(3, np.float32))


def test_onnx_dynamic_must_be_a_flag(tmp_path):
    with pytest.raises(ember.EmberError, match="dynamic must be None, False or True"):
        ember.compile(tmp_path / "m.onnx", dynamic={"x": {0: "n"}})


def test_load_of_a_directory_and_save_after_the_cache_is_cleared(tmp_path):
    with pytest.raises(ember.EmberError, match="not a regular file"):
        ember.load(tmp_path)
    cache = tmp_path / "cache"
    code = f"""
        import os, torch, ember
        compiled = ember.compile(lambda x: torch.relu(x) * 3, (torch.randn(7, 5),),
                                 options={{"progress": False}})
        ember.clear_cache()
        try:
            compiled.save({str(tmp_path / "m.ember")!r})
        except ember.EmberError as e:
            print("ERROR", e)
    """
    out = _run_python(code, env={"EMBER_CACHE_DIR": str(cache)})
    assert "gone from the kernel cache" in out and "compile the model again" in out
