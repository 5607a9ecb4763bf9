#!/usr/bin/env bash
# Checks the shipped Caddy configuration (deploy/caddy/sitemapd.caddy) against a real Caddy 2
# and a real sitemapd: `sitemapd demo` on a free loopback port, Caddy on another with a
# Caddyfile of its own that imports the shipped file as a site owner would (only the port of
# 127.0.0.1:8080 changed to sitemapd's), plus what a PHP site typically has that must not get in
# the way: `encode gzip` for everything else, far-future Cache-Control, a static-file rule for
# other .xml/.gz/.txt paths, and a stand-in for the PHP application.
#
# Usage: scripts/caddy-check.sh
#   SITEMAPD_BIN=path  use this binary instead of building target/release/sitemapd
#   KEEP_TMP=1         keep the temporary directory (logs, bodies) for inspection
# Installs caddy with apt-get when it is missing (needs root or sudo; the service is not
# started). Only 127.0.0.1 is used. Prints a PASS/FAIL line per check, then "N passed, N
# failed"; exits 1 when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FRONT=caddy
STATIC_STATUS=418
# shellcheck source=lib/front-check.sh
. "$ROOT/scripts/lib/front-check.sh"

# ---------------------------------------------------------------- caddy

CADDY=$(find_server caddy caddy) || abort "caddy is not installed and could not be installed (apt-get install caddy)"
say "using caddy $("$CADDY" version 2>&1 | head -n 1)"

CD=$TMP/caddy
mkdir -p "$CD/data" "$CD/config"
sed "s|127\.0\.0\.1:8080|127.0.0.1:$SP|g" "$ROOT/deploy/caddy/sitemapd.caddy" >"$CD/sitemapd.caddy"
# site_block ADDRESS [IMPORT]: the test site, with an extra import (staging).
site_block() {
  cat <<SITE
$1 {
${2:+	import $2}
	import $CD/sitemapd.caddy

	# What a PHP site often has; the imported sitemapd block must not be affected by it.
	handle {
		encode gzip
		header Cache-Control "public, max-age=2592000"
		@static path *.xml *.gz *.txt
		respond @static "static-file rule" 418
		respond "php site"
	}
}
SITE
}
cat >"$CD/Caddyfile" <<CONF
{
	admin off
	auto_https off
	storage file_system $CD/data
}

$(site_block "http://127.0.0.1:$FP")

$(site_block "http://127.0.0.1:$SG" "$ROOT/deploy/caddy/sitemapd-staging.caddy")
CONF

# The example site (deploy/caddy/Caddyfile) as shipped, its import pointed at the copy here:
# validation provisions the configuration without serving it.
sed "s|import /etc/caddy/sitemapd.caddy|import $CD/sitemapd.caddy|" "$ROOT/deploy/caddy/Caddyfile" >"$CD/example.Caddyfile"
if HOME=$CD XDG_DATA_HOME=$CD/data XDG_CONFIG_HOME=$CD/config \
  timeout 30 "$CADDY" validate --config "$CD/example.Caddyfile" --adapter caddyfile >"$TMP/caddy-example.out" 2>&1; then
  pass "caddy validate accepts the example site deploy/caddy/Caddyfile"
else
  tail -n 20 "$TMP/caddy-example.out" >&2
  fail "caddy validate accepts the example site deploy/caddy/Caddyfile"
fi
if HOME=$CD XDG_DATA_HOME=$CD/data XDG_CONFIG_HOME=$CD/config \
  timeout 30 "$CADDY" validate --config "$CD/Caddyfile" --adapter caddyfile >"$TMP/caddy-validate.out" 2>&1; then
  pass "caddy validate accepts a site importing deploy/caddy/sitemapd.caddy"
else
  tail -n 20 "$TMP/caddy-validate.out" >&2
  abort "caddy validate accepts a site importing deploy/caddy/sitemapd.caddy"
fi
start_front env HOME="$CD" XDG_DATA_HOME="$CD/data" XDG_CONFIG_HOME="$CD/config" \
  "$CADDY" run --config "$CD/Caddyfile" --adapter caddyfile

# ---------------------------------------------------------------- checks

front_checks
staging_checks

# ---------------------------------------------------------------- robots enforce
# `sitemapd robots enforce caddy`: GPTBot refused, robots.txt and Googlebot not (lib/enforce-check.sh).
# shellcheck source=lib/enforce-check.sh
. "$ROOT/scripts/lib/enforce-check.sh"
enforce_checks

summary
[ "$failed" = 0 ]
