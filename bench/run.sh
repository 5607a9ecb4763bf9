#!/usr/bin/env bash
# bench/run.sh: measures sitemapd against PostgreSQL (or MariaDB) and prints a markdown table.
#
#   bench/run.sh                    N = BENCH_N or 1,000,000 (then 100,000 is run too, for RSS)
#   bench/run.sh 100000             one size
#   bench/run.sh 100000 1000000     several sizes, one column each
#   BENCH_DB=mariadb bench/run.sh   the same against MariaDB (see "MariaDB" below)
#
# Environment: BENCH_DB (postgres, the default, or mariadb),
# BENCH_N, BENCH_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres),
# BENCH_SKIP_BUILD=1 (use the existing release/sitemapd in cargo's target directory, which is
# CARGO_TARGET_DIR when set), BENCH_KEEP=1 (keep the work directory with logs and crawled pages,
# and the databases).
#
# For each size N:
#   seed     a database of its own, sitemapd_bench_<N>, made fresh: `sitemapd migrate`, then one
#            INSERT ... SELECT FROM generate_series (bench/seed.sql): realistic URLs with query
#            strings and non-ASCII paths, lastmod NULL for 10 %.
#   server A default settings. It starts with a full sweep of every row (timed: "start → ready").
#     1. cold full crawl: the index and every .xml.gz it lists, one after the other on one
#        keep-alive connection, right after start, so nothing is in sitemapd's page cache: what a
#        crawler's first visit costs. Wall time and bytes.
#    1b. the same crawl with brotli accepted: the index and every file as .xml, with
#        Accept-Encoding "gzip, deflate, br" (what Googlebot sends). Brotli renders are cached
#        apart from gzip ones, so this crawl is cold too. Each page is decoded (Google's C
#        decoder, Python's brotli module) and must equal the .xml.gz crawl's XML byte for byte;
#        a conditional request per coding must answer 304.
#     3. peak RSS (VmHWM) of the server during that crawl. The high-water mark is reset
#        (/proc/PID/clear_refs = 5) once the server is ready, so the startup sweep's peak is
#        reported separately.
#     4. 304 revalidation: wrk, 10 s, 64 connections, 2 threads, If-None-Match with the ETag of
#        the first page; a Lua script counts statuses so we know they were all 304. Requests/s,
#        p50, p99. This is what repeat crawler visits cost.
#   server B SITEMAP_CACHE_MB=0, so every request renders; RUST_LOG=warn.
#     2. first vs last page: median of 7 renders of each (interleaved). Keyset paging should make
#        the last page as fast as the first; OFFSET paging would make it slower with N.
#     4'. the 304 load again, without the per-request log line (for attribution only: 4 is the
#        number with default settings).
#   floor, with no server running:
#     5a. PostgreSQL alone delivering the same rows: per page, COPY (SELECT the five columns
#         WHERE id BETWEEN lo AND hi ORDER BY id) TO STDOUT, all in one psql session into
#         /dev/null; lo/hi from sitemapd's own sitemapd_pages table.
#     5b. gzip -6 alone on the same XML (the crawled pages, decompressed), summed over pages.
#     5c. brotli alone (Google's C library, at sitemapd's quality and window) on the same XML.
#     The floor, both ways: the sum (a) + (b), what reading then compressing costs one after the
#     other, and the max of (a) and (b), what they cost side by side on two cores (sitemapd reads
#     a page's rows while it compresses the XML written so far). The cold crawls are reported as
#     ratios to both.
#
# MariaDB (BENCH_DB=mariadb; admin URL BENCH_MYSQL_URL, default mysql://root@127.0.0.1:3306):
#   the same steps and table. The seed is bench/seed-mysql.sql (the same rows, numbered by the
#   SEQUENCE engine, then ANALYZE TABLE), and 5a is the mariadb (or mysql) client reading the same
#   five columns per page (SELECT ... WHERE id BETWEEN lo AND hi ORDER BY id), all in one session,
#   --quick --batch into /dev/null.
#
# Other work on the machine skews all of this (2 CPUs): before each measure the script waits up to
# BENCH_WAIT_IDLE s (default 30) for the CPUs to be < 30 % busy, and reports how busy they were.
#
# Everything is bounded in time (timeout), talks to 127.0.0.1 only, and the server is stopped by
# its PID on exit, error or interrupt.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Brotli settings of src/answer/compress.rs, for the brotli floor (5c).
BROTLI_QUALITY=5
BROTLI_LGWIN=20
ROOT=$(dirname "$HERE")
BASE_URL=https://www.example.com
SITE_KEY=$BASE_URL/
PY=(python3 "$HERE/bench.py")
DB_KIND=${BENCH_DB:-postgres}
case $DB_KIND in
  postgres) ADMIN_URL=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres} ;;
  mariadb)  ADMIN_URL=${BENCH_MYSQL_URL:-mysql://root@127.0.0.1:3306} ;;
  *) echo "run.sh: BENCH_DB must be postgres or mariadb, got '$DB_KIND'" >&2; exit 2 ;;
