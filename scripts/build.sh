#!/usr/bin/env bash
# Configures and builds onnxc into build/ (incremental: a second run only rebuilds what changed).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${ONNXC_BUILD_DIR:-$repo/build}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$build" -j "$(nproc)"
