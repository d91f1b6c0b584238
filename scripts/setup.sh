#!/usr/bin/env bash
# Installs what onnxc needs to build and test: the Debian packages in scripts/apt-packages.txt
# and a Python venv at .venv with scripts/requirements.txt. Idempotent: when everything is
# already in place it does two quick checks and prints nothing.
#
#   bash scripts/setup.sh          # as root, or as a user with passwordless sudo
#
# Works without a terminal (CI=true, no stdin). On failure: one line on stderr, exit 1, naming
# the cause as the failed tool gave it (sudo wanting a password, no network to the package index,
# a pinned version not served; scripts/failure-cause.sh) and where its full log was kept.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=failure-cause.sh
source "$REPO/scripts/failure-cause.sh"
APT_LIST="$REPO/scripts/apt-packages.txt"
REQUIREMENTS="$REPO/scripts/requirements.txt"
NODEPS_REQUIREMENTS="$REPO/scripts/requirements-nodeps.txt"
VENV="$REPO/.venv"
STAMP="$VENV/.requirements.sha"
SYSTEM_PYTHON=/usr/bin/python3

die() { echo "setup.sh: error: $*" >&2; exit 1; }
note() { echo "setup.sh: $*" >&2; }

LOG=$(mktemp "${TMPDIR:-/tmp}/onnxc-setup.XXXXXX")
trap 'rm -f "$LOG"' EXIT
# Keeps a failed step's log for the user, since the single error line points at it.
keep_log() { local kept="${TMPDIR:-/tmp}/onnxc-setup-$1.log"; cp "$LOG" "$kept"; echo "$kept"; }

# ---- Debian packages -----------------------------------------------------------------------

[ -f "$APT_LIST" ] || die "missing $APT_LIST"
mapfile -t PINNED < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$APT_LIST" | grep -v '^$')
[ "${#PINNED[@]}" -gt 0 ] || die "$APT_LIST lists no packages"
NAMES=("${PINNED[@]%%=*}")

missing_packages() {
  # dpkg-query prints one status per known package and complains (to stderr) about unknown
  # ones, so compare the set of installed names with the wanted set.
  local installed
  installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${NAMES[@]}" 2>/dev/null |
              awk '$2 == "installed" { print $1 }' || true)
  local name
  for name in "${NAMES[@]}"; do
    grep -qxF "$name" <<<"$installed" || echo "$name"
  done
}

command -v dpkg-query >/dev/null || die "dpkg-query not found: this script supports Debian only"
MISSING=$(missing_packages)
if [ -n "$MISSING" ]; then
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null; then
    SUDO=(sudo -n)   # -n: fail instead of prompting when there is no terminal
  else
    die "not root and sudo is missing; cannot install: $(echo $MISSING)"
  fi
  # sudo -n fails at once without a terminal or a NOPASSWD rule: say so before apt runs.
  if [ "${#SUDO[@]}" -gt 0 ] && ! sudo -n true >"$LOG" 2>&1; then
    die "cannot install Debian packages ($(echo $MISSING)) as $(id -un): $(failure_cause "$LOG"); run as root, or install them by hand"
  fi
  APT=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y
       -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
  note "installing Debian packages: $(echo $MISSING)"
  UPDATE_CAUSE=""
  if ! "${APT[@]}" update >"$LOG" 2>&1; then
    UPDATE_CAUSE=$(failure_cause "$LOG")
    note "warning: apt-get update failed ($UPDATE_CAUSE); using the cached package lists"
  fi
  # What install's own log cannot tell (a missing package after a failed update is the update's fault).
  AFTER_UPDATE=${UPDATE_CAUSE:+, after apt-get update failed: $UPDATE_CAUSE}
  if ! "${APT[@]}" install --no-install-recommends "${PINNED[@]}" >"$LOG" 2>&1; then
    # Only a pin apt does not serve is worth an unpinned retry; anything else (no network, a
    # held dpkg lock, a broken dependency) would fail the same way again.
    UNSERVED=$(unserved_apt_pins "$LOG")
    [ -n "$UNSERVED" ] || die "apt-get install failed: $(failure_cause "$LOG")$AFTER_UPDATE (log: $(keep_log apt))"
    note "warning: pinned versions not served by apt: $UNSERVED; retrying unpinned"
    "${APT[@]}" install --no-install-recommends "${NAMES[@]}" >"$LOG" 2>&1 ||
      die "apt-get install failed: $(failure_cause "$LOG")$AFTER_UPDATE (log: $(keep_log apt))"
  fi
  MISSING=$(missing_packages)
  [ -z "$MISSING" ] || die "still not installed after apt-get: $(echo $MISSING)"
