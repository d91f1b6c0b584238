#!/usr/bin/env bash
# Everything a fresh Debian machine needs to run the whole test suite:
# system packages and the Python venv (scripts/setup.sh), the formatting check
# (scripts/check-format.sh), the build, then ctest;
# then the sanitizer stages (scripts/sanitize.sh): the same suite built with
# AddressSanitizer + UndefinedBehaviorSanitizer, and the concurrency tests built
# with ThreadSanitizer. ONNXC_SANITIZERS=0 stops after the normal suite.
# Arguments go to every ctest run (e.g. -R node).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${ONNXC_BUILD_DIR:-$repo/build}"
start=$SECONDS
bash "$repo/scripts/setup.sh"
echo "test.sh: setup: $((SECONDS - start)) s"
# Formatting first: a seconds-long check that would otherwise fail after an hour.
bash "$repo/scripts/check-format.sh"
start=$SECONDS
bash "$repo/scripts/build.sh"
# Re-configure so tests that depend on the venv (node tests of the pip onnx
# package, model tests) are registered even when build/ predates the venv.
cmake "$build" >/dev/null
echo "test.sh: build: $((SECONDS - start)) s"
# A module compiled again (one model in several tests) takes its machine code from the compile
# cache (codegen/artifact/CompileCache.h), keyed by the onnxc binary too: a rebuilt onnxc never
# reads an older one's entries.
export ONNXC_CACHE_DIR="${ONNXC_CACHE_DIR:-$build/compile-cache}"
start=$SECONDS
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
echo "test.sh: tests: $((SECONDS - start)) s"
if [[ "${ONNXC_SANITIZERS:-1}" != 0 ]]; then
  bash "$repo/scripts/sanitize.sh" all "$@"
fi
