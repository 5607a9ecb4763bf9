#!/usr/bin/env bash
# Checks the shipped nginx configuration (deploy/nginx/) against a real nginx and a real sitemapd:
# `sitemapd demo` on a free loopback port, nginx on another with its own temporary prefix, a
# server block that includes deploy/nginx/sitemapd-locations.conf (and so sitemapd-proxy.conf)
# exactly as shipped, plus the things a PHP site typically has that must not get in the way
# (gzip on for XML and text, a regex rule for static .xml/.gz/.txt files, a PHP stand-in).
#
# Usage: scripts/nginx-check.sh
#   SITEMAPD_BIN=path  use this binary instead of building target/release/sitemapd
#   KEEP_TMP=1         keep the temporary directory (logs, bodies) for inspection
# Installs nginx with apt-get when it is missing (needs root or sudo). Only 127.0.0.1 is used.
# Prints a PASS/FAIL line per check, then "N passed, N failed"; exits 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

say() { printf 'nginx-check: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else return 1; fi; }

passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }
check() { # check DESCRIPTION COMMAND...: PASS when the command succeeds
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
summary() { printf '%d passed, %d failed\n' "$passed" "$failed"; }
abort() { # a step the checks cannot go on without
  fail "$*"
  summary
  exit 1
}

# ---------------------------------------------------------------- temp dir and cleanup

TMP=$(mktemp -d "${TMPDIR:-/tmp}/nginx-check.XXXXXX") || { echo "FAIL mktemp"; exit 1; }
# nginx workers drop to an unprivileged user when nginx runs as root: they must reach the
# temp paths below.
chmod 755 "$TMP"
SITEMAPD_PID=
NGINX_PID=

stop_pid() { # stop_pid PID: TERM, up to 10 s, then KILL; only the processes started here
  local pid=$1 i
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}
cleanup() {
  stop_pid "$NGINX_PID"
  stop_pid "$SITEMAPD_PID"
  if [ "${KEEP_TMP:-}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- tools

NGINX=$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; })
if [ -z "$NGINX" ]; then
  say "nginx missing: installing nginx-light (or nginx) with apt-get"
  if command -v apt-get >/dev/null; then
    as_root env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get update -qq >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive timeout 600 \
      apt-get install -y -qq --no-install-recommends nginx-light >/dev/null 2>&1 ||
      as_root env DEBIAN_FRONTEND=noninteractive timeout 600 \
        apt-get install -y -qq --no-install-recommends nginx >/dev/null 2>&1
  fi
  NGINX=$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; })
  [ -n "$NGINX" ] || abort "nginx is not installed and could not be installed (apt-get install nginx-light)"
fi
command -v curl >/dev/null || abort "curl is needed"
command -v gzip >/dev/null || abort "gzip is needed"
say "using $("$NGINX" -v 2>&1)"

if [ -n "${SITEMAPD_BIN:-}" ]; then
  BIN=$SITEMAPD_BIN
else
  say "cargo build --release"
  timeout 1800 cargo build --release --quiet || abort "cargo build --release"
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/sitemapd
fi
[ -x "$BIN" ] || abort "no sitemapd binary at $BIN"

# ---------------------------------------------------------------- ports

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # a loopback port nothing listens on, other than the ones given
  local p i
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % 40000))
    case " $* " in *" $p "*) continue ;; esac
    port_in_use "$p" || { echo "$p"; return 0; }
  done
  return 1
}
SP=$(free_port) || abort "no free port for sitemapd"
NP=$(free_port "$SP") || abort "no free port for nginx"
DIRECT=http://127.0.0.1:$SP
PROXY=http://127.0.0.1:$NP
say "sitemapd on $DIRECT, nginx on $PROXY, files in $TMP"

# ---------------------------------------------------------------- curl helpers

CURL=(curl -sS --noproxy '*' --max-time 30)
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

wait_http() { # wait_http URL SECONDS PID: until URL answers 200, the process dies, or time is up
  local url=$1 secs=$2 pid=$3 i
  for i in $(seq 1 $((secs * 4))); do
    kill -0 "$pid" 2>/dev/null || return 1
    [ "$("${CURL[@]}" --max-time 2 -o /dev/null -w '%{http_code}' "$url" 2>/dev/null)" = 200 ] && return 0
    sleep 0.25
  done
  return 1
}

# ---------------------------------------------------------------- sitemapd