fi

# ---- Python venv -----------------------------------------------------------------------------

[ -x "$SYSTEM_PYTHON" ] || die "$SYSTEM_PYTHON not found (Debian's python3 is needed for its torch)"
[ -f "$REQUIREMENTS" ] || die "missing $REQUIREMENTS"

# A venv whose interpreter no longer starts (moved repo, upgraded python) is rebuilt from scratch.
if [ -e "$VENV" ] && ! "$VENV/bin/python" -c '' >/dev/null 2>&1; then
  note "rebuilding broken venv at $VENV"
  rm -rf "$VENV"
fi
if [ ! -x "$VENV/bin/python" ]; then
  note "creating venv at $VENV"
  "$SYSTEM_PYTHON" -m venv --system-site-packages "$VENV" >"$LOG" 2>&1 ||
    die "could not create $VENV: $(failure_cause "$LOG") (is python3-venv installed?) (log: $(keep_log venv))"
fi

WANT_SHA=$(cat "$REQUIREMENTS" "$NODEPS_REQUIREMENTS" | sha256sum | cut -d' ' -f1)
HAVE_SHA=$(cat "$STAMP" 2>/dev/null || true)
if [ "$WANT_SHA" != "$HAVE_SHA" ]; then
  note "installing Python packages from scripts/requirements.txt"
  rm -f "$STAMP"
  PIP_NO_INPUT=1 "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q \
      -r "$REQUIREMENTS" >"$LOG" 2>&1 ||
    die "pip install -r scripts/requirements.txt failed: $(failure_cause "$LOG") (log: $(keep_log pip))"
  # The combination that matters: Debian's torch with the venv's numpy, plus onnx and ORT.
  "$VENV/bin/python" - >"$LOG" 2>&1 <<'EOF' || die "venv check failed: torch/numpy/onnx/onnxruntime do not import together: $(failure_cause "$LOG") (log: $(keep_log check))"
import numpy, torch, onnx, onnxruntime
assert numpy.__version__.startswith("1."), numpy.__version__
torch.from_numpy(numpy.zeros(2))
EOF
  # The wheel test (tests/python/test_wheel.py) installs the wheel into a fresh venv with its
  # one dependency, numpy, at the pinned version, with no network: from this wheelhouse. pip
  # takes it from its cache when the install above just downloaded it.
  NUMPY_PIN=$(grep -m1 '^numpy==' "$REQUIREMENTS")
  PIP_NO_INPUT=1 "$VENV/bin/python" -m pip download --disable-pip-version-check --no-input -q \
      --no-deps --only-binary=:all: -d "$VENV/wheelhouse" "$NUMPY_PIN" >"$LOG" 2>&1 ||
    die "pip download $NUMPY_PIN failed: $(failure_cause "$LOG") (log: $(keep_log wheelhouse))"
  PIP_NO_INPUT=1 "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q \
      --no-deps -r "$NODEPS_REQUIREMENTS" >"$LOG" 2>&1 ||
    die "pip install --no-deps -r scripts/requirements-nodeps.txt failed: $(failure_cause "$LOG") (log: $(keep_log pip-nodeps))"
  echo "$WANT_SHA" >"$STAMP"
fi
