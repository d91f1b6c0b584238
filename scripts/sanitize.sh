#!/usr/bin/env bash
# The sanitizer stages of scripts/test.sh, also run by hand (CONTRIBUTING.md):
#
#   bash scripts/sanitize.sh [asan|tsan|all] [ctest arguments...]
#
# asan: the whole project built with AddressSanitizer + UndefinedBehaviorSanitizer
#       into build-asan/ (with the normal build's uninstrumented unit-test objects and kernel
#       emitters), then its full ctest suite.
# tsan: the concurrency tests built with ThreadSanitizer into build-tsan/ (with the normal build's
#       uninstrumented IR and codegen archives), then run.
# Both builds are incremental; neither rebuilds LLVM (Debian's shared libLLVM is
# linked as it is, uninstrumented). Needs scripts/setup.sh to have run. Every
# sanitizer report aborts the process, so it fails the test that ran it, whatever
# that test expects of the exit code (lit's `not`, the bad-input runner).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
which="${1:-all}"
[[ $# -gt 0 ]] && shift
case "$which" in
  asan | tsan | all) ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|all] [ctest arguments...]" >&2; exit 2 ;;
esac
normal_build="${ONNXC_BUILD_DIR:-$repo/build}"
jobs="$(nproc)"

# Options of the sanitizers' runtimes. abort_on_error turns a report into SIGABRT:
# a test that expects a non-zero exit (an error path) still fails on it.
# Leak checking is on; the suppressions file names the only leaks allowed.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:check_initialization_order=1:strict_init_order=1:detect_odr_violation=2"
export UBSAN_OPTIONS="print_stacktrace=1:abort_on_error=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$repo/tests/sanitizers/lsan.supp:print_suppressions=0"
export TSAN_OPTIONS="abort_on_error=1:halt_on_error=1:second_deadlock_stack=1"

timed() {
  local what="$1" start=$SECONDS
  shift
  "$@"
  echo "sanitize.sh: $what: $((SECONDS - start)) s"
}

configure() {
  local dir="$1"
  shift
  # Always re-run: it is quick, it picks up a venv made after the first
  # configure (venv-dependent tests), and it keeps the sanitizer setting right.
  cmake -G Ninja -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
}

build_asan() {
  # The test models come from the normal build's folder when it has them
  # (scripts/test.sh builds that first): torch exports them once, not twice.
  local models=()
  [[ -d "$normal_build/models" ]] && models=(-DONNXC_MODEL_DIR="$normal_build/models")
  # Likewise the onnx-1.23 node cases (tests/node/CMakeLists.txt).
  [[ -d "$normal_build/tests/node" ]] && models+=(-DONNXC_NODE_DATA_DIR="$normal_build/tests/node")
  # The unit tests' own files and codegen's emitters, uninstrumented in this build, are compiled
  # by the normal build only (tests/unit/ and codegen/CMakeLists.txt); brought up to date there
  # first.
  local shared_objects=(-DONNXC_UNIT_TEST_OBJECTS= -DONNXC_UNINSTRUMENTED_EMITTERS=)
  if [[ -f "$normal_build/build.ninja" ]]; then
    ninja -C "$normal_build" -j "$jobs" onnxc_unit_test_objects onnxc_codegen_emitters
    shared_objects=(-DONNXC_UNIT_TEST_OBJECTS="$normal_build/tests/unit/onnxc_unit_test_objects.txt"
                    -DONNXC_UNINSTRUMENTED_EMITTERS="$normal_build/codegen/onnxc_emitter_objects.txt")
  fi
  configure "$repo/build-asan" -DONNXC_SANITIZE=address,undefined "${models[@]}" "${shared_objects[@]}"
  ninja -C "$repo/build-asan" -j "$jobs"
}

build_tsan() {
  # The IR and codegen archives come from the normal build when it has one (ONNXC_UNINSTRUMENTED_BUILD
  # in CMakeLists.txt: the races looked for are the runtime's), brought up to date there first.
  local compiler=(-DONNXC_UNINSTRUMENTED_BUILD=)
  if [[ -f "$normal_build/build.ninja" ]]; then
    ninja -C "$normal_build" -j "$jobs" onnxc_ir onnxc_codegen
    compiler=(-DONNXC_UNINSTRUMENTED_BUILD="$normal_build")
  fi
  configure "$repo/build-tsan" -DONNXC_SANITIZE=thread "${compiler[@]}"
  ninja -C "$repo/build-tsan" -j "$jobs" onnxc_concurrency_tests
}

if [[ "$which" != tsan ]]; then
  timed "asan build" build_asan
  timed "asan tests" ctest --test-dir "$repo/build-asan" --output-on-failure -j "$jobs" "$@"
fi
if [[ "$which" != asan ]]; then
  timed "tsan build" build_tsan
  timed "tsan tests" ctest --test-dir "$repo/build-tsan" --output-on-failure -j "$jobs" "$@"
fi
