#!/usr/bin/env bash
# Everything a fresh Debian machine needs to run the whole test suite:
# system packages and the Python venv (scripts/setup.sh), the build, then ctest.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bash "$repo/scripts/setup.sh"
bash "$repo/scripts/build.sh"
# Re-configure so tests that depend on the venv (node tests of the pip onnx
# package, model tests) are registered even when build/ predates the venv.
cmake "${ONNXC_BUILD_DIR:-$repo/build}" >/dev/null
ctest --test-dir "${ONNXC_BUILD_DIR:-$repo/build}" --output-on-failure -j "$(nproc)" "$@"
