"""The runtime headers (runtime_include/ember_rt) cost a generated module little to compile.

Every translation unit of generated kernels starts from the precompiled ember_rt/all.h. The
precompiled header keeps what the compiler parsed, but not the template instantiations that
the headers' functions ask for, and the compiler made those again in every unit, whether a
kernel called the function or not: 0.4 s of a unit's 0.45 s. Functions of the headers that
are not templates are therefore EMBER_RT_LAZY (ember_rt/lazy.h), and all.h leaves out
libstdc++'s special functions. These tests check both: the rule in the source, and its
effect in what the compiler does for a unit that calls nothing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADERS = ROOT / "runtime_include" / "ember_rt"

# A function definition or declaration that starts a line of namespace scope (or of a macro
# body) with `inline`, attributes allowed in front.
_INLINE_FUNCTION = re.compile(r"^(\s*)(\[\[[^\]]*\]\]\s*)?inline (?!namespace\b)(.*)")
_TEMPLATE_HEAD = re.compile(r"^template\s*<.*>\s*(//.*)?$")
_VARIABLE = re.compile(r"^(constexpr |const )?[\w:<>, *&]+ k[A-Z]\w*\s*[={\[(]")


def inline_functions_not_lazy(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each inline function of `text` that is not a template: no
    `template <...>` or EMBER_RT_LAZY on the line before, nor EMBER_RT_LAZY in front of it
    on its own line (a macro body)."""
    found = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _INLINE_FUNCTION.match(line)
        if m is None or "(" not in line or _VARIABLE.match(m.group(3)):
            continue
        if m.group(1) and not line.rstrip().endswith("\\") and not (
                i > 0 and lines[i - 1].rstrip().endswith("\\")):
            continue  # indented and not in a macro: a member of a class
        previous = lines[i - 1].rstrip("\\ \t").strip() if i > 0 else ""
        if previous == "EMBER_RT_LAZY" or _TEMPLATE_HEAD.match(previous):
            continue
        found.append((i + 1, line.strip()))
    return found


def test_the_rule_finds_what_it_should() -> None:
    text = ("EMBER_RT_LAZY\ninline void a(int x) {}\n"
            "template <class T>\ninline T b(T x) { return x; }\n"
            "inline void c() {}\n"
            "[[gnu::cold]] inline void d(int) {}\n"
            "inline constexpr int kE = f(1);\n"
            "inline namespace isa {\n"
            "struct S {\n  inline int g() const { return 1; }\n};\n"
            "#define M(name) \\\n  EMBER_RT_LAZY inline float name(float x) { return x; } \\\n"
            "  inline double name(double x) { return x; }\n")
    assert inline_functions_not_lazy(text) == [
        (5, "inline void c() {}"),
        (6, "[[gnu::cold]] inline void d(int) {}"),
        (14, "inline double name(double x) { return x; }"),
    ]


# kernel.h, the ABI between the runtime and generated code, stands alone (a module may
# include only it); its functions use no template.
STANDS_ALONE = {"kernel.h"}


def test_every_inline_function_of_the_runtime_headers_is_a_template() -> None:
    headers = sorted(p for p in HEADERS.glob("*.h") if p.name not in STANDS_ALONE)
    assert len(headers) > 30, HEADERS
    offenders = [f"{path.name}:{number}: {line}" for path in headers
                 for number, line in inline_functions_not_lazy(path.read_text())]
    assert not offenders, (
        "write EMBER_RT_LAZY (ember_rt/lazy.h) on the line before these inline functions, so "
        "that the templates they use are instantiated only where a kernel calls them:\n"
        + "\n".join(offenders))


ISAS = {
    "avx2": ["-mavx2", "-mfma", "-mf16c"],
    "avx512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma",
               "-mf16c"],
    "scalar": [],
}


def _gcc() -> str:
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("needs g++ (the test reads GCC's dump of the functions it instantiates)")
    return cxx


@pytest.mark.parametrize("isa", sorted(ISAS))
def test_a_unit_that_calls_nothing_instantiates_nothing_of_the_runtime(
        tmp_path: Path, isa: str) -> None:
    """Compiled with the precompiled all.h, as a generated module's units are, an empty unit
    makes the compiler write out only the functions it instantiates there (GCC's
    -fdump-tree-original). Of ember_rt, the only ones allowed are EMBER_RT_LAZY functions
    themselves (`<template-parameter-1-1> = void`, called from members of classes, which
    the compiler reads at once) and constexpr functions (a constant expression may need
    them): never parallel_for or map_lanes with a lambda, a micro-kernel table or a math
    routine's float and vector instances, as before EMBER_RT_LAZY."""
    cxx = _gcc()
    flags = ["-std=c++20", "-O2", "-fPIC", "-DNDEBUG", f"-I{ROOT / 'runtime_include'}",
             *ISAS[isa]]
    header = tmp_path / "all.h"
    header.write_text("#include <ember_rt/all.h>\n")
    subprocess.run([cxx, *flags, "-x", "c++-header", str(header), "-o", f"{header}.gch"],
                   check=True, capture_output=True, text=True)
    unit = tmp_path / "unit.cpp"
    unit.write_text("// no kernel\n")
    dump = tmp_path / "unit.original"
    subprocess.run([cxx, *flags, "-include", str(header), "-Winvalid-pch", "-c", str(unit),
                    "-o", str(tmp_path / "unit.o"), f"-fdump-tree-original={dump}"],
                   check=True, capture_output=True, text=True)
    functions = [line[len(";; Function "):] for line in dump.read_text().splitlines()
                 if line.startswith(";; Function ")]
    ours = [f for f in functions if "ember_rt::" in f.split("(")[0]]
    heavy = [f for f in ours
             if "<template-parameter-1-1> = void" not in f and not f.startswith("constexpr ")]
    assert not heavy, "\n".join(heavy)
    # The dump is of this unit: with the header not precompiled it would hold every inline
    # function the headers define.
    assert len(functions) < 100, len(functions)