mkdir -p "$TMP/sitemapd"
# A clean environment: a DATABASE_URL or SITEMAP_* from the caller's shell must not leak in.
(
  cd "$TMP/sitemapd" &&
    exec env -i PATH="$PATH" HOME="${HOME:-/tmp}" RUST_LOG="${RUST_LOG:-info}" \
      BIND_ADDR="127.0.0.1:$SP" SITEMAP_BASE_URL="$PROXY" "$BIN" demo
) >"$TMP/sitemapd.log" 2>&1 &
SITEMAPD_PID=$!
if wait_http "$DIRECT/readyz" 60 "$SITEMAPD_PID"; then
  pass "sitemapd demo ready on $DIRECT"
else
  tail -n 20 "$TMP/sitemapd.log" >&2
  abort "sitemapd demo not ready within 60 s (log above)"
fi

# ---------------------------------------------------------------- nginx

NG=$TMP/nginx
mkdir -p "$NG/conf/snippets" "$NG/logs" "$NG/tmp"
chmod -R 755 "$NG"
# The shipped files, as they are, at the paths the shipped include lines name.
ln -s "$ROOT/deploy/nginx/sitemapd-locations.conf" "$NG/conf/snippets/sitemapd-locations.conf"
ln -s "$ROOT/deploy/nginx/sitemapd-proxy.conf" "$NG/conf/snippets/sitemapd-proxy.conf"

common_main() {
  cat <<EOF
worker_processes 1;
pid $NG/nginx.pid;
error_log $NG/logs/error.log info;
events { worker_connections 256; }
EOF
}
common_http() {
  cat <<EOF
    access_log $NG/logs/access.log;
    client_body_temp_path $NG/tmp/body;
    proxy_temp_path $NG/tmp/proxy;
    fastcgi_temp_path $NG/tmp/fastcgi;
    uwsgi_temp_path $NG/tmp/uwsgi;
    scgi_temp_path $NG/tmp/scgi;
    default_type application/octet-stream;
EOF
}

{
  common_main
  echo "daemon off;"
  echo "http {"
  common_http
  cat <<EOF
    # What a PHP site often has server-wide; the sitemapd locations must override it.
    gzip on;
    gzip_proxied any;
    gzip_min_length 0;
    gzip_types text/plain application/xml application/gzip;
    expires 30d;

    upstream sitemapd {
        server 127.0.0.1:$SP;
        keepalive 4;
    }

    server {
        listen 127.0.0.1:$NP;
        server_name localhost;

        include snippets/sitemapd-locations.conf;

        # A static-file rule that must not take the sitemapd paths.
        location ~* \.(xml|gz|txt)\$ {
            return 418 "static-file rule\n";
        }
        # Stand-ins for the PHP application.
        location ~ \.php\$ {
            default_type text/plain;
            return 200 "php site\n";
        }
        location / {
            default_type text/plain;
            return 200 "php site\n";
        }
    }
EOF
  echo "}"
} >"$NG/conf/nginx.conf"

# The example site (deploy/nginx/sitemapd.conf) verbatim, syntax only: nginx -t binds nothing.
printf 'fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n' >"$NG/conf/snippets/fastcgi-php.conf"
{
  common_main
  echo "http {"
  common_http
  echo "    include $ROOT/deploy/nginx/sitemapd.conf;"
  echo "}"
} >"$NG/conf/example.conf"
if timeout 30 "$NGINX" -t -q -p "$NG/" -e "$NG/logs/error.log" -c conf/example.conf 2>"$TMP/example-t.err"; then
  pass "nginx -t accepts the example site deploy/nginx/sitemapd.conf"
else
  cat "$TMP/example-t.err" >&2
  fail "nginx -t accepts the example site deploy/nginx/sitemapd.conf"
fi

if timeout 30 "$NGINX" -t -q -p "$NG/" -e "$NG/logs/error.log" -c conf/nginx.conf 2>"$TMP/nginx-t.err"; then
  pass "nginx -t accepts the test server including sitemapd-locations.conf"
else
  cat "$TMP/nginx-t.err" >&2
  abort "nginx -t accepts the test server including sitemapd-locations.conf"
fi
"$NGINX" -p "$NG/" -e "$NG/logs/error.log" -c conf/nginx.conf >"$TMP/nginx.out" 2>&1 &
NGINX_PID=$!
if wait_http "$PROXY/" 15 "$NGINX_PID"; then
  pass "nginx up on $PROXY"
else
  cat "$TMP/nginx.out" "$NG/logs/error.log" >&2 2>/dev/null
  abort "nginx did not start within 15 s"
