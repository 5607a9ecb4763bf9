#!/usr/bin/env bash
# Checks the shipped Varnish configuration (deploy/varnish/sitemapd.vcl) against a real varnishd
# and a real sitemapd that purges it (CACHE_PURGE): sitemapd serve over a SQLite database of 30
# entries (three files of ten) on a free loopback port, varnishd on another with the shipped VCL
# (only its backend port changed). Then: files are cached, 304s are answered, PURGE is taken from
# loopback, an UPDATE reaches a client through Varnish within the refresh period while the other
# files stay cached, and an UPDATE that leaves the bytes as they were purges nothing.
#
# Usage: scripts/varnish-check.sh
#   SITEMAPD_BIN=path  use this binary instead of building target/release/sitemapd
#   KEEP_TMP=1         keep the temporary directory (logs, bodies) for inspection
#   WAIT_SCALE=N       multiply every readiness deadline
# Installs varnish and sqlite3 with apt-get when missing (needs root or sudo). Only 127.0.0.1 is
# used. Prints a PASS/FAIL line per check, then "N passed, N failed"; exits 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FRONT=varnish
# shellcheck source=lib/checks.sh
. "$ROOT/scripts/lib/checks.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/varnish-check.XXXXXX") || { echo "FAIL mktemp"; exit 1; }
SITEMAPD_PID=
VARNISH_PID=
cleanup() {
  stop_pid "$VARNISH_PID"
  stop_pid "$SITEMAPD_PID"
  if [ "${KEEP_TMP:-}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

eq() { [ "$1" = "$2" ]; }
nonempty() { [ -n "$1" ]; }

# ---------------------------------------------------------------- tools

VARNISHD=$(find_bin varnishd) || { apt_install varnish && VARNISHD=$(find_bin varnishd); } ||
  abort "varnishd is not installed and could not be installed (apt-get install varnish)"
find_bin sqlite3 >/dev/null || apt_install sqlite3 || abort "sqlite3 is needed (apt-get install sqlite3)"
need curl gzip varnishstat
say "using $("$VARNISHD" -V 2>&1 | head -n 1)"
sitemapd_bin missing

SP=$(free_port) || abort "no free port for sitemapd"
VP=$(free_port "$SP") || abort "no free port for varnish"
HOST=www.example.test
DB=$TMP/site.db
VIA=http://127.0.0.1:$VP

# ---------------------------------------------------------------- the VCL

sed "s/\.port = \"8080\";/.port = \"$SP\";/" deploy/varnish/sitemapd.vcl >"$TMP/sitemapd.vcl"
check "the shipped VCL names its backend port 8080 (replaced by $SP)" grep -q "\"$SP\"" "$TMP/sitemapd.vcl"
check "the shipped VCL compiles (varnishd -C)" \
  eval '"$VARNISHD" -C -j none -n "$TMP/compile" -f "$TMP/sitemapd.vcl" >/dev/null 2>"$TMP/compile.err"'

# ---------------------------------------------------------------- sitemapd

ENV=(env -i PATH="$PATH" HOME="${HOME:-/tmp}" RUST_LOG="${RUST_LOG:-info}" DATABASE_URL="sqlite://$DB"
  SITEMAP_BASE_URL="https://$HOST/" BIND_ADDR="127.0.0.1:$SP" SITEMAP_PAGE_SIZE=10 SITEMAP_REFRESH_SECS=1)
"${ENV[@]}" "$BIN" migrate >"$TMP/migrate.log" 2>&1 || abort "sitemapd migrate (see $TMP/migrate.log)"
sqlite3 "$DB" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30)
  INSERT INTO sitemap_entries (id, loc) SELECT i * 10, '/p/' || (i * 10) FROM n;" ||
  abort "cannot insert the entries"
# serve_sitemapd [VAR=VALUE...]: sitemapd serve in the background until /readyz answers 200.
serve_sitemapd() {
  "${ENV[@]}" "$@" "$BIN" serve >>"$TMP/sitemapd.log" 2>&1 &
  SITEMAPD_PID=$!
  wait_http "http://127.0.0.1:$SP/readyz" 120 "$SITEMAPD_PID" || {
    tail -n 20 "$TMP/sitemapd.log" >&2
    abort "sitemapd not ready within 120 s"
  }
}
# A first run stores the files, so the run behind Varnish opens on them with nothing to purge.
serve_sitemapd
stop_pid "$SITEMAPD_PID"
serve_sitemapd CACHE_PURGE="http://127.0.0.1:$VP"
pass "sitemapd ready on 127.0.0.1:$SP, purging $VIA"

# ---------------------------------------------------------------- varnish

"$VARNISHD" -F -j none -n "$TMP/varnish" -a "127.0.0.1:$VP" -f "$TMP/sitemapd.vcl" -s malloc,32m \
  >"$TMP/varnish.out" 2>&1 &
VARNISH_PID=$!
wait_http "$VIA/healthz" 60 "$VARNISH_PID" || {
  tail -n 20 "$TMP/varnish.out" >&2
  abort "varnishd did not start within 60 s"
}
pass "varnishd up on $VIA"

# get NAME PATH [curl args...]: through Varnish with the site's Host; headers to $TMP/NAME.h,
# body (gunzipped for .gz) to $TMP/NAME.b; prints the status
get() {
  local name=$1 path=$2
  shift 2
  local status
  : >"$TMP/$name.raw" # a 304 has no body, and curl then writes no file
  status=$("${CURL[@]}" -D "$TMP/$name.h" -o "$TMP/$name.raw" -w '%{http_code}' -H "Host: $HOST" "$@" \
    "$VIA$path" 2>>"$TMP/curl.err") || status=000
  case $path in
    *.gz) gzip -dc <"$TMP/$name.raw" >"$TMP/$name.b" 2>/dev/null || cp "$TMP/$name.raw" "$TMP/$name.b" ;;
    *) cp "$TMP/$name.raw" "$TMP/$name.b" ;;
  esac
  echo "$status"
}
hdr() { sed -n "s/^$2: *//Ip" "$TMP/$1.h" | tr -d '\r' | head -n 1; }
hit() { [ "$(hdr "$1" x-cache)" = HIT ]; }
purges() { varnishstat -n "$TMP/varnish" -1 -f MAIN.n_purges 2>/dev/null | awk '{ print $2 }'; }
# until_body NAME PATH TEXT: polls PATH through Varnish until its body holds TEXT (60 s at most)
until_body() {
  local end=$((SECONDS + 60 * ${WAIT_SCALE:-1}))
  while [ "$SECONDS" -lt "$end" ]; do
    get "$1" "$2" >/dev/null
    grep -q -- "$3" "$TMP/$1.b" && return 0
    sleep 0.25
  done
  return 1
}

