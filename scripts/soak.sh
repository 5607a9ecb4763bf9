#!/usr/bin/env bash
# A bounded soak of the server on 127.0.0.1: 120,000 entries (SOAK_DB=sqlite, the default:
# `sitemapd demo`; SOAK_DB=postgres: a database of its own made on SOAK_DATABASE_URL's server and
# dropped at the end), page cache off so full fetches really render, wrk with 256 connections
# for DURATION seconds (default 60) mixing 304 revalidations and full downloads, while 200
# slowloris connections dribble headers, SOAK_IDLE (2,000) idle connections (half after the
# HTTP/2 preface) are held, about SOAK_WRITES (50) writes a second change entries, and HTTP/2
# clients fetch files. Reports requests, the share of answers other than 200/304, socket
# errors, throughput, and the server's memory and descriptors.
# Passes when every answer is 200 or 304, no socket error occurred and memory stayed bounded.
# Usage: scripts/soak.sh [DURATION] ; SITEMAPD_BIN=path to skip the build; SOAK_KEEP=1 keeps the
# temporary directory (server.log, wrk.out, h2.bad: the HTTP/2 failures with their time).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-60}
CONNECTIONS=${SOAK_CONNECTIONS:-256}
SOAK_DB=${SOAK_DB:-sqlite}
IDLE=${SOAK_IDLE:-2000}
WRITES=${SOAK_WRITES:-50}
PG_URL=${SOAK_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
BIN=${SITEMAPD_BIN:-${CARGO_TARGET_DIR:-target}/release/sitemapd}
[ -n "${SITEMAPD_BIN:-}" ] || cargo build --release --quiet
BIN=$(realpath "$BIN")
ROOT=$PWD
TMP=$(mktemp -d)
# Below the ephemeral range, TCP and UDP free (scripts/lib/ports.py).
PORT=$(python3 "$ROOT/scripts/lib/ports.py")
ADDR=127.0.0.1:$PORT
PIDS=()
PGDB=
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -z "$PGDB" ] || psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1 || true
  if [ "${SOAK_KEEP:-}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

cd "$TMP"
case $SOAK_DB in
sqlite)
  BIND_ADDR=$ADDR SITEMAP_CACHE_MB=0 RUST_LOG=warn "$BIN" demo 2>server.log &
  ;;
