#!/usr/bin/env bash
# Checks the shipped Apache configuration (deploy/apache/sitemapd.conf) against a real Apache
# httpd 2.4 (Debian's apache2: mod_proxy, mod_proxy_http) and a real sitemapd: `sitemapd demo`
# on a free loopback port, Apache on another with a configuration of its own under a temporary
# directory, a VirtualHost that includes the shipped file as a site owner would (only the port
# of 127.0.0.1:8080 changed to sitemapd's), plus what a PHP site typically has that must not get
# in the way: mod_deflate for XML and text, mod_expires for everything, a front controller that
# sends every other path to index.php, a rule for static .xml/.gz/.txt files, and the exemption
# the shipped file's comment asks for.
#
# Usage: scripts/apache-check.sh
#   SITEMAPD_BIN=path  use this binary instead of building target/release/sitemapd
#   KEEP_TMP=1         keep the temporary directory (logs, bodies) for inspection
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
sed "s|127\.0\.0\.1:8080|127.0.0.1:$SP|g" "$ROOT/deploy/apache/sitemapd.conf" >"$AP/sitemapd.conf"
user_lines=
if [ "$(id -u)" = 0 ] && id www-data >/dev/null 2>&1; then
  user_lines=$'User www-data\nGroup www-data'
fi
modules=
for m in mpm_event authz_core mime dir rewrite proxy proxy_http headers deflate filter expires env setenvif; do
  modules+="LoadModule ${m}_module $MODULES/mod_$m.so"$'\n'
done
# virtual_host PORT [INCLUDE]: the test site, with an extra Include (staging).
virtual_host() {
  cat <<VHOST
<VirtualHost 127.0.0.1:$1>
    ServerName localhost
${2:+    Include "$2"}
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
    RewriteRule "^/(robots\.txt|sitemap_index\.xml|sitemap\.(xml|txt|xsl)|feed\.(atom|rss)|sitemap-[1-9][0-9]*\.(xml|xml\.gz|txt))$" - [END]
    # A static-file rule that must not take the sitemapd paths.
    RewriteRule "\.(xml|gz|txt)$" - [G]
    # A front controller: every other path is the PHP application.
    RewriteCond "%{DOCUMENT_ROOT}%{REQUEST_URI}" !-f
    RewriteRule "^/" "/index.php" [L]

    Include "$AP/sitemapd.conf"
</VirtualHost>
VHOST
}
cat >"$AP/httpd.conf" <<CONF
ServerRoot "$AP"
ServerName localhost
Listen 127.0.0.1:$FP
Listen 127.0.0.1:$SG
PidFile "$AP/httpd.pid"
DefaultRuntimeDir "$AP"
Mutex file:$AP default
ErrorLog "$AP/error.log"
LogLevel warn
TypesConfig /etc/mime.types
$user_lines
$modules
$(virtual_host "$FP")
$(virtual_host "$SG" "$ROOT/deploy/apache/sitemapd-staging.conf")
CONF

if timeout 30 "$APACHE" -t -f "$AP/httpd.conf" 2>"$TMP/apache-t.err"; then
  pass "apache2 -t accepts a VirtualHost including deploy/apache/sitemapd.conf"
else
  cat "$TMP/apache-t.err" >&2
  abort "apache2 -t accepts a VirtualHost including deploy/apache/sitemapd.conf"
fi
FRONT_LOG=$AP/error.log start_front "$APACHE" -X -f "$AP/httpd.conf"

# ---------------------------------------------------------------- checks

front_checks
staging_checks

# ---------------------------------------------------------------- robots enforce
# `sitemapd robots enforce apache`: GPTBot refused, robots.txt and Googlebot not (lib/enforce-check.sh).
# shellcheck source=lib/enforce-check.sh
. "$ROOT/scripts/lib/enforce-check.sh"
enforce_checks

summary
[ "$failed" = 0 ]
