#!/usr/bin/env bash
# bench/capacity.sh: the per-file and per-row costs docs/capacity.md plans from, on PostgreSQL,
# counted as the database counts them (tuples of sitemap_entries read, pg_stat_user_tables:
# seq_tup_read + idx_tup_fetch). Prints a markdown table, one column per N, and saves it as
# bench/results/results-capacity-<date>.md.
#
#   bench/capacity.sh                  1,000,000 rows
#   bench/capacity.sh 1000000 2000000  one column per size
#
# For each N, a database sitemapd_capacity_<N> seeded with bench/seed.sql (dropped at the end):
#   size          sitemap_entries with its indexes, and sitemapd's own tables after the first start
#   first start   state emptied, `serve`: seconds to the index 200, rows read by the first sweep
#   idle          built-in table, SITEMAP_REFRESH_SECS=20, 60 s with nothing changing: rows read
#                 per refresh period
#   a change      one UPDATE while serving: seconds to its file's new ETag, rows read for it
#   restart       `serve` again on the stored state: seconds to the index 200, to /readyz "ready"
#                 (every file verified), rows read meanwhile
#   view          a view over the table (watched through triggers on PostgreSQL), first sweep,
#                 then 60 s idle: rows read per refresh; then one UPDATE: new ETag, rows read
#   memory        VmHWM (peak) and VmRSS (at the end) of each server
# Environment: BENCH_ADMIN_URL, BENCH_SKIP_BUILD=1, CARGO_TARGET_DIR, as for bench/scale.sh.
# Everything talks to 127.0.0.1 only; every server is stopped by its PID; every wait is bounded.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
[ $# -gt 0 ] || set -- 1000000
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
fi
export SITEMAPD="$TARGET/release/sitemapd" BENCH_DB=postgres
mkdir -p "$HERE/results"
out="$HERE/results/results-capacity-$(date -u +%Y-%m-%d-%H%M%S).md"
python3 - "$HERE" "$out" "$@" <<'PY'
import json, os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import scale  # the Server, seeding and SQL helpers of bench/scale.py
from scale import Server, sql, TABLE_BASE, VIEW_BASE

FLUSH = 12  # PostgreSQL publishes an idle session's counters within 10 s
REFRESH = 20
WINDOW = 60
live = []


def rows_read(name):
    return int(sql(name, "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
                         "FROM pg_stat_user_tables WHERE relname = 'sitemap_entries'"))


def settled_rows(name):
    time.sleep(FLUSH)
    return rows_read(name)


def mib(name, where):
    return int(sql(name, "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                         f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' "
                         f"AND n.nspname = 'public' AND {where}")) / 2**20


def rss(server):
    with open(f"/proc/{server.proc.pid}/status") as f:
        return {l.split(":")[0]: int(l.split()[1]) / 1024 for l in f if l.startswith("Vm")}


def start(name, base, extra=None):
    s = Server(name, base, extra)
    live.append(s)
    return s


def stop(s, out, label):
    mem = rss(s)
    out[f"{label}: RSS at the end / peak (MiB)"] = f"{mem['VmRSS']:.1f} / {mem['VmHWM']:.1f}"
    live.remove(s)
    s.stop()


def new_etag(s, path, before):
    return s.until("the new ETag", lambda: s.etag(path) not in (None, before), poll=0.02)


def measure(n):
    name = f"sitemapd_capacity_{n}"
    out = {}
    t0 = time.monotonic()
    scale.seed(name, n)
    out["seeding with bench/seed.sql (s)"] = time.monotonic() - t0
    out["sitemap_entries with indexes (MiB)"] = mib(name, "c.relname = 'sitemap_entries'")

    scale.clear_state(name)
    r0 = settled_rows(name)
    s = start(name, TABLE_BASE, {"SITEMAP_REFRESH_SECS": str(REFRESH)})
    out["first start: index 200 (s)"] = s.until("the index", s.status_is("/sitemap_index.xml"))
    out["first start: ready (s)"] = s.until("ready", s.ready(), poll=0.1)
    files = s.files()
    out["files"] = files
    r1 = settled_rows(name)
    out["first start: rows read"] = r1 - r0
    out["sitemapd's tables (MiB)"] = mib(name, "c.relname LIKE 'sitemapd%'")

    time.sleep(2 * REFRESH)
    r0 = settled_rows(name)
    time.sleep(WINDOW)
    r1 = settled_rows(name)
    out["idle, built-in table: rows read per refresh"] = (r1 - r0) / (WINDOW + FLUSH) * REFRESH

    changed = n // 2
    path = scale.file_of(name, TABLE_BASE + "/", changed)
    before = s.etag(path)
    r0 = settled_rows(name)
    sql(name, f"UPDATE sitemap_entries SET loc = '/capacity-{time.time_ns()}' WHERE id = {changed}")
    t = time.monotonic()
    new_etag(s, path, before)
    out["a change, built-in table: new ETag (s)"] = time.monotonic() - t
    out["a change, built-in table: rows read"] = settled_rows(name) - r0
    stop(s, out, "first start + idle + change")

    r0 = rows_read(name)
    s = start(name, TABLE_BASE)
    out["restart: index 200 (s)"] = s.until("the index", s.status_is("/sitemap_index.xml"))
    out["restart: every file verified (s)"] = s.until("ready", s.ready(), poll=0.25)
    out["restart: rows read by the verification"] = settled_rows(name) - r0
    stop(s, out, "restart")

    sql(name, "DROP VIEW IF EXISTS capacity_view")
    sql(name, "CREATE VIEW capacity_view AS "
              "SELECT id, loc, lastmod, changefreq, priority FROM sitemap_entries")
    r0 = settled_rows(name)
    s = start(name, VIEW_BASE, {"SITEMAP_SOURCE": "capacity_view",
                                "SITEMAP_REFRESH_SECS": str(REFRESH)})
    out["view first start: index 200 (s)"] = s.until("the index", s.status_is("/sitemap_index.xml"))
    s.until("ready", s.ready(), poll=0.25)
    time.sleep(2 * REFRESH)
    r1 = settled_rows(name)
    out["view first start (+ 2 refreshes): rows read"] = r1 - r0
    time.sleep(WINDOW)
    r2 = settled_rows(name)
    out["idle, view: rows read per refresh"] = (r2 - r1) / (WINDOW + FLUSH) * REFRESH
    changed = n // 3
    path = scale.file_of(name, VIEW_BASE + "/", changed)
    before = s.etag(path)
    sql(name, f"UPDATE sitemap_entries SET loc = '/capacity-view-{time.time_ns()}' WHERE id = {changed}")
    t = time.monotonic()
    new_etag(s, path, before)
    out["a change behind the view: new ETag (s)"] = time.monotonic() - t
    out["a change behind the view: rows read"] = settled_rows(name) - r2
    stop(s, out, "view")
    sql(name, f'DROP DATABASE IF EXISTS "{name}"', admin=True)
    return out


def stop_all(*_):
    for s in list(live):
        live.remove(s)
        s.stop()
    sys.exit(130)


signal.signal(signal.SIGINT, stop_all)
signal.signal(signal.SIGTERM, stop_all)
sizes = [int(a) for a in sys.argv[3:]]
runs = []
try:
    for n in sizes:
        print(f"capacity.sh: N = {n:,}", file=sys.stderr, flush=True)
        runs.append(measure(n))
finally:
    for s in list(live):
        live.remove(s)
        s.stop()
keys = []
for r in runs:
    keys += [k for k in r if k not in keys]
show = lambda v: "–" if v is None else f"{v:,.2f}" if isinstance(v, float) else \
    f"{v:,}" if isinstance(v, int) else str(v)
pg = sql("", "SHOW server_version", admin=True)
lines = [f"bench/capacity.sh {' '.join(sys.argv[3:])}: PostgreSQL {pg}, page size 50,000, "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, binary "
         f"{os.path.relpath(os.environ['SITEMAPD'], os.path.dirname(sys.argv[1]))}", "",
         "| measure | " + " | ".join(f"{n:,} rows" for n in sizes) + " |",
         "| --- |" + " --- |" * len(sizes)]
lines += [f"| {k} | " + " | ".join(show(r.get(k)) for r in runs) + " |" for k in keys]
text = "\n".join(lines) + "\n"
print(text)
open(sys.argv[2], "w").write(text)
PY
