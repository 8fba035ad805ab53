"""A random-program fuzzer for ember's torch.compile backend; see ``__main__.py``."""

from tests.fuzz.generate import generate, prune
from tests.fuzz.program import Program

__all__ = ["Program", "generate", "prune"]
