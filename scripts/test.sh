#!/usr/bin/env bash
# Runs the whole test suite. Prepares what the tests need on a fresh Debian/Ubuntu machine:
# a PostgreSQL server (the one at TEST_DATABASE_URL, else a local one started or installed
# here), a MariaDB or MySQL server (the one at TEST_MYSQL_URL, else a local one started or
# installed here), xmllint (Debian package libxml2-utils) for validating against the sitemaps.org schemas,
# feedparser (Debian package python3-feedparser) for reading feeds back, the llms-txt Python
# package (pip) for reading llms.txt back with the format's reference parser,
# the PostgreSQL server binaries (Debian package postgresql) for a primary and standby of the
# replica tests' own, headless Chromium (Debian package chromium) for rendering sitemaps through sitemap.xsl, and
# nginx, Apache, Caddy and dnsmasq for the crawl-log and crawler-verification tests, and Varnish
# (Debian package varnish) in front of the server for the cache-purge tests.
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

export TEST_MYSQL_URL="${TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306/}"

# host, port, user, password of a mysql:// URL, one per line.
mysql_url_parts() {
  python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(p.hostname or "127.0.0.1"); print(p.port or 3306); print(u.unquote(p.username or "root")); print(u.unquote(p.password or ""))' "$1"
}

mysql_client() { command -v mariadb || command -v mysql; }

mysql_reachable() {
  local client parts
  client=$(mysql_client) || return 1
  mapfile -t parts < <(mysql_url_parts "$TEST_MYSQL_URL")
  MYSQL_PWD="${parts[3]}" "$client" --protocol=TCP -h "${parts[0]}" -P "${parts[1]}" -u "${parts[2]}" \
    -e 'CREATE DATABASE IF NOT EXISTS sitemapd_test_probe; DROP DATABASE sitemapd_test_probe' >/dev/null 2>&1
}

wait_for_mysql() {
  local i
  for i in $(seq 1 60); do mysql_reachable && return 0; sleep 0.5; done
  return 1
}