postgres)
  # A database of its own with 120,000 entries shaped like the demo's.
  PGDB=sitemapd_soak_$$
  DB_URL=${PG_URL%/*}/$PGDB
  psql -q "$PG_URL" -c "CREATE DATABASE $PGDB" >/dev/null
  DATABASE_URL=$DB_URL SITEMAP_BASE_URL=http://$ADDR "$BIN" migrate >migrate.log 2>&1
  psql -q "$DB_URL" -c "INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority)
    SELECT g, '/en/articles/' || g || '-news', now() - g * interval '1 minute', 'weekly', 0.5
    FROM generate_series(1, 120000) g" >/dev/null
  DATABASE_URL=$DB_URL SITEMAP_BASE_URL=http://$ADDR BIND_ADDR=$ADDR SITEMAP_CACHE_MB=0 RUST_LOG=warn \
    "$BIN" serve 2>server.log &
  ;;
*) echo "SOAK_DB must be sqlite or postgres" >&2; exit 2 ;;
esac
SERVER=$!
PIDS+=("$SERVER")
# Ready when the index answers, polled against a deadline (a loaded machine is slower, not wrong).
ready_by=$((SECONDS + 180))
until curl -fsS --max-time 5 "http://$ADDR/sitemap_index.xml" >/dev/null 2>&1; do
  kill -0 "$SERVER" 2>/dev/null || { tail -n 20 server.log >&2; echo "soak: the server exited" >&2; exit 1; }
  [ "$SECONDS" -lt "$ready_by" ] || { tail -n 20 server.log >&2; echo "soak: not ready within 180 s" >&2; exit 1; }
  sleep 0.2
done
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
SLOW=$!
PIDS+=("$SLOW")

# Idle connections: SOAK_IDLE sockets that never make a request (half send the HTTP/2 preface),
# reopened as the server closes them (it does at the header timeout, or sooner to make room).
python3 - "$PORT" "$DURATION" "$IDLE" <<'PY' &
import socket, sys, time
port, duration, idle = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
end, socks, opened = time.time() + duration, [], 0
def top_up():
    global opened
    while len(socks) < idle and time.time() < end:
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
print(f"idle: {opened} idle connections opened in all, {len(socks)} open at the end")
PY
IDLER=$!
PIDS+=("$IDLER")

# Steady writes: about SOAK_WRITES updates a second to the entries while everything is fetched
# (SQLite: one commit each; PostgreSQL: one autocommitted UPDATE each, through one psql session).
cat >writer.py <<'PY'
import glob, sqlite3, sys, time
tmp, duration, rate, kind = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
end, n, step = time.time() + duration, 0, 1.0 / rate
if kind == "sqlite":
    db = sqlite3.connect(glob.glob(f"{tmp}/*.db")[0], timeout=30)
    def write(i):
        db.execute("UPDATE sitemap_entries SET lastmod = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?", (i,))
        db.commit()
else:
    def write(i):
        sys.stdout.write(f"UPDATE sitemap_entries SET lastmod = now() WHERE id = {i};\n")
        sys.stdout.flush()
next_at = time.time()
while time.time() < end:
    write(1 + n * 7919 % 120000)
    n += 1
    next_at += step
    time.sleep(max(0.0, next_at - time.time()))
print(f"writes: {n} updates in {duration:.0f} s ({n / duration:.0f}/s)", file=sys.stderr)
PY
if [ "$SOAK_DB" = postgres ]; then
  python3 writer.py "$TMP" "$DURATION" "$WRITES" postgres 2>writes.out | psql -q "$DB_URL" >/dev/null 2>writes.err &
else
  python3 writer.py "$TMP" "$DURATION" "$WRITES" sqlite 2>writes.out &
fi
WRITER=$!
PIDS+=("$WRITER")

# HTTP/2 clients: curl with prior knowledge, fetching files in a loop; non-2xx/304 counted.
( end=$((SECONDS + DURATION)); n=0; bad=0
  while [ $SECONDS -lt $end ]; do
    for p in /sitemap_index.xml /sitemap-1.xml.gz /robots.txt; do
      code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 60 --http2-prior-knowledge "http://$ADDR$p" 2>>h2.err || echo " curl-exit=$?")
      n=$((n + 1)); case $code in 200|304) ;; *) bad=$((bad + 1)); echo "$(date +%T) $p $code" >>h2.bad;; esac
    done
  done
  echo "h2: $n requests, $bad answers other than 200/304" ) >h2.out &
H2=$!
PIDS+=("$H2")

# The server's resident memory (KiB) and open descriptors, once a second.
( while kill -0 "$SERVER" 2>/dev/null; do
    echo "$(awk '/VmRSS/{print $2}' /proc/"$SERVER"/status) $(ls /proc/"$SERVER"/fd 2>/dev/null | wc -l)"
    sleep 1
  done ) >rss.log &
PIDS+=("$!")
wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --timeout 30s --latency -s "$ROOT/scripts/soak.lua" "http://$ADDR" -- "${ARGS[@]}" | tee wrk.out
# Every client ends by itself after DURATION (the HTTP/2 loop finishes its last request).
for p in "$SLOW" "$IDLER" "$WRITER" "$H2"; do wait "$p" || true; done
cat h2.out writes.out 2>/dev/null || true
h2n=$(awk '/^h2:/{print $2}' h2.out 2>/dev/null || echo 0)
h2bad=$(awk '/^h2:/{print $(NF-4)}' h2.out 2>/dev/null || echo 0)
peak=$(awk '{print $1}' rss.log | sort -n | tail -1)
fds=$(awk '{print $2}' rss.log | sort -n | tail -1)
hwm=$(awk '/VmHWM/{print $2}' /proc/"$SERVER"/status)
bad=$(awk '$1=="status" && $2!=200 && $2!=304 {n+=$3} END{print n+0}' wrk.out)
total=$(awk '$1=="status" {n+=$3} END{print n+0}' wrk.out)
sockerr=$(grep -Eo 'Socket errors: .*' wrk.out || true)
# A wrk socket error is a fetch that failed too (a body cut short, a reset, a 30 s timeout).
sockn=$(printf '%s' "$sockerr" | grep -Eo '[0-9]+' | awk '{n+=$1} END{print n+0}')
all=$((total + sockn + ${h2n:-0}))
allbad=$((bad + sockn + ${h2bad:-0}))
echo "database: $SOAK_DB; duration ${DURATION}s; writes ${WRITES}/s; requests: $all (wrk $((total + sockn)), HTTP/2 ${h2n:-0})"
echo "answers other than 200/304: $((bad + ${h2bad:-0})); ${sockerr:-Socket errors: none}"
echo "failed fetches (other than 200/304, socket errors, HTTP/2 transfers cut): $allbad of $all ($(awk -v b="$allbad" -v n="$all" 'BEGIN{printf "%.2f", n ? 100 * b / n : 0}')%)"
echo "server memory: peak VmRSS $((peak / 1024)) MiB, VmHWM $((hwm / 1024)) MiB; peak open descriptors $fds"
alive=$(kill -0 "$SERVER" 2>/dev/null && echo yes || echo no)
echo "server still running: $alive"
if [ "$bad" = 0 ] && [ "${h2bad:-0}" = 0 ] && [ -z "$sockerr" ] && [ "$alive" = yes ] && [ "$hwm" -lt $((256 * 1024)) ]; then
  echo "soak: PASS"
else
  echo "soak: FAIL"; exit 1
fi
