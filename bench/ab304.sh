#!/usr/bin/env bash
# bench/ab304.sh: the 304 path of two builds, A against B, paired. What a repeat crawler visit
# costs is the number a feature on the request path (the crawler ledger, verification) must not
# move, so this is run before such a feature lands.
#
#   bench/ab304.sh BIN_A BIN_B         e.g. target/release/sitemapd /tmp/sitemapd-before
#   AB_ENV_B="CRAWLER_VERIFY=off" bench/ab304.sh BIN BIN     one build, a setting on against off
#
# Both servers run at once, each on a PostgreSQL database of its own (a build may not know the
# other's migrations) seeded with the same BENCH_N rows (default 20,000) by bench/seed.sql, each
# on its own port. One measure is `ab -n AB_REQUESTS -c 32 -k` (default
# 100,000 requests) of the first sitemap file with its ETag in If-None-Match and a Googlebot
# User-Agent, so the ledger and verification are on the path; every answer must be 304. The
# measures alternate A B A B … (AB_RUNS pairs, default 7) and the report gives each side's
# requests per second (median, min, max) and the median of the pairwise ratios A/B: pairing keeps
# the ratio meaningful while the machine's speed drifts.
#
# Environment: BENCH_N, AB_REQUESTS, AB_RUNS, AB_ENV_A and AB_ENV_B (space-separated NAME=value
# settings for one side's server only), AB_HEADERS (more request headers for both sides, one
# `Name: value` a line, e.g. a Web Bot Auth signature: bench/ab304-signed.sh), BENCH_ADMIN_URL (default
# postgres://postgres@127.0.0.1:5432/postgres). Talks to 127.0.0.1 only; both servers are stopped
# by their PIDs on exit; the database is dropped at the end.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN_A=${1:?usage: bench/ab304.sh BIN_A BIN_B}
BIN_B=${2:?usage: bench/ab304.sh BIN_A BIN_B}
N=${BENCH_N:-20000}
REQUESTS=${AB_REQUESTS:-100000}
RUNS=${AB_RUNS:-7}
ADMIN=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
DB=sitemapd_bench_ab304
# Below the ephemeral range, TCP and UDP free, two different ones (scripts/lib/ports.py).
PORT_A=$(python3 "$HERE/../scripts/lib/ports.py")
PORT_B=$(python3 "$HERE/../scripts/lib/ports.py" 1 --except "$PORT_A")
UA='Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/131.0.0.0 Safari/537.36'
WORK=$(mktemp -d)
PIDS=()

command -v ab >/dev/null || { echo "ab is missing: apt-get install apache2-utils" >&2; exit 1; }

stop() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    for db in ${DB}_a ${DB}_b; do
        psql -q "$ADMIN" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
    done
    rm -rf "$WORK"
}
trap stop EXIT

seed() { # seed BIN DB: a fresh database migrated by BIN, with the bench rows
    local url=${ADMIN%/*}/$2
    psql -q "$ADMIN" -c "DROP DATABASE IF EXISTS $2" -c "CREATE DATABASE $2" >/dev/null
    DATABASE_URL=$url SITEMAP_BASE_URL=https://www.example.com/ "$1" migrate >/dev/null
    psql -q "$url" -v n="$N" -f "$HERE/seed.sql" >/dev/null
}
seed "$BIN_A" ${DB}_a
seed "$BIN_B" ${DB}_b

start() { # start BIN PORT DB [NAME=value…]: a server, ready when its first sitemap file answers
    local bin=$1 port=$2 db=$3
    shift 3
    env "$@" DATABASE_URL=${ADMIN%/*}/$db SITEMAP_BASE_URL=https://www.example.com/ BIND_ADDR=127.0.0.1:$port \
        RUST_LOG=warn "$bin" serve >"$WORK/server-$port.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 600); do
        if curl -fs -o /dev/null "http://127.0.0.1:$port/sitemap-1.xml.gz"; then return 0; fi
        sleep 0.1
    done
    echo "server on $port never became ready: $WORK/server-$port.log" >&2
    cat "$WORK/server-$port.log" >&2
    exit 1
}

EXTRA=()
while IFS= read -r header; do
    [ -n "$header" ] && EXTRA+=(-H "$header")
done <<<"${AB_HEADERS:-}"
MORE=""
[ ${#EXTRA[@]} -eq 0 ] || MORE=" and $((${#EXTRA[@]} / 2)) more headers"

etag() { curl -fsI "http://127.0.0.1:$1/sitemap-1.xml.gz" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}'; }

measure() { # measure PORT ETAG: requests per second of one ab run; every answer must be 304
    local out
    out=$(ab -q -n "$REQUESTS" -c 32 -k -H "User-Agent: $UA" -H "If-None-Match: $2" "${EXTRA[@]}" \
        "http://127.0.0.1:$1/sitemap-1.xml.gz" 2>&1)
    local non2xx
    non2xx=$(awk '/Non-2xx responses/{print $3}' <<<"$out")
    if [ "${non2xx:-0}" != "$REQUESTS" ]; then
        echo "expected $REQUESTS answers 304 on port $1, ab says: $out" >&2
        exit 1
    fi
    awk '/Requests per second/{print $4}' <<<"$out"
}

# shellcheck disable=SC2086 # the settings are words on purpose
start "$BIN_A" $PORT_A ${DB}_a ${AB_ENV_A:-}
# shellcheck disable=SC2086
start "$BIN_B" $PORT_B ${DB}_b ${AB_ENV_B:-}
ETAG_A=$(etag $PORT_A)
ETAG_B=$(etag $PORT_B)
# Warm both (and let verification settle its first verdicts).
measure $PORT_A "$ETAG_A" >/dev/null
measure $PORT_B "$ETAG_B" >/dev/null

: >"$WORK/a" ; : >"$WORK/b"; : >"$WORK/ratio"
for _ in $(seq 1 "$RUNS"); do
    a=$(measure $PORT_A "$ETAG_A")
    b=$(measure $PORT_B "$ETAG_B")
    echo "$a" >>"$WORK/a"
    echo "$b" >>"$WORK/b"
    awk -v a="$a" -v b="$b" 'BEGIN{printf "%.4f\n", a/b}' >>"$WORK/ratio"
done

summary() { sort -g "$1" | awk '{v[NR]=$1} END{printf "%s (min %s, max %s)", v[int((NR+1)/2)], v[1], v[NR]}'; }
echo "| build | 304 requests/s, median of $RUNS (min, max) |"
echo "| --- | --- |"
echo "| A: $BIN_A ${AB_ENV_A:-} | $(summary "$WORK/a") |"
echo "| B: $BIN_B ${AB_ENV_B:-} | $(summary "$WORK/b") |"
echo
echo "A/B, median of $RUNS paired ratios: $(sort -g "$WORK/ratio" | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')" \
    "($N rows, ab -n $REQUESTS -c 32 -k, Googlebot User-Agent$MORE, $(nproc) CPUs)"