esac

if [ $# -gt 0 ]; then SIZES=("$@"); else SIZES=("${BENCH_N:-1000000}"); fi
if [ ${#SIZES[@]} -eq 1 ] && [ "${SIZES[0]}" -eq 1000000 ] 2>/dev/null; then SIZES=(100000 1000000); fi
for n in "${SIZES[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: N must be a positive integer, got '$n'" >&2; exit 2; }
done

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now_ns() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
jget() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(v if not isinstance(v,(dict,list)) else json.dumps(v))' "$1" "$2"; }

WORK=$(mktemp -d /tmp/sitemapd-bench.XXXXXX)
SERVER_PID=""
DBS=()

stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$SERVER_PID" 2>/dev/null && { log "server $SERVER_PID did not stop in 10 s; SIGKILL"; kill -KILL "$SERVER_PID" 2>/dev/null || true; }
  fi
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

cleanup() {
  local rc=$?
  stop_server
  if [ "${BENCH_KEEP:-0}" = 1 ]; then
    log "kept $WORK and databases: ${DBS[*]:-}"
  else
    for db in "${DBS[@]}"; do
      if [ "$DB_KIND" = postgres ]; then
        timeout 60 psql "$ADMIN_URL" -qAtX -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
      else
        timeout 60 "${MY[@]}" -e "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
      fi
    done
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- tools -------------------------------------------------------------------------------------
if [ "$DB_KIND" = postgres ]; then
  for tool in psql python3 gzip cargo awk; do
    command -v "$tool" >/dev/null || die "$tool is required"
  done
  python3 -c 'import brotli' 2>/dev/null || die "python3's brotli module is required: pip install brotli"
else
  for tool in python3 gzip cargo awk; do
    command -v "$tool" >/dev/null || die "$tool is required"
  done
  python3 -c 'import brotli' 2>/dev/null || die "python3's brotli module is required: pip install brotli"
  MYCLIENT=$(command -v mariadb || command -v mysql) || die "the mariadb (or mysql) client is required"
  # Connection settings in a file of our own (mode 600): the password stays off the command line,
  # and no other option file (~/.my.cnf, /etc/mysql) is read.
  "${PY[@]}" mycnf "$ADMIN_URL" "$WORK/client.cnf" || die "BENCH_MYSQL_URL: not a mysql:// URL"
  MY=("$MYCLIENT" "--defaults-file=$WORK/client.cnf" --batch --skip-column-names)
fi
if ! command -v wrk >/dev/null; then
  log "wrk missing: apt-get install -y wrk"
  { timeout 300 apt-get update -qq && timeout 300 apt-get install -y -qq wrk; } >&2 || die "cannot install wrk"
fi
if [ "$DB_KIND" = postgres ]; then
  timeout 10 psql "$ADMIN_URL" -qAtX -c 'SELECT 1' >/dev/null || die "cannot reach PostgreSQL at $ADMIN_URL"
else
  SHOWN_URL=$(sed -E 's#^([a-z]+://[^:/@]*):[^@]*@#\1:***@#' <<<"$ADMIN_URL")   # no password in logs
  timeout 10 "${MY[@]}" -e 'SELECT 1' >/dev/null || die "cannot reach MariaDB at $SHOWN_URL"
  [ "$(timeout 10 "${MY[@]}" -e "SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'SEQUENCE'")" = YES ] \
    || die "the server at $SHOWN_URL has no SEQUENCE engine (MariaDB has it, MySQL has not): bench/seed-mysql.sql needs it"
fi

# ---- build -------------------------------------------------------------------------------------
if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
  log "cargo build --release"
  (cd "$ROOT" && timeout 1800 cargo build --release --quiet) || die "build failed"
fi
# Where cargo puts it: target/ unless CARGO_TARGET_DIR (or a cargo config) says otherwise.
TARGET_DIR=$(cd "$ROOT" && timeout 120 cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])') || TARGET_DIR=$ROOT/target
[ -x "$TARGET_DIR/release/sitemapd" ] || die "no $TARGET_DIR/release/sitemapd"
# A private copy: others may rebuild target/ while we measure.
cp "$TARGET_DIR/release/sitemapd" "$WORK/sitemapd"
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain -- src Cargo.toml Cargo.lock migrations 2>/dev/null)" ]; then REV="$REV+uncommitted"; fi

# ---- helpers -----------------------------------------------------------------------------------
# sitemapd runs from the work directory (so no stray .env is read), default log level.
start_server() { # name, extra VAR=value...
  local name=$1; shift
  PORT=$("${PY[@]}" freeport)
  ( cd "$WORK" && exec env -u RUST_LOG DATABASE_URL="$DBURL" SITEMAP_BASE_URL="$BASE_URL" \
      BIND_ADDR="127.0.0.1:$PORT" "$@" ./sitemapd serve ) >"$WORK/$name.log" 2>&1 &
  SERVER_PID=$!
  log "server $name: pid $SERVER_PID on 127.0.0.1:$PORT, waiting for /readyz and the index"
  if ! timeout 330 "${PY[@]}" wait "$PORT" 300 >"$WORK/$name.ready.json"; then
    tail -n 20 "$WORK/$name.log" >&2
    die "server $name not ready: $(cat "$WORK/$name.ready.json")"
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || die "server $name exited"
}

# Other work on the machine (builds, tests) skews every number: before each measure, wait up to
# BENCH_WAIT_IDLE seconds (default 30) for the CPUs to be mostly idle, and record how busy they were.
wait_idle() { # result key
  local busy start=$SECONDS limit=${BENCH_WAIT_IDLE:-30}
  while :; do
    busy=$("${PY[@]}" cpubusy 1)
    if [ "$busy" -lt 30 ] || [ $((SECONDS - start)) -ge "$limit" ]; then break; fi
  done
  [ "$busy" -lt 30 ] || log "WARNING: CPUs still ${busy} % busy with other work after $((SECONDS - start)) s; measuring anyway"
  R[$1]=$busy
}
# CPU seconds (user + system) the server has used so far.
TICKS=$(getconf CLK_TCK)
cpu_s() { awk -v hz="$TICKS" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$SERVER_PID/stat"; }

hwm_mib() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$SERVER_PID/status"; }
reset_hwm() { echo 5 >"/proc/$SERVER_PID/clear_refs" 2>/dev/null; }

declare -A R   # results: R[N.key]=value

run_wrk() { # N, result prefix, dir
  local n=$1 k=$2 d=$3
  timeout 60 wrk -t2 -c64 -d10s --timeout 2s --latency -s "$HERE/status.lua" \
    -H "If-None-Match: $(jget "$d/etag.json" etag)" \
    "http://127.0.0.1:$PORT${R[$n.crawl_first]}" >"$d/$k.txt" 2>&1 || die "wrk failed: $(cat "$d/$k.txt")"
  "${PY[@]}" wrk-parse "$d/$k.txt" >"$d/$k.json"
  for f in rps requests p50_ms p99_ms statuses socket_errors all_304; do R[$n.${k}_$f]=$(jget "$d/$k.json" $f); done
  [ "${R[$n.${k}_all_304]}" = True ] || log "WARNING: not all responses were 304: ${R[$n.${k}_statuses]}"
}

# 5a. PostgreSQL floor: the same rows, per page, in one psql session.
floor_postgres() { # N, dir
  local n=$1 d=$2 t0
  log "N=$n: 5. floor: PostgreSQL COPY and gzip -6"
  psql "$DBURL" -qAtX -v ON_ERROR_STOP=1 -v site="$SITE_KEY" >"$d/copies.sql" <<'SQL'
SELECT format('COPY (SELECT id, loc, lastmod, changefreq, priority FROM sitemap_entries '
              'WHERE id BETWEEN %s AND %s ORDER BY id) TO STDOUT;', lo, hi)
FROM (
  SELECT CASE WHEN row_number() OVER w = 1 THEN (SELECT min(id) FROM sitemap_entries) ELSE first_id END AS lo,
         coalesce(lead(first_id) OVER w - 1, (SELECT max(id) FROM sitemap_entries)) AS hi
  FROM sitemapd_pages WHERE site = :'site'
  WINDOW w AS (ORDER BY first_id)
) pages ORDER BY lo;
SQL
  R[$n.floor_pages]=$(wc -l <"$d/copies.sql")
  [ "${R[$n.floor_pages]}" = "${R[$n.crawl_pages]}" ] \
    || log "WARNING: sitemapd_pages has ${R[$n.floor_pages]} pages, the index ${R[$n.crawl_pages]}"
  t0=$(now_ns)
  timeout 600 psql "$DBURL" -qAtX -v ON_ERROR_STOP=1 -f "$d/copies.sql" >/dev/null
  R[$n.floor_pg_s]=$(secs_since "$t0")
}

# 5a. MariaDB floor: the same five columns, per page by the same id ranges, read by the client in
# one session, streamed (--quick) in batch mode into /dev/null.
floor_mariadb() { # N, dir, database
  local n=$1 d=$2 db=$3 t0
  log "N=$n: 5. floor: MariaDB client SELECT and gzip -6"
  timeout 60 "${MY[@]}" -D "$db" --raw --init-command="SET @site = '${SITE_KEY//\'/\'\'}'" >"$d/selects.sql" <<'SQL'
SELECT CONCAT('SELECT id, loc, lastmod, changefreq, priority FROM sitemap_entries ',
              'WHERE id BETWEEN ', lo, ' AND ', hi, ' ORDER BY id;')
FROM (
  SELECT CASE WHEN ROW_NUMBER() OVER w = 1 THEN (SELECT MIN(id) FROM sitemap_entries) ELSE first_id END AS lo,
         COALESCE(LEAD(first_id) OVER w - 1, (SELECT MAX(id) FROM sitemap_entries)) AS hi
  FROM sitemapd_pages WHERE site = @site
  WINDOW w AS (ORDER BY first_id)
) pages ORDER BY lo;
SQL
  R[$n.floor_pages]=$(wc -l <"$d/selects.sql")
  [ "${R[$n.floor_pages]}" = "${R[$n.crawl_pages]}" ] \
    || log "WARNING: sitemapd_pages has ${R[$n.floor_pages]} pages, the index ${R[$n.crawl_pages]}"
  t0=$(now_ns)
  timeout 600 "${MY[@]}" -D "$db" --quick <"$d/selects.sql" >/dev/null
  R[$n.floor_pg_s]=$(secs_since "$t0")
}

# ---- one size ----------------------------------------------------------------------------------
bench_size() {
  local n=$1 t0 d="$WORK/$1"
  mkdir -p "$d"
  local db="sitemapd_bench_$n"
  DBURL=$("${PY[@]}" dburl "$ADMIN_URL" "$db")
  DBS+=("$db")

  log "N=$n: database $db (fresh), migrate, seed"
  t0=$(now_ns)
  if [ "$DB_KIND" = postgres ]; then
    PGOPTIONS='-c client_min_messages=warning' timeout 120 psql "$ADMIN_URL" -qAtX -v ON_ERROR_STOP=1 \
      -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" >/dev/null
  else
    timeout 120 "${MY[@]}" -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db CHARACTER SET utf8mb4" >/dev/null
  fi
  (cd "$WORK" && timeout 120 env -u RUST_LOG DATABASE_URL="$DBURL" SITEMAP_BASE_URL="$BASE_URL" ./sitemapd migrate) >"$d/migrate.log" 2>&1 \
    || { cat "$d/migrate.log" >&2; die "migrate failed"; }
  log "N=$n: database created and migrated in $(secs_since "$t0") s; seeding"
  t0=$(now_ns)
  if [ "$DB_KIND" = postgres ]; then
    timeout 1200 psql "$DBURL" -qAtX -v n="$n" -f "$HERE/seed.sql" >/dev/null
    R[$n.seed_s]=$(secs_since "$t0")
    R[$n.rows]=$(psql "$DBURL" -qAtX -c 'SELECT count(*) FROM sitemap_entries')
  else
    timeout 1200 "${MY[@]}" -D "$db" --init-command="SET @n = $n" <"$HERE/seed-mysql.sql" >"$d/seed.out" \
      || die "seed failed"
    R[$n.seed_s]=$(secs_since "$t0")
    # ANALYZE TABLE reports its errors as rows (Msg_type error), not through the exit status.
    if awk -F'\t' '$3 == "error" { bad = 1 } END { exit !bad }' "$d/seed.out"; then
      die "ANALYZE TABLE: $(cat "$d/seed.out")"
    fi
    R[$n.rows]=$(timeout 60 "${MY[@]}" -D "$db" -e 'SELECT count(*) FROM sitemap_entries')
    [ "${R[$n.rows]}" = "$n" ] || die "seeded ${R[$n.rows]} rows, not $n"
    if grep -q 'cannot create the change triggers' "$d/migrate.log"; then
      log "WARNING: migrate made no change triggers, so the seed ran without them: $(cat "$d/migrate.log")"
    fi
  fi

  # Server A: default settings.
  start_server "$n-A"
  R[$n.ready_s]=$(jget "$WORK/$n-A.ready.json" ready_s)
  R[$n.hwm_start]=$(hwm_mib)
  if reset_hwm; then R[$n.hwm_reset]=yes; else R[$n.hwm_reset]=no; fi

  wait_idle "$n.busy_crawl"
  log "N=$n: 1. cold full crawl"
  local cpu0; cpu0=$(cpu_s)
  timeout 900 "${PY[@]}" crawl "$PORT" "$d/xml" >"$d/crawl.json" || die "crawl failed"
  R[$n.hwm_crawl]=$(hwm_mib)
  R[$n.crawl_cpu_s]=$(awk -v a="$cpu0" -v b="$(cpu_s)" 'BEGIN { printf "%.2f", b - a }')
  for k in wall_s bytes xml_bytes pages urls first last slowest_page_s median_page_s; do
    R[$n.crawl_$k]=$(jget "$d/crawl.json" $k)
  done

  wait_idle "$n.busy_crawl_br"
  log "N=$n: 1b. cold full crawl, brotli accepted"
  cpu0=$(cpu_s)
  timeout 900 "${PY[@]}" crawl "$PORT" "$d/xml" br >"$d/crawl-br.json" || die "brotli crawl failed"
  R[$n.hwm_crawl_br]=$(hwm_mib)
  R[$n.crawlbr_cpu_s]=$(awk -v a="$cpu0" -v b="$(cpu_s)" 'BEGIN { printf "%.2f", b - a }')
  for k in wall_s bytes median_page_s slowest_page_s; do R[$n.crawlbr_$k]=$(jget "$d/crawl-br.json" $k); done
  R[$n.br_bytes_ratio]=$(awk -v a="${R[$n.crawlbr_bytes]}" -v b="${R[$n.crawl_bytes]}" 'BEGIN { printf "%.3f", a / b }')

  timeout 30 "${PY[@]}" etag "$PORT" "${R[$n.crawl_first]}" >"$d/etag.json"
  R[$n.etag_check]=$(jget "$d/etag.json" conditional_status)
  [ "${R[$n.etag_check]}" = 304 ] || log "WARNING: conditional GET answered ${R[$n.etag_check]}, not 304"
  for coding in br gzip; do
    local accept=gzip; [ "$coding" = br ] && accept="gzip, deflate, br"
    timeout 30 "${PY[@]}" etag "$PORT" "${R[$n.crawl_first]%.gz}" "$accept" >"$d/etag-$coding.json"
    R[$n.etag_check_$coding]="$(jget "$d/etag-$coding.json" conditional_status) ($(jget "$d/etag-$coding.json" encoding))"
    [ "${R[$n.etag_check_$coding]}" = "304 ($coding)" ] \
      || log "WARNING: conditional GET with $coding accepted answered ${R[$n.etag_check_$coding]}"
  done
  wait_idle "$n.busy_wrk"
  log "N=$n: 4. 304 revalidation under load (wrk 10 s, 64 connections)"
  run_wrk "$n" wrk "$d"
  R[$n.hwm_after_wrk]=$(hwm_mib)
  stop_server

  # Server B: no page cache, every request renders.
  # Its per-request log is off (RUST_LOG=warn): negligible next to a render, and it lets the
  # 304 load run again without it, to show what that log line costs.
  start_server "$n-B" SITEMAP_CACHE_MB=0 RUST_LOG=warn
  reset_hwm || true
  wait_idle "$n.busy_lat"
  log "N=$n: 2. first vs last page, 7 renders each (SITEMAP_CACHE_MB=0)"
  timeout 900 "${PY[@]}" latency "$PORT" "${R[$n.crawl_first]}" "${R[$n.crawl_last]}" 7 >"$d/latency.json" \
    || die "latency run failed"
  for k in first_ms last_ms ratio first_all_ms last_all_ms; do R[$n.lat_$k]=$(jget "$d/latency.json" $k); done
  R[$n.hwm_nocache]=$(hwm_mib)
  wait_idle "$n.busy_wrk2"
  log "N=$n: 4. 304 load again, per-request log off (RUST_LOG=warn)"
  run_wrk "$n" wrk2 "$d"
  stop_server

  wait_idle "$n.busy_floor"
  if [ "$DB_KIND" = postgres ]; then floor_postgres "$n" "$d"; else floor_mariadb "$n" "$d" "$db"; fi

  # 5b. gzip floor: gzip -6 on each crawled page's XML.
  t0=$(now_ns)
  for f in "$d"/xml/page-*.xml; do timeout 120 gzip -6 -c "$f" >/dev/null; done
  R[$n.floor_gz_s]=$(secs_since "$t0")
  # 5c. brotli floor: the C library at sitemapd's settings on each crawled page's XML.
  "${PY[@]}" floor-br "$d/xml" "$BROTLI_QUALITY" "$BROTLI_LGWIN" >"$d/floor-br.json"
  R[$n.floor_br_s]=$(jget "$d/floor-br.json" seconds)
  local sum='BEGIN { printf "%.3f", a + b }' max='BEGIN { printf "%.3f", (a > b ? a : b) }'
  local ratio='BEGIN { printf "%.2f", a / b }'
  R[$n.floor_s]=$(awk -v a="${R[$n.floor_pg_s]}" -v b="${R[$n.floor_gz_s]}" "$sum")
  R[$n.floor_max_s]=$(awk -v a="${R[$n.floor_pg_s]}" -v b="${R[$n.floor_gz_s]}" "$max")
  R[$n.floor_br_sum_s]=$(awk -v a="${R[$n.floor_pg_s]}" -v b="${R[$n.floor_br_s]}" "$sum")
  R[$n.floor_br_max_s]=$(awk -v a="${R[$n.floor_pg_s]}" -v b="${R[$n.floor_br_s]}" "$max")
  R[$n.crawl_ratio]=$(awk -v a="${R[$n.crawl_wall_s]}" -v b="${R[$n.floor_s]}" "$ratio")
  R[$n.crawl_ratio_max]=$(awk -v a="${R[$n.crawl_wall_s]}" -v b="${R[$n.floor_max_s]}" "$ratio")
  R[$n.crawlbr_ratio]=$(awk -v a="${R[$n.crawlbr_wall_s]}" -v b="${R[$n.floor_br_sum_s]}" "$ratio")
  R[$n.crawlbr_ratio_max]=$(awk -v a="${R[$n.crawlbr_wall_s]}" -v b="${R[$n.floor_br_max_s]}" "$ratio")
  log "N=$n: done"
}

for n in "${SIZES[@]}"; do bench_size "$n"; done

# ---- report ------------------------------------------------------------------------------------
mark() { # value, awk condition on v → value plus ✅/❌
  if awk -v v="$1" "BEGIN { exit !($2) }"; then echo "$1 ✅"; else echo "$1 ❌"; fi
}
fmt_int() { echo "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'; }
row() { # label, target, then a per-size function name
  local label=$1 target=$2 fn=$3 line
  line="| $label | $target |"
  for n in "${SIZES[@]}"; do line+=" $($fn "$n") |"; done
  echo "$line"
}
c_rows()    { echo "$(fmt_int "${R[$1.rows]}") in ${R[$1.seed_s]} s"; }
c_ready()   { echo "${R[$1.ready_s]} s"; }
c_files()   { echo "${R[$1.crawl_pages]} files, $(fmt_int "${R[$1.crawl_urls]}") URLs"; }
c_crawl()   { echo "${R[$1.crawl_wall_s]} s"; }
c_bytes()   { awk -v b="${R[$1.crawl_bytes]}" -v x="${R[$1.crawl_xml_bytes]}" 'BEGIN { printf "%.1f MiB (XML %.1f MiB)", b / 1048576, x / 1048576 }'; }
c_slow()    { echo "${R[$1.crawl_median_page_s]} / ${R[$1.crawl_slowest_page_s]} s"; }
c_fpg()     { echo "${R[$1.floor_pg_s]} s"; }
c_fgz()     { echo "${R[$1.floor_gz_s]} s"; }
c_floor()   { echo "${R[$1.floor_s]} / ${R[$1.floor_max_s]} s"; }
c_ratio()   { mark "${R[$1.crawl_ratio]}" 'v <= 1.0'; }
c_ratiomax() { mark "${R[$1.crawl_ratio_max]}" 'v <= 1.3'; }
c_crawlbr() { echo "${R[$1.crawlbr_wall_s]} s (median / slowest page ${R[$1.crawlbr_median_page_s]} / ${R[$1.crawlbr_slowest_page_s]} s; CPU ${R[$1.crawlbr_cpu_s]} s)"; }
c_bytesbr() { awk -v b="${R[$1.crawlbr_bytes]}" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
c_brratio() { mark "${R[$1.br_bytes_ratio]}" 'v <= 0.8'; }
c_fbr()     { echo "${R[$1.floor_br_s]} s"; }
c_floorbr() { echo "${R[$1.floor_br_sum_s]} / ${R[$1.floor_br_max_s]} s"; }
c_ratiobr() { echo "${R[$1.crawlbr_ratio]} / ${R[$1.crawlbr_ratio_max]}"; }
c_hwmbr()   { mark "${R[$1.hwm_crawl_br]}" 'v <= 64'; }
c_etags()   { echo "gz ${R[$1.etag_check]}, br ${R[$1.etag_check_br]}, gzip ${R[$1.etag_check_gzip]}"; }
c_first()   { echo "${R[$1.lat_first_ms]} ms"; }
c_last()    { echo "${R[$1.lat_last_ms]} ms"; }
c_lratio()  { mark "${R[$1.lat_ratio]}" 'v <= 1.2'; }
c_hwm()     { mark "${R[$1.hwm_crawl]}" 'v <= 64'; }
c_hwms()    { echo "${R[$1.hwm_start]}"; }
c_hwmw()    { echo "${R[$1.hwm_after_wrk]}"; }
c_hwmn()    { echo "${R[$1.hwm_nocache]}"; }
c_rps()     { mark "$(printf '%.0f' "${R[$1.wrk_rps]}")" 'v >= 10000'; }
c_p50()     { echo "${R[$1.wrk_p50_ms]} ms"; }
c_p99()     { mark "${R[$1.wrk_p99_ms]}" 'v <= 10'; }
c_cpu()     { echo "${R[$1.crawl_cpu_s]} s"; }
c_rps2()    { printf '%.0f (all 304: %s)\n' "${R[$1.wrk2_rps]}" "${R[$1.wrk2_all_304]}"; }
c_p2()      { echo "${R[$1.wrk2_p50_ms]} / ${R[$1.wrk2_p99_ms]} ms"; }
c_busy()    { echo "${R[$1.busy_crawl]} / ${R[$1.busy_lat]} / ${R[$1.busy_wrk]} / ${R[$1.busy_wrk2]} / ${R[$1.busy_floor]} %"; }
c_status()  {
  python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(", ".join(f"{k}: {v:,}" for k,v in sorted(s.items())) or "none counted")' "${R[$1.wrk_statuses]}"
  [ -z "${R[$1.wrk_socket_errors]}" ] || echo "; socket errors: ${R[$1.wrk_socket_errors]}"
}

DATE=$(date -u +%Y-%m-%d)
MODEL=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
if [ "$DB_KIND" = postgres ]; then
  DBV="PostgreSQL $(psql "$ADMIN_URL" -qAtX -c 'SHOW server_version' 2>/dev/null || echo '?')"
  TITLE="sitemapd benchmark"
  CMD="bench/run.sh ${SIZES[*]}"
  L_SEED="rows seeded (INSERT … SELECT + VACUUM ANALYZE)"
  L_FLOOR="5a. floor: PostgreSQL COPY of the same rows, per page"
else
  # VERSION() names the server itself, e.g. 10.11.19-MariaDB-0+deb12u1.
  DBV=$(timeout 10 "${MY[@]}" -e 'SELECT VERSION()' 2>/dev/null || echo 'MariaDB ?')
  TITLE="sitemapd benchmark on MariaDB"
  CMD="BENCH_DB=mariadb bench/run.sh ${SIZES[*]}"
  L_SEED="rows seeded (INSERT … SELECT FROM seq_1_to_… + ANALYZE TABLE)"
  L_FLOOR="5a. floor: MariaDB client reading the same rows, per page (--quick, one session)"
fi

report() {
  echo "## $TITLE, $DATE"
  echo
  echo "- machine: $(nproc) CPUs, $MODEL, $MEM RAM, Linux $(uname -r)"
  echo "- $DBV on 127.0.0.1; sitemapd $REV (release build); default settings unless noted"
  echo "- command: \`$CMD\` at $(date -u +%H:%M) UTC"
  echo
  local head="| measure | target (N = 1,000,000) |" sep="| --- | --- |"
  for n in "${SIZES[@]}"; do head+=" N = $(fmt_int "$n") |"; sep+=" --- |"; done
  echo "$head"; echo "$sep"
  row "$L_SEED" "" c_rows
  row "server start → ready (includes its full startup sweep)" "" c_ready
  row "files in the index / URLs in them" "" c_files
  row "1. cold full crawl, wall time (index + every page, sequential)" "" c_crawl
  row "1. cold full crawl, bytes transferred (gzip)" "" c_bytes
  row "1b. cold full crawl with brotli accepted (.xml, Accept-Encoding: gzip, deflate, br), wall time" "" c_crawlbr
  row "1b. bytes transferred with brotli" "" c_bytesbr
  row "**1b. bytes with brotli / bytes with gzip**" "≤ 0.8" c_brratio
  row "1. per page: median / slowest" "" c_slow
  row "1. server CPU time during the crawl (user + system)" "" c_cpu
  row "$L_FLOOR" "" c_fpg
  row "5b. floor: gzip -6 of the same XML, per page" "" c_fgz
  row "5c. floor: brotli (C library, quality $BROTLI_QUALITY, window 2^$BROTLI_LGWIN) of the same XML" "" c_fbr
  row "5. floor with gzip: sum (a + b) / max(a, b)" "" c_floor
  row "**cold crawl / floor sum**" "≤ 1.0" c_ratio
  row "**cold crawl / floor max**" "≤ 1.3" c_ratiomax
  row "5. floor with brotli: sum (a + c) / max(a, c)" "" c_floorbr
  row "1b. brotli crawl / its floor sum / its floor max" "" c_ratiobr
  row "2. first page, median of 7 renders (cache off)" "" c_first
  row "2. last page, median of 7 renders (cache off)" "" c_last
  row "**2. last / first**" "≤ 1.2" c_lratio
  row "**3. peak RSS during the cold crawl (VmHWM, MiB)**" "≤ 64" c_hwm
  row "**3. peak RSS after the brotli crawl too (VmHWM, MiB)**" "≤ 64" c_hwmbr
  row "3. peak RSS at ready, i.e. of the startup sweep (MiB)" "" c_hwms
  row "3. peak RSS after the crawl and the 304 load (MiB)" "" c_hwmw
  row "3. peak RSS while rendering with cache off (MiB)" "" c_hwmn
  row "**4. 304 revalidation, requests/s** (wrk 10 s, 64 conn, 2 threads)" "≥ 10,000" c_rps
  row "4. 304 latency p50" "" c_p50
  row "**4. 304 latency p99**" "≤ 10 ms" c_p99
  row "4. statuses counted under load" "all 304" c_status
  row "4'. same load, per-request log off (RUST_LOG=warn): requests/s" "" c_rps2
  row "4'. same load, per-request log off: p50 / p99" "" c_p2
  row "CPUs busy with other work just before 1 / 2 / 4 / 4' / 5" "low" c_busy
  echo
  if [ ${#SIZES[@]} -gt 1 ]; then
    local a=${SIZES[0]} b=${SIZES[-1]}
    local growth
    growth=$(awk -v x="${R[$a.hwm_crawl]}" -v y="${R[$b.hwm_crawl]}" 'BEGIN { printf "%+.1f", (y - x) / x * 100 }')
    echo "- **3. peak RSS during the crawl, N = $(fmt_int "$a") → $(fmt_int "$b")**: ${R[$a.hwm_crawl]} → ${R[$b.hwm_crawl]} MiB, $growth % (target: within 10 %) $(mark "${growth#+}" 'v <= 10 && v >= -10' | sed 's/^[^ ]* //')"
    growth=$(awk -v x="${R[$a.hwm_nocache]}" -v y="${R[$b.hwm_nocache]}" 'BEGIN { printf "%+.1f", (y - x) / x * 100 }')
    echo "- 3. the same with the page cache off (SITEMAP_CACHE_MB=0, rendering only): ${R[$a.hwm_nocache]} → ${R[$b.hwm_nocache]} MiB, $growth %." \
      "The default cache keeps rendered .xml.gz pages up to SITEMAP_CACHE_MB (32 MiB by default), once asked for twice, so with it on, RSS grows with N until that budget is full."
  fi
  for n in "${SIZES[@]}"; do
    echo "- N = $(fmt_int "$n"): pages crawled ${R[$n.crawl_first]} … ${R[$n.crawl_last]};" \
      "renders of the first page (ms) ${R[$n.lat_first_all_ms]}, of the last ${R[$n.lat_last_all_ms]};" \
      "conditional GET pre-check answered $(c_etags "$n"); VmHWM reset before the crawl: ${R[$n.hwm_reset]}"
  done
  echo "- Targets are for N = 1,000,000 on this 2-core machine; ✅/❌ compare every column with them."
  echo "- The floor's sum is reading then compressing one after the other; its max, the two side by side on two cores, which is what sitemapd's render does (it compresses the XML written so far on another thread while it reads the next rows)."
}

mkdir -p "$HERE/results"
if [ "$DB_KIND" = postgres ]; then OUT="$HERE/results/results-$DATE"; else OUT="$HERE/results/results-$DB_KIND-$DATE"; fi
if [ -e "$OUT.md" ]; then OUT="$OUT-$(date -u +%H%M%S).md"; else OUT="$OUT.md"; fi
report | tee "$OUT"
log "saved $OUT"
