#!/usr/bin/env bash
# Makes build/genai-runtime-venv with onnxruntime-genai 0.18 and onnxruntime 1.32
# (requirements-runtime.txt), the peer of benchmarks/genai/run.py. Idempotent: an existing venv
# whose pins match is reused. Usage: setup_runtime_venv.sh [BUILD_DIR]; prints the venv's python
# on the last line.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$REPO/build}
VENV="$BUILD/genai-runtime-venv"
REQ="$REPO/benchmarks/genai/requirements-runtime.txt"
STAMP="$VENV/.requirements"
if [ -x "$VENV/bin/python" ] && cmp -s "$REQ" "$STAMP"; then
  echo "$VENV/bin/python"
  exit 0
fi
rm -rf "$VENV"
/usr/bin/python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$REQ" >&2
"$VENV/bin/python" -c 'import onnxruntime_genai, onnxruntime; print("genai runtime venv:", onnxruntime_genai.__version__, "onnxruntime", onnxruntime.__version__)' >&2
cp "$REQ" "$STAMP"
echo "$VENV/bin/python"
