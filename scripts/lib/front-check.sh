# scripts/lib/front-check.sh: what the checks of a web server in front of sitemapd share
# (scripts/nginx-check.sh, scripts/apache-check.sh, scripts/caddy-check.sh), on top of
# scripts/lib/checks.sh: a temporary directory and the processes started here (stopped by PID
# on exit), `sitemapd demo` behind the server, curl helpers, and the checks every front must pass.
# The caller sets FRONT (its name) and ROOT (the checkout), sources this file, starts its server
# on $PROXY with start_front, then runs front_checks and summary. Its test site answers
# other .xml/.gz/.txt paths with STATIC_STATUS (a static-file rule sitemapd must not disturb).
#
# The other runs (more_runs): the caller defines `front_config MODE PORT`, which writes the
# server's configuration for MODE with the shipped files' upstream on 127.0.0.1:PORT (mount:
# SITEMAP_BASE_URL=https://example.com/catalog/; hosts: two hosts of a sites file, each in its
# own server block; echo: a header-echo upstream), and FRONT_CMD, the command that runs it.
# Every wait polls until ready within a generous deadline (WAIT_SCALE multiplies them all).

# shellcheck source=checks.sh
. "$ROOT/scripts/lib/checks.sh"

# ---------------------------------------------------------------- temp dir and cleanup

TMP=$(mktemp -d "${TMPDIR:-/tmp}/$FRONT-check.XXXXXX") || { echo "FAIL mktemp"; exit 1; }
# A server's workers drop to an unprivileged user when it runs as root: they must reach the
# temp paths below.
chmod 755 "$TMP"
SITEMAPD_PID=
FRONT_PID=
MORE_PIDS=()

