#!/usr/bin/env bash
# Runs one libFuzzer harness of tests/fuzz for SECONDS seconds.
#
#   scripts/fuzz.sh NAME SECONDS [libFuzzer flags...]
#   scripts/fuzz.sh NAME triage     replay every finding, one line each
#   NAME: onnx-import, ir-parser, npy, external-data, jit-differential
#
# Builds what it needs in build-fuzz/ (clang-19 with ASan + UBSan + libFuzzer
# coverage on the onnxc libraries; installs clang-19 from Debian if it is
# missing), makes the seed corpus, and fuzzes with the corpus in
# build-fuzz/corpus/NAME (new inputs land there and are kept between runs),
# the seeds and tests/fuzz/regressions/NAME. Findings (crash-*, leak-*,
# timeout-*, oom-*) go to build-fuzz/findings/NAME/. Replay one with
#   build-fuzz/tests/fuzz/fuzz-NAME FILE
# ONNXC_FUZZ_KEEP_GOING=1 keeps fuzzing after a finding (libFuzzer's fork
# mode with -ignore_crashes, -ignore_ooms and -ignore_timeouts), for triage.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${ONNXC_FUZZ_BUILD_DIR:-$repo/build-fuzz}"
harnesses="onnx-import ir-parser npy external-data jit-differential"

if [[ $# -lt 2 || ! " $harnesses " =~ " $1 " || ! "$2" =~ ^([0-9]+|triage)$ ]]; then
  echo "usage: scripts/fuzz.sh NAME SECONDS|triage [libFuzzer flags...]" >&2
  echo "  NAME: ${harnesses// /, }" >&2
  exit 2
fi
name="$1"
seconds="$2"
shift 2

if ! command -v clang++-19 >/dev/null ||
   [[ ! -f /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-x86_64.a ]]; then
  echo "fuzz: installing clang-19 and its sanitizer runtimes (apt)" >&2
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y clang-19 libclang-rt-19-dev >/dev/null
fi

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DONNXC_FUZZ=ON >/dev/null
fi
# Two jobs at most: the machine is shared.
ninja -C "$build" -j "${ONNXC_FUZZ_JOBS:-2}" "fuzz-$name"

if [[ "$seconds" == triage ]]; then
  # The first line that says what went wrong: a harness finding, a
  # sanitizer report, or libFuzzer's own (leak, timeout, out-of-memory).
  for finding in "$build/findings/$name"/*; do
    [[ -f "$finding" ]] || continue
    what=$(timeout 120 "$build/tests/fuzz/fuzz-$name" -rss_limit_mb=4096 -timeout=10 "$finding" 2>&1 |
           grep -a -m1 -E 'fuzz finding:|runtime error:|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|Sanitizer:' ||
           echo "(no longer fails)")
    echo "$(basename "$finding"): $what"
  done
  exit 0
fi

python="$repo/.venv/bin/python"
[[ -x "$python" ]] || python=python3
seeds="$build/seeds"
mkdir -p "$seeds"
if [[ ! -d "$seeds/$name" || "$repo/tests/fuzz/make_corpus.py" -nt "$seeds/$name" ]]; then
  "$python" "$repo/tests/fuzz/make_corpus.py" "$seeds" "$name" >/dev/null
fi

corpus="$build/corpus/$name"
findings="$build/findings/$name"
mkdir -p "$corpus" "$findings"
inputs=("$corpus" "$seeds/$name")
[[ -d "$repo/tests/fuzz/regressions/$name" ]] && inputs+=("$repo/tests/fuzz/regressions/$name")

flags=(-max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -print_final_stats=1
       -artifact_prefix="$findings/")
[[ -f "$seeds/$name.dict" ]] && flags+=(-dict="$seeds/$name.dict")
# Graph-generator bytes past a few hundred are never read.
[[ "$name" == jit-differential ]] && flags+=(-max_len=512)
if [[ "${ONNXC_FUZZ_KEEP_GOING:-0}" != 0 ]]; then
  flags+=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
fi

log="$build/findings/$name.log"
before=$(ls "$findings" | wc -l)
echo "fuzz: $name for ${seconds}s (log: $log)" >&2
set +e
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
  "$build/tests/fuzz/fuzz-$name" "${flags[@]}" "$@" "${inputs[@]}" >"$log" 2>&1
status=$?
set -e

# One summary: executions, speed, corpus, findings.
execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
if [[ -z "$execs" ]]; then # fork mode, or stopped at a finding: the last status line
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$last")
  rate=$(grep -o 'exec/s: [0-9]*' <<<"$last" | grep -o '[0-9]*$' || true)
fi
echo "fuzz: $name: ${execs:-?} executions, ${rate:-?} exec/s, corpus $(ls "$corpus" | wc -l) files"
after=$(ls "$findings" | wc -l)
echo "fuzz: $name: $((after - before)) new findings in $findings (exit $status)"
ls -t "$findings" | head -n $((after - before)) | sed 's/^/  /'
[[ $status -eq 0 ]]
