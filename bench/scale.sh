#!/usr/bin/env bash
# bench/scale.sh: what keeping the files current costs at N rows (see bench/scale.py for every
# measure). Prints a markdown table, one column per N, also saved as
# bench/results/results-scale-<date>.md (-mariadb before .md on MariaDB).
#
#   bench/scale.sh 1000000 10000000        PostgreSQL at 1M and 10M
#   BENCH_DB=mariadb bench/scale.sh 1000000
#
# Environment: BENCH_DB (postgres, the default, or mariadb), BENCH_ADMIN_URL (default
# postgres://postgres@127.0.0.1:5432/postgres), BENCH_MYSQL_URL (default
# mysql://root@127.0.0.1:3306/), BENCH_SKIP_BUILD=1 (use the release binary already built, in
# CARGO_TARGET_DIR when set), BENCH_RESEED=1 (seed the sitemapd_scale_<N> databases again),
# BENCH_ONLY=view (only the view step, three times, reporting the slowest).
# Databases are kept between runs (seeding 10M rows takes minutes); drop sitemapd_scale_* when
# done. Everything talks to 127.0.0.1 only; servers are stopped by their PID.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
[ $# -gt 0 ] || set -- 1000000
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
fi
export SITEMAPD="$TARGET/release/sitemapd"
results=()
for n in "$@"; do
  echo "scale.sh: N = $n (${BENCH_DB:-postgres})" >&2
  results+=("$(python3 "$HERE/scale.py" "$n")")
done
mkdir -p "$HERE/results"
OUT="$HERE/results/results-scale-$(date -u +%Y-%m-%d)"
[ "${BENCH_DB:-postgres}" = postgres ] || OUT="$OUT-${BENCH_DB}"
if [ -e "$OUT.md" ]; then OUT="$OUT-$(date -u +%H%M%S).md"; else OUT="$OUT.md"; fi
python3 - "$@" "${results[@]}" <<'PY' | tee "$OUT"
import json, sys
half = (len(sys.argv) - 1) // 2
sizes, runs = sys.argv[1:1 + half], [json.loads(r) for r in sys.argv[1 + half:]]
keys = []
for r in runs:
    keys += [k for k in r if k not in keys]
print("| measure | " + " | ".join(f"{int(n):,} rows" for n in sizes) + " |")
print("| --- |" + " --- |" * len(sizes))
def show(v):
    if v is None: return "–"
    if isinstance(v, float): return f"{v:.2f}"
    return str(v)
for k in keys:
    print(f"| {k} | " + " | ".join(show(r.get(k)) for r in runs) + " |")
PY
echo "scale.sh: saved $OUT" >&2
