"""The C++ folders include each other in one order (docs/architecture.md, "The order of the
folders"): a file of a folder includes only its own folder and the folders listed above it.

The order is read from docs/architecture.md, so it is written in one place. A file of
include/ember/X/ or src/X/ (src/graph/passes/ is graph) belongs to folder X, a file of
python/bindings/ to "bindings". An include "ember/Y/..." reaches folder Y; a local include
("common.h", "../graph/x.h", "codegen/writer.h" from the src/ include path) reaches the folder of
the file it names. runtime_include/ember_rt (the headers generated kernels include) stays
self-contained: it includes no header of ember/.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
ORDER_HEADING = "## The order of the folders"
SOURCE_DIRS = ("include", "src", "python/bindings")
SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".inc")

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
_ORDER_LINE = re.compile(r"^([a-z_]+(?:, [a-z_]+)*)\s{2,}\S")


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    folder: str
    included: str
    header: str
    why: str

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.folder} includes {self.header} "
            f"(folder {self.included}): {self.why}"
        )


def parse_order(markdown: str) -> dict[str, int]:
    """The level of each folder (0 is the lowest) from the first fenced block after the
    heading ORDER_HEADING: one line per level, lowest first, folders of one level separated
    by ", ", then at least two spaces and what they hold."""
    lines = markdown.splitlines()
    try:
        start = lines.index(ORDER_HEADING)
    except ValueError:
        raise AssertionError(f"docs/architecture.md has no heading {ORDER_HEADING!r}") from None
    fences = [i for i in range(start + 1, len(lines)) if lines[i].startswith("```")]
    assert len(fences) >= 2, f"no fenced block after {ORDER_HEADING!r}"
    levels: dict[str, int] = {}
    for level, text in enumerate(lines[fences[0] + 1 : fences[1]]):
        m = _ORDER_LINE.match(text)
        assert m, f"a line of the folder order does not read 'folder[, folder]  what': {text!r}"
        for folder in m.group(1).split(", "):
            assert folder not in levels, f"folder {folder} is listed twice in the order"
            levels[folder] = level
    return levels


def folder_of(path: str) -> str | None:
    """The folder a repository path belongs to, or None outside the C++ source folders."""
    parts = path.split("/")
    if parts[:2] == ["python", "bindings"]:
        return "bindings"
    if parts[:2] == ["include", "ember"] and len(parts) > 3:
        return parts[2]
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    return None


def included_path(path: str, header: str, files: set[str]) -> str | None:
    """The repository path a local include names, looked up like the compiler does (the
    including file's folder, then the src/ and include/ search paths)."""
    for candidate in (os.path.join(os.path.dirname(path), header), f"src/{header}"):
        candidate = os.path.normpath(candidate)
        if candidate in files:
            return candidate
    return None


def check(files: dict[str, str], order: dict[str, int]) -> list[Violation]:
    """Every include in `files` (repository path -> text) that reaches a folder not below
    the including file's own folder in `order`, or a folder the order does not list."""
    known = set(files)
    found: list[Violation] = []
    for path, text in sorted(files.items()):
        folder = folder_of(path)
        in_kernel_headers = path.startswith("runtime_include/")
        if folder is None and not in_kernel_headers:
            continue
        if folder is not None and folder not in order:
            found.append(Violation(path, 1, folder, folder, path, "folder not in the order"))
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            m = _INCLUDE.match(line)
            if not m:
                continue
            header = m.group(2)
            if header.startswith("ember/"):
                target = folder_of(f"include/{header}")
            elif m.group(1) == '"':
                local = included_path(path, header, known)
                target = folder_of(local) if local else None
            else:
                target = None
            if target is None:
                continue
            if in_kernel_headers:
                why = "the kernel headers include no header of ember/"
                found.append(Violation(path, number, "runtime_include", target, header, why))
            elif target == folder:
                continue
            elif target not in order:
                found.append(Violation(path, number, folder, target, header, "not in the order"))
            elif order[target] > order[folder]:
                found.append(Violation(path, number, folder, target, header, "above it"))
            elif order[target] == order[folder]:
                found.append(Violation(path, number, folder, target, header, "beside it"))
    return found


def repository_files() -> dict[str, str]:
    files: dict[str, str] = {}
    for top in (*SOURCE_DIRS, "runtime_include"):
        for p in (ROOT / top).rglob("*"):
            if p.is_file() and p.suffix in SOURCE_SUFFIXES:
                files[p.relative_to(ROOT).as_posix()] = p.read_text(encoding="utf-8")
    return files


def test_no_include_goes_up_the_folder_order() -> None:
    order = parse_order(ARCHITECTURE.read_text(encoding="utf-8"))
    files = repository_files()
    assert len(files) > 50, "the source folders were not found"
    violations = check(files, order)
    assert not violations, "includes against the folder order of docs/architecture.md:\n" + (
        "\n".join(str(v) for v in violations)
    )


def test_the_order_lists_exactly_the_folders() -> None:
    order = parse_order(ARCHITECTURE.read_text(encoding="utf-8"))
    present = {folder_of(path) for path in repository_files()} - {None}
    assert present == set(order), f"folders: {sorted(present)}; the order: {sorted(order)}"


SYNTHETIC_ORDER = parse_order(
    f"{ORDER_HEADING}\n\n```\nsupport  a\ntensor  b\ngraph  c\ncodegen, jit  d\nbindings  e\n```\n"
)


def test_the_order_reads_levels_lowest_first() -> None:
    assert SYNTHETIC_ORDER == {
        "support": 0,
        "tensor": 1,
        "graph": 2,
        "codegen": 3,
        "jit": 3,
        "bindings": 4,
    }


def test_an_include_up_the_order_is_found() -> None:
    files = {
        "include/ember/support/error.h": "#pragma once\n",
        "include/ember/graph/flow_graph.h": '#include "ember/tensor/tensor.h"\n',
        "src/tensor/printing.cpp": '#include <vector>\n\n#include "ember/graph/flow_graph.h"\n',
    }
    found = check(files, SYNTHETIC_ORDER)
    assert [str(v) for v in found] == [
        "src/tensor/printing.cpp:3: tensor includes ember/graph/flow_graph.h (folder graph): "
        "above it"
    ]


def test_an_include_beside_is_found_and_down_is_allowed() -> None:
    files = {
        "src/codegen/emit.cpp": '#include "ember/jit/cache.h"\n#include "ember/graph/x.h"\n',
        "python/bindings/module.cpp": '#include "ember/codegen/codegen.h"\n',
    }
    found = check(files, SYNTHETIC_ORDER)
    assert [(v.path, v.line, v.folder, v.included, v.why) for v in found] == [
        ("src/codegen/emit.cpp", 1, "codegen", "jit", "beside it")
    ]


def test_local_includes_reach_the_folder_of_the_file_they_name() -> None:
    files = {
        "src/graph/common.h": "#pragma once\n",
        "src/graph/passes/fold.cpp": '#include "../common.h"\n',
        "src/jit/process.h": "#pragma once\n",
        "src/support/log.cpp": '#include "jit/process.h"\n#include "missing.h"\n',
        "src/tensor/x.cpp": '#include "../graph/common.h"\n',
    }
    found = check(files, SYNTHETIC_ORDER)
    assert [(v.path, v.folder, v.included) for v in found] == [
        ("src/support/log.cpp", "support", "jit"),
        ("src/tensor/x.cpp", "tensor", "graph"),
    ]


def test_unknown_folders_and_kernel_headers_are_checked() -> None:
    files = {
        "src/extra/x.cpp": "",
        "runtime_include/ember_rt/kernel.h": '#include "vec.h"\n#include "ember/tensor/t.h"\n',
    }
    found = check(files, SYNTHETIC_ORDER)
    assert [(v.path, v.line, v.why) for v in found] == [
        ("runtime_include/ember_rt/kernel.h", 2, "the kernel headers include no header of ember/"),
        ("src/extra/x.cpp", 1, "folder not in the order"),
    ]
