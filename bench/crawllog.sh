#!/usr/bin/env bash
# bench/crawllog.sh: the crawl log's ingest rate with the database writes and its memory, then
# the report's cost at 10M listed URLs. Runs unattended against a release binary given by path
# (it never builds), prints markdown tables and writes them to
# bench/results/results-crawllog-<UTC date and time>.md.
#
#   SITEMAPD_BIN=target/release/sitemapd bench/crawllog.sh
#
# Environment:
#   SITEMAPD_BIN      the sitemapd binary (required)
#   BENCH_DBS         databases for the ingest runs: sqlite, postgres, mariadb (default
#                     "sqlite postgres")
#   BENCH_N           listed URLs for the ingest runs (default 100000)
#   BENCH_RATE        lines per second sent (default 30000: above the 20,000 target, so the
#                     rate measured is the service's, not the sender's)
#   BENCH_SECS        how long lines are sent (default 20)
#   BENCH_REPORT_N    listed URLs for the report's cost, PostgreSQL (default 10000000; 0 skips)
#   BENCH_ADMIN_URL   PostgreSQL (default postgres://postgres@127.0.0.1:5432/postgres)
#   BENCH_MYSQL_HOST  MariaDB, as root without a password (default 127.0.0.1:3306)
#   BENCH_KEEP=1      keep the work directory and the databases
#
# Ingest: seeds BENCH_N entries (paths /p/<i>) with lastmods; starts `sitemapd serve` pinned to
# two cores (taskset -c 0,1) with ACCESS_LOG_ADDR on 127.0.0.1; a Python sender (on the same two
# cores, as the web server would be) sends nginx syslog datagrams in the shipped format at
# BENCH_RATE for BENCH_SECS: 70 % Googlebot, 20 % bingbot (90 % listed URLs, 5 % disallowed, 5 %
# outside the sitemaps), 10 % browsers (ignored). The ingest rate is the crawler lines the
# database took (sitemapd_access_log_written_lines_total) over the time from the first line sent
# to the last batch written, counting only lines not dropped (a line the writer was too far
# behind to take is dropped and counted); RSS before and after and peak (VmHWM) are read from
# the server.
#
# Report: seeds BENCH_REPORT_N entries and the crawl rows of a site crawled for months (Googlebot
# fetched 80 % of them, bingbot 40 %), starts the service, and reads the time the background
# summary takes to make (sitemapd_crawl_report_milliseconds) and the time /status.json and the
# status page take to answer (served from that summary).
#
# Only 127.0.0.1 is used; each server is stopped by its PID.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${SITEMAPD_BIN:?set SITEMAPD_BIN to a release sitemapd binary, e.g. target/release/sitemapd}
BIN=$(realpath "$BIN")
DBS=${BENCH_DBS:-sqlite postgres}
N=${BENCH_N:-100000}
RATE=${BENCH_RATE:-30000}
SECS=${BENCH_SECS:-20}
REPORT_N=${BENCH_REPORT_N:-10000000}
ADMIN_URL=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
MYSQL_HOST=${BENCH_MYSQL_HOST:-127.0.0.1:3306}
MY_DATABASES=()
export SITEMAP_BASE_URL=https://www.example.com/
mkdir -p "$HERE/results"
OUT=$HERE/results/results-crawllog-$(date -u +%Y-%m-%d-%H%M%S).md
WORK=$(mktemp -d)
SERVER_PID=
DATABASES=()
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
cleanup() {
  stop_server
  if [ "${BENCH_KEEP:-}" = 1 ]; then
    echo "kept $WORK and databases ${DATABASES[*]}" >&2
  else
    rm -rf "$WORK"
    for name in "${DATABASES[@]}"; do psql -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true; done
    for name in "${MY_DATABASES[@]}"; do mariadb_cli -e "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1 || true; done
  fi
}
trap cleanup EXIT

