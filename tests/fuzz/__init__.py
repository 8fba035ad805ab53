"""A random-program fuzzer for ember's torch.compile backend; see ``__main__.py``."""

from tests.fuzz.program import Program, generate, prune

__all__ = ["Program", "generate", "prune"]
