#!/usr/bin/env bash
# Checks that every tracked C and C++ source is formatted as .clang-format says, with the
# clang-format that scripts/apt-packages.txt pins (clang-format-14): another version formats
# some lines differently, so the check would disagree with the developer's editor.
#
#   bash scripts/check-format.sh          # lists the files that differ; exit 1 if any
#   bash scripts/check-format.sh --fix    # formats them in place
#
# scripts/test.sh runs the check first. Generated tables and third-party text are not tracked
# as .cpp/.h, so nothing is exempt.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
format=clang-format-14
command -v "$format" >/dev/null || { echo "check-format.sh: $format not found (bash scripts/setup.sh installs it)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.c')
if [[ "${1:-}" == --fix ]]; then
  "$format" -i "${files[@]}"
  exit 0
fi
# One clang-format run for all files; each difference is reported as "FILE:LINE:COL: error".
mapfile -t unformatted < <("$format" --dry-run "${files[@]}" 2>&1 |
                           sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: \(warning\|error\):.*/\1/p' | sort -u)
if [[ ${#unformatted[@]} -gt 0 ]]; then
  echo "check-format.sh: ${#unformatted[@]} of ${#files[@]} files are not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "check-format.sh: run 'bash scripts/check-format.sh --fix' and commit the result" >&2
  exit 1
fi
echo "check-format.sh: ${#files[@]} files formatted"
