#!/usr/bin/env bash
# Makes build/genai-venv with onnxruntime-genai's model builder (requirements-genai.txt) on
# Debian's python3 and torch 1.13. Idempotent: an existing venv whose pins match is reused.
# Usage: setup_genai_venv.sh [BUILD_DIR]; prints the venv's python on the last line.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$REPO/build}
VENV="$BUILD/genai-venv"
REQ="$REPO/tests/genai/requirements-genai.txt"
STAMP="$VENV/.requirements"
if [ -x "$VENV/bin/python" ] && cmp -s "$REQ" "$STAMP"; then
  echo "$VENV/bin/python"
  exit 0
fi
rm -rf "$VENV"
/usr/bin/python3 -m venv --system-site-packages "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$REQ" >&2
"$VENV/bin/python" -c 'import onnxruntime_genai, onnxruntime, torch; print("genai venv:", onnxruntime_genai.__version__, "onnxruntime", onnxruntime.__version__, "torch", torch.__version__)' >&2
cp "$REQ" "$STAMP"
echo "$VENV/bin/python"