# ---------------------------------------------------------------- checks

FILES=(/sitemap-1.xml.gz /sitemap-2.xml.gz /sitemap-3.xml.gz /sitemap_index.xml /robots.txt)
for path in "${FILES[@]}"; do
  s=$(get first "$path")
  get again "$path" >/dev/null
  check "$path through varnish: 200 (got $s), then a hit" eval 'eq "$s" 200 && hit again'
done
check "a file carries sitemapd's Surrogate-Key ($(hdr again surrogate-key))" \
  eval '[[ "$(hdr again surrogate-key)" == *"$HOST/robots.txt"* ]]'
get page "/sitemap-2.xml.gz" >/dev/null
check "a file carries sitemapd's s-maxage ($(hdr page cache-control))" \
  eval '[[ "$(hdr page cache-control)" == *s-maxage=* ]]'
s=$(get inm "/sitemap-2.xml.gz" -H "If-None-Match: $(hdr page etag)")
check "If-None-Match through varnish: 304 (got $s) with Cache-Control" \
  eval 'eq "$s" 304 && nonempty "$(hdr inm cache-control)"'
s=$("${CURL[@]}" -o /dev/null -w '%{http_code}' -X PURGE -H "Host: $HOST" "$VIA/nothing-cached" 2>/dev/null)
check "PURGE from loopback is taken (got $s)" eq "$s" 200
check "sitemapd purged nothing while nothing changed (varnish counted $(($(purges) - 1)))" eq "$(purges)" 1

before=$(purges)
started=$(date +%s.%N)
sqlite3 "$DB" "UPDATE sitemap_entries SET loc = '/p/250-new' WHERE id = 250"
if until_body third /sitemap-3.xml.gz /p/250-new; then
  pass "an UPDATE of file 3 reaches a client through varnish within the refresh period ($(
    awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f s", b - a }'))"
else
  fail "an UPDATE of file 3 reaches a client through varnish within the refresh period"
fi
check "sitemapd purged (varnish counted $(($(purges) - before)) purges)" [ "$(purges)" -gt "$before" ]
for path in /sitemap-1.xml.gz /sitemap-2.xml.gz /robots.txt; do
  get kept "$path" >/dev/null
  check "$path, unchanged, stays cached (X-Cache-Hits $(hdr kept x-cache-hits))" hit kept
done
until_body index /sitemap_index.xml "sitemap-3.xml.gz"
"${CURL[@]}" -o "$TMP/index_direct.b" -H "Host: $HOST" "http://127.0.0.1:$SP/sitemap_index.xml"
check "the index through varnish is the new one (file 3's lastmod)" cmp -s "$TMP/index.b" "$TMP/index_direct.b"

# An update that leaves the bytes as they were purges nothing: then a real change of file 1
# (purges leave in order), and file 2 is still a hit.
sqlite3 "$DB" "UPDATE sitemap_entries SET loc = loc WHERE id = 150"
sqlite3 "$DB" "UPDATE sitemap_entries SET loc = '/p/50-new' WHERE id = 50"
check "an UPDATE of file 1 reaches a client through varnish" until_body first /sitemap-1.xml.gz /p/50-new
get kept "/sitemap-2.xml.gz" >/dev/null
check "file 2, updated to the same bytes, stays cached" hit kept
metrics=$("${CURL[@]}" "http://127.0.0.1:$SP/metrics")
check "sitemapd counts its purges (sitemapd_cache_purges_total{outcome=\"purged\"})" \
  eval 'grep -q "^sitemapd_cache_purges_total{outcome=\"purged\"} [1-9]" <<<"$metrics"'
check "no purge failed" eval '! grep -q "^sitemapd_cache_purges_total{outcome=\"failed\"} [1-9]" <<<"$metrics"'

summary
[ "$failed" -eq 0 ]
