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
FRONT=nginx
STATIC_STATUS=418
# shellcheck source=lib/front-check.sh
. "$ROOT/scripts/lib/front-check.sh"

# ---------------------------------------------------------------- tools

NGINX=$(find_server nginx nginx-light nginx) || abort "nginx is not installed and could not be installed (apt-get install nginx-light)"
say "using $("$NGINX" -v 2>&1)"

# ---------------------------------------------------------------- nginx

NG=$TMP/nginx
mkdir -p "$NG/conf/snippets" "$NG/logs" "$NG/tmp"
chmod -R 755 "$NG"
# The shipped files, as they are, at the paths the shipped include lines name.
ln -s "$ROOT/deploy/nginx/sitemapd-locations.conf" "$NG/conf/snippets/sitemapd-locations.conf"
ln -s "$ROOT/deploy/nginx/sitemapd-proxy.conf" "$NG/conf/snippets/sitemapd-proxy.conf"
ln -s "$ROOT/deploy/nginx/sitemapd-staging.conf" "$NG/conf/snippets/sitemapd-staging.conf"

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

# site_server PORT [INCLUDE]: the test site's server block, with an extra include (staging).
site_server() {
  cat <<EOF
    server {
        listen 127.0.0.1:$1;
        server_name localhost;
${2:+        include $2;}

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

EOF
  site_server "$FP"
  site_server "$SG" snippets/sitemapd-staging.conf
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
FRONT_LOG=$NG/logs/error.log start_front "$NGINX" -p "$NG/" -e "$NG/logs/error.log" -c conf/nginx.conf

# ---------------------------------------------------------------- checks

front_checks
staging_checks
s=$(fetch bad_page GET "$PROXY/sitemap-0.xml")
check "/sitemap-0.xml reaches sitemapd and gets its 404 (got $s)" eq "$s" 404
summary
[ "$failed" = 0 ]
