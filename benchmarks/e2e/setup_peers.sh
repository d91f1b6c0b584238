#!/usr/bin/env bash
# Makes build/peers-venv with the newest onnxruntime and OpenVINO (requirements-peers.txt) for
# benchmarks/e2e/run.py --peer-python build/peers-venv/bin/python. Idempotent.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VENV="$REPO/build/peers-venv"
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input \
    -r "$REPO/benchmarks/e2e/requirements-peers.txt"
"$VENV/bin/python" -c 'import onnxruntime, openvino; print("peers:", "onnxruntime", onnxruntime.__version__, "openvino", openvino.__version__)'
