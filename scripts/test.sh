#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs every test suite and the linter. Each
# suite runs even when an earlier one failed; the exit status says whether all passed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}

failed=()
# Status 2: some C++ targets failed to build; run every suite anyway (ctest reports the
# programs that are missing), and fail at the end.
bash scripts/setup.sh || { status=$?; [[ $status == 2 ]] || exit "$status"; failed+=(cpp-build); }
run() {
  local name=$1
  shift
  printf '\n== %s: %s\n' "$name" "$*"
  "$@" || failed+=("$name")
}

run ctest ctest --test-dir build/cpp --output-on-failure -j "$(nproc)"
# From the repository root `import ember` finds the installed package (the sources are in
# python/ember, which is not on sys.path).
# Test files run in parallel (pytest-xdist), each on one worker (--dist loadfile: a file's
# module fixtures compile once); the workers share the session's kernel cache (conftest.py).
# --no-loadscope-reorder (pytest-xdist >= 3.6): files go out in collection order, longest
# first (conftest.py), not in xdist's order by number of tests, which left the longest file,
# with only two tests, to run alone at the end.
workers=$(nproc)
((workers > 4)) && workers=4
run pytest "$PYTHON" -m pytest tests/python -q -n "$workers" --dist loadfile --no-loadscope-reorder
lint_paths=()
for d in python tests benchmarks examples; do [[ -d $d ]] && lint_paths+=("$d"); done
run ruff "$PYTHON" -m ruff check "${lint_paths[@]}"

if ((${#failed[@]})); then
  printf '\nFAILED: %s\n' "${failed[*]}"
  exit 1
fi
printf '\nall passed\n'
