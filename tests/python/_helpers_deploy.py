"""Helpers of the saved-model tests (test_deploy*.py): a new interpreter, a saved file's
sections, a file made of sections, loading bytes."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap

import ember

QUIET = {"progress": False}


def run_python(code: str, env: dict | None = None) -> str:
    """Runs `code` in a new interpreter (the same ember, the same kernel cache)."""
    full_env = dict(os.environ, **(env or {}))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=full_env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def file_sections(data: bytes) -> dict[str, bytes]:
    """A saved model's sections by tag (the layout docs/deploy.md describes)."""
    n = struct.unpack_from("<I", data, 12)[0]
    table = [struct.unpack_from("<8sQQQ", data, 64 + 32 * i) for i in range(n)]
    return {tag.rstrip(b"\0").decode(): data[off:off + size] for tag, off, size, _ in table}


def load_bytes(tmp_path, data, name="x.ember"):
    p = tmp_path / name
    p.write_bytes(data)
    return ember.load(p)


def container(version: int, sections: dict[str, bytes]) -> bytes:
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
