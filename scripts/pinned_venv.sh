#!/usr/bin/env bash
# A venv of its own for one tool, from a pinned requirements file, made on Debian's python3 and
# reused while its pins match (a copy of the file inside it is the stamp): the peers and builders
# whose versions the test venv cannot hold (onnxruntime-genai's builder and runtime, Ray).
#
#   pinned_venv.sh VENV REQUIREMENTS 'import a, b; print(...)' [--system-site-packages]
#
# The Python line checks the installed packages (its output goes to stderr); the venv's python is
# printed on the last line of stdout.
set -euo pipefail
venv="$1" requirements="$2" check="$3"
shift 3
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; then
  echo "$venv/bin/python"
  exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$@" "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input -r "$requirements" >&2
"$venv/bin/python" -c "$check" >&2
cp "$requirements" "$stamp"
echo "$venv/bin/python"