cleanup() {
  local pid
  stop_pid "$FRONT_PID"
  stop_pid "$SITEMAPD_PID"
  for pid in "${MORE_PIDS[@]}"; do stop_pid "$pid"; done
  if [ "${KEEP_TMP:-}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM


# ---------------------------------------------------------------- tools

# find_server NAME PACKAGE...: the path of the server binary NAME (also in /usr/sbin), installing
# the first of the Debian PACKAGEs that installs with apt-get when it is missing (without starting
# its service); fails when there is none.
find_server() {
  local name=$1 package
  shift
  find_bin "$name" && return 0
  for package in "$@"; do
    apt_install "$package" && break
  done
  find_bin "$name"
}

need curl gzip
sitemapd_bin always

# ---------------------------------------------------------------- ports

SP=$(free_port) || abort "no free port for sitemapd"
FP=$(free_port "$SP") || abort "no free port for $FRONT"
SG=$(free_port "$SP" "$FP") || abort "no free port for the staging site"
DIRECT=http://127.0.0.1:$SP
PROXY=http://127.0.0.1:$FP
# A second site of the same server: a staging copy, with the shipped staging snippet.
STAGING=http://127.0.0.1:$SG
say "sitemapd on $DIRECT, $FRONT on $PROXY, files in $TMP"

# ---------------------------------------------------------------- curl helpers

# fetch NAME METHOD URL [curl args...]: headers to $TMP/NAME.h, body to $TMP/NAME.b; prints status
fetch() {
  local name=$1 method=$2 url=$3; shift 3
  local how=(-X "$method")
  [ "$method" = HEAD ] && how=(--head)
  "${CURL[@]}" "${how[@]}" -D "$TMP/$name.h" -o "$TMP/$name.b" -w '%{http_code}' "$@" "$url" 2>>"$TMP/curl.err" ||
    echo "000"
}
# hdr NAME HEADER: value of the first HEADER in $TMP/NAME.h (empty if absent)
hdr() {
  awk -v want="$(printf '%s' "$2" | tr 'A-Z' 'a-z')" '
    BEGIN { FS = ":" }
    { sub(/\r$/, "") }
    /^HTTP\// { next }
    { name = tolower($1); if (name == want) { v = substr($0, length($1) + 2); sub(/^[ \t]+/, "", v); print v; exit } }
  ' "$TMP/$1.h" 2>/dev/null
}
has_hdr() { grep -qi "^$2:" "$TMP/$1.h" 2>/dev/null; }
# The headers that describe a representation, normalised for comparing two responses.
# Date, Server, Connection, Keep-Alive and the framing (Content-Length, Transfer-Encoding) are
# left out: they belong to the hop, not to the file.
rep_headers() {
  awk '
    { sub(/\r$/, "") }
    /^HTTP\// { split($0, s, " "); print "status: " s[2]; next }
    /^$/ { next }
    { i = index($0, ":"); name = tolower(substr($0, 1, i - 1)); v = substr($0, i + 1); sub(/^[ \t]+/, "", v)
      if (name ~ /^(date|server|connection|keep-alive|content-length|transfer-encoding)$/) next
      print name ": " v }
  ' "$TMP/$1.h" | sort
}
same_file() { cmp -s "$TMP/$1.b" "$TMP/$2.b"; }
eq() { [ "$1" = "$2" ]; }
nonempty() { [ -n "$1" ]; }
strong_etag() { [[ "$1" == \"*\" ]]; }

# ---------------------------------------------------------------- sitemapd

mkdir -p "$TMP/sitemapd"
# A clean environment: a DATABASE_URL or SITEMAP_* from the caller's shell must not leak in.
(
  cd "$TMP/sitemapd" &&
    exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" RUST_LOG="${RUST_LOG:-info}" \
      BIND_ADDR="127.0.0.1:$SP" SITEMAP_BASE_URL="$PROXY" "$BIN" demo
) >"$TMP/sitemapd.log" 2>&1 &
SITEMAPD_PID=$!
# The demo writes 120,000 entries before it is ready: on a loaded machine that takes a while.
if wait_http "$DIRECT/readyz" 180 "$SITEMAPD_PID"; then
  pass "sitemapd demo ready on $DIRECT"
else
  tail -n 20 "$TMP/sitemapd.log" >&2
  abort "sitemapd demo not ready within 180 s (log above)"
fi

# start_front COMMAND...: runs the server in the background (its output in $TMP/$FRONT.out),
# after stopping the one started before, and waits until $PROXY/ answers; aborts with that
# output, and the log FRONT_LOG names, otherwise.
start_front() {
  stop_pid "$FRONT_PID"
  "$@" >"$TMP/$FRONT.out" 2>&1 &
  FRONT_PID=$!
  if wait_http "$PROXY/" 60 "$FRONT_PID"; then
    pass "$FRONT up on $PROXY"
  else
    tail -n 20 "$TMP/$FRONT.out" ${FRONT_LOG:+"$FRONT_LOG"} >&2 2>/dev/null
    abort "$FRONT did not start within 60 s"
  fi
}

# ---------------------------------------------------------------- checks

front_checks() {

GZ=(-H 'Accept-Encoding: gzip')

# robots.txt
s=$(fetch robots_p GET "$PROXY/robots.txt" "${GZ[@]}")
fetch robots_d GET "$DIRECT/robots.txt" "${GZ[@]}" >/dev/null
check "robots.txt via $FRONT: 200 (got $s)" eq "$s" 200
check "robots.txt via $FRONT: Content-Type text/plain; charset=utf-8 (got '$(hdr robots_p content-type)')" \
  eq "$(hdr robots_p content-type)" "text/plain; charset=utf-8"
# sitemapd compresses robots.txt itself for a client that accepts it: the front passes its
# coding and bytes through, and a client that accepts none gets the text.
fetch robots_pi GET "$PROXY/robots.txt" >/dev/null
check "robots.txt via $FRONT announces Sitemap: $PROXY/sitemap_index.xml" \
  grep -qx "Sitemap: $PROXY/sitemap_index.xml" "$TMP/robots_pi.b"
check "robots.txt via $FRONT: not re-encoded by $FRONT (Content-Encoding '$(hdr robots_p content-encoding)', as direct)" \
  eval 'eq "$(hdr robots_p content-encoding)" "$(hdr robots_d content-encoding)" && same_file robots_p robots_d'
check "robots.txt via $FRONT: same strong ETag as direct ($(hdr robots_p etag))" \
  eval 'strong_etag "$(hdr robots_p etag)" && eq "$(hdr robots_p etag)" "$(hdr robots_d etag)"'
check "robots.txt via $FRONT: Cache-Control from sitemapd, not $FRONT's expiry rules (got '$(hdr robots_p cache-control)')" \
  eq "$(hdr robots_p cache-control)" "$(hdr robots_d cache-control)"

# sitemap index, identity
s=$(fetch index_p GET "$PROXY/sitemap_index.xml")
fetch index_d GET "$DIRECT/sitemap_index.xml" >/dev/null
ETAG=$(hdr index_p etag)
LASTMOD=$(hdr index_p last-modified)
check "sitemap_index.xml via $FRONT: 200 (got $s)" eq "$s" 200
check "sitemap_index.xml via $FRONT: same strong ETag as direct ($ETAG)" \
  eval 'strong_etag "$ETAG" && eq "$ETAG" "$(hdr index_d etag)"'
check "sitemap_index.xml via $FRONT: same bytes, Last-Modified, Vary, X-Robots-Tag as direct" \
  eval 'same_file index_p index_d && eq "$(rep_headers index_p)" "$(rep_headers index_d)"'
check "sitemap_index.xml via $FRONT: lists $PROXY/sitemap-1.xml.gz" \
  grep -q "<loc>$PROXY/sitemap-1.xml.gz</loc>" "$TMP/index_p.b"

# conditional requests
s=$(fetch inm_p GET "$PROXY/sitemap_index.xml" -H "If-None-Match: $ETAG")
check "If-None-Match via $FRONT: 304 (got $s)" eq "$s" 304
check "If-None-Match via $FRONT: 304 carries the ETag, no body" \
  eval 'eq "$(hdr inm_p etag)" "$ETAG" && [ ! -s "$TMP/inm_p.b" ]'
s=$(fetch inm_other GET "$PROXY/sitemap_index.xml" -H 'If-None-Match: "something-else"')
check "If-None-Match with another tag via $FRONT: 200 (got $s)" eq "$s" 200
s=$(fetch ims_p GET "$PROXY/sitemap_index.xml" -H "If-Modified-Since: $LASTMOD")
check "If-Modified-Since via $FRONT: 304 (got $s)" eq "$s" 304
s=$(fetch ims_old GET "$PROXY/sitemap_index.xml" -H 'If-Modified-Since: Thu, 01 Jan 1998 00:00:00 GMT')
check "If-Modified-Since before Last-Modified via $FRONT: 200 (got $s)" eq "$s" 200

# sitemap index, gzip negotiated by sitemapd
s=$(fetch indexgz_p GET "$PROXY/sitemap_index.xml" "${GZ[@]}")
fetch indexgz_d GET "$DIRECT/sitemap_index.xml" "${GZ[@]}" >/dev/null
check "sitemap_index.xml gzip via $FRONT: sitemapd's own encoding, same bytes and strong ETag as direct" \
  eval 'eq "$s" 200 && eq "$(hdr indexgz_p content-encoding)" gzip && same_file indexgz_p indexgz_d &&
        strong_etag "$(hdr indexgz_p etag)" && eq "$(hdr indexgz_p etag)" "$(hdr indexgz_d etag)"'
s=$(fetch inmgz_p GET "$PROXY/sitemap_index.xml" "${GZ[@]}" -H "If-None-Match: $(hdr indexgz_p etag)")
check "If-None-Match on the gzip representation via $FRONT: 304 (got $s)" eq "$s" 304

# the gzip file
s=$(fetch pagegz_p GET "$PROXY/sitemap-1.xml.gz" "${GZ[@]}")
fetch pagegz_d GET "$DIRECT/sitemap-1.xml.gz" "${GZ[@]}" >/dev/null
check "sitemap-1.xml.gz via $FRONT: 200, Content-Type application/gzip (got $s, '$(hdr pagegz_p content-type)')" \
  eval 'eq "$s" 200 && eq "$(hdr pagegz_p content-type)" application/gzip'
check "sitemap-1.xml.gz via $FRONT: no Content-Encoding added (got '$(hdr pagegz_p content-encoding)')" \
  eval '! has_hdr pagegz_p content-encoding'
check "sitemap-1.xml.gz via $FRONT: byte-identical to direct ($(wc -c <"$TMP/pagegz_p.b") bytes)" \
  eval '[ -s "$TMP/pagegz_p.b" ] && same_file pagegz_p pagegz_d'
gzip -dc <"$TMP/pagegz_p.b" >"$TMP/page1.xml" 2>/dev/null
check "sitemap-1.xml.gz via $FRONT: gunzips once to the urlset (not gzipped twice)" \
  eval 'head -c 300 "$TMP/page1.xml" | grep -q "<urlset"'
check "sitemap-1.xml.gz via $FRONT: same ETag as direct, not touched by expiry rules" \
  eval 'eq "$(hdr pagegz_p etag)" "$(hdr pagegz_d etag)" && eq "$(hdr pagegz_p cache-control)" "$(hdr pagegz_d cache-control)" && ! has_hdr pagegz_p expires'
s=$(fetch pagegz_inm GET "$PROXY/sitemap-1.xml.gz" -H "If-None-Match: $(hdr pagegz_p etag)")
check "sitemap-1.xml.gz If-None-Match via $FRONT: 304 (got $s)" eq "$s" 304

# the negotiated page
s=$(fetch pagex_p GET "$PROXY/sitemap-1.xml" "${GZ[@]}")
fetch pagex_d GET "$DIRECT/sitemap-1.xml" "${GZ[@]}" >/dev/null
check "sitemap-1.xml with Accept-Encoding gzip via $FRONT: 200, Content-Encoding gzip (got $s, '$(hdr pagex_p content-encoding)')" \
  eval 'eq "$s" 200 && eq "$(hdr pagex_p content-encoding)" gzip'
check "sitemap-1.xml with Accept-Encoding gzip via $FRONT: same bytes as direct" \
  eval '[ -s "$TMP/pagex_p.b" ] && same_file pagex_p pagex_d'
check "sitemap-1.xml with Accept-Encoding gzip via $FRONT: Vary: Accept-Encoding, same ETag as direct" \
  eval 'eq "$(hdr pagex_p vary)" Accept-Encoding && eq "$(hdr pagex_p etag)" "$(hdr pagex_d etag)"'
s=$(fetch pagexi_p GET "$PROXY/sitemap-1.xml")
check "sitemap-1.xml without Accept-Encoding via $FRONT: plain XML, identical to the gunzipped .xml.gz" \
  eval 'eq "$s" 200 && ! has_hdr pagexi_p content-encoding && cmp -s "$TMP/pagexi_p.b" "$TMP/page1.xml"'

# HEAD = GET without the body
for p in robots.txt sitemap_index.xml sitemap.xml sitemap-1.xml.gz sitemap-1.xml; do
  for ae in identity gzip; do
    n=${p//[^a-z0-9]/_}_$ae
    fetch "head_$n" HEAD "$PROXY/$p" -H "Accept-Encoding: $ae" >/dev/null
    fetch "get_$n" GET "$PROXY/$p" -H "Accept-Encoding: $ae" >/dev/null
    if [ "$(rep_headers "head_$n")" = "$(rep_headers "get_$n")" ]; then
      pass "HEAD /$p (Accept-Encoding: $ae) via $FRONT: same headers as GET"
    else
      fail "HEAD /$p (Accept-Encoding: $ae) via $FRONT: same headers as GET"
      diff <(rep_headers "head_$n") <(rep_headers "get_$n") | sed 's/^/    /'
    fi
    hl=$(hdr "head_$n" content-length)
    gl=$(hdr "get_$n" content-length)
    if [ -n "$hl" ] && [ -n "$gl" ] && [ "$hl" != "$gl" ]; then
      fail "HEAD /$p (Accept-Encoding: $ae): Content-Length $hl, GET's is $gl"
    fi
  done
done

# everything else stays with the site
s=$(fetch php_p GET "$PROXY/index.php")
check "/index.php goes to the PHP site (got $s '$(head -c 40 "$TMP/php_p.b")')" \
  eval 'eq "$s" 200 && eq "$(cat "$TMP/php_p.b")" "php site"'
s=$(fetch root_p GET "$PROXY/")
check "/ goes to the PHP site (got $s)" eval 'eq "$s" 200 && eq "$(cat "$TMP/root_p.b")" "php site"'
s=$(fetch sitemap_page GET "$PROXY/sitemap")
check "/sitemap (a page of the site) stays with the PHP site (got $s)" \
  eval 'eq "$s" 200 && eq "$(cat "$TMP/sitemap_page.b")" "php site"'
s=$(fetch other_xml GET "$PROXY/feeds/other.xml")
check "/feeds/other.xml stays with the site's own rules (got $s)" eq "$s" "$STATIC_STATUS"



}

# staging_checks: every response of the staging site, whoever answers it (the PHP application,
# a static-file rule, sitemapd), tells search engines to stay out.
staging_checks() {
  local path s tag
  for path in / /index.php /robots.txt /sitemap_index.xml /sitemap-1.xml.gz /feeds/other.xml; do
    s=$(fetch staging GET "$STAGING$path")
    tag=$(grep -i '^x-robots-tag:' "$TMP/staging.h" | tr -d '\r' | cut -d: -f2- | tr '\n' ',')
    check "staging $path ($s) says noindex, nofollow (X-Robots-Tag:$tag)" \
      bash -c '[[ "$1" == *noindex* && "$1" == *nofollow* ]]' _ "$tag"
  done
}

# ---------------------------------------------------------------- more runs: mount, hosts, echo

# start_service NAME PORT VAR=VALUE... -- ARGS...: sitemapd ARGS in $TMP/NAME with a clean
# environment plus the VARs, listening on 127.0.0.1:PORT; waits for /readyz (its log in
# $TMP/NAME.log). Fails (after a FAIL line) when it is not ready within the deadline.
start_service() {
  local name=$1 port=$2 pid vars=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  mkdir -p "$TMP/$name"
  (
    cd "$TMP/$name" &&
      exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" RUST_LOG="${RUST_LOG:-info}" \
        BIND_ADDR="127.0.0.1:$port" "${vars[@]}" "$BIN" "$@"
  ) >"$TMP/$name.log" 2>&1 &
  pid=$!
  MORE_PIDS+=("$pid")
  if wait_http "http://127.0.0.1:$port/readyz" 180 "$pid"; then
    pass "sitemapd ($name) ready on 127.0.0.1:$port"
    return 0
  fi
  tail -n 20 "$TMP/$name.log" >&2
  fail "sitemapd ($name) not ready within 180 s (log above)"
  return 1
}

# start_echo PORT: a header-echo upstream on 127.0.0.1:PORT (python3): every GET or HEAD is
# answered 200 with the request's header lines as they arrived, one per line.
start_echo() {
  local try
  for try in 1 2 3; do
    start_echo_once "$1" && return 0
    say "header-echo upstream on 127.0.0.1:$1 did not start (try $try): $(tail -1 "$TMP/echo.log" 2>/dev/null)"
    sleep 1
  done
  fail "header-echo upstream not ready on 127.0.0.1:$1"
  return 1
}

start_echo_once() {
  local pid
  python3 - "$1" >"$TMP/echo.log" 2>&1 <<'PY' &
import http.server, sys
class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = "".join(f"{k}: {v}\n" for k, v in self.headers.items()).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    do_HEAD = do_GET
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
PY
  pid=$!
  MORE_PIDS+=("$pid")
  wait_http "http://127.0.0.1:$1/" 60 "$pid"
}

# run_front MODE PORT: the server configured for MODE (front_config) with its upstream on PORT.
run_front() {
  front_config "$1" "$2" || abort "$FRONT: configuration for the $1 run"
  start_front "${FRONT_CMD[@]}"
}

MOUNT_BASE=https://example.com/catalog

# mount_checks: sitemapd under /catalog/ (SITEMAP_BASE_URL=$MOUNT_BASE/) behind the front with
# the shipped mount file; DIRECT is that sitemapd.
mount_checks() {
  local direct=$1 s
  s=$(fetch m_robots GET "$PROXY/robots.txt")
  check "mount: /robots.txt via $FRONT stays at the root: 200 (got $s)" eq "$s" 200
  check "mount: robots.txt announces Sitemap: $MOUNT_BASE/sitemap_index.xml" \
    grep -qx "Sitemap: $MOUNT_BASE/sitemap_index.xml" "$TMP/m_robots.b"
  s=$(fetch m_index GET "$PROXY/catalog/sitemap_index.xml")
  fetch m_index_d GET "$direct/catalog/sitemap_index.xml" >/dev/null
  check "mount: /catalog/sitemap_index.xml via $FRONT: 200 (got $s)" eq "$s" 200
  check "mount: /catalog/sitemap_index.xml: same bytes and strong ETag as direct ($(hdr m_index etag))" \
    eval 'same_file m_index m_index_d && strong_etag "$(hdr m_index etag)" && eq "$(rep_headers m_index)" "$(rep_headers m_index_d)"'
  check "mount: the index lists $MOUNT_BASE/sitemap-1.xml.gz" \
    grep -q "<loc>$MOUNT_BASE/sitemap-1.xml.gz</loc>" "$TMP/m_index.b"
  s=$(fetch m_inm GET "$PROXY/catalog/sitemap_index.xml" -H "If-None-Match: $(hdr m_index etag)")
  check "mount: If-None-Match on /catalog/sitemap_index.xml via $FRONT: 304 (got $s)" eq "$s" 304
  s=$(fetch m_gz GET "$PROXY/catalog/sitemap-1.xml.gz" -H 'Accept-Encoding: gzip')
  fetch m_gz_d GET "$direct/catalog/sitemap-1.xml.gz" -H 'Accept-Encoding: gzip' >/dev/null
  check "mount: /catalog/sitemap-1.xml.gz via $FRONT: 200 application/gzip, no Content-Encoding, byte-identical to direct (got $s)" \
    eval 'eq "$s" 200 && eq "$(hdr m_gz content-type)" application/gzip && ! has_hdr m_gz content-encoding &&
          [ -s "$TMP/m_gz.b" ] && same_file m_gz m_gz_d'
  check "mount: /catalog/sitemap-1.xml.gz gunzips to the entries, under $MOUNT_BASE/" \
    eval 'gzip -dc <"$TMP/m_gz.b" 2>/dev/null | grep -q "<loc>$MOUNT_BASE/page-1</loc>"'
  s=$(fetch m_x GET "$PROXY/catalog/sitemap-1.xml" -H 'Accept-Encoding: gzip')
  check "mount: /catalog/sitemap-1.xml via $FRONT: sitemapd's gzip, Vary: Accept-Encoding (got $s)" \
    eval 'eq "$s" 200 && eq "$(hdr m_x content-encoding)" gzip && eq "$(hdr m_x vary)" Accept-Encoding'
  s=$(fetch m_root_index GET "$PROXY/sitemap_index.xml")
  check "mount: /sitemap_index.xml (the root) stays with the site's rules (got $s)" eq "$s" "$STATIC_STATUS"
  s=$(fetch m_page GET "$PROXY/catalog/sitemap")
  check "mount: /catalog/sitemap (a page) stays with the PHP site (got $s)" \
    eval 'eq "$s" 200 && eq "$(cat "$TMP/m_page.b")" "php site"'
  s=$(fetch m_other GET "$PROXY/catalog/other.xml")
  check "mount: /catalog/other.xml stays with the site's rules (got $s)" eq "$s" "$STATIC_STATUS"
}

HOST_A=a.example.com
HOST_B=b.example.org

# pages_db FILE TABLE=PREFIX...: a SQLite database with a table per TABLE, a source of the five
# columns holding 30 entries whose paths start with PREFIX (PREFIXpage-1 … PREFIXpage-30).
pages_db() {
  python3 - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for spec in sys.argv[2:]:
    table, prefix = spec.split("=", 1)
    db.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, loc TEXT NOT NULL UNIQUE, "
               "lastmod TEXT, changefreq TEXT, priority REAL)")
    db.executemany(f"INSERT INTO {table} (id, loc) VALUES (?, ?)",
                   [(i, f"{prefix}page-{i}") for i in range(1, 31)])
db.commit()
PY
}

# hosts_checks DIRECT: two hosts of a sites file behind the front, each in its own server block
# with the shipped file; DIRECT is that sitemapd.
hosts_checks() {
  local direct=$1 h other s
  for h in "$HOST_A" "$HOST_B"; do
    if [ "$h" = "$HOST_A" ]; then other=$HOST_B; else other=$HOST_A; fi
    s=$(fetch "h_robots_$h" GET "$PROXY/robots.txt" -H "Host: $h")
    check "hosts: $h/robots.txt via $FRONT: 200, announces https://$h/sitemap_index.xml (got $s)" \
      eval 'eq "$s" 200 && grep -qx "Sitemap: https://$h/sitemap_index.xml" "$TMP/h_robots_$h.b"'
    s=$(fetch "h_index_$h" GET "$PROXY/sitemap_index.xml" -H "Host: $h")
    fetch "h_index_d_$h" GET "$direct/sitemap_index.xml" -H "Host: $h" >/dev/null
    check "hosts: $h/sitemap_index.xml via $FRONT: 200, its own, same bytes and ETag as direct (got $s)" \
      eval 'eq "$s" 200 && grep -q "<loc>https://$h/sitemap" "$TMP/h_index_$h.b" &&
            ! grep -q "$other" "$TMP/h_index_$h.b" && same_file "h_index_$h" "h_index_d_$h" &&
            eq "$(rep_headers "h_index_$h")" "$(rep_headers "h_index_d_$h")"'
    s=$(fetch "h_file_$h" GET "$PROXY/sitemap.xml" -H "Host: $h")
    check "hosts: $h/sitemap.xml via $FRONT lists $h's entries only (got $s)" \
      eval 'eq "$s" 200 && grep -q "<loc>https://$h/${h:0:1}-page-1</loc>" "$TMP/h_file_$h.b" &&
            ! grep -q "$other" "$TMP/h_file_$h.b"'
    s=$(fetch "h_inm_$h" GET "$PROXY/sitemap.xml" -H "Host: $h" -H "If-None-Match: $(hdr "h_file_$h" etag)")
    check "hosts: $h If-None-Match via $FRONT: 304 (got $s)" eq "$s" 304
  done
  check "hosts: the two hosts' sitemap.xml differ" eval '! same_file "h_file_$HOST_A" "h_file_$HOST_B"'
  fetch h_unknown GET "$PROXY/robots.txt" -H "Host: unknown.example.net" >/dev/null
  check "hosts: an unknown host gets neither site's robots.txt" \
    eval '! grep -q "example\.\(com\|org\)/sitemap" "$TMP/h_unknown.b"'
}

# client_address_checks: the shipped files in front of the header-echo upstream. A client forges
# Forwarded, X-Forwarded-For and X-Real-IP; the upstream must see no Forwarded, an
# X-Forwarded-For whose last element is the real client (127.0.0.1), and X-Real-IP 127.0.0.1.
client_address_checks() {
  local path s xff last
  for path in /robots.txt /sitemap-1.xml.gz; do
    s=$(fetch echo GET "$PROXY$path" -H 'Forwarded: for=1.2.3.4' -H 'X-Forwarded-For: 1.2.3.4' \
      -H 'X-Real-IP: 1.2.3.4')
    xff=$(awk 'BEGIN { IGNORECASE = 1 } tolower($0) ~ /^x-forwarded-for:/ { sub(/^[^:]*:[ \t]*/, ""); v = v (v == "" ? "" : ", ") $0 } END { print v }' "$TMP/echo.b")
    last=$(printf '%s' "$xff" | awk -F', *' '{ print $NF }')
    check "client address ($path): the shipped file reaches the upstream (got $s)" eq "$s" 200
    check "client address ($path): a client's Forwarded does not reach the upstream" \
      eval '! grep -qi "^forwarded:" "$TMP/echo.b"'
    check "client address ($path): X-Forwarded-For ends with the real client 127.0.0.1 (got '$xff')" \
      eq "$last" 127.0.0.1
    check "client address ($path): X-Real-IP is the real client (got '$(grep -i '^x-real-ip:' "$TMP/echo.b" | tr -d '\r' | tr '\n' ' ')')" \
      eval '[ "$(grep -ci "^x-real-ip:" "$TMP/echo.b")" = 1 ] && grep -qix "x-real-ip: 127.0.0.1" "$TMP/echo.b"'
  done
}

# more_runs: the mount-path run, the two-hosts run and the client-address run, each with the
# server restarted on $PROXY with front_config's configuration for it.
more_runs() {
  local mp hp ep
  mp=$(free_port "$SP" "$FP" "$SG") || abort "no free port for the mount run"
  # Not `sitemapd demo`: its entries are paths from the root (/en/…), out of scope under a mount.
  mkdir -p "$TMP/mount"
  pages_db "$TMP/mount/catalog.db" catalog_pages=/catalog/ || abort "the mount run's database"
  if start_service mount "$mp" SITEMAP_BASE_URL="$MOUNT_BASE/" DATABASE_URL="sqlite://$TMP/mount/catalog.db" \
    SITEMAP_SOURCE=catalog_pages -- serve; then
    run_front mount "$mp"
    mount_checks "http://127.0.0.1:$mp"
  fi

  hp=$(free_port "$SP" "$FP" "$SG" "$mp") || abort "no free port for the hosts run"
  mkdir -p "$TMP/hosts"
  pages_db "$TMP/hosts/sites.db" a_pages=/a- b_pages=/b- || abort "the hosts run's database"
  cat >"$TMP/hosts/sites.toml" <<TOML
[[site]]
base_url = "https://$HOST_A"
source = "a_pages"

[[site]]
base_url = "https://$HOST_B"
source = "b_pages"
TOML
  if start_service hosts "$hp" DATABASE_URL="sqlite://$TMP/hosts/sites.db" \
    SITEMAP_SITES_FILE="$TMP/hosts/sites.toml" -- serve; then
    run_front hosts "$hp"
    hosts_checks "http://127.0.0.1:$hp"
  fi

  ep=$(free_port "$SP" "$FP" "$SG" "$mp" "$hp") || abort "no free port for the echo upstream"
  if start_echo "$ep"; then
    run_front echo "$ep"
    client_address_checks
  fi
}
