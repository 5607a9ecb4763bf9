#!/usr/bin/env bash
# A bounded soak of the release server on 127.0.0.1: `sitemapd demo` (120,000 entries in SQLite,
# page cache off so full fetches really render), wrk with 256 connections for DURATION seconds
# (default 60) mixing 304 revalidations and full downloads, while 200 slowloris connections
# dribble headers, 2,000 idle connections (half after the HTTP/2 preface) are held, about 50
# writes a second change entries, and HTTP/2 clients fetch files. Reports statuses, socket errors, throughput and the server's memory.
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

# Idle connections: 2,000 sockets that never make a request (half send the HTTP/2 preface),
# reopened as the server closes them (it does at the header timeout, or sooner to make room).
python3 - "$PORT" "$DURATION" <<'PY' &
import socket, sys, time
port, duration = int(sys.argv[1]), float(sys.argv[2])
end, socks, opened = time.time() + duration, [], 0
def top_up():
    global opened
    while len(socks) < 2000 and time.time() < end:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            if opened % 2:
                s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            s.setblocking(False)
            socks.append(s); opened += 1
        except OSError:
            return
while time.time() < end:
    top_up()
    for s in list(socks):
        try:
            if s.recv(4096) == b"":
                socks.remove(s); s.close()
        except BlockingIOError:
            pass
        except OSError:
            socks.remove(s); s.close()
    time.sleep(1)
print(f"idle: {opened} idle connections opened in all")
PY
PIDS+=("$!")

# Steady writes: about 50 updates a second to the demo's entries while everything is fetched.
python3 - "$TMP" "$DURATION" <<'PY' &
import glob, sqlite3, sys, time
tmp, duration = sys.argv[1], float(sys.argv[2])
dbs = glob.glob(f"{tmp}/*.db")
if not dbs:
    print("writes: no SQLite database found, none made"); sys.exit(0)
db = sqlite3.connect(dbs[0], timeout=30)
end, n = time.time() + duration, 0
while time.time() < end:
    db.execute("UPDATE sitemap_entries SET lastmod = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?", (1 + n * 7919 % 120000,))
    db.commit(); n += 1
    time.sleep(0.02)
print(f"writes: {n} updates")
PY
PIDS+=("$!")

# HTTP/2 clients: curl with prior knowledge, fetching files in a loop; non-2xx/304 counted.
( end=$((SECONDS + DURATION)); n=0; bad=0
  while [ $SECONDS -lt $end ]; do
    for p in /sitemap_index.xml /sitemap-1.xml.gz /robots.txt; do
      code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 --http2-prior-knowledge "http://$ADDR$p" || echo 000)
      n=$((n + 1)); case $code in 200|304) ;; *) bad=$((bad + 1));; esac
    done
  done
  echo "h2: $n requests, $bad answers other than 200/304" ) >h2.out &
PIDS+=("$!")

peak=0
( while kill -0 "$SERVER" 2>/dev/null; do awk '/VmRSS/{print $2}' /proc/"$SERVER"/status; sleep 1; done ) >rss.log &
PIDS+=("$!")
wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --timeout 30s --latency -s "$ROOT/scripts/soak.lua" "http://$ADDR" -- "${ARGS[@]}" | tee wrk.out
wait "${PIDS[1]}" || true
sleep 2; cat h2.out 2>/dev/null || true
h2bad=$(awk '/^h2:/{print $(NF-4)}' h2.out 2>/dev/null || echo 0)
peak=$(sort -n rss.log | tail -1)
hwm=$(awk '/VmHWM/{print $2}' /proc/"$SERVER"/status)
bad=$(awk '$1=="status" && $2!=200 && $2!=304 {n+=$3} END{print n+0}' wrk.out)
sockerr=$(grep -Eo 'Socket errors: .*' wrk.out || true)
echo "server memory: peak VmRSS $((peak / 1024)) MiB, VmHWM $((hwm / 1024)) MiB"
echo "answers other than 200/304: $bad; ${sockerr:-Socket errors: none}"
alive=$(kill -0 "$SERVER" 2>/dev/null && echo yes || echo no)
echo "server still running: $alive"
if [ "$bad" = 0 ] && [ "${h2bad:-0}" = 0 ] && [ -z "$sockerr" ] && [ "$alive" = yes ] && [ "$hwm" -lt $((256 * 1024)) ]; then
  echo "soak: PASS"
else
  echo "soak: FAIL"; exit 1
fi
