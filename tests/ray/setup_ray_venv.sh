#!/usr/bin/env bash
# Makes BUILD_DIR/ray-venv with Ray Serve and the openai client (scripts/requirements-ray.txt) on
# Debian's python3, the Python the onnxc module is built for. Idempotent: an existing venv whose
# pins match is reused (about 70 s from PyPI when it is not). Ray is never installed into .venv.
# Usage: setup_ray_venv.sh [BUILD_DIR]; prints the venv's python on the last line.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$REPO/build}
VENV="$BUILD/ray-venv"
REQ="$REPO/scripts/requirements-ray.txt"
STAMP="$VENV/.requirements"
if [ -x "$VENV/bin/python" ] && cmp -s "$REQ" "$STAMP"; then
  echo "$VENV/bin/python"
  exit 0
fi
rm -rf "$VENV"
/usr/bin/python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$REQ" >&2
"$VENV/bin/python" -c 'import ray, ray.serve, openai; print("ray venv: ray", ray.__version__, "openai", openai.__version__)' >&2
cp "$REQ" "$STAMP"
echo "$VENV/bin/python"
