# scripts/lib/checks.sh: what every check script shares (the front checks through
# scripts/lib/front-check.sh, and scripts/wordpress-check.sh): PASS/FAIL bookkeeping, finding
# and installing the tools, the sitemapd binary, stopping the processes started here by PID,
# free ports (scripts/lib/ports.py), and waiting for a URL. The caller sets FRONT (its name, for
# messages) and ROOT (the checkout) before sourcing it, and TMP (its temporary directory) before
# installing.

say() { printf '%s-check: %s\n' "$FRONT" "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else return 1; fi; }

passed=0
failed=0
pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }
check() { # check DESCRIPTION COMMAND...: PASS when the command succeeds
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
summary() { printf '%d passed, %d failed\n' "$passed" "$failed"; }
abort() { # a step the checks cannot go on without
  fail "$*"
  summary
  exit 1
}

# ---------------------------------------------------------------- tools

find_bin() { # find_bin NAME...: the path of the first of these programs found (in PATH or /usr/sbin)
  local n
  for n in "$@"; do
    command -v "$n" 2>/dev/null && return 0
    [ -x "/usr/sbin/$n" ] && echo "/usr/sbin/$n" && return 0
  done
  return 1
}
apt_install() { # apt_install PACKAGE...: with apt-get, without recommends, without starting services
  command -v apt-get >/dev/null || return 1
  say "installing $* with apt-get"
  if [ -z "${APT_UPDATED:-}" ]; then
    as_root env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 timeout 900 \
    apt-get install -y -qq --no-install-recommends "$@" >"$TMP/apt.log" 2>&1 || {
    tail -n 5 "$TMP/apt.log" >&2
    return 1
  }
}
need() { # need PROGRAM...: aborts unless each is in PATH
  local n
  for n in "$@"; do
    command -v "$n" >/dev/null || abort "$n is needed"
  done
}

# sitemapd_bin always|missing: sets BIN to the sitemapd binary, SITEMAPD_BIN when set, otherwise
# target/release/sitemapd, built with cargo first (always, or only when it is missing); aborts
# when there is none.
sitemapd_bin() {
  if [ -n "${SITEMAPD_BIN:-}" ]; then
    BIN=$SITEMAPD_BIN
  else
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/sitemapd
    if [ "$1" = always ] || [ ! -x "$BIN" ]; then
      say "cargo build --release"
      timeout 1800 cargo build --release --quiet || abort "cargo build --release"
    fi
  fi
  [ -x "$BIN" ] || abort "no sitemapd binary at $BIN"
}

# ---------------------------------------------------------------- processes, ports, URLs

stop_pid() { # stop_pid PID: TERM, up to 30 s, then KILL; only the processes started here
  local pid=$1 end=$((SECONDS + 30))
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  while [ "$SECONDS" -lt "$end" ]; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

# free_port [PORT...]: a port for a server started here, other than the ones given: below the
# ephemeral range, TCP and UDP free on every interface, never handed out twice in one run
# (scripts/lib/ports.py, which the benchmarks use too).
free_port() {
  PORTS_LEDGER=${PORTS_LEDGER:-${TMP:+$TMP/ports-handed-out}} python3 "$ROOT/scripts/lib/ports.py" 1 --except "$@"
}

CURL=(curl -sS --noproxy '*' --max-time 30)
# wait_http URL SECONDS PID: until URL answers 200, the process dies, or SECONDS (at least 60)
# of wall time have passed (polled; each try is bounded, so a busy machine costs tries, never
# the deadline's meaning; a long deadline only costs time when something is broken).
# WAIT_SCALE (default 1) multiplies every deadline, for very slow machines.
wait_http() {
  local url=$1 pid=$3 secs=$2
  [ "$secs" -ge 60 ] || secs=60
  local end=$((SECONDS + secs * ${WAIT_SCALE:-1}))
  while :; do
    kill -0 "$pid" 2>/dev/null || return 1
    [ "$("${CURL[@]}" --max-time 5 -o /dev/null -w '%{http_code}' "$url" 2>/dev/null)" = 200 ] && return 0
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.25
  done
}
