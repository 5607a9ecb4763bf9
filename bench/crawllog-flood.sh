#!/usr/bin/env bash
# bench/crawllog-flood.sh: the crawl log under a flood of junk datagrams (issue 53), beside
# bench/crawllog.sh. Runs unattended against a release binary given by path (it never builds),
# prints markdown tables and writes them to
# bench/results/results-crawllog-flood-<UTC date and time>.md.
#
#   SITEMAPD_BIN=target/release/sitemapd bench/crawllog-flood.sh
#
# Environment:
#   SITEMAPD_BIN   the sitemapd binary (required)
#   FLOOD_RATE     junk datagrams per second, per flooder (default 17700: the rate of the issue)
#   FLOODERS       flooding processes side by side (default 1)
#   WEB_RATE       valid Googlebot lines per second from the web server (default 70)
#   FLOOD_SECS     how long both send (default 10)
#   FLOOD_RUNS     runs of each mode (default 3)
#   FLOOD_MODES    "untrusted trusted" (default both)
#
# Both modes run the service pinned to the two cores (taskset -c 0,1) on SQLite with 1,000
# listed URLs, CRAWLER_VERIFY=off and ACCESS_LOG_SENDERS left at its default (127.0.0.1,::1),
# and two Python senders on the same cores, started together:
#   - the web server, bound to 127.0.0.1: WEB_RATE valid nginx syslog lines a second, Googlebot
#     fetching listed URLs, each line dated now;
#   - FLOODERS flooders, bound to 127.0.0.2 (untrusted mode: a sender the service does not
#     trust) or to 127.0.0.1 (trusted mode: a web server gone mad): FLOOD_RATE junk datagrams a
#     second each.
# Untrusted: every line of the web server must be stored (parsed and written), the junk dropped
# unread. Trusted: nothing can tell junk from lines in time, so lines may be lost; every
# datagram sent must be counted, either as a line (parsed, unparsed, ignored, out of window) or
# as a loss (the kernel's socket drops, the parse queue's drops, untrusted senders).
# The load average of the machine before each run is printed beside it: other work on the two
# cores changes the numbers. Each run ends within FLOOD_SECS + 40 s; only 127.0.0.1 and
# 127.0.0.2 are used; each server is stopped by its PID.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${SITEMAPD_BIN:?set SITEMAPD_BIN to a release sitemapd binary, e.g. target/release/sitemapd}
BIN=$(realpath "$BIN")
FLOOD_RATE=${FLOOD_RATE:-17700}
FLOODERS=${FLOODERS:-1}
WEB_RATE=${WEB_RATE:-70}
SECS=${FLOOD_SECS:-10}
RUNS=${FLOOD_RUNS:-3}
MODES=${FLOOD_MODES:-untrusted trusted}
N=1000
mkdir -p "$HERE/results"
OUT=$HERE/results/results-crawllog-flood-$(date -u +%Y-%m-%d-%H%M%S).md
WORK=$(mktemp -d)
SERVER_PID=
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT

say() { echo "crawllog flood bench: $*" >&2; }
out() { tee -a "$OUT"; }
export PORTS_LEDGER=$WORK/ports-handed-out
free_port() { python3 "$HERE/../scripts/lib/ports.py"; }
metric() { curl -fsS "http://127.0.0.1:$HTTP_PORT/metrics" | awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { printf "%d\n", s + 0 }'; }

start_server() {
  HTTP_PORT=$(free_port)
  UDP_PORT=$(free_port)
  rm -f "$WORK/flood.db"
  export DATABASE_URL="sqlite://$WORK/flood.db" SITEMAP_BASE_URL=https://www.example.com/
  "$BIN" migrate >/dev/null
  sqlite3 "$WORK/flood.db" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $N)
    INSERT INTO sitemap_entries (id, loc, lastmod) SELECT i, '/p/' || i, '2026-01-01 00:00:00' FROM n;"
  BIND_ADDR=127.0.0.1:$HTTP_PORT CRAWLER_VERIFY=off ACCESS_LOG_ADDR=127.0.0.1:$UDP_PORT \
    RUST_LOG=warn taskset -c 0,1 "$BIN" serve 2>>"$WORK/server.log" &
  SERVER_PID=$!
  for _ in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$HTTP_PORT/sitemap_index.xml" >/dev/null 2>&1 && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 20 "$WORK/server.log" >&2
  echo "sitemapd did not start" >&2
  exit 1
}

