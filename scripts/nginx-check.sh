#!/usr/bin/env bash
# Checks the shipped nginx configuration (deploy/nginx/) against a real nginx and a real sitemapd:
# `sitemapd demo` on a free loopback port, nginx on another with its own temporary prefix, a
# server block that includes deploy/nginx/sitemapd-locations.conf (and so sitemapd-proxy.conf)
# exactly as shipped, plus the things a PHP site typically has that must not get in the way
# (gzip on for XML and text, a regex rule for static .xml/.gz/.txt files, a PHP stand-in).
# Then the same nginx restarted for more runs: sitemapd under a mount path with the shipped
# sitemapd-mount.conf, two hosts of a sites file (a server block each), and the client-address
# headers the shipped proxy settings send (against a header-echo upstream).
#
# Usage: scripts/nginx-check.sh
#   SITEMAPD_BIN=path  use this binary instead of building target/release/sitemapd
#   KEEP_TMP=1         keep the temporary directory (logs, bodies) for inspection
#   WAIT_SCALE=N       multiply every readiness deadline (180 s sitemapd, 60 s the server)
# Installs nginx with apt-get when it is missing (needs root or sudo). Only 127.0.0.1 is used.
# Prints a PASS/FAIL line per check, then "N passed, N failed"; exits 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FRONT=nginx
STATIC_STATUS=418
# shellcheck source=lib/front-check.sh
. "$ROOT/scripts/lib/front-check.sh"
# shellcheck source=lib/nginx.sh
. "$ROOT/scripts/lib/nginx.sh"

# ---------------------------------------------------------------- tools

NGINX=$(find_server nginx nginx-light nginx) || abort "nginx is not installed and could not be installed (apt-get install nginx-light)"
say "using $("$NGINX" -v 2>&1)"

# ---------------------------------------------------------------- nginx

nginx_prefix "$TMP/nginx" sitemapd-locations.conf sitemapd-proxy.conf sitemapd-staging.conf sitemapd-mount.conf

# site_server PORT LOCATIONS [SERVER_NAME [INCLUDE]]: the test site's server block, including the
# shipped LOCATIONS file, with an extra include (staging).
site_server() {
  cat <<EOF
    server {
        listen 127.0.0.1:$1;
        server_name ${3:-localhost};
${4:+        include $4;}

        include snippets/$2;

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

# front_config MODE PORT: conf/nginx.conf for MODE (root: the site and its staging copy; mount:
# sitemapd-mount.conf; hosts: a server block per host; echo: the root site), upstream on PORT.
front_config() {
  {
    nginx_main
    echo "daemon off;"
    echo "http {"
    nginx_http
    cat <<EOF
    # What a PHP site often has server-wide; the sitemapd locations must override it.
    gzip on;
    gzip_proxied any;
    gzip_min_length 0;
    gzip_types text/plain application/xml application/gzip;
    expires 30d;

EOF
    nginx_upstream "$2"
    echo
    case $1 in
    root)
      site_server "$FP" sitemapd-locations.conf
      site_server "$SG" sitemapd-locations.conf localhost snippets/sitemapd-staging.conf
      ;;
    mount) site_server "$FP" sitemapd-mount.conf ;;
    hosts)
      site_server "$FP" sitemapd-locations.conf "$HOST_A"
      site_server "$FP" sitemapd-locations.conf "$HOST_B"
      ;;
    echo) site_server "$FP" sitemapd-locations.conf ;;
    esac
    echo "}"
  } >"$NG/conf/nginx.conf"
  nginx_t nginx.conf
}
FRONT_CMD=("$NGINX" "${NGINX_OPTS[@]}" -c conf/nginx.conf)

# The example site (deploy/nginx/sitemapd.conf) verbatim, syntax only: nginx -t binds nothing.
printf 'fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n' >"$NG/conf/snippets/fastcgi-php.conf"
{
  nginx_main
  echo "http {"
  nginx_http
  echo "    include $ROOT/deploy/nginx/sitemapd.conf;"
  echo "}"
} >"$NG/conf/example.conf"
check "nginx -t accepts the example site deploy/nginx/sitemapd.conf" nginx_t example.conf

if front_config root "$SP"; then
  pass "nginx -t accepts the test server including sitemapd-locations.conf"
else
  abort "nginx -t accepts the test server including sitemapd-locations.conf"
fi
FRONT_LOG=$NG/logs/error.log start_front "${FRONT_CMD[@]}"

# ---------------------------------------------------------------- checks

front_checks
staging_checks
s=$(fetch bad_page GET "$PROXY/sitemap-0.xml")
check "/sitemap-0.xml reaches sitemapd and gets its 404 (got $s)" eq "$s" 404

# ---------------------------------------------------------------- robots enforce
# `sitemapd robots enforce nginx`: GPTBot refused, robots.txt and Googlebot not (lib/enforce-check.sh).
# shellcheck source=lib/enforce-check.sh
. "$ROOT/scripts/lib/enforce-check.sh"
enforce_checks

# ---------------------------------------------------------------- mount path, two hosts, client address
# sitemapd under /catalog/ with the shipped sitemapd-mount.conf; two hosts of a sites file, a
# server block each with sitemapd-locations.conf; the shipped proxy settings in front of a
# header-echo upstream (lib/front-check.sh: more_runs).
FRONT_LOG=$NG/logs/error.log
more_runs

summary
[ "$failed" = 0 ]
