#!/usr/bin/env bash
# Installs what ember needs on a fresh Debian machine (run as root), installs the ember Python
# package, and builds the C++ tree (tests, examples) into build/cpp.
#
# Idempotent and quick on a second run: apt and pip are skipped when everything is present,
# the package is reinstalled only when its sources changed, and ninja rebuilds incrementally.
# PYTHON selects the interpreter (default: python3).
#
# Exit status: 0 when everything is ready; 2 when only the C++ tree failed to build (the
# Python package is installed and every C++ target that could be built was built); 1 else.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
step() { printf '\n== %s\n' "$*"; }
# Whether the interpreter's sysconfig path $1 holds the file $2.
python_has() {
  "$PYTHON" -c 'import os, sys, sysconfig
path = os.path.join(sysconfig.get_paths()[sys.argv[1]], sys.argv[2])
sys.exit(not os.path.exists(path))' "$1" "$2"
}

# ---- system packages ------------------------------------------------------------------------
apt_packages=(g++ libgtest-dev libbenchmark-dev clang-format ccache pkg-config zlib1g-dev)
# A bare Debian python3 also needs pip and the headers extensions are built against.
"$PYTHON" -m pip --version >/dev/null 2>&1 || apt_packages+=(python3-pip)
python_has include Python.h || apt_packages+=(python3-dev)
missing_apt=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing_apt+=("$p")
done
if ((${#missing_apt[@]})); then
  step "apt-get install ${missing_apt[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing_apt[@]}"
fi

# ---- Python packages ------------------------------------------------------------------------
# Debian's own Python refuses pip installs unless told otherwise (PEP 668).
python_has stdlib EXTERNALLY-MANAGED && export PIP_BREAK_SYSTEM_PACKAGES=1
# Requirements with the exact torch version (pip must never pick another one), checked
# locally so that pip runs only for what is missing.
missing_pip=$("$PYTHON" - <<'PY'
import importlib.metadata as md
import shutil

wanted = {"torch": "2.13.0", "numpy": None, "pytest": None, "pytest-xdist": "3.8.0",
          "tqdm": None, "ruff": None,
          "expecttest": None, "transformers": "5.24.0",
          # ONNX import (ember.onnx) and its tests against ONNX Runtime.
          "onnx": "1.23.2", "onnxruntime": "1.32.0", "onnxscript": "0.7.2",
          # benchmarks/run.py times ember against OpenVINO (and ONNX Runtime, above).
          "openvino": "2026.4.1",
          "nanobind": None, "scikit-build-core": None}
if shutil.which("cmake") is None:
    wanted["cmake"] = None
if shutil.which("ninja") is None:
    wanted["ninja"] = None
missing = []
for name, version in wanted.items():
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        have = None
    if have is None or (version is not None and have.split("+")[0] != version):
        missing.append(f"{name}=={version}" if version else name)
print(" ".join(missing))
PY
)
if [[ -n "$missing_pip" ]]; then
  step "pip install $missing_pip"
  # torch==2.13.0 is always named, so that no other requirement (transformers) can make pip
  # resolve another torch.
  [[ " $missing_pip " == *" torch=="* ]] || missing_pip="torch==2.13.0 $missing_pip"
  # shellcheck disable=SC2086
  "$PYTHON" -m pip install $missing_pip
fi

# ---- the ember package ----------------------------------------------------------------------
# --no-build-isolation: build with the nanobind and scikit-build-core installed above (pip
# then never resolves anything, torch included). The build directory build/<wheel tag> is
# kept, so a rebuild is incremental; the stamp skips pip entirely when no source changed.
stamp=build/.ember-package-stamp
source_hash=$( {
  "$PYTHON" -c 'import sys; print(sys.executable, sys.version)'
  for p in CMakeLists.txt pyproject.toml README.md include src python runtime_include; do
    [[ -e $p ]] && find "$p" -type f ! -name '*.pyc' -print0
  done | LC_ALL=C sort -z | xargs -0 -r sha256sum
} | sha256sum | cut -d' ' -f1)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$source_hash" ]] &&
  (cd /tmp && "$PYTHON" -c 'import ember' 2>/dev/null); then
  echo "ember package up to date"
else
  step "pip install ."
  "$PYTHON" -m pip install --no-build-isolation .
  mkdir -p build
  echo "$source_hash" >"$stamp"
fi

# ---- the C++ tree: libraries, tests, examples -----------------------------------------------
if [[ ! -f build/cpp/CMakeCache.txt ]]; then
  step "cmake configure build/cpp"
  cmake -G Ninja -S . -B build/cpp -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$(command -v "$PYTHON")"
fi
step "cmake --build build/cpp"
# -k 0: build every target that can be built, so one broken file does not hide the rest.
if ! cmake --build build/cpp -- -k 0; then
  echo "setup.sh: some C++ targets in build/cpp failed to build (see above)" >&2
  exit 2
fi
