#!/usr/bin/env bash
# Checks the shipped Caddy configuration (deploy/caddy/sitemapd.caddy) against a real Caddy 2
# and a real sitemapd: `sitemapd demo` on a free loopback port, Caddy on another with a
# Caddyfile of its own that imports the shipped file as a site owner would (only the port of
# 127.0.0.1:8080 changed to sitemapd's), plus what a PHP site typically has that must not get in
# the way: `encode gzip` for everything else, far-future Cache-Control, a static-file rule for
# other .xml/.gz/.txt paths, and a stand-in for the PHP application. Then the same Caddy
# restarted for more runs: sitemapd under a mount path with the shipped sitemapd-mount.caddy,
# two hosts of a sites file (a site block each), and the client-address headers the shipped
# file sends (against a header-echo upstream).
#
# Usage: scripts/caddy-check.sh
#   SITEMAPD_BIN=path  use this binary instead of building target/release/sitemapd
#   KEEP_TMP=1         keep the temporary directory (logs, bodies) for inspection
#   WAIT_SCALE=N       multiply every readiness deadline (180 s sitemapd, 60 s the server)
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
# The shipped file with sitemapd's port, for the example site and the enforce check.
sed "s|127\.0\.0\.1:8080|127.0.0.1:$SP|g" "$ROOT/deploy/caddy/sitemapd.caddy" >"$CD/sitemapd.caddy"
# site_block ADDRESS IMPORT [IMPORT2]: the test site importing the shipped file IMPORT (with its
# arguments), with an extra import first (staging).
site_block() {
  cat <<SITE
$1 {
	bind 127.0.0.1
${3:+	import $3}
	import $2

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

# front_config MODE PORT: the Caddyfile for MODE (root: the site and its staging copy with
# sitemapd.caddy; mount: sitemapd-mount.caddy /catalog; hosts: a site block per host; echo: the
# root site), the shipped files' 127.0.0.1:8080 changed to 127.0.0.1:PORT.
front_config() {
  local mode=$1 port=$2 f sites
  for f in sitemapd.caddy sitemapd-mount.caddy; do
    sed "s|127\.0\.0\.1:8080|127.0.0.1:$port|g" "$ROOT/deploy/caddy/$f" >"$CD/$mode-$f"
  done
  case $mode in
  root)
    sites=$(site_block "http://127.0.0.1:$FP" "$CD/$mode-sitemapd.caddy"
      echo
      site_block "http://127.0.0.1:$SG" "$CD/$mode-sitemapd.caddy" "$ROOT/deploy/caddy/sitemapd-staging.caddy")
    ;;
  mount) sites=$(site_block "http://127.0.0.1:$FP" "$CD/$mode-sitemapd-mount.caddy /catalog") ;;
  hosts)
    sites=$(site_block "http://$HOST_A:$FP" "$CD/$mode-sitemapd.caddy"
      echo
      site_block "http://$HOST_B:$FP" "$CD/$mode-sitemapd.caddy")
    ;;
  echo) sites=$(site_block "http://127.0.0.1:$FP" "$CD/$mode-sitemapd.caddy") ;;
  esac
  cat >"$CD/Caddyfile" <<CONF
{
	admin off
	auto_https off
	storage file_system $CD/data
}

$sites
CONF
  HOME=$CD XDG_DATA_HOME=$CD/data XDG_CONFIG_HOME=$CD/config \
    timeout 120 "$CADDY" validate --config "$CD/Caddyfile" --adapter caddyfile >"$TMP/caddy-validate.out" 2>&1 && return 0
  tail -n 20 "$TMP/caddy-validate.out" >&2
  return 1
}
FRONT_CMD=(env HOME="$CD" XDG_DATA_HOME="$CD/data" XDG_CONFIG_HOME="$CD/config"
  "$CADDY" run --config "$CD/Caddyfile" --adapter caddyfile)

# The example site (deploy/caddy/Caddyfile) as shipped, its import pointed at the copy here:
# validation provisions the configuration without serving it.
sed "s|import /etc/caddy/sitemapd.caddy|import $CD/sitemapd.caddy|" "$ROOT/deploy/caddy/Caddyfile" >"$CD/example.Caddyfile"
if HOME=$CD XDG_DATA_HOME=$CD/data XDG_CONFIG_HOME=$CD/config \
  timeout 120 "$CADDY" validate --config "$CD/example.Caddyfile" --adapter caddyfile >"$TMP/caddy-example.out" 2>&1; then
  pass "caddy validate accepts the example site deploy/caddy/Caddyfile"
else
  tail -n 20 "$TMP/caddy-example.out" >&2
  fail "caddy validate accepts the example site deploy/caddy/Caddyfile"
fi
if front_config root "$SP"; then
  pass "caddy validate accepts a site importing deploy/caddy/sitemapd.caddy"
else
  abort "caddy validate accepts a site importing deploy/caddy/sitemapd.caddy"
fi
start_front "${FRONT_CMD[@]}"

# ---------------------------------------------------------------- checks

front_checks
staging_checks

# ---------------------------------------------------------------- robots enforce
# `sitemapd robots enforce caddy`: GPTBot refused, robots.txt and Googlebot not (lib/enforce-check.sh).
# shellcheck source=lib/enforce-check.sh
. "$ROOT/scripts/lib/enforce-check.sh"
enforce_checks

# ---------------------------------------------------------------- mount path, two hosts, client address
# sitemapd under /catalog/ with the shipped sitemapd-mount.caddy; two hosts of a sites file, a
# site block each importing sitemapd.caddy; the shipped file in front of a header-echo upstream
# (lib/front-check.sh: more_runs).
more_runs

summary
[ "$failed" = 0 ]