fi

# ---------------------------------------------------------------- checks

GZ=(-H 'Accept-Encoding: gzip')

# robots.txt
s=$(fetch robots_p GET "$PROXY/robots.txt" "${GZ[@]}")
fetch robots_d GET "$DIRECT/robots.txt" "${GZ[@]}" >/dev/null
check "robots.txt via nginx: 200 (got $s)" eq "$s" 200
check "robots.txt via nginx: Content-Type text/plain; charset=utf-8 (got '$(hdr robots_p content-type)')" \
  eq "$(hdr robots_p content-type)" "text/plain; charset=utf-8"
check "robots.txt via nginx announces Sitemap: $PROXY/sitemap_index.xml" \
  grep -qx "Sitemap: $PROXY/sitemap_index.xml" "$TMP/robots_p.b"
check "robots.txt via nginx: not gzipped by nginx despite gzip_types text/plain (Content-Encoding '$(hdr robots_p content-encoding)')" \
  eval '! has_hdr robots_p content-encoding && same_file robots_p robots_d'
check "robots.txt via nginx: same strong ETag as direct ($(hdr robots_p etag))" \
  eval 'strong_etag "$(hdr robots_p etag)" && eq "$(hdr robots_p etag)" "$(hdr robots_d etag)"'
check "robots.txt via nginx: Cache-Control from sitemapd, not nginx's expires (got '$(hdr robots_p cache-control)')" \
  eq "$(hdr robots_p cache-control)" "$(hdr robots_d cache-control)"

# sitemap index, identity
s=$(fetch index_p GET "$PROXY/sitemap_index.xml")
fetch index_d GET "$DIRECT/sitemap_index.xml" >/dev/null
ETAG=$(hdr index_p etag)
LASTMOD=$(hdr index_p last-modified)
check "sitemap_index.xml via nginx: 200 (got $s)" eq "$s" 200
check "sitemap_index.xml via nginx: same strong ETag as direct ($ETAG)" \
  eval 'strong_etag "$ETAG" && eq "$ETAG" "$(hdr index_d etag)"'
check "sitemap_index.xml via nginx: same bytes, Last-Modified, Vary, X-Robots-Tag as direct" \
  eval 'same_file index_p index_d && eq "$(rep_headers index_p)" "$(rep_headers index_d)"'
check "sitemap_index.xml via nginx: lists $PROXY/sitemap-1.xml.gz" \
  grep -q "<loc>$PROXY/sitemap-1.xml.gz</loc>" "$TMP/index_p.b"

# conditional requests
s=$(fetch inm_p GET "$PROXY/sitemap_index.xml" -H "If-None-Match: $ETAG")
check "If-None-Match via nginx: 304 (got $s)" eq "$s" 304
check "If-None-Match via nginx: 304 carries the ETag, no body" \
  eval 'eq "$(hdr inm_p etag)" "$ETAG" && [ ! -s "$TMP/inm_p.b" ]'
s=$(fetch inm_other GET "$PROXY/sitemap_index.xml" -H 'If-None-Match: "something-else"')
check "If-None-Match with another tag via nginx: 200 (got $s)" eq "$s" 200
s=$(fetch ims_p GET "$PROXY/sitemap_index.xml" -H "If-Modified-Since: $LASTMOD")
check "If-Modified-Since via nginx: 304 (got $s)" eq "$s" 304
s=$(fetch ims_old GET "$PROXY/sitemap_index.xml" -H 'If-Modified-Since: Thu, 01 Jan 1998 00:00:00 GMT')
check "If-Modified-Since before Last-Modified via nginx: 200 (got $s)" eq "$s" 200

# sitemap index, gzip negotiated by sitemapd
s=$(fetch indexgz_p GET "$PROXY/sitemap_index.xml" "${GZ[@]}")
fetch indexgz_d GET "$DIRECT/sitemap_index.xml" "${GZ[@]}" >/dev/null
check "sitemap_index.xml gzip via nginx: sitemapd's own encoding, same bytes and strong ETag as direct" \
  eval 'eq "$s" 200 && eq "$(hdr indexgz_p content-encoding)" gzip && same_file indexgz_p indexgz_d &&
        strong_etag "$(hdr indexgz_p etag)" && eq "$(hdr indexgz_p etag)" "$(hdr indexgz_d etag)"'
