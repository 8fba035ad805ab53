"""What a saved model's file stores: a tied weight once, the machine code stripped and
compressed, older format versions still loading, Winograd filters as their 3x3 weights
(transformed at load), and damaged preparation records as clear errors."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
import torch
from _helpers_deploy import QUIET, container, file_sections, load_bytes, run_python

import ember

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


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
    assert len(file_sections(path.read_bytes())["weights"]) <= embed * 17 // 16 + small + 64 * 4
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
    run_python(f"""
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
    sections = file_sections(path.read_bytes())
    for tag in ("module", "sources"):
        (size,) = struct.unpack_from("<q", sections[tag])
        raw = zlib.decompress(sections[tag][8:])
        assert len(raw) == size > len(sections[tag])
    so = zlib.decompress(sections["module"][8:])
    assert so[:4] == b"\x7fELF"
    e_shoff, = struct.unpack_from("<Q", so, 0x28)
    e_shnum, = struct.unpack_from("<H", so, 0x3C)
    assert e_shoff == 0 and e_shnum == 0  # no section headers, no symbol table


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
    sections = file_sections((tmp_path / "v4.ember").read_bytes())
    sections["prepared"] = _records_before_version_4(sections["prepared"])
    if version == 2:
        for tag in ("module", "sources"):
            sections[tag] = zlib.decompress(sections[tag][8:])
    old = tmp_path / f"v{version}.ember"
    old.write_bytes(container(version, sections))
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


def _run_in_a_new_process(tmp_path, path, x, check="", env=None):
    """The saved model at `path` loaded and run on x in a fresh Python process (after
    `assert <check>` there, when given); its output."""
    np.save(tmp_path / "x.npy", x.numpy())
    run_python(f"""
        import numpy as np, ember
        m = ember.load({str(path)!r})
        {"assert " + check if check else ""}
        np.save({str(tmp_path / "y.npy")!r}, m.run([np.load({str(tmp_path / "x.npy")!r})])[0])
    """, env=env)
    return np.load(tmp_path / "y.npy")


def _winograd(tmp_path, monkeypatch):
    """A model whose two convolutions the plain rules (EMBER_CONV_ALGORITHM=plain: the way to
    save a file that rebuilds for any ISA) run as Winograd, compiled and saved."""
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", "plain")
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


def test_winograd_filters_are_stored_as_their_weights(tmp_path, monkeypatch):
    """The file holds the 3x3 weights, not their transforms (4x larger); a new process
    transforms them at load to the same bits as the compiling process."""
    model, x, compiled, path = _winograd(tmp_path, monkeypatch)
    weights = sum(p.numel() * 4 for p in model.parameters())
    stored = len(file_sections(path.read_bytes())["weights"])
    assert stored <= weights + 64 * 8, (stored, weights)
    expected = compiled(x)
    with torch.no_grad():
        torch.testing.assert_close(expected, model(x), rtol=1e-4, atol=1e-4)
    loaded = ember.load(path)
    assert loaded.info()["weight_bytes"] == compiled.info()["weight_bytes"]
    assert torch.equal(loaded(x), expected)
    loaded.save(tmp_path / "again.ember")
    assert (tmp_path / "again.ember").read_bytes() == path.read_bytes()
    got = _run_in_a_new_process(tmp_path, path, x)
    assert np.array_equal(got, expected.numpy())


def test_winograd_file_rebuilds_for_another_isa(tmp_path, monkeypatch):
    """Kernels compiled again (EMBER_ISA below the saved one) read the same transformed
    filters: the transform does not depend on the ISA."""
    if ember.isa() == "scalar":
        pytest.skip("this CPU has no SIMD ISA to save with")
    model, x, compiled, path = _winograd(tmp_path, monkeypatch)
    got = _run_in_a_new_process(tmp_path, path, x, check='m.info()["rebuilt"], m.info()',
                                env={"EMBER_ISA": "scalar"})
    np.testing.assert_allclose(got, compiled(x).numpy(), rtol=1e-4, atol=1e-4)


