#!/usr/bin/env bash
# bench/writes.sh: fetches while the site is being edited. For each database (PostgreSQL and
# MariaDB) and each write rate (50 and 500 UPDATEs per second, one random row each, through one
# client session), a crawler fetches the index and every file it lists, again and again, on one
# keep-alive connection, for BENCH_SECONDS (default 20) per rate. Prints a markdown table: the
# requests made, the answers that were neither 2xx nor 304, the bodies cut short, and their
# share (the goal is 0).
#
#   bench/writes.sh                     both databases, 50 and 500 writes/s
#   BENCH_DB=postgres bench/writes.sh   one database
#   BENCH_RATES="50 500 2000" bench/writes.sh
#
# Environment: BENCH_N (rows, default 20000), BENCH_PAGE_SIZE (default 1000: BENCH_N / 1000
# files), BENCH_SECONDS, BENCH_BIN (the sitemapd binary; default the release build in target/,
# built if missing, or the debug one with BENCH_DEBUG=1), BENCH_ADMIN_URL and BENCH_MYSQL_URL as
# in bench/run.sh.
#
# Everything talks to 127.0.0.1 only and is bounded in time; the server is stopped by its PID on
# exit, error or interrupt; the bench databases are dropped at the end.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
N=${BENCH_N:-20000}
PAGE_SIZE=${BENCH_PAGE_SIZE:-1000}
SECONDS_PER_RATE=${BENCH_SECONDS:-20}
RATES=${BENCH_RATES:-50 500}
DBS=${BENCH_DB:-postgres mariadb}
PG_ADMIN=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
MY_ADMIN=${BENCH_MYSQL_URL:-mysql://root@127.0.0.1:3306}
NAME=sitemapd_bench_writes
# Below the ephemeral range, TCP and UDP free (scripts/lib/ports.py), unless BENCH_PORT says.
PORT=${BENCH_PORT:-$(python3 "$ROOT/scripts/lib/ports.py")}

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [ -n "${BENCH_BIN:-}" ]; then
    BIN=$BENCH_BIN
elif [ "${BENCH_DEBUG:-0}" = 1 ]; then
    (cd "$ROOT" && cargo build --quiet)
    BIN=$TARGET/debug/sitemapd
else
    [ -x "$TARGET/release/sitemapd" ] || (cd "$ROOT" && cargo build --release --quiet)
    BIN=$TARGET/release/sitemapd
fi

SERVER_PID=
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=
}
trap stop_server EXIT INT TERM

pg_client() { psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -U postgres "$@"; }
my_client() { mariadb -h 127.0.0.1 -u root -N -B "$@"; }

seed() {
    case $1 in
    postgres)
        pg_client -d postgres -c "DROP DATABASE IF EXISTS $NAME" -c "CREATE DATABASE $NAME"
        DB_URL=${PG_ADMIN%/*}/$NAME
        SITEMAP_BASE_URL=https://www.example.com DATABASE_URL=$DB_URL "$BIN" migrate >/dev/null
        pg_client -d "$NAME" -c "INSERT INTO sitemap_entries (id, loc, lastmod)
            SELECT i, '/page/' || i, now() - i * interval '1 minute' FROM generate_series(1, $N) i"
        CLIENT=(psql -X -q -At -h 127.0.0.1 -U postgres -d "$NAME")
        ;;
    mariadb)
        my_client -e "DROP DATABASE IF EXISTS $NAME; CREATE DATABASE $NAME"
        DB_URL=${MY_ADMIN%/}/$NAME
        SITEMAP_BASE_URL=https://www.example.com DATABASE_URL=$DB_URL "$BIN" migrate >/dev/null
        my_client "$NAME" -e "INSERT INTO sitemap_entries (id, loc, lastmod)
            SELECT seq, CONCAT('/page/', seq), NOW() - INTERVAL seq MINUTE FROM seq_1_to_$N"
        CLIENT=(mariadb -h 127.0.0.1 -u root -N -B "$NAME")
        ;;
    esac
}

drop() {
    case $1 in
    postgres) pg_client -d postgres -c "DROP DATABASE IF EXISTS $NAME" ;;
    mariadb) my_client -e "DROP DATABASE IF EXISTS $NAME" ;;
    esac
}

start_server() {
    SITEMAP_BASE_URL=https://www.example.com DATABASE_URL=$DB_URL BIND_ADDR=127.0.0.1:$PORT \
        SITEMAP_PAGE_SIZE=$PAGE_SIZE RUST_LOG=warn "$BIN" serve >"$LOG" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 600); do
        if curl -fsS -o /dev/null "http://127.0.0.1:$PORT/sitemap_index.xml" 2>/dev/null; then
            return 0
        fi
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOG"; return 1; }
        sleep 0.1
    done
    echo "the server did not become ready" >&2
    return 1
}

LOG=$(mktemp)
echo "rows: $N, page size: $PAGE_SIZE, $SECONDS_PER_RATE s per rate, binary: $BIN"
echo
echo "| database | writes/s | writes made | requests | non-2xx/304 | cut | failed share | statuses |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for db in $DBS; do
    for rate in $RATES; do
        seed "$db"
        start_server
        line=$(timeout $((SECONDS_PER_RATE + 180)) python3 "$HERE/writes.py" "$rate" \
            "$SECONDS_PER_RATE" "http://127.0.0.1:$PORT" "${CLIENT[@]}")
        echo "| $db $line"
        stop_server
        drop "$db"
    done
done
rm -f "$LOG"
