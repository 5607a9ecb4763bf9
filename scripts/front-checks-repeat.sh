#!/usr/bin/env bash
# Runs the three front checks (nginx, Apache, Caddy) back to back, ROUNDS times (default 10), as
# CI runs them one after the other, and counts the runs that failed: a check that races for a
# port fails some runs, not all. Not run by CI itself (it takes ROUNDS times as long); run it
# after touching the scripts' port logic (scripts/lib/ports.py) or the servers they start.
#
# Usage: scripts/front-checks-repeat.sh [ROUNDS]
#   SITEMAPD_BIN=path  the binary every run uses (default: target/release/sitemapd, built once)
# Each run's output goes to a temporary directory, kept when a run failed; prints one line per
# run and a total, exits 1 when any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-10}
if [ -z "${SITEMAPD_BIN:-}" ]; then
  SITEMAPD_BIN=${CARGO_TARGET_DIR:-$PWD/target}/release/sitemapd
  cargo build --release --quiet || exit 1
fi
export SITEMAPD_BIN
OUT=$(mktemp -d "${TMPDIR:-/tmp}/front-checks-repeat.XXXXXX")
failed=0
runs=0
for round in $(seq 1 "$ROUNDS"); do
  for front in nginx apache caddy; do
    runs=$((runs + 1))
    log=$OUT/$round-$front.log
    if "scripts/$front-check.sh" >"$log" 2>&1; then
      echo "round $round $front: $(tail -n 1 "$log")"
    else
      failed=$((failed + 1))
      echo "round $round $front: FAILED ($(tail -n 1 "$log")), log in $log"
      grep '^FAIL' "$log" | sed 's/^/  /'
    fi
  done
done
echo "$failed of $runs runs failed"
if [ "$failed" = 0 ]; then rm -rf "$OUT"; else echo "logs kept in $OUT"; fi
[ "$failed" = 0 ]
