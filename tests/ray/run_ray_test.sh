#!/usr/bin/env bash
# ctest's ray/serve: makes or reuses BUILD_DIR/ray-venv (setup_ray_venv.sh), then runs
# test_ray_serve.py in it; the build's onnxc module comes from PYTHONPATH (set by ctest).
# Bounded: a Ray that hangs (a node that never registers) is stopped after 420 s.
# Usage: run_ray_test.sh BUILD_DIR [pytest arguments]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$1
shift
PYTHON=$(bash "$HERE/setup_ray_venv.sh" "$BUILD" | tail -n 1)
exec timeout -k 10 420 "$PYTHON" -m pytest -q -p no:cacheprovider "$HERE/test_ray_serve.py" -o console_output_style=classic -W ignore::DeprecationWarning "$@"
