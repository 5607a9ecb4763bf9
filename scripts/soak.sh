#!/usr/bin/env bash
# A bounded soak of the release server on 127.0.0.1: `sitemapd demo` (120,000 entries in SQLite,
# page cache off so full fetches really render), wrk with 256 connections for DURATION seconds
# (default 60) mixing 304 revalidations and full downloads, while 200 slowloris connections
# dribble headers. Reports statuses, socket errors, throughput and the server's memory.
# Passes when every answer is 200 or 304, no socket error occurred and memory stayed bounded.
# Usage: scripts/soak.sh [DURATION] ; SITEMAPD_BIN=path to skip the build.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-60}
CONNECTIONS=${SOAK_CONNECTIONS:-256}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
BIN=${SITEMAPD_BIN:-${CARGO_TARGET_DIR:-target}/release/sitemapd}
[ -n "${SITEMAPD_BIN:-}" ] || cargo build --release --quiet
BIN=$(realpath "$BIN")
ROOT=$PWD
TMP=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ADDR=127.0.0.1:$PORT
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT

cd "$TMP"
BIND_ADDR=$ADDR SITEMAP_CACHE_MB=0 RUST_LOG=warn "$BIN" demo 2>server.log &
SERVER=$!
PIDS+=("$SERVER")
for _ in $(seq 600); do curl -fsS "http://$ADDR/sitemap_index.xml" >/dev/null 2>&1 && break; sleep 0.1; done
etag() { curl -fsSI "http://$ADDR$1" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}'; }
ARGS=()
for p in /sitemap-1.xml.gz /sitemap-2.xml.gz /sitemap-3.xml.gz /sitemap-1.xml /sitemap_index.xml /robots.txt; do
  ARGS+=("$p=$(etag "$p")")
done

# Slowloris: connections that send a partial request and a header line every few seconds.
python3 - "$PORT" "$DURATION" <<'PY' &
import socket, sys, time
port, duration = int(sys.argv[1]), float(sys.argv[2])
socks, end = [], time.time() + duration
for _ in range(200):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.sendall(b"GET /robots.txt HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    except OSError:
        pass
while time.time() < end:
    for s in list(socks):
        try:
            s.sendall(b"X-a: b\r\n")
        except OSError:
            socks.remove(s)
    time.sleep(3)
print(f"slowloris: {len(socks)} of 200 connections still open at the end (the server cuts them after 10 s)")
PY
PIDS+=("$!")

peak=0
( while kill -0 "$SERVER" 2>/dev/null; do awk '/VmRSS/{print $2}' /proc/"$SERVER"/status; sleep 1; done ) >rss.log &
PIDS+=("$!")
wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --timeout 30s --latency -s "$ROOT/scripts/soak.lua" "http://$ADDR" -- "${ARGS[@]}" | tee wrk.out
wait "${PIDS[1]}" || true
peak=$(sort -n rss.log | tail -1)
hwm=$(awk '/VmHWM/{print $2}' /proc/"$SERVER"/status)
bad=$(awk '$1=="status" && $2!=200 && $2!=304 {n+=$3} END{print n+0}' wrk.out)
sockerr=$(grep -Eo 'Socket errors: .*' wrk.out || true)
echo "server memory: peak VmRSS $((peak / 1024)) MiB, VmHWM $((hwm / 1024)) MiB"
echo "answers other than 200/304: $bad; ${sockerr:-Socket errors: none}"
alive=$(kill -0 "$SERVER" 2>/dev/null && echo yes || echo no)
echo "server still running: $alive"
if [ "$bad" = 0 ] && [ -z "$sockerr" ] && [ "$alive" = yes ] && [ "$hwm" -lt $((256 * 1024)) ]; then
  echo "soak: PASS"
else
  echo "soak: FAIL"; exit 1
fi
