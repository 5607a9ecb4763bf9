#!/usr/bin/env bash
# bench/verify.sh: a burst of requests claiming Googlebot from many addresses, with crawler
# verification on. What the issue asks of it: the burst finishes, the server's memory stays
# bounded, and DNS sees at most one lookup per address (PTR, then the forward query of a name
# under Google's suffixes), however many requests each address sends.
#
#   bench/verify.sh                     10,000 requests from 1,000 addresses (default)
#   BENCH_ADDRS=2000 BENCH_PER_ADDR=5 bench/verify.sh
#
# Parts, all on loopback: dnsmasq on a free port holding PTR and A records for half the
# addresses (crawl-127-1-x-y.googlebot.com → 127.1.x.y: verified), none for the other half (no
# such name: forged); the release binary (SITEMAPD_BIN, default target/release/sitemapd) on
# SQLite with CRAWLER_VERIFY=on, DNS_SERVER set to dnsmasq and a CRAWLERS_FILE that leaves
# Googlebot DNS as its only method (no published list to fetch); a Python client (stdlib only)
# sending GET /robots.txt with Googlebot's User-Agent, each request on a new connection bound to
# its source address 127.1.x.y, 32 at a time.
#
# Reported: the burst's wall time and requests/s, statuses, the server's RSS before and after
# and its high-water mark, DNS queries by type as dnsmasq logged them, and the verdicts the
# ledger counted (status.json), once they have all arrived.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
BIN=${SITEMAPD_BIN:-$ROOT/target/release/sitemapd}
ADDRS=${BENCH_ADDRS:-1000}
PER_ADDR=${BENCH_PER_ADDR:-10}
WORK=$(mktemp -d)
PIDS=()

[ -x "$BIN" ] || { echo "no binary at $BIN: cargo build --release, or set SITEMAPD_BIN" >&2; exit 1; }
command -v dnsmasq >/dev/null || { echo "dnsmasq is missing: apt-get install dnsmasq" >&2; exit 1; }

stop() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    [ -n "${BENCH_KEEP:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"
}
trap stop EXIT

# Ports below the ephemeral range, TCP and UDP both free, never the same twice in a run
# (scripts/lib/ports.py).
export PORTS_LEDGER=$WORK/ports-handed-out
free_port() { python3 "$ROOT/scripts/lib/ports.py"; }

# The addresses: 127.1.x.y, the even-numbered ones with records.
python3 - "$ADDRS" "$WORK/dns.conf" <<'EOF'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as out:
    for i in range(n):
        if i % 2:
            continue
        a, b = divmod(i, 250)
        b += 1
        name = f"crawl-127-1-{a}-{b}.googlebot.com"
        out.write(f"ptr-record={b}.{a}.1.127.in-addr.arpa,{name}\n")
        out.write(f"host-record={name},127.1.{a}.{b}\n")
EOF
DNS_PORT=$(free_port)
dnsmasq --keep-in-foreground --conf-file="$WORK/dns.conf" --no-resolv --no-hosts --no-poll \
    --bind-interfaces --listen-address=127.0.0.1 --port="$DNS_PORT" --pid-file= --user=root \
    --local=/in-addr.arpa/ --local=/com/ --cache-size=0 --log-queries \
    --log-facility="$WORK/dns.log" >/dev/null 2>&1 &
PIDS+=($!)

cat >"$WORK/crawlers.toml" <<'EOF'
[[crawler]]
name = "Googlebot"
tokens = ["Googlebot"]
user_agent = ["Googlebot"]
operator = "Google"
purpose = "search"
verify_dns = ["googlebot.com", "google.com"]
verify_ranges = []
docs = ["https://developers.google.com/search/docs/crawling-indexing/verifying-googlebot"]
EOF

PORT=$(free_port)
ADMIN_PORT=$(free_port)
DATABASE_URL="sqlite://$WORK/site.db" SITEMAP_BASE_URL=https://www.example.com/ \
    BIND_ADDR=127.0.0.1:$PORT ADMIN_BIND_ADDR=127.0.0.1:$ADMIN_PORT RUST_LOG=warn \
    CRAWLER_VERIFY=on DNS_SERVER=127.0.0.1:$DNS_PORT CRAWLERS_FILE="$WORK/crawlers.toml" \
    "$BIN" serve >"$WORK/server.log" 2>&1 &
SERVER=$!
PIDS+=($SERVER)
for _ in $(seq 300); do
    curl -fsS -o /dev/null "http://127.0.0.1:$PORT/readyz" 2>/dev/null && break
    kill -0 $SERVER 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.1
done

rss() { awk -v k="$1:" '$1 == k { print $2 }' /proc/$SERVER/status; }
RSS_BEFORE=$(rss VmRSS)

python3 - "$PORT" "$ADDRS" "$PER_ADDR" >"$WORK/burst.txt" <<'EOF'
import collections, http.client, sys, threading, time
port, addrs, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ua = ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; "
      "+http://www.google.com/bot.html) Chrome/131.0.0.0 Safari/537.36")
jobs = [(i, r) for r in range(per) for i in range(addrs)]
statuses = collections.Counter()
lock = threading.Lock()
def source(i):
    a, b = divmod(i, 250)
    return f"127.1.{a}.{b + 1}"
def work(k):
    for j in range(k, len(jobs), 32):
        i, _ = jobs[j]
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source(i), 0))
            c.request("GET", "/robots.txt", headers={"User-Agent": ua})
            status = c.getresponse().status
            c.close()
        except OSError as e:
            status = type(e).__name__
        with lock:
            statuses[status] += 1
start = time.monotonic()
threads = [threading.Thread(target=work, args=(k,)) for k in range(32)]
for t in threads: t.start()
for t in threads: t.join()
took = time.monotonic() - start
print(f"{len(jobs)} {took:.2f} {dict(statuses)}")
EOF
read -r REQUESTS TOOK STATUSES <"$WORK/burst.txt"
RSS_AFTER=$(rss VmRSS)

# Verdicts arrive in the background: wait until the ledger has counted every request.
VERDICTS=""
for _ in $(seq 600); do
    VERDICTS=$(curl -fsS "http://127.0.0.1:$ADMIN_PORT/status.json" | python3 -c '
import json, sys
for c in json.load(sys.stdin)["crawlers"]:
    if c["crawler"] == "Googlebot":
        print(c["verified"], c["unverified"], c["forged"])' || true)
    set -- $VERDICTS
    [ -n "$VERDICTS" ] && [ $(($1 + $2 + $3)) -ge "$REQUESTS" ] && break
    sleep 0.1
done
set -- $VERDICTS
HWM=$(rss VmHWM)
PTR=$(grep -c 'query\[PTR\]' "$WORK/dns.log" || true)
A=$(grep -c 'query\[A\]' "$WORK/dns.log" || true)

cat <<EOF
| measure | value |
| --- | --- |
| requests (addresses × per address) | $REQUESTS ($ADDRS × $PER_ADDR) |
| burst wall time | ${TOOK} s ($(python3 -c "print(round($REQUESTS / $TOOK))") req/s, 32 clients, a new connection each) |
| statuses | $STATUSES |
| RSS before → after the burst, peak | $((RSS_BEFORE / 1024)) → $((RSS_AFTER / 1024)) MiB, peak $((HWM / 1024)) MiB |
| DNS queries (PTR / A) | $PTR / $A (addresses: $ADDRS, half with records) |
| Googlebot verdicts (verified / unverified / forged) | ${1:-?} / ${2:-?} / ${3:-?} |
EOF
