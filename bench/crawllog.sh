#!/usr/bin/env bash
# bench/crawllog.sh: the crawl log's ingest rate and memory, and its report's cost, at N listed
# URLs. Prints a markdown table.
#
#   bench/crawllog.sh                       N=100000 listed URLs, 20,000 lines/s for 10 s
#   BENCH_N=10000000 bench/crawllog.sh      the report's cost at 10M listed URLs
#   BENCH_RATE=40000 BENCH_SECS=20 bench/crawllog.sh
#
# Environment: BENCH_N (listed URLs), BENCH_RATE (lines per second sent), BENCH_SECS (how long),
# BENCH_DB (sqlite, the default, or postgres), BENCH_ADMIN_URL (default
# postgres://postgres@127.0.0.1:5432/postgres), SITEMAPD_BIN (a sitemapd binary; default: build
# target/release/sitemapd), BENCH_KEEP=1 (keep the work directory and database).
#
# What it does: seeds N entries (paths /p/<i>) with lastmods; starts `sitemapd serve` pinned to
# two cores (taskset -c 0,1) with ACCESS_LOG_ADDR on 127.0.0.1; a Python generator sends nginx
# syslog lines (the shipped sitemapd format) over UDP at BENCH_RATE for BENCH_SECS seconds:
# 70 % Googlebot, 20 % bingbot on listed URLs (some outside the sitemaps, some disallowed),
# 10 % browsers (ignored). Then it reads the counters: lines parsed, ignored, dropped (the queue
# was full), write failures; the server's RSS before and after (VmRSS) and its peak (VmHWM);
# the rows written; and the report's cost (sitemapd_crawl_report_milliseconds, as the
# background summary measured it). Only 127.0.0.1 is used; the server is stopped by its PID.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
N=${BENCH_N:-100000}
RATE=${BENCH_RATE:-20000}
SECS=${BENCH_SECS:-10}
DB=${BENCH_DB:-sqlite}
ADMIN_URL=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  if [ "${BENCH_KEEP:-}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

BIN=${SITEMAPD_BIN:-}
if [ -z "$BIN" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/sitemapd
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP_PORT=$(free_port)
UDP_PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

case $DB in
  sqlite) DATABASE_URL="sqlite://$WORK/bench.db" ;;
  postgres)
    NAME=sitemapd_crawllog_$N
    psql -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $NAME" -c "CREATE DATABASE $NAME" >/dev/null
    DATABASE_URL="${ADMIN_URL%/*}/$NAME" ;;
  *) echo "BENCH_DB is sqlite or postgres" >&2; exit 2 ;;
esac
export DATABASE_URL SITEMAP_BASE_URL=https://www.example.com/ BIND_ADDR=127.0.0.1:$HTTP_PORT
export ACCESS_LOG_ADDR=127.0.0.1:$UDP_PORT RUST_LOG=warn
printf 'User-agent: *\nDisallow: /private/\n' >"$WORK/robots.txt"
export ROBOTS_TEMPLATE=$WORK/robots.txt

"$BIN" migrate >/dev/null
echo "seeding $N entries ($DB)" >&2
case $DB in
  sqlite) sqlite3 "$WORK/bench.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N)
    INSERT INTO sitemap_entries (id, loc, lastmod) SELECT i, '/p/' || i, '2026-01-01 00:00:00' FROM n;" ;;
  postgres) psql -q "$DATABASE_URL" -c "INSERT INTO sitemap_entries (id, loc, lastmod)
    SELECT i, '/p/' || i, timestamptz '2026-01-01' FROM generate_series(1, $N) i" >/dev/null ;;
esac

taskset -c 0,1 "$BIN" serve 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 600); do
  curl -fsS "http://127.0.0.1:$HTTP_PORT/sitemap_index.xml" >/dev/null 2>&1 && break
  sleep 0.2
done
metric() { curl -fsS "http://127.0.0.1:$HTTP_PORT/metrics" | awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { print s + 0 }'; }
rss() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$SERVER_PID/status"; }
RSS_BEFORE=$(rss VmRSS)

echo "sending $RATE lines/s for $SECS s to 127.0.0.1:$UDP_PORT" >&2
python3 - "$UDP_PORT" "$RATE" "$SECS" "$N" <<'EOF'
import random, socket, sys, time
port, rate, secs, n = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
agents = ["Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"] * 7 \
    + ["Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"] * 2 \
    + ["Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"]
rng = random.Random(1)
start = time.time()
sent = 0
while True:
    elapsed = time.time() - start
    if elapsed >= secs:
        break
    due = int(elapsed * rate) + 100
    while sent < due:
        r = rng.random()
        path = "/p/%d" % rng.randint(1, n) if r < 0.9 else ("/private/%d" % sent if r < 0.95 else "/other/%d" % (sent % 5000))
        now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        line = '<190>%s web sitemapd: %s\t66.249.66.1\t"www.example.com"\t"GET"\t"%s"\t200\t1234\t"%s"' % (
            time.strftime("%b %d %H:%M:%S", time.gmtime()), now, path, agents[sent % 10])
        s.sendto(line.encode(), ("127.0.0.1", port))
        sent += 1
    time.sleep(0.001)
print(sent, file=open("/dev/stderr", "w"))
EOF
# Let the writer drain its queue (at most a few seconds of lines), then one report.
sleep 3
PARSED=$(metric 'sitemapd_access_log_lines_total{result="parsed"}')
IGNORED=$(metric 'sitemapd_access_log_lines_total{result="ignored"}')
UNPARSED=$(metric 'sitemapd_access_log_lines_total{result="unparsed"}')
DROPPED=$(metric sitemapd_access_log_dropped_lines_total)
FAILED=$(metric sitemapd_access_log_write_failures_total)
RSS_AFTER=$(rss VmRSS)
HWM=$(rss VmHWM)
sleep 3
REPORT_MS=$(metric sitemapd_crawl_report_milliseconds)
case $DB in
  sqlite) ROWS=$(sqlite3 "$WORK/bench.db" "SELECT count(*) FROM sitemapd_crawls") ;;
  postgres) ROWS=$(psql -qtA "$DATABASE_URL" -c "SELECT count(*) FROM sitemapd_crawls") ;;
esac
RECEIVED=$((PARSED + IGNORED + UNPARSED))

cat <<EOF
| crawl log, $DB, $N listed URLs, $RATE lines/s × $SECS s, 2 cores | value |
| --- | --- |
| lines received | $RECEIVED ($((RECEIVED / ${SECS%.*})) /s) |
| parsed (crawlers) | $PARSED ($((PARSED / ${SECS%.*})) /s) |
| ignored (browsers) | $IGNORED |
| unparsed | $UNPARSED |
| dropped (writer behind) | $DROPPED |
| batches the database refused | $FAILED |
| sitemapd_crawls rows | $ROWS |
| RSS before → after, peak | $((RSS_BEFORE / 1024)) → $((RSS_AFTER / 1024)) MiB, peak $((HWM / 1024)) MiB |
| report cost (background summary) | $REPORT_MS ms |
EOF
