#!/usr/bin/env bash
# `make test`'s clock: `stamp.sh start T` and `stamp.sh end T` around a target's recipe record
# when it ran (in test-output/durations.tsv); `stamp.sh report` prints each target's duration,
# the slowest first, so a slow suite is seen; `stamp.sh reset` starts a new log.
set -euo pipefail
cd "$(dirname "$0")/.."
log=test-output/durations.tsv
mkdir -p test-output
case "$1" in
  reset) : > "$log" ;;
  start|end) printf '%s\t%s\t%s\n' "$1" "$2" "$(date +%s)" >> "$log" ;;
  report)
    echo "durations of this make test (seconds, slowest first):"
    awk -F'\t' '$1 == "start" { s[$2] = $3 } $1 == "end" && ($2 in s) { printf "%6d  %s\n", $3 - s[$2], $2 }' "$log" \
      | sort -rn
    ;;
esac
