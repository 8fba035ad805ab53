"""Runs programs in a worker subprocess, so a crash or a hang is caught and classified."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from tests.fuzz.program import Program

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = ("mismatch", "exception", "crash", "hang", "internal", "strict")


class Worker:
    """A long-lived ``python -m tests.fuzz.worker``; restarted after a crash or a hang."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = {**os.environ, **(env or {})}
        path = [str(ROOT)] + [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p]
        self.env["PYTHONPATH"] = os.pathsep.join(path)
        self.proc: subprocess.Popen[str] | None = None
        self.pump: threading.Thread | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: IO[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        self.stderr = tempfile.TemporaryFile("w+", prefix="fuzz-worker-")
        self.lines = queue.Queue()
        proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.worker"], cwd=ROOT,
                                env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self.stderr, text=True)
        lines = self.lines

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        self.proc = proc
        return proc

    def _stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read()[-3000:]

    def stop(self) -> None:
        """Ends the worker and closes its pipes (an unclosed pipe is a ResourceWarning when the
        Popen is collected, which pytest reports as an error of whichever test is running)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            if self.pump is not None:  # it reads stdout until the end the kill brings
                self.pump.join(timeout=10)
                self.pump = None
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:  # a write the worker never read: the pipe is broken
                    pass
            self.proc = None
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None

    def _answer(self, timeout: float) -> str | None:
        """The worker's next line. A program is hung when it has not answered in `timeout`
        seconds scaled by how oversubscribed the machine is (the 1-minute load average over
        the cores, at least 1): a loaded machine starves a worker, it does not hang it."""
        start = time.monotonic()
        while True:
            try:
                return self.lines.get(timeout=1.0)
            except queue.Empty:
                waited = time.monotonic() - start
                scale = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
                if waited > timeout * scale:
                    raise TimeoutError(f"no answer within {waited:.0f} s (timeout {timeout:.0f}"
                                       f" s x load factor {scale:.1f})") from None

    def run(self, prog: Program, modes: list[str], strict: bool, timeout: float
            ) -> dict[str, Any]:
        proc = self.proc if self.proc is not None and self.proc.poll() is None else None
        if proc is None:
            self.stop()
            proc = self._start()
        assert proc.stdin is not None
        req = {"program": prog.to_json(), "modes": modes, "strict": strict}
        try:
            proc.stdin.write(json.dumps(req) + "\n")
            proc.stdin.flush()
            line = self._answer(timeout)
        except TimeoutError as e:
            self.stop()
            return {"class": "hang", "mode": ",".join(modes), "fallback": False,
                    "eager_ops": 0, "graph_ops": 0, "detail": f"{e} (killed)"}
        except BrokenPipeError:
            line = None
        if line is None:
            code = proc.wait()
            tail = self._stderr_tail()
            self.stop()
            return {"class": "crash", "mode": ",".join(modes), "fallback": False,
                    "eager_ops": 0, "graph_ops": 0,
                    "detail": f"worker died with exit status {code}\n{tail}"}
        res: dict[str, Any] = json.loads(line)
        return res