s=$(fetch inmgz_p GET "$PROXY/sitemap_index.xml" "${GZ[@]}" -H "If-None-Match: $(hdr indexgz_p etag)")
check "If-None-Match on the gzip representation via nginx: 304 (got $s)" eq "$s" 304

# the gzip file
s=$(fetch pagegz_p GET "$PROXY/sitemap-1.xml.gz" "${GZ[@]}")
fetch pagegz_d GET "$DIRECT/sitemap-1.xml.gz" "${GZ[@]}" >/dev/null
check "sitemap-1.xml.gz via nginx: 200, Content-Type application/gzip (got $s, '$(hdr pagegz_p content-type)')" \
  eval 'eq "$s" 200 && eq "$(hdr pagegz_p content-type)" application/gzip'
check "sitemap-1.xml.gz via nginx: no Content-Encoding added (got '$(hdr pagegz_p content-encoding)')" \
  eval '! has_hdr pagegz_p content-encoding'
check "sitemap-1.xml.gz via nginx: byte-identical to direct ($(wc -c <"$TMP/pagegz_p.b") bytes)" \
  eval '[ -s "$TMP/pagegz_p.b" ] && same_file pagegz_p pagegz_d'
gzip -dc <"$TMP/pagegz_p.b" >"$TMP/page1.xml" 2>/dev/null
check "sitemap-1.xml.gz via nginx: gunzips once to the urlset (not gzipped twice)" \
  eval 'head -c 300 "$TMP/page1.xml" | grep -q "<urlset"'
check "sitemap-1.xml.gz via nginx: same ETag as direct, not touched by expires" \
  eval 'eq "$(hdr pagegz_p etag)" "$(hdr pagegz_d etag)" && eq "$(hdr pagegz_p cache-control)" "$(hdr pagegz_d cache-control)" && ! has_hdr pagegz_p expires'
s=$(fetch pagegz_inm GET "$PROXY/sitemap-1.xml.gz" -H "If-None-Match: $(hdr pagegz_p etag)")
check "sitemap-1.xml.gz If-None-Match via nginx: 304 (got $s)" eq "$s" 304

# the negotiated page
s=$(fetch pagex_p GET "$PROXY/sitemap-1.xml" "${GZ[@]}")
fetch pagex_d GET "$DIRECT/sitemap-1.xml" "${GZ[@]}" >/dev/null
check "sitemap-1.xml with Accept-Encoding gzip via nginx: 200, Content-Encoding gzip (got $s, '$(hdr pagex_p content-encoding)')" \
  eval 'eq "$s" 200 && eq "$(hdr pagex_p content-encoding)" gzip'
check "sitemap-1.xml with Accept-Encoding gzip via nginx: same bytes as direct" \
  eval '[ -s "$TMP/pagex_p.b" ] && same_file pagex_p pagex_d'
check "sitemap-1.xml with Accept-Encoding gzip via nginx: Vary: Accept-Encoding, same ETag as direct" \
  eval 'eq "$(hdr pagex_p vary)" Accept-Encoding && eq "$(hdr pagex_p etag)" "$(hdr pagex_d etag)"'
s=$(fetch pagexi_p GET "$PROXY/sitemap-1.xml")
check "sitemap-1.xml without Accept-Encoding via nginx: plain XML, identical to the gunzipped .xml.gz" \
  eval 'eq "$s" 200 && ! has_hdr pagexi_p content-encoding && cmp -s "$TMP/pagexi_p.b" "$TMP/page1.xml"'

# HEAD = GET without the body
for p in robots.txt sitemap_index.xml sitemap.xml sitemap-1.xml.gz sitemap-1.xml; do
  for ae in identity gzip; do
    n=${p//[^a-z0-9]/_}_$ae
    fetch "head_$n" HEAD "$PROXY/$p" -H "Accept-Encoding: $ae" >/dev/null
    fetch "get_$n" GET "$PROXY/$p" -H "Accept-Encoding: $ae" >/dev/null
    if [ "$(rep_headers "head_$n")" = "$(rep_headers "get_$n")" ]; then
      pass "HEAD /$p (Accept-Encoding: $ae) via nginx: same headers as GET"
    else
      fail "HEAD /$p (Accept-Encoding: $ae) via nginx: same headers as GET"
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
check "/feeds/other.xml stays with the site's own rules (got $s)" eq "$s" 418
s=$(fetch bad_page GET "$PROXY/sitemap-0.xml")
check "/sitemap-0.xml reaches sitemapd and gets its 404 (got $s)" eq "$s" 404

summary
[ "$failed" = 0 ]