# send FROM RATE KIND: sends for SECS from address FROM at RATE datagrams a second, KIND
# "web" (valid Googlebot lines, dated now) or "junk"; prints how many it sent.
send() {
  timeout $((SECS + 20)) taskset -c 0,1 python3 - "$1" "$UDP_PORT" "$2" "$SECS" "$3" "$N" <<'EOF'
import random, socket, sys, time
source, port, rate, secs, kind, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], int(sys.argv[6])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((source, 0))
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
rng = random.Random(kind)
junk = [("<190>Dec  7 12:00:00 web sitemapd: junk %d %s" % (i, "x" * rng.randint(20, 200))).encode() for i in range(256)]
start = time.time()
sent = 0
while True:
    elapsed = time.time() - start
    if elapsed >= secs:
        break
    due = min(int(elapsed * rate) + 1, int(secs * rate))
    stamp = time.strftime("%b %d %H:%M:%S", time.gmtime())
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    while sent < due:
        if kind == "web":
            line = '<190>%s web sitemapd: %s\t66.249.66.1\t"www.example.com"\t"GET"\t"/p/%d"\t200\t1234\t"%s"' % (
                stamp, now, rng.randint(1, n), googlebot)
            s.sendto(line.encode(), ("127.0.0.1", port))
        else:
            s.sendto(junk[sent % 256], ("127.0.0.1", port))
        sent += 1
    time.sleep(0.0005)
print(sent)
EOF
}

# settle: waits until the counts stop moving for 3 s (at most 30 s).
settle() {
  local last=-1 same=0 now
  for _ in $(seq 1 60); do
    now=$(metric sitemapd_access_log_)
    if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
    [ "$same" -ge 6 ] && return 0
    sleep 0.5
  done
}

{
  echo "# crawl log under a flood, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "binary: \`$BIN\`; $(nproc) cores on the machine, the service and both senders pinned to 2 (taskset -c 0,1);"
  echo "$FLOODERS flooder(s) at $FLOOD_RATE junk datagrams/s each and $WEB_RATE Googlebot lines/s for $SECS s, $RUNS runs per mode."
  echo
} | out

for MODE in $MODES; do
  case $MODE in
    untrusted) FLOODER=127.0.0.2 ;;
    trusted) FLOODER=127.0.0.1 ;;
    *) echo "FLOOD_MODES holds untrusted and/or trusted" >&2; exit 2 ;;
  esac
  {
    echo "## Flood from $FLOODER ($MODE), web server on 127.0.0.1"
    echo
    echo "| run | load avg (1 min) before | web lines sent | stored (parsed / written) | junk sent | untrusted (dropped unread) | unparsed | kernel socket drops | queue drops | writer drops | datagrams not accounted for |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  } | out
  for RUN in $(seq 1 "$RUNS"); do
    say "$MODE run $RUN"
    start_server
    LOAD=$(cut -d' ' -f1 /proc/loadavg)
    send 127.0.0.1 "$WEB_RATE" web >"$WORK/web.sent" &
    SENDERS=($!)
    for F in $(seq 1 "$FLOODERS"); do
      send "$FLOODER" "$FLOOD_RATE" junk >"$WORK/junk-$F.sent" &
      SENDERS+=($!)
    done
    wait "${SENDERS[@]}"
    WEB_SENT=$(cat "$WORK/web.sent")
    JUNK_SENT=$(cat "$WORK"/junk-*.sent | awk '{ s += $1 } END { print s }')
    rm -f "$WORK"/junk-*.sent
    # The kernel's drops are read each second: let them and the writer's last batch land.
    sleep 2
    settle
    PARSED=$(metric 'sitemapd_access_log_lines_total{result="parsed"}')
    UNPARSED=$(metric 'sitemapd_access_log_lines_total{result="unparsed"}')
    IGNORED=$(metric 'sitemapd_access_log_lines_total{result="ignored"}')
    OUT_OF_WINDOW=$(metric 'sitemapd_access_log_lines_total{result="out_of_window"}')
    WRITTEN=$(metric sitemapd_access_log_written_lines_total)
    UNTRUSTED=$(metric sitemapd_access_log_untrusted_datagrams_total)
    KERNEL=$(metric sitemapd_access_log_socket_drops_total)
    QUEUE=$(metric sitemapd_access_log_queue_dropped_datagrams_total)
    WRITER=$(metric sitemapd_access_log_dropped_lines_total)
    stop_server
    ACCOUNTED=$((PARSED + UNPARSED + IGNORED + OUT_OF_WINDOW + UNTRUSTED + KERNEL + QUEUE))
    MISSING=$((WEB_SENT + JUNK_SENT - ACCOUNTED))
    echo "| $RUN | $LOAD | $WEB_SENT | $PARSED / $WRITTEN | $JUNK_SENT | $UNTRUSTED | $UNPARSED | $KERNEL | $QUEUE | $WRITER | $MISSING |" | out
  done
  echo | out
done
say "results in $OUT"
