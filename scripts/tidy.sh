#!/usr/bin/env bash
# Runs clang-tidy (the checks of .clang-tidy) on the C++ files a change touches: the files that
# differ from BASE (default: the merge base with main, else HEAD~1), plus the uncommitted ones.
#
#   bash scripts/tidy.sh [BASE]          # needs build/compile_commands.json (scripts/build.sh)
#   bash scripts/tidy.sh --all           # every tracked .cpp (slow: about an hour on 2 cores)
#
# Exit 1 when any check fires; each finding is printed as clang-tidy gives it.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
tidy=clang-tidy-14
build="${ONNXC_BUILD_DIR:-$repo/build}"
command -v "$tidy" >/dev/null || { echo "tidy.sh: $tidy not found (bash scripts/setup.sh installs it)" >&2; exit 1; }
[[ -f "$build/compile_commands.json" ]] ||
  { echo "tidy.sh: no $build/compile_commands.json (run bash scripts/build.sh first)" >&2; exit 1; }
if [[ "${1:-}" == --all ]]; then
  mapfile -t files < <(git ls-files '*.cpp')
else
  base="${1:-$(git merge-base HEAD main 2>/dev/null || git rev-parse HEAD~1)}"
  mapfile -t files < <({ git diff --name-only "$base" -- '*.cpp'; git diff --name-only -- '*.cpp'; } |
                       sort -u | while read -r f; do [[ -f "$f" ]] && echo "$f"; done)
fi
if [[ ${#files[@]} -eq 0 ]]; then
  echo "tidy.sh: no C++ file changed"
  exit 0
fi
failed=0
for file in "${files[@]}"; do
  if ! "$tidy" -p "$build" --quiet "$file" 2>/dev/null; then
    failed=1
  fi
done
[[ $failed == 0 ]] && echo "tidy.sh: ${#files[@]} files clean" || { echo "tidy.sh: findings above" >&2; exit 1; }
