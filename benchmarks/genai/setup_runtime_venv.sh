#!/usr/bin/env bash
# Makes build/genai-runtime-venv with onnxruntime-genai 0.18 and onnxruntime 1.32
# (requirements-runtime.txt), the peer of benchmarks/genai/run.py, through scripts/pinned_venv.sh
# (reused while its pins match). Usage: setup_runtime_venv.sh [BUILD_DIR]; prints the venv's
# python on the last line.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$REPO/build}
exec bash "$REPO/scripts/pinned_venv.sh" "$BUILD/genai-runtime-venv" \
  "$REPO/benchmarks/genai/requirements-runtime.txt" \
  'import onnxruntime_genai, onnxruntime; print("genai runtime venv:", onnxruntime_genai.__version__, "onnxruntime", onnxruntime.__version__)'
