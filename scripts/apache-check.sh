#!/usr/bin/env bash
# Checks the shipped Apache configuration (deploy/apache/sitemapd.conf) against a real Apache
# httpd 2.4 (Debian's apache2: mod_proxy, mod_proxy_http) and a real sitemapd: `sitemapd demo`
# on a free loopback port, Apache on another with a configuration of its own under a temporary
# directory, a VirtualHost that includes the shipped file as a site owner would (only the port
# of 127.0.0.1:8080 changed to sitemapd's), plus what a PHP site typically has that must not get
# in the way: mod_deflate for XML and text, mod_expires for everything, a front controller that
# sends every other path to index.php, a rule for static .xml/.gz/.txt files, and the exemption
# the shipped file's comment asks for. Then the same Apache restarted for more runs: sitemapd
# under a mount path with the shipped sitemapd-mount.conf, two hosts of a sites file (a
# VirtualHost each), and the client-address headers the shipped file sends (against a
# header-echo upstream).
#
# Usage: scripts/apache-check.sh
#   SITEMAPD_BIN=path  use this binary instead of building target/release/sitemapd
#   KEEP_TMP=1         keep the temporary directory (logs, bodies) for inspection
#   WAIT_SCALE=N       multiply every readiness deadline (180 s sitemapd, 60 s the server)
# Installs apache2 with apt-get when it is missing (needs root or sudo; the service is not
# started). Only 127.0.0.1 is used. Prints a PASS/FAIL line per check, then "N passed, N
# failed"; exits 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FRONT=apache
STATIC_STATUS=410
# shellcheck source=lib/front-check.sh
. "$ROOT/scripts/lib/front-check.sh"

# ---------------------------------------------------------------- apache

APACHE=$(find_server apache2 apache2) || abort "apache2 is not installed and could not be installed (apt-get install apache2)"
MODULES=/usr/lib/apache2/modules
say "using $("$APACHE" -v 2>&1 | head -n 1)"

AP=$TMP/apache
mkdir -p "$AP/site"
printf 'php site\n' >"$AP/site/index.php"
user_lines=
if [ "$(id -u)" = 0 ] && id www-data >/dev/null 2>&1; then
  user_lines=$'User www-data\nGroup www-data'
fi
modules=
for m in mpm_event authz_core mime dir rewrite proxy proxy_http headers deflate filter expires env setenvif; do
  modules+="LoadModule ${m}_module $MODULES/mod_$m.so"$'\n'
done
# The exemptions the shipped files ask for, before the site's own rules (root and mount).
EXEMPT_ROOT='^/(robots\.txt|sitemap_index\.xml|sitemap\.(xml|txt|xsl)|feed\.(atom|rss)|sitemap-[1-9][0-9]*\.(xml|xml\.gz|txt))$'
EXEMPT_MOUNT='^/(robots\.txt|catalog/(sitemap_index\.xml|sitemap\.(xml|txt|xsl)|feed\.(atom|rss)|sitemap-[1-9][0-9]*\.(xml|xml\.gz|txt)))$'

# virtual_host PORT SHIPPED EXEMPT [SERVER_NAME [INCLUDE]]: the test site including the shipped
# file SHIPPED (its copy with sitemapd's port), with an extra Include (staging).
virtual_host() {
  cat <<VHOST
<VirtualHost 127.0.0.1:$1>
    ServerName ${4:-localhost}
${5:+    Include "$5"}
    DocumentRoot "$AP/site"
    <Directory "$AP/site">
        Require all granted
        DirectoryIndex index.php
    </Directory>
    AddType text/plain .php

    # What a PHP site often has site-wide; the shipped sitemapd lines must win over it.
    AddOutputFilterByType DEFLATE text/plain application/xml application/gzip
    ExpiresActive On
    ExpiresDefault "access plus 30 days"
    RewriteEngine On
    # The exemption the shipped file asks for, before the site's own rules.
    RewriteRule "$3" - [END]
    # A static-file rule that must not take the sitemapd paths.
    RewriteRule "\.(xml|gz|txt)$" - [G]
    # A front controller: every other path is the PHP application.
    RewriteCond "%{DOCUMENT_ROOT}%{REQUEST_URI}" !-f
    RewriteRule "^/" "/index.php" [L]

    Include "$2"
</VirtualHost>
VHOST
}

# front_config MODE PORT: httpd.conf for MODE (root: the site and its staging copy, with
# sitemapd.conf; mount: sitemapd-mount.conf; hosts: a VirtualHost per host; echo: the root site),
# the shipped file's 127.0.0.1:8080 changed to 127.0.0.1:PORT.
front_config() {
  local mode=$1 port=$2 shipped=sitemapd.conf exempt=$EXEMPT_ROOT listen hosts
  [ "$mode" = mount ] && { shipped=sitemapd-mount.conf; exempt=$EXEMPT_MOUNT; }
  sed "s|127\.0\.0\.1:8080|127.0.0.1:$port|g" "$ROOT/deploy/apache/$shipped" >"$AP/$mode-$shipped"
  listen="Listen 127.0.0.1:$FP"
  case $mode in
  root)
    listen+=$'\n'"Listen 127.0.0.1:$SG"
    hosts=$(virtual_host "$FP" "$AP/$mode-$shipped" "$exempt"
      virtual_host "$SG" "$AP/$mode-$shipped" "$exempt" localhost "$ROOT/deploy/apache/sitemapd-staging.conf")
    ;;
  hosts)
    hosts=$(virtual_host "$FP" "$AP/$mode-$shipped" "$exempt" "$HOST_A"
      virtual_host "$FP" "$AP/$mode-$shipped" "$exempt" "$HOST_B")
    ;;
  *) hosts=$(virtual_host "$FP" "$AP/$mode-$shipped" "$exempt") ;;
  esac
  cat >"$AP/httpd.conf" <<CONF
ServerRoot "$AP"
ServerName localhost
$listen
PidFile "$AP/httpd.pid"
DefaultRuntimeDir "$AP"
Mutex file:$AP default
ErrorLog "$AP/error.log"
LogLevel warn
TypesConfig /etc/mime.types
$user_lines
$modules
$hosts
CONF
  timeout 120 "$APACHE" -t -f "$AP/httpd.conf" 2>"$TMP/apache-t.err" && return 0
  cat "$TMP/apache-t.err" >&2
  return 1
}
FRONT_CMD=("$APACHE" -X -f "$AP/httpd.conf")

if front_config root "$SP"; then
  pass "apache2 -t accepts a VirtualHost including deploy/apache/sitemapd.conf"
else
  abort "apache2 -t accepts a VirtualHost including deploy/apache/sitemapd.conf"
fi
# enforce-check.sh includes the shipped file's copy from here.
cp "$AP/root-sitemapd.conf" "$AP/sitemapd.conf"
FRONT_LOG=$AP/error.log start_front "${FRONT_CMD[@]}"

# ---------------------------------------------------------------- checks

front_checks
staging_checks

# ---------------------------------------------------------------- robots enforce
# `sitemapd robots enforce apache`: GPTBot refused, robots.txt and Googlebot not (lib/enforce-check.sh).
# shellcheck source=lib/enforce-check.sh
. "$ROOT/scripts/lib/enforce-check.sh"
enforce_checks

# ---------------------------------------------------------------- mount path, two hosts, client address
# sitemapd under /catalog/ with the shipped sitemapd-mount.conf; two hosts of a sites file, a
# VirtualHost each with sitemapd.conf; the shipped file in front of a header-echo upstream
# (lib/front-check.sh: more_runs).
FRONT_LOG=$AP/error.log
more_runs

summary
[ "$failed" = 0 ]
