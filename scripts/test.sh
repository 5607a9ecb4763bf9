#!/usr/bin/env bash
# Runs the whole test suite. Prepares what the tests need on a fresh Debian/Ubuntu machine:
# a PostgreSQL server (the one at TEST_DATABASE_URL, else a local one started or installed
# here), xmllint (Debian package libxml2-utils) for validating against the sitemaps.org schemas,
# feedparser (Debian package python3-feedparser) for reading feeds back.
# and headless Chromium (Debian package chromium) for rendering sitemaps through sitemap.xsl.
# Extra arguments go to `cargo test`, e.g. ./scripts/test.sh caching
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'test.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }
apt_install() {
  command -v apt-get >/dev/null || return 1
  say "installing $* with apt-get"
  as_root apt-get update -qq >/dev/null && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

postgres_reachable() {
  command -v psql >/dev/null && psql "$TEST_DATABASE_URL" -qtAc 'select 1' >/dev/null 2>&1
}

# A private PostgreSQL cluster under target/, for machines that have none running.
start_private_postgres() {
  local bin port=55432 data="$PWD/target/test-pgdata"
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$bin" ] || return 1
  local run=()
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || return 1
    run=(runuser -u postgres --)
    mkdir -p "$data" && chown postgres "$data"
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    "${run[@]}" "$bin/initdb" -D "$data" -U postgres --auth=trust >/dev/null
  fi
  "${run[@]}" "$bin/pg_ctl" -D "$data" -o "-p $port -k /tmp -c listen_addresses=127.0.0.1" -l "$data/log" -w start >/dev/null || true
  export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
}

ensure_postgres() {
  postgres_reachable && return 0
  say "no PostgreSQL answers at $TEST_DATABASE_URL; trying to start one"
  if command -v pg_ctlcluster >/dev/null && ls /etc/postgresql/*/main >/dev/null 2>&1; then
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start >/dev/null 2>&1 || true
    postgres_reachable && return 0
  fi
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt_install postgresql postgresql-client || die "PostgreSQL is missing: install it (Debian: apt-get install postgresql) or set TEST_DATABASE_URL to a server where the user may CREATE DATABASE"
  fi
  start_private_postgres
  postgres_reachable || die "could not start PostgreSQL; set TEST_DATABASE_URL to a server where the user may CREATE DATABASE"
  say "using the PostgreSQL at $TEST_DATABASE_URL"
}

ensure_xmllint() {
  command -v xmllint >/dev/null && return 0
  apt_install libxml2-utils || die "xmllint is missing: install it (Debian: apt-get install libxml2-utils)"
}

# Atom feeds are validated against the RELAX NG schema of RFC 4287 with jing (Debian: jing).
ensure_jing() {
  command -v jing >/dev/null && return 0
  apt_install jing || die "jing is missing: install it (Debian: apt-get install jing)"
}

# Feeds are read back by an independent parser: Python's feedparser (Debian: python3-feedparser).
ensure_feedparser() {
  /usr/bin/python3 -c 'import feedparser' >/dev/null 2>&1 && return 0
  python3 -c 'import feedparser' >/dev/null 2>&1 && export FEED_PYTHON=python3 && return 0
  apt_install python3-feedparser && return 0
  python3 -m pip install --quiet feedparser && export FEED_PYTHON=python3 && return 0
  die "feedparser is missing: install it (Debian: apt-get install python3-feedparser, or pip install feedparser)"
}

ensure_chromium() {
  [ -n "${CHROMIUM:-}" ] && return 0
  local browser
  for browser in chromium chromium-browser google-chrome; do
    command -v "$browser" >/dev/null && return 0
  done
  apt_install chromium || die "headless Chromium is missing: install it (Debian: apt-get install chromium) or set CHROMIUM=/path/to/chrome"
}

ensure_postgres
ensure_xmllint
ensure_jing
ensure_feedparser
ensure_chromium
cargo test --all-targets "$@"
