"""ember.compile, CompiledModel.save and ember.load: every benchmark model (small
configurations) compiled whole, saved, loaded in this process and in a new one with outputs
equal bit for bit; argument and output structures; dynamic shapes; damaged, truncated,
foreign and newer files; ISA mismatch (kernels rebuilt from the saved sources); models that
cannot be compiled whole."""

from __future__ import annotations

import os
import struct
import sys

import numpy as np
import pytest
import torch

import ember

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)
models = pytest.importorskip("benchmarks.models")

from _helpers_deploy import QUIET, file_sections, flat, load_bytes, run_python  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


# ---- every benchmark model -------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(models.MODELS))
def test_benchmark_model_saves_and_loads_bit_for_bit(name, tmp_path):
    spec = models.MODELS[name]
    model, inputs = spec.build(small=True), spec.example_inputs(small=True)
    compiled = ember.compile(model, inputs, options=QUIET)
    with torch.no_grad():
        expected = flat(model(*inputs))
    got = flat(compiled(*inputs))
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
    stored = len(file_sections(path.read_bytes())["weights"])
    assert stored <= weights * 1.02 + 64 * len(tensors)
    loaded = ember.load(path)
    for a, b in zip(flat(loaded(*inputs)), got, strict=True):
        assert torch.equal(a, b)

    # A new process, with numpy in and out.
    np.savez(tmp_path / "in.npz", *[x.numpy() for x in inputs])
    run_python(f"""
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
        return torch.mode(x, 1)[0]

    with pytest.raises(Exception, match="torch.mode") as info:
        ember.compile(fn, (torch.randn(3, 5),), options=QUIET)
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






def test_truncated_file(saved, tmp_path):
    with pytest.raises(ember.ArtifactError, match="truncated"):
        load_bytes(tmp_path, saved[: len(saved) // 2])
    with pytest.raises(ember.ArtifactError, match="not an ember model file"):
        load_bytes(tmp_path, saved[:10])


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
            load_bytes(tmp_path, bytes(damaged))


def test_foreign_and_newer_files(saved, tmp_path):
    with pytest.raises(ember.ArtifactError, match="not an ember model file"):
        load_bytes(tmp_path, b"\x7fELF" + bytes(200))
    newer = saved[:8] + struct.pack("<I", 99) + saved[12:]
    with pytest.raises(ember.ArtifactError, match="version 99.*newer ember"):
        load_bytes(tmp_path, newer)
    with pytest.raises(ember.EmberError, match="cannot open"):
        ember.load(tmp_path / "missing.ember")


def test_damage_behind_a_valid_checksum_is_an_error_not_a_crash(saved, tmp_path):
    """Random damage to the records (with the checksum recomputed, as a buggy writer would
    leave them): every load either works or raises ember's error. Runs in a subprocess so
    that a crash fails the test instead of killing pytest."""
    path = tmp_path / "good.ember"
    path.write_bytes(saved)
    out = run_python(f"""
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
        load_bytes(tmp_path, bytes(bad))
    with pytest.raises(ember.ArtifactError, match="outside the file"):
        load_bytes(tmp_path, ember._C._reseal(bytes(bad)))


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
    out = run_python(f"""
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
    out = run_python(code, env={"EMBER_CACHE_DIR": str(cache)})
    assert "gone from the kernel cache" in out and "compile the model again" in out