say() { echo "crawllog bench: $*" >&2; }
mariadb_cli() { mariadb -h "${MYSQL_HOST%:*}" -P "${MYSQL_HOST##*:}" -u root -N -B "$@"; }
out() { tee -a "$OUT"; }
# Ports below the ephemeral range, TCP and UDP both free, never the same twice in a run
# (scripts/lib/ports.py).
export PORTS_LEDGER=$WORK/ports-handed-out
free_port() { python3 "$HERE/../scripts/lib/ports.py"; }
free_udp_port() { free_port; }
metric() { curl -fsS "http://127.0.0.1:$HTTP_PORT/metrics" | awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { printf "%d\n", s + 0 }'; }
rss_kib() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$SERVER_PID/status"; }

# new_database KIND NAME: sets DATABASE_URL to an empty database.
new_database() {
  case $1 in
    sqlite) rm -f "$WORK/$2.db"; DATABASE_URL="sqlite://$WORK/$2.db" ;;
    postgres)
      psql -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $2" -c "CREATE DATABASE $2" >/dev/null
      DATABASES+=("$2")
      DATABASE_URL="${ADMIN_URL%/*}/$2" ;;
    mariadb)
      mariadb_cli -e "DROP DATABASE IF EXISTS $2; CREATE DATABASE $2"
      MY_DATABASES+=("$2")
      MY_DATABASE=$2
      DATABASE_URL="mysql://root@$MYSQL_HOST/$2" ;;
    *) echo "BENCH_DBS holds sqlite, postgres and/or mariadb" >&2; exit 2 ;;
  esac
  export DATABASE_URL
}

# sql KIND STATEMENT: runs a statement on DATABASE_URL.
sql() {
  case $1 in
    sqlite) sqlite3 "${DATABASE_URL#sqlite://}" "$2" ;;
    postgres) psql -qtA -v ON_ERROR_STOP=1 "$DATABASE_URL" -c "$2" ;;
    mariadb) mariadb_cli "$MY_DATABASE" -e "$2" ;;
  esac
}

seed_entries() {
  case $1 in
    sqlite) sql sqlite "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $2)
      INSERT INTO sitemap_entries (id, loc, lastmod) SELECT i, '/p/' || i, '2026-01-01 00:00:00' FROM n;" ;;
    postgres) sql postgres "INSERT INTO sitemap_entries (id, loc, lastmod)
      SELECT i, '/p/' || i, timestamptz '2026-09-01' + (i % 7776000) * interval '1 second'
      FROM generate_series(1, $2) i" >/dev/null ;;
    # MariaDB's sequence engine gives the numbers.
    mariadb) sql mariadb "INSERT INTO sitemap_entries (id, loc, lastmod)
      SELECT seq, CONCAT('/p/', seq), TIMESTAMP '2026-09-01 00:00:00' + INTERVAL (seq % 7776000) SECOND
      FROM seq_1_to_$2" ;;
  esac
}

start_server() {
  HTTP_PORT=$(free_port)
  ADMIN_PORT=$(free_port)
  UDP_PORT=$(free_udp_port)
  # The lines claim Googlebot from one address no DNS here can confirm: verification is off, so
  # the rate measured is the parser's and the writer's (a verdict is cached per address anyway).
  export SITEMAP_BASE_URL=https://www.example.com/ BIND_ADDR=127.0.0.1:$HTTP_PORT
  export ADMIN_BIND_ADDR=127.0.0.1:$ADMIN_PORT CRAWLER_VERIFY=off
  export ACCESS_LOG_ADDR=127.0.0.1:$UDP_PORT RUST_LOG=warn ROBOTS_TEMPLATE=$WORK/robots.txt
  taskset -c 0,1 "$BIN" serve 2>>"$WORK/server.log" &
  SERVER_PID=$!
  for _ in $(seq 1 3000); do
    curl -fsS "http://127.0.0.1:$HTTP_PORT/sitemap_index.xml" >/dev/null 2>&1 && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.2
  done
  tail -n 20 "$WORK/server.log" >&2
  echo "sitemapd did not start" >&2
  exit 1
}

send_lines() {
  taskset -c 0,1 python3 - "$UDP_PORT" "$RATE" "$SECS" "$N" <<'EOF'
import random, socket, sys, time
port, rate, secs, n = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
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
    due = min(int(elapsed * rate) + 200, int(secs * rate))
    stamp = time.strftime("%b %d %H:%M:%S", time.gmtime())
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    while sent < due:
        r = rng.random()
        path = "/p/%d" % rng.randint(1, n) if r < 0.9 else ("/private/%d" % (sent % 2000) if r < 0.95 else "/other/%d" % (sent % 5000))
        line = '<190>%s web sitemapd: %s\t66.249.66.1\t"www.example.com"\t"GET"\t"%s"\t200\t1234\t"%s"' % (
            stamp, now, path, agents[sent % 10])
        s.sendto(line.encode(), ("127.0.0.1", port))
        sent += 1
    time.sleep(0.001)
print(sent)
EOF
}

