#!/usr/bin/env bash
# bench/replicas.sh: rows the database reads from the entries table with one and with three
# replicas, for the same 20 changes and for 60 s idle, in one run (see bench/replicas.py).
#
#   bench/replicas.sh                 PostgreSQL, 200,000 rows
#   BENCH_DB=mariadb bench/replicas.sh 200000
#
# Environment as bench/scale.sh (BENCH_DB, BENCH_ADMIN_URL, BENCH_MYSQL_URL, BENCH_SKIP_BUILD),
# plus BENCH_IDLE_SECS (default 60). Writes the result to bench/results/.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
fi
export SITEMAPD="$TARGET/release/sitemapd"
mkdir -p "$HERE/results"
out="$HERE/results/results-replicas-$(date -u +%Y-%m-%d)-${BENCH_DB:-postgres}.json"
python3 "$HERE/replicas.py" "$@" | tee "$out"
