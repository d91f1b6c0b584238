#!/usr/bin/env bash
# scripts/failure-cause.sh on the logs apt-get, sudo and pip write when they fail (issue 13,
# item 7): scripts/setup.sh must name the real cause, not guess one.
set -euo pipefail
source "$(dirname "$0")/../../scripts/failure-cause.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
expect() {  # expect NAME WANTED-SUBSTRING < LOG
  cat >"$dir/$1.log"
  local got
  got=$(failure_cause "$dir/$1.log")
  if [[ "$got" != *"$2"* || "$got" == *$'\n'* ]]; then
    echo "FAIL $1: got '$got', wanted one line containing '$2'"
    failures=$((failures + 1))
  else
    echo "ok $1: $got"
  fi
}

expect sudo-password 'sudo: a password is required' <<'LOG'
sudo: a password is required
LOG
expect apt-no-network "no network to the package index (Temporary failure resolving 'deb.debian.org')" <<'LOG'
Err:1 http://deb.debian.org/debian bookworm InRelease
  Temporary failure resolving 'deb.debian.org'
Reading package lists...
W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'
W: Some index files failed to download. They have been ignored, or old ones used instead.
LOG
expect apt-pin-not-served "Version '3.25.1-1' for 'cmake' was not found" <<'LOG'
Reading package lists...
Building dependency tree...
E: Version '3.25.1-1' for 'cmake' was not found
LOG
expect apt-lock 'Could not get lock /var/lib/dpkg/lock-frontend' <<'LOG'
E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)
E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?
LOG
expect pip-no-network 'no network to the package index (Temporary failure in name resolution); Could not find a version that satisfies the requirement numpy==1.26.4' <<'LOG'
WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/numpy/
ERROR: Could not find a version that satisfies the requirement numpy==1.26.4 (from versions: none)
ERROR: No matching distribution found for numpy==1.26.4
LOG
expect pip-pin-not-served 'No matching distribution found for onnxruntime==0.0.1' <<'LOG'
ERROR: Ignored the following versions that require a different python version: 1.0 Requires-Python >=3.12
ERROR: No matching distribution found for onnxruntime==0.0.1
LOG
expect traceback "ModuleNotFoundError: No module named 'torch'" <<'LOG'
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
ModuleNotFoundError: No module named 'torch'
LOG
expect empty 'no output' </dev/null

printf "E: Version '3.25.1-1' for 'cmake' was not found\nE: Version '1.0' for 'ninja-build' was not found\n" >"$dir/pins.log"
pins=$(unserved_apt_pins "$dir/pins.log")
if [ "$pins" = "cmake=3.25.1-1 ninja-build=1.0" ]; then echo "ok unserved pins: $pins"; else
  echo "FAIL unserved pins: '$pins'"; failures=$((failures + 1)); fi
printf "E: Could not get lock /var/lib/dpkg/lock-frontend\n" >"$dir/lock.log"
[ -z "$(unserved_apt_pins "$dir/lock.log")" ] || { echo "FAIL: a lock is not an unserved pin"; failures=$((failures + 1)); }

[ "$failures" -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "every cause named"