# A fresh Debian install lets root in through the socket only: give the tests a user of their own.
create_mysql_test_user() {
  local client
  client=$(mysql_client) || return 1
  as_root "$client" -uroot -e "CREATE USER IF NOT EXISTS 'sitemapd_test'@'127.0.0.1' IDENTIFIED BY 'sitemapd_test';
    GRANT ALL PRIVILEGES ON \`sitemapd\\_test\\_%\`.* TO 'sitemapd_test'@'127.0.0.1';" >/dev/null 2>&1 || return 1
  export TEST_MYSQL_URL="mysql://sitemapd_test:sitemapd_test@127.0.0.1:3306/"
}

ensure_mysql() {
  mysql_reachable && return 0
  say "no MariaDB/MySQL answers at $TEST_MYSQL_URL; trying to start one"
  if ! command -v mariadbd >/dev/null && ! command -v mysqld >/dev/null && [ ! -x /usr/sbin/mariadbd ]; then
    apt_install mariadb-server mariadb-client || die "MariaDB is missing: install it (Debian: apt-get install mariadb-server) or set TEST_MYSQL_URL to a server where the user may CREATE DATABASE"
  fi
  as_root service mariadb start >/dev/null 2>&1 \
    || as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd >/dev/null 2>&1 || true
  wait_for_mysql && return 0
  create_mysql_test_user && wait_for_mysql && return 0
  die "could not reach MariaDB at $TEST_MYSQL_URL; set TEST_MYSQL_URL to a server where the user may CREATE DATABASE"
}

# Test databases are named sitemapd_test_<pid>_…: drop those whose test process has ended (on
# this machine: a server shared by several machines should get TEST_*_URL of its own).
drop_stale_test_databases() {
  local name pid client parts
  for name in $(psql "$TEST_DATABASE_URL" -qtAc "SELECT datname FROM pg_database WHERE datname LIKE 'sitemapd\_test\_%'" 2>/dev/null); do
    pid=$(cut -d_ -f3 <<<"$name")
    [ -d "/proc/$pid" ] || psql "$TEST_DATABASE_URL" -qtAc "DROP DATABASE IF EXISTS \"$name\"" >/dev/null 2>&1 || true
  done
  client=$(mysql_client) || return 0
  mapfile -t parts < <(mysql_url_parts "$TEST_MYSQL_URL")
  for name in $(MYSQL_PWD="${parts[3]}" "$client" --protocol=TCP -h "${parts[0]}" -P "${parts[1]}" -u "${parts[2]}" -N -e "SHOW DATABASES LIKE 'sitemapd\\_test\\_%'" 2>/dev/null); do
    pid=$(cut -d_ -f3 <<<"$name")
    [ -d "/proc/$pid" ] || MYSQL_PWD="${parts[3]}" "$client" --protocol=TCP -h "${parts[0]}" -P "${parts[1]}" -u "${parts[2]}" -e "DROP DATABASE IF EXISTS \`$name\`" >/dev/null 2>&1 || true
  done
}

# The replica tests make a primary and a streaming standby of their own (initdb, pg_ctl,
# pg_basebackup), run as the postgres user when the tests run as root.
ensure_postgres_server_binaries() {
  if ! ls /usr/lib/postgresql/*/bin/pg_basebackup >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt_install postgresql || die "the PostgreSQL server binaries are missing: install them (Debian: apt-get install postgresql)"
  fi
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    die "the replica tests run PostgreSQL as the postgres user, which is missing (Debian: apt-get install postgresql creates it)"
  fi
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

# llms.txt is read back by the format's reference parser: the llms-txt package from PyPI
# (parse_llms_file). The tests skip that check, saying so, only when it cannot be installed.
ensure_llms_txt() {
  python3 -c 'import llms_txt' >/dev/null 2>&1 && return 0
  python3 -m pip install --quiet llms-txt >/dev/null 2>&1 && return 0
  python3 -m pip install --quiet --user llms-txt >/dev/null 2>&1 && return 0
  python3 -m pip install --quiet --break-system-packages llms-txt >/dev/null 2>&1 && return 0
  echo "warning: cannot install the llms-txt Python package (pip install llms-txt); the llms.txt tests skip the reference parser" >&2
}

ensure_chromium() {
  [ -n "${CHROMIUM:-}" ] && return 0
  local browser
  for browser in chromium chromium-browser google-chrome; do
    command -v "$browser" >/dev/null && return 0
  done
  apt_install chromium || die "headless Chromium is missing: install it (Debian: apt-get install chromium) or set CHROMIUM=/path/to/chrome"
}

# The crawl-log and verification tests run real servers: nginx, Apache and Caddy sending their
# access logs, and dnsmasq answering the reverse and forward lookups of crawler verification;
# the cache tests a Varnish in front that sitemapd purges.
# Installed here, once, rather than by tests racing for apt's lock.
ensure_test_servers() {
  local missing=() tool package
  for tool in nginx:nginx-light apache2:apache2 caddy:caddy dnsmasq:dnsmasq logger:bsdutils varnishd:varnish; do
    package=${tool#*:}
    tool=${tool%%:*}
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  apt_install "${missing[@]}" || die "missing: ${missing[*]} (Debian: apt-get install ${missing[*]})"
}

# Signed requests (Web Bot Auth) are signed by an implementation independent of sitemapd's:
# Cloudflare's web-bot-auth npm package, pinned in tests/signer/package-lock.json, run with
# Node (20 or later: its WebCrypto has Ed25519).
ensure_web_bot_auth_signer() {
  local dir=tests/signer
  command -v node >/dev/null && command -v npm >/dev/null \
    || apt_install nodejs npm \
    || die "Node.js 20+ and npm are missing: install them (Debian: apt-get install nodejs npm)"
  [ -d "$dir/node_modules/web-bot-auth" ] && return 0
  npm ci --no-audit --no-fund --prefix "$dir" >/dev/null \
    || die "cannot install the Web Bot Auth test signer: npm ci --prefix tests/signer"
}

# The packages the checks below would each install, in one apt-get run (one index update, one
# download), so that a fresh machine pays for apt once. A tool still missing afterwards is named
# by its own check.
install_missing_packages() {
  local missing=() tool package
  postgres_reachable || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql postgresql-client)
  mysql_reachable || command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || command -v mysqld >/dev/null \
    || missing+=(mariadb-server mariadb-client)
  for tool in xmllint:libxml2-utils jing:jing nginx:nginx-light apache2:apache2 caddy:caddy dnsmasq:dnsmasq \
    logger:bsdutils node:nodejs npm:npm varnishd:varnish; do
    package=${tool#*:}
    tool=${tool%%:*}
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || missing+=("$package")
  done
  /usr/bin/python3 -c 'import feedparser' >/dev/null 2>&1 || python3 -c 'import feedparser' >/dev/null 2>&1 \
    || missing+=(python3-feedparser)
  [ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null || command -v chromium-browser >/dev/null \
    || command -v google-chrome >/dev/null || missing+=(chromium)
  [ ${#missing[@]} -eq 0 ] && return 0
  apt_install "${missing[@]}" || say "could not install ${missing[*]}; the checks below say what is missing"
}

# The tests compile while the machine is prepared (installs wait on the network and the disk,
# the compiler on the cores); its output is shown if it fails.
mkdir -p target
BUILD_LOG=target/test-build.log
cargo test --all-targets --no-run "$@" >"$BUILD_LOG" 2>&1 &
BUILD_PID=$!
trap 'kill "$BUILD_PID" 2>/dev/null || true' EXIT

install_missing_packages
ensure_postgres
ensure_postgres_server_binaries
ensure_mysql
drop_stale_test_databases
ensure_xmllint
ensure_jing
ensure_feedparser
ensure_llms_txt
ensure_chromium
ensure_test_servers
ensure_web_bot_auth_signer
if ! wait "$BUILD_PID"; then
  cat "$BUILD_LOG" >&2
  die "the tests do not compile (cargo test --all-targets --no-run)"
fi
trap - EXIT
# Most tests wait (on a database, a server, a sweep), not compute: two per core keep the cores
# busy. RUST_TEST_THREADS=1 runs them one at a time.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-$(($(nproc) * 2))}"
cargo test --all-targets "$@"
