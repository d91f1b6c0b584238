#!/usr/bin/env bash
# Makes BUILD_DIR/ray-venv with Ray Serve and the openai client (scripts/requirements-ray.txt) on
# Debian's python3, the Python the onnxc module is built for, through scripts/pinned_venv.sh
# (reused while its pins match; about 70 s from PyPI when it is not). Ray is never installed into
# .venv. Usage: setup_ray_venv.sh [BUILD_DIR]; prints the venv's python on the last line.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$REPO/build}
exec bash "$REPO/scripts/pinned_venv.sh" "$BUILD/ray-venv" "$REPO/scripts/requirements-ray.txt" \
  'import ray, ray.serve, openai; print("ray venv: ray", ray.__version__, "openai", openai.__version__)'