def _prepared_records(prepared: bytes) -> list[tuple[int, int, int, int]]:
    """(offset, kind, value, source) of each record of a version 4 "prepared" section."""
    (n,) = struct.unpack_from("<I", prepared)
    records, at = [], 4
    for _ in range(n):
        kind, value, source = struct.unpack_from("<qqq", prepared, at)
        records.append((at, kind, value, source))
        at += 3 * 8 + (11 * 8 if kind == 0 else 0)  # GEMM panels have 11 fields more
    assert at == len(prepared)
    return records


def test_damaged_winograd_record_is_an_error(tmp_path, monkeypatch):
    """A record naming an unknown preparation, or a Winograd filter whose source is not
    the 3x3 weight it is made from, is an ArtifactError naming the section."""
    *_, path = _winograd(tmp_path, monkeypatch)
    sections = file_sections(path.read_bytes())
    records = _prepared_records(sections["prepared"])
    winograd = [r for r in records if r[1] == 1]
    assert len(winograd) == 2

    def load_with(prepared: bytes) -> None:
        load_bytes(tmp_path, container(4, {**sections, "prepared": prepared}))

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


# ---- the blocked convolution: its filters stored as their weights, its layouts recorded -------
class BlockedNet(torch.nn.Module):
    """Two convolutions that run on the channel-blocked layout (channels not a multiple of
    the block), a ReLU between them."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(5, 20, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(20, 7, 1, stride=2)

    def forward(self, x):
        return self.conv2(torch.relu(self.conv1(x)))


def _blocked(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CONV_ALGORITHM", "blocked")
    torch.manual_seed(0)
    model = BlockedNet().eval()
    x = torch.randn(2, 5, 12, 11, generator=torch.Generator().manual_seed(1))
    compiled = ember.compile(model, (x,), options=QUIET)
    assert repr(compiled).count("Conv2dBlocked") == 2, repr(compiled)
    path = tmp_path / "blocked.ember"
    compiled.save(path)
    return model, x, compiled, path


def test_blocked_filters_are_stored_as_their_weights(tmp_path, monkeypatch):
    """The file holds the weights (the blocked filters are padded to whole blocks), records
    the blocked values' layouts, and a new process prepares the filters again at load to the
    same results."""
    model, x, compiled, path = _blocked(tmp_path, monkeypatch)
    weights = sum(p.numel() * 4 for p in model.parameters())
    sections = file_sections(path.read_bytes())
    assert len(sections["weights"]) <= weights + 64 * 8, (len(sections["weights"]), weights)
    kinds = [r[1] for r in _prepared_records(sections["prepared"])]
    assert kinds.count(2) == 2, kinds
    (laid,) = struct.unpack_from("<I", sections["layouts"])
    assert laid >= 2  # the convolutions' inputs and outputs, at least
    expected = compiled(x)
    with torch.no_grad():
        torch.testing.assert_close(expected, model(x), rtol=1e-4, atol=1e-5)
    got = _run_in_a_new_process(tmp_path, path, x,
                                check='m.info()["format_version"] == 6, m.info()')
    assert np.array_equal(got, expected.numpy())


def test_full_blocks_are_stored_as_blocks(tmp_path):
    """Filters whose channels fill their blocks (32 = 2 x 16 = 4 x 8) are stored reordered, as
    the kernels read them: a load maps them instead of reordering ResNet-50's 98 MB (50 ms),
    and a new process runs the file to the same bits."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(32, 32, 1)).eval()
    x = torch.randn(1, 32, 9, 10, generator=torch.Generator().manual_seed(2))
    compiled = ember.compile(model, (x,), options=QUIET)
    assert repr(compiled).count("Conv2dBlocked") == 2, repr(compiled)
    path = tmp_path / "full.ember"
    compiled.save(path)
    sections = file_sections(path.read_bytes())
    weights = sum(p.numel() * 4 for p in model.parameters())
    assert len(sections["weights"]) <= weights + 64 * 8, (len(sections["weights"]), weights)
    assert [r[1] for r in _prepared_records(sections["prepared"])].count(2) == 2
    b = {"avx512": 16, "avx2": 8}.get(ember.isa(), 1)
    for conv in (model[0], model[2]):
        w = conv.weight.detach().numpy()
        o, c, kh, kw = w.shape
        blocks = w.reshape(o // b, b, c // b, b, kh, kw).transpose(0, 2, 4, 5, 3, 1)
        assert np.ascontiguousarray(blocks).tobytes() in sections["weights"]
        if b > 1:
            assert w.tobytes() not in sections["weights"]
    expected = compiled(x)
    with torch.no_grad():
        torch.testing.assert_close(expected, model(x), rtol=1e-4, atol=1e-5)
    got = _run_in_a_new_process(tmp_path, path, x)
    assert np.array_equal(got, expected.numpy())


def test_damaged_blocked_filter_record_is_an_error(tmp_path):
    """A blocked filter record whose source is the other filter (stored too, and of another
    shape) is an ArtifactError naming the section."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(32, 32, 1)).eval()
    x = torch.randn(1, 32, 9, 10)
    path = tmp_path / "full.ember"
    ember.compile(model, (x,), options=QUIET).save(path)
    sections = file_sections(path.read_bytes())
    blocked = [r for r in _prepared_records(sections["prepared"]) if r[1] == 2]
    assert len(blocked) == 2
    damaged = bytearray(sections["prepared"])
    struct.pack_into("<q", damaged, blocked[0][0] + 16, blocked[1][2])  # the other filter
    with pytest.raises(ember.ArtifactError,
                       match="prepared section.*blocked convolution filter does not match its "
                             "source"):
        load_bytes(tmp_path, container(4, {**sections, "prepared": bytes(damaged)}))


def test_blocked_file_is_not_rebuilt_for_another_block(tmp_path, monkeypatch):
    """Kernels compiled again for an ISA of another vector width would read the saved blocked
    layout (blocks of the saving ISA's width) wrongly: the load refuses, saying why."""
    if ember.isa() == "scalar":
        pytest.skip("this CPU has no SIMD ISA to save with")
    *_, path = _blocked(tmp_path, monkeypatch)
    monkeypatch.setenv("EMBER_ISA", "scalar")
    with pytest.raises(ember.ArtifactError, match=r"layout nChw\d+c .* cannot read"):
        ember.load(path)


# ---- how a loaded file is held in memory -------------------------------------------------------
@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/smaps"), reason="Linux only")
def test_loaded_weights_are_the_page_cache_not_a_private_copy(tmp_path):
    """ember.load maps the file's pages (shared with the page cache and other processes)
    instead of copying them: after a load and a run, the mapping's anonymous (copied) memory
    is a small part of it. (MAP_POPULATE on the writable private mapping copied every page.)"""
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 512)).eval()
    path = tmp_path / "mlp.ember"
    x = torch.randn(4, 512)
    compiled = ember.compile(model, (x,), options=QUIET)
    compiled.save(path)
    expected = compiled(x).numpy()
    np.save(tmp_path / "x.npy", x.numpy())
    out = run_python(f"""
        import numpy as np, ember
        m = ember.load({str(path)!r})
        y = m.run([np.load({str(tmp_path / 'x.npy')!r})])[0]
        np.save({str(tmp_path / 'y.npy')!r}, y)
        size = anon = 0
        inside = False
        for line in open("/proc/self/smaps"):
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
                inside = line.rstrip().endswith({str(path)!r})
            elif inside and head[0] == "Size:":
                size += int(head[1])
            elif inside and head[0] == "Anonymous:":
                anon += int(head[1])
        print(size, anon)
    """)
    size_kb, anon_kb = (int(v) for v in out.split())
    assert np.array_equal(np.load(tmp_path / "y.npy"), expected)
    weights_kb = sum(p.numel() * 4 for p in model.parameters()) // 1024
    assert size_kb >= weights_kb  # the file is mapped, weights included
    assert anon_kb <= 0.1 * size_kb, (size_kb, anon_kb)
