"""A module's translation units compile the GEMM machinery once (ember_rt/gemm_erased.h in
the first unit, declared in the others): several units of GEMM kernels link and compute the
same as torch; sources saved without it (by an older ember) still rebuild; with static sizes
it holds only the paths the calls take; and a small GEMM model's saved file stays within
1.1x its weights."""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np
import pytest
import torch
from _helpers_deploy import QUIET, container, file_sections, run_python

import ember

pytestmark = pytest.mark.usefixtures("fresh_dynamo")

GEMM_DEFINITION = '#include "ember_rt/gemm_erased.h"'


class Tower(torch.nn.Module):
    """Fourteen Linear layers of distinct widths, each with its own activation: fourteen
    distinct GEMM kernels, more than one unit's worth (six)."""

    def __init__(self):
        super().__init__()
        widths = [24 + 8 * i for i in range(15)]
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            x = torch.tanh(x) if i % 2 else torch.relu(x)
        return x


def _sources(section: bytes) -> list[str]:
    """The translation units of a "sources" section (an i64 size, then the zlib stream of a
    u32 count and length-prefixed strings)."""
    raw = zlib.decompress(section[8:])
    (n,) = struct.unpack_from("<I", raw)
    at, out = 4, []
    for _ in range(n):
        (size,) = struct.unpack_from("<I", raw, at)
        out.append(raw[at + 4:at + 4 + size].decode())
        at += 4 + size
    assert at == len(raw)
    return out


def _sources_section(units: list[str]) -> bytes:
    raw = struct.pack("<I", len(units))
    for u in units:
        raw += struct.pack("<I", len(u.encode())) + u.encode()
    return struct.pack("<q", len(raw)) + zlib.compress(raw, 9)


def _tower(tmp_path):
    torch.manual_seed(0)
    model = Tower().eval()
    x = torch.randn(5, 24)
    compiled = ember.compile(model, (x,), options=QUIET)
    path = tmp_path / "tower.ember"
    compiled.save(path)
    return model, x, compiled, path


def test_units_of_gemm_kernels_share_one_definition(tmp_path):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the kernels are compiled as one unit")
    model, x, compiled, path = _tower(tmp_path)
    units = _sources(file_sections(path.read_bytes())["sources"])
    assert len(units) >= 2
    assert all("ember_rt::gemm(" in u for u in units)
    assert [u.count(GEMM_DEFINITION) for u in units] == [1] + [0] * (len(units) - 1)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert torch.equal(ember.load(path)(x), compiled(x))


def test_sources_without_the_definition_still_rebuild(tmp_path):
    """Units saved by an ember that compiled the GEMM machinery in every unit (none includes
    gemm_erased.h) get it in their first unit when they are compiled again."""
    if ember.isa() == "scalar":
        pytest.skip("this CPU has no SIMD ISA to save with")
    model, x, compiled, path = _tower(tmp_path)
    sections = file_sections(path.read_bytes())
    units = [u.replace(GEMM_DEFINITION, "") for u in _sources(sections["sources"])]
    sections["sources"] = _sources_section(units)
    (tmp_path / "old.ember").write_bytes(container(4, sections))
    np.save(tmp_path / "x.npy", x.numpy())
    run_python(f"""
        import numpy as np, ember
        m = ember.load({str(tmp_path / "old.ember")!r})
        assert m.info()["rebuilt"], m.info()
        np.save({str(tmp_path / "y.npy")!r}, m.run([np.load({str(tmp_path / "x.npy")!r})])[0])
    """, env={"EMBER_ISA": "scalar"})
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), compiled(x).numpy(), rtol=1e-5,
                               atol=1e-6)


def test_small_gemm_model_file_is_within_1_1x_its_weights(tmp_path):
    """Two 256 x 256 Linear layers (514 KiB of weights): the machine code, the sources and
    the plan add less than a tenth."""
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 256)).eval()
    x = torch.randn(8, 256)
    compiled = ember.compile(model, (x,), options=QUIET)
    path = tmp_path / "small.ember"
    compiled.save(path)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    assert path.stat().st_size <= 1.1 * weights, (path.stat().st_size, weights)


def test_static_sizes_compile_only_the_gemm_paths_taken(tmp_path):
    """With static sizes every GEMM call's path is chosen when its kernel is compiled
    (ember_rt::gemm_choice) and the first unit lists the choices for the definition, which
    compiles only those paths: the machine code is well under that of the same model with
    symbolic sizes, whose calls choose at run time among all of them."""
    model, x, compiled, path = _tower(tmp_path)
    units = _sources(file_sections(path.read_bytes())["sources"])
    calls = [line for u in units for line in u.splitlines() if "ember_rt::gemm(" in line]
    assert len(calls) == 14 and all("ember_rt::gemm_choice(" in c for c in calls), calls
    assert units[0].count("#define EMBER_RT_GEMM_CHOICES") == 1
    dynamic = ember.compile(model, (x,), dynamic=True, options=QUIET)
    dynamic.save(tmp_path / "dynamic.ember")
    dynamic_units = _sources(file_sections((tmp_path / "dynamic.ember").read_bytes())["sources"])
    assert not any("EMBER_RT_GEMM_CHOICES" in u for u in dynamic_units)

    def machine_code_bytes(p):
        (size,) = struct.unpack_from("<q", file_sections(p.read_bytes())["module"])
        return size

    static_bytes = machine_code_bytes(path)
    dynamic_bytes = machine_code_bytes(tmp_path / "dynamic.ember")
    # Measured: 0.53 of it with AVX-512 (five register blockings), 0.64 with AVX2, 0.73
    # with the scalar fallback (fewer paths to leave out).
    assert static_bytes < 0.85 * dynamic_bytes, (static_bytes, dynamic_bytes)
    with torch.no_grad():
        expected = model(x)
    for threads in (1, 2, 3):
        loaded = ember.load(path)
        loaded.set_num_threads(threads)
        torch.testing.assert_close(loaded(x), expected, rtol=1e-4, atol=1e-5)
        assert torch.equal(loaded(x), compiled(x))
    torch.testing.assert_close(dynamic(x), expected, rtol=1e-4, atol=1e-5)
