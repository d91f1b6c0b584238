#!/usr/bin/env bash
# Makes build/genai-venv with onnxruntime-genai's model builder (requirements-genai.txt) on
# Debian's python3 and torch 1.13 (its site packages), through scripts/pinned_venv.sh (reused
# while its pins match). Usage: setup_genai_venv.sh [BUILD_DIR]; prints the venv's python on the
# last line.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$REPO/build}
exec bash "$REPO/scripts/pinned_venv.sh" "$BUILD/genai-venv" "$REPO/tests/genai/requirements-genai.txt" \
  'import onnxruntime_genai, onnxruntime, torch; print("genai venv:", onnxruntime_genai.__version__, "onnxruntime", onnxruntime.__version__, "torch", torch.__version__)' \
  --system-site-packages
