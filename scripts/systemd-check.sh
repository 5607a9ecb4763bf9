#!/usr/bin/env bash
# Checks the shipped systemd unit with `systemd-analyze verify`, as a site owner would install
# it: the unit copied as it is, with only the binary's path (the one built here) and the
# environment file's (a temporary one) replaced. Installs systemd's tools when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'systemd-check: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

if ! command -v systemd-analyze >/dev/null; then
  say "installing systemd (for systemd-analyze) with apt-get"
  as_root apt-get update -qq >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
fi
target=${CARGO_TARGET_DIR:-target}
cargo build --quiet
binary=$(cd "$target/debug" && pwd)/sitemapd
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: > "$work/env"
sed -e "s|^ExecStart=/usr/local/bin/sitemapd |ExecStart=$binary |" \
    -e "s|^EnvironmentFile=/etc/sitemapd/env|EnvironmentFile=$work/env|" \
    deploy/systemd/sitemapd.service > "$work/sitemapd.service"
grep -q "^ExecStart=$binary serve" "$work/sitemapd.service" || { say "ExecStart not found in the unit"; exit 1; }
if out=$(systemd-analyze verify "$work/sitemapd.service" 2>&1) && [ -z "$out" ]; then
  echo "PASS deploy/systemd/sitemapd.service: systemd-analyze verify has nothing to say"
else
  echo "FAIL deploy/systemd/sitemapd.service: systemd-analyze verify says:"
  echo "$out"
  exit 1
fi
