"""ember's benchmarks: models in plain torch (benchmarks.models) and the runner (run.py)."""
