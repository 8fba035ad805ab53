#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the quick start and the model demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Status 2: only C++ targets (tests, examples) failed to build; the Python demo can run.
bash scripts/setup.sh || { status=$?; [[ $status == 2 ]] || exit "$status"; }
"${PYTHON:-python3}" examples/quickstart.py
echo
echo "=== torch.compile(model, backend=\"ember\") on a bundled ResNet-18 ==="
"${PYTHON:-python3}" examples/model_demo.py --model resnet18
