# Sourced by scripts/setup.sh: failure_cause LOG prints, on one line, why a failed apt-get, sudo or
# pip step failed, from the step's captured output: no network to the package index (named by the
# resolver's or the socket's own words), sudo's complaint, apt's "E:" lines, pip's "ERROR:" lines,
# else the log's last line. Kept apart so tests/install/setup_messages.sh can test it on canned logs.

# The resolver's and the socket's phrases, as apt and pip (urllib3) print them.
FAILURE_NETWORK_PATTERN="Temporary failure (in name resolution|resolving '[^']*')|Could not resolve( host)?:? '?[A-Za-z0-9.-]*'?|Network is unreachable|Connection refused|Connection timed out|Name or service not known|No route to host"

failure_cause() {
  local log=$1 network cause
  network=$(grep -m1 -oE "$FAILURE_NETWORK_PATTERN" "$log" || true)
  # sudo first: when it refuses, nothing after it ran. apt's E: lines and pip's ERROR: lines say
  # what went wrong; two are enough (pip repeats the first in other words).
  cause=$(grep -E '^(sudo: |E: |ERROR: )' "$log" | head -n 2 | sed -e 's/^E: //' -e 's/^ERROR: //' |
          paste -sd ';' - | sed 's/;/; /g' || true)
  if [ -n "$network" ]; then
    echo "no network to the package index ($network)${cause:+; $cause}"
  elif [ -n "$cause" ]; then
    echo "$cause"
  elif [ -s "$log" ]; then
    echo "$(tail -n 1 "$log")"
  else
    echo "no output"
  fi
}

# unserved_apt_pins LOG: the NAME=VERSION pins apt said it does not have ("E: Version 'V' for 'N'
# was not found"), space-separated; empty when the failure was something else.
unserved_apt_pins() {
  sed -nE "s/^E: Version '([^']*)' for '([^']*)' was not found.*/\2=\1/p" "$1" | paste -sd ' ' -
}