printf 'User-agent: *\nDisallow: /private/\n' >"$WORK/robots.txt"
{
  echo "# crawl log benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "binary: \`$BIN\`; $(nproc) cores on the machine, the service pinned to 2 (taskset -c 0,1)."
  echo
} | out

# ------------------------------------------------------------------ ingest
for DB in $DBS; do
  say "ingest on $DB: seeding $N entries"
  new_database "$DB" "sitemapd_bench_crawllog_ingest"
  "$BIN" migrate >/dev/null
  seed_entries "$DB" "$N"
  start_server
  RSS_BEFORE=$(rss_kib VmRSS)
  say "sending $RATE lines/s for $SECS s to 127.0.0.1:$UDP_PORT"
  T0=$(date +%s.%N)
  # RSS each second while the lines come: flat, or growing with them?
  (for _ in $(seq 1 "${SECS%.*}"); do sleep 1; rss_kib VmRSS; done >"$WORK/rss.txt") &
  RSS_PID=$!
  SENT=$(send_lines)
  wait "$RSS_PID" || true
  RSS_SERIES=$(awk '{ printf "%s%d", (NR > 1 ? " " : ""), $1 / 1024 }' "$WORK/rss.txt")
  # Wait for the writer: until the written count stops growing for 3 s (at most 120 s).
  LAST=-1
  LAST_CHANGE=$(date +%s.%N)
  for _ in $(seq 1 600); do
    W=$(metric sitemapd_access_log_written_lines_total)
    NOW=$(date +%s.%N)
    if [ "$W" != "$LAST" ]; then LAST=$W; LAST_CHANGE=$NOW; fi
    if python3 -c "import sys; sys.exit(0 if $NOW - $LAST_CHANGE >= 3 else 1)"; then break; fi
    sleep 0.2
  done
  ELAPSED=$(python3 -c "print(f'{$LAST_CHANGE - $T0:.1f}')")
  WRITTEN=$LAST
  PARSED=$(metric 'sitemapd_access_log_lines_total{result="parsed"}')
  IGNORED=$(metric 'sitemapd_access_log_lines_total{result="ignored"}')
  UNPARSED=$(metric 'sitemapd_access_log_lines_total{result="unparsed"}')
  DROPPED=$(metric sitemapd_access_log_dropped_lines_total)
  FAILED=$(metric sitemapd_access_log_write_failures_total)
  RSS_AFTER=$(rss_kib VmRSS)
  HWM=$(rss_kib VmHWM)
  ROWS=$(sql "$DB" "SELECT count(*) FROM sitemapd_crawls")
  RECEIVED=$((PARSED + IGNORED + UNPARSED))
  stop_server
  {
    echo "## Ingest, $DB, $N listed URLs, $RATE lines/s sent for $SECS s"
    echo
    echo "| measure | value |"
    echo "| --- | --- |"
    echo "| lines sent | $SENT |"
    echo "| lines received (parsed + ignored + unparsed) | $RECEIVED ($((SENT - RECEIVED)) lost in the kernel's UDP buffer) |"
    echo "| crawler lines written to the database | $WRITTEN in $ELAPSED s |"
    echo "| **ingest rate with the database writes** (lines received and not dropped, over the time to the last write) | **$(python3 -c "print(f'{($RECEIVED - $DROPPED) / $ELAPSED:,.0f}')") lines/s** ($(python3 -c "print(f'{$WRITTEN / $ELAPSED:,.0f}')") crawler lines/s written) |"
    echo "| ignored (browsers) / unparsed | $IGNORED / $UNPARSED |"
    echo "| dropped (writer behind) | $DROPPED |"
    echo "| batches the database refused | $FAILED |"
    echo "| sitemapd_crawls rows | $ROWS |"
    echo "| RSS before → after, peak (VmHWM) | $((RSS_BEFORE / 1024)) → $((RSS_AFTER / 1024)) MiB, peak $((HWM / 1024)) MiB |"
    echo "| RSS each second while sending (MiB) | $RSS_SERIES |"
    echo
  } | out
done

# ------------------------------------------------------------------ report
if [ "$REPORT_N" -gt 0 ]; then
  say "report at $REPORT_N listed URLs (PostgreSQL): seeding entries and crawl rows (minutes)"
  new_database postgres "sitemapd_bench_crawllog_report"
  "$BIN" migrate >/dev/null
  sql postgres "ALTER TABLE sitemap_entries DISABLE TRIGGER USER" >/dev/null
  seed_entries postgres "$REPORT_N"
  sql postgres "ALTER TABLE sitemap_entries ENABLE TRIGGER USER" >/dev/null
  # Googlebot fetched 80 % of the URLs, bingbot 40 %, over the last 60 days; a URL changed
  # after its last fetch waits for a recrawl, one fetched after its change has a freshness.
  sql postgres "INSERT INTO sitemapd_crawls (site, grp, crawler, entry_id, path, fetches, last_fetch,
      last_fetch_at, last_status, lastmod, fresh_at, freshness)
    SELECT 'https://www.example.com/', '', c.name, i, '/p/' || i, 1 + i % 5, t, to_timestamp(t), 200, l,
      CASE WHEN t >= l THEN t END, CASE WHEN t >= l THEN t - l END
    FROM (VALUES ('Googlebot', 8), ('bingbot', 4)) AS c(name, tenths), generate_series(1, $REPORT_N) i,
      LATERAL (SELECT extract(epoch FROM now())::bigint - (i::bigint * 7919 % 5184000) AS t,
                      extract(epoch FROM timestamptz '2026-09-01')::bigint + (i % 7776000) AS l) v
    WHERE i % 10 < c.tenths" >/dev/null
  sql postgres "ANALYZE" >/dev/null
  CRAWL_ROWS=$(sql postgres "SELECT count(*) FROM sitemapd_crawls")
  start_server
  SERVER_STARTED=$(date +%s) # start_server returns once the sitemaps are served: the first sweep has ended
  # The first summary is made in the background after the start; wait for it.
  REPORT_MS=0
  for _ in $(seq 1 1200); do
    GENERATED=$(curl -fsS "http://127.0.0.1:$ADMIN_PORT/status.json" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)).count("\"crawl_log\""))' 2>/dev/null || echo 0)
    REPORT_MS=$(metric sitemapd_crawl_report_milliseconds)
    [ "$REPORT_MS" -gt 0 ] && [ "$GENERATED" -gt 0 ] && break
    sleep 0.5
  done
  STATUS_JSON=$(for _ in 1 2 3 4 5; do curl -fsS -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$ADMIN_PORT/status.json"; done | sort -n | sed -n 3p)
  STATUS_PAGE=$(for _ in 1 2 3 4 5; do curl -fsS -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$ADMIN_PORT/"; done | sort -n | sed -n 3p)
  coverage() {
    curl -fsS "http://127.0.0.1:$ADMIN_PORT/status.json" | python3 -c '
import json, sys
s = json.load(sys.stdin)["sites"][0]["groups"][0]["crawl_log"]
print(", ".join("%s %s of %s" % (k, v["coverage"]["fetched"], v["coverage"]["listed"]) for k, v in s.items()))' 2>/dev/null || echo "?"
  }
  COVERAGE=$(coverage)
  # A summary made before the first sweep ended counts no listed URL; it is remade when the
  # sweep ends. Wait for that one (at most 15 minutes) and note when it came.
  LISTED_AFTER="not within 15 min"
  for _ in $(seq 1 1800); do
    NOW_COVERAGE=$(coverage)
    case $NOW_COVERAGE in
      *" of 0"* | "?") sleep 0.5 ;;
      *) LISTED_AFTER="$(( $(date +%s) - SERVER_STARTED )) s after the sitemaps were first served: $NOW_COVERAGE"; break ;;
    esac
  done
  stop_server
  {
    echo "## Report, PostgreSQL, $REPORT_N listed URLs, $CRAWL_ROWS crawl rows"
    echo
    echo "| measure | value |"
    echo "| --- | --- |"
    echo "| summary made in the background (sitemapd_crawl_report_milliseconds) | $REPORT_MS ms (remade after 10× its cost, 2 s to 10 min) |"
    echo "| /status.json answers (median of 5) | $STATUS_JSON s |"
    echo "| status page answers (median of 5) | $STATUS_PAGE s |"
    echo "| coverage in the first summary | $COVERAGE |"
    echo "| the first summary counting the listed URLs (remade when the first sweep ends) | $LISTED_AFTER |"
    echo
  } | out
fi
say "results in $OUT"
