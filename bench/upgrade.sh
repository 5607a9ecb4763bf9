#!/usr/bin/env bash
# bench/upgrade.sh: an upgrade keeps serving. Two release binaries that differ only in their
# version number (A: the worktree's, B: the same sources with Cargo.toml's version set to 0.1.1 in
# a temporary copy) take turns on one database of N rows: A runs until every file is served and
# verified, stops; B starts, and we time how long until the index and a few sitemap files answer
# 200 (not 503), and check their ETags are A's. A plain restart of A is timed the same way, for
# comparison. Prints a markdown table and saves it as bench/results/results-upgrade-<date>.md.
#
#   bench/upgrade.sh                    SQLite and PostgreSQL, 1,000,000 rows
#   BENCH_N=100000 bench/upgrade.sh     another size
#   BENCH_DBS=postgres bench/upgrade.sh one database (sqlite, postgres)
#
# Environment: BENCH_N (rows, default 1000000), BENCH_DBS (default "sqlite postgres"),
# BENCH_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_SKIP_BUILD=1 (use
# the binaries of an earlier run, kept in target/upgrade/), BENCH_B=patch (B is A's binary with
# its version string replaced, no second build; the default, build, compiles B). Builds share cargo's target directory,
# so B recompiles only this crate. Everything listens on 127.0.0.1; every server is stopped by its
# PID; every wait is bounded (BENCH_LIMIT seconds, default 600); the databases it made are dropped
# at the end, on error and on Ctrl-C.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BINS=$TARGET/upgrade
export BENCH_N=${BENCH_N:-1000000}
export BENCH_DBS=${BENCH_DBS:-sqlite postgres}
export BENCH_ADMIN_URL=${BENCH_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
export BENCH_LIMIT=${BENCH_LIMIT:-600}
export SEED_PG=$HERE/seed.sql
mkdir -p "$BINS"

build_both() {
  echo "upgrade.sh: building A (the worktree's version)" >&2
  (cd "$ROOT" && cargo build --release --quiet)
  cp "$TARGET/release/sitemapd" "$BINS/sitemapd-a"
  echo "upgrade.sh: building B (the same sources, version 0.1.1)" >&2
  local copy
  copy=$(mktemp -d)
  (cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$copy" -xf -
  sed -i '0,/^version = "[^"]*"/s//version = "0.1.1"/' "$copy/Cargo.toml"
  (cd "$copy" && CARGO_TARGET_DIR=$TARGET cargo build --release --quiet)
  cp "$TARGET/release/sitemapd" "$BINS/sitemapd-b"
  rm -rf "$copy"
  # Put A back where the other benchmarks look for it (nothing is recompiled).
  (cd "$ROOT" && cargo build --release --quiet)
}

# B without a second build: A's bytes with the version string (0.1.0 → 0.1.1, the same length)
# replaced wherever it occurs, so nothing but the version differs, to the byte.
patch_b() {
  echo "upgrade.sh: B is A with its version string patched" >&2
  (cd "$ROOT" && cargo build --release --quiet)
  cp "$TARGET/release/sitemapd" "$BINS/sitemapd-a"
  local version
  version=$(sed -n 's/^version = "\([^"]*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)
  python3 - "$BINS/sitemapd-a" "$BINS/sitemapd-b" "$version" <<'PATCH'
import sys
a, b, old = sys.argv[1], sys.argv[2], sys.argv[3].encode()
new = old[:-1] + bytes([old[-1] + 1 if old[-1] < ord("9") else ord("0")])
data = open(a, "rb").read()
print(f"upgrade.sh: {data.count(old)} occurrences of {old.decode()} → {new.decode()}", file=sys.stderr)
open(b, "wb").write(data.replace(old, new))
PATCH
  chmod +x "$BINS/sitemapd-b"
}

if [ -z "${BENCH_SKIP_BUILD:-}" ] || [ ! -x "$BINS/sitemapd-b" ]; then
  if [ "${BENCH_B:-build}" = patch ]; then patch_b; else build_both; fi
fi
export SITEMAPD_A="$BINS/sitemapd-a" SITEMAPD_B="$BINS/sitemapd-b"
va=$("$SITEMAPD_A" --version) vb=$("$SITEMAPD_B" --version)
echo "upgrade.sh: A is '$va', B is '$vb'" >&2
[ "$va" != "$vb" ] || { echo "upgrade.sh: A and B report the same version" >&2; exit 1; }

mkdir -p "$HERE/results"
out="$HERE/results/results-upgrade-$(date -u +%Y-%m-%d-%H%M%S).md"
PORTS_LIB=$ROOT/scripts/lib python3 - "$out" <<'PY'
import http.client, json, os, re, shutil, signal, socket, sqlite3, subprocess, sys, tempfile, time
import urllib.parse

HOST = "127.0.0.1"
N = int(os.environ["BENCH_N"])
LIMIT = float(os.environ["BENCH_LIMIT"])
PG_ADMIN = os.environ["BENCH_ADMIN_URL"]
A, B = os.environ["SITEMAPD_A"], os.environ["SITEMAPD_B"]
BASE = "https://www.example.com"
SEED_PG = os.environ["SEED_PG"]
WORK = tempfile.mkdtemp(prefix="sitemapd-upgrade-")
servers, databases = [], []


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def freeport():
    """Below the ephemeral range, TCP and UDP free, never twice in a run (scripts/lib/ports.py)."""
    sys.path.insert(0, os.environ["PORTS_LIB"])
    from ports import free_port
    return free_port()


def psql(url, statement):
    return subprocess.run(["psql", url, "-qtAX", "-v", "ON_ERROR_STOP=1", "-c", statement],
                          check=True, capture_output=True, text=True, timeout=LIMIT).stdout.strip()


def pg_url(name):
    u = urllib.parse.urlsplit(PG_ADMIN)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, ""))


def env_for(url):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
    env.update({"DATABASE_URL": url, "SITEMAP_BASE_URL": BASE, "RUST_LOG": "warn",
                "DATABASE_MAX_CONNECTIONS": "8"})
    return env


# SQLite gets the rows of bench/seed.sql (the same shapes: query strings with &, non-ASCII
# paths, absolute URLs, 10 % NULL lastmod, some NULL changefreq and priority).
SEED_SQLITE = """
WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < {n})
INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority)
SELECT i,
  CASE i % 8
    WHEN 0 THEN '/fr/article.php?AIndex=' || i || '&lang=fr&ref=accueil'
    WHEN 1 THEN 'https://www.example.com/produits/catégorie-' || (i % 97) || '/élément-' || i || '.html'
    WHEN 2 THEN '/de/straße/größe-' || i || '?farbe=grün&sortierung=preis-aufsteigend'
    WHEN 3 THEN '/blog/' || (2010 + i % 15) || '/' || printf('%02d', 1 + i % 12)
                || '/post-' || i || '-how-to-choose-the-right-running-shoes-for-trail-and-road'
    WHEN 4 THEN '/search?q=shoes+size+' || (i % 50) || '&page=' || (i % 400) || '&id=' || i
                || '&utm_source=newsletter&utm_medium=email&utm_campaign=spring-sale'
    WHEN 5 THEN '/ja/製品/カテゴリー/' || i
    WHEN 6 THEN '/shop/item/' || i || '?variant=' || printf('%012x', (i * 2654435761) % 281474976710655) || '&color=navy'
    ELSE        '/ru/статьи/' || i || '-новости-дня?p=' || i
  END,
  CASE WHEN i % 10 = 3 THEN NULL
       ELSE strftime('%Y-%m-%dT%H:%M:%SZ', 1420070400 + (i * 7919) % 315360000, 'unixepoch') END,
  CASE i % 7 WHEN 0 THEN 'daily' WHEN 1 THEN 'weekly' WHEN 2 THEN 'monthly' WHEN 3 THEN NULL
             WHEN 4 THEN 'yearly' WHEN 5 THEN 'hourly' ELSE 'never' END,
  CASE WHEN i % 5 = 0 THEN NULL ELSE (i % 11) / 10.0 END
FROM seq;
"""


def make_database(kind):
    """A fresh database of N rows; returns its URL and a size description."""
    if kind == "sqlite":
        path = os.path.join(WORK, "upgrade.db")
        url = f"sqlite://{path}"
        databases.append(("sqlite", path))
        subprocess.run([A, "migrate"], env=env_for(url), check=True, capture_output=True,
                       timeout=LIMIT)
        db = sqlite3.connect(path)
        db.executescript(SEED_SQLITE.format(n=N))
        db.commit()
        db.execute("ANALYZE")
        db.close()
        return url
    name = f"sitemapd_upgrade_{N}"
    psql(PG_ADMIN, f'DROP DATABASE IF EXISTS "{name}"')
    psql(PG_ADMIN, f'CREATE DATABASE "{name}"')
    databases.append(("postgres", name))
    url = pg_url(name)
    subprocess.run([A, "migrate"], env=env_for(url), check=True, capture_output=True,
                   timeout=LIMIT)
    subprocess.run(["psql", url, "-q", "-v", f"n={N}", "-f", SEED_PG], check=True,
                   capture_output=True, timeout=LIMIT)
    return url


def database_mib(kind, url):
    if kind == "sqlite":
        path = url[len("sqlite://"):]
        return sum(os.path.getsize(path + x) for x in ("", "-wal") if os.path.exists(path + x)) / 2**20
    return int(psql(url, "SELECT pg_database_size(current_database())")) / 2**20


def drop_databases():
    for kind, what in databases:
        try:
            if kind == "sqlite":
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(what + suffix):
                        os.remove(what + suffix)
            else:
                psql(PG_ADMIN, f'DROP DATABASE IF EXISTS "{what}"')
        except Exception as e:  # keep cleaning up the others
            log(f"could not drop {what}: {e}")
    databases.clear()


class Server:
    def __init__(self, binary, url):
        self.port, self.admin_port = freeport(), freeport()
        env = env_for(url)
        env["BIND_ADDR"] = f"{HOST}:{self.port}"
        env["ADMIN_BIND_ADDR"] = f"{HOST}:{self.admin_port}"
        self.started = time.monotonic()
        self.proc = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(WORK, "server.log"), "ab"))
        servers.append(self)

    def request(self, method, path, port=None):
        try:
            c = http.client.HTTPConnection(HOST, port or self.port, timeout=30)
            c.request(method, path, headers={"Host": "www.example.com"})
            r = c.getresponse()
            body = r.read()
            c.close()
            return r.status, r.getheader("ETag"), body
        except OSError:
            return None, None, b""

    def until(self, what, check, poll=0.005):
        """Seconds since spawn when check() first holds (bounded by LIMIT)."""
        deadline = self.started + LIMIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the server exited while waiting for {what}")
            if check():
                return time.monotonic() - self.started
            time.sleep(poll)
        raise SystemExit(f"timed out after {LIMIT:.0f} s waiting for {what}")

    def ready(self):
        return self.request("GET", "/readyz")[2] == b"ready\n"

    def version(self):
        body = self.request("GET", "/status.json", self.admin_port)[2]
        return json.loads(body).get("version") if body else None

    def peak_rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        peak = self.peak_rss_mib()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        servers.remove(self)
        return peak


def stop_all(*_):
    for s in list(servers):
        s.stop()
    drop_databases()
    shutil.rmtree(WORK, ignore_errors=True)


def sample_paths(server):
    """The index and its first, middle and last files."""
    body = server.request("GET", "/sitemap_index.xml")[2].decode()
    files = [urllib.parse.urlsplit(u).path for u in re.findall(r"<loc>([^<]+)</loc>", body)]
    picks = sorted({0, len(files) // 2, len(files) - 1})
    return ["/sitemap_index.xml"] + [files[i] for i in picks], len(files)


def switch(url, binary, paths, etags, out, label):
    """Starts binary on the stored state; times 200s on paths and compares their ETags."""
    s = Server(binary, url)
    first = {}
    for path in paths:
        first[path] = s.until(f"200 on {path}", lambda p=path: s.request("GET", p)[0] == 200)
    served = {p: s.request("HEAD", p)[1] for p in paths}
    same = all(served[p] == etags[p] for p in paths)
    out[f"{label}: index 200 (s)"] = first[paths[0]]
    out[f"{label}: every sampled file 200 (s)"] = max(first.values())
    out[f"{label}: ETags equal A's ({len(paths)} sampled)"] = "yes" if same else \
        "NO: " + ", ".join(p for p in paths if served[p] != etags[p])
    out[f"{label}: version running"] = s.version()
    out[f"{label}: every file verified (s)"] = s.until("readiness", s.ready, poll=0.25)
    after = {p: s.request("HEAD", p)[1] for p in paths}
    out[f"{label}: ETags still A's after verification"] = \
        "yes" if all(after[p] == etags[p] for p in paths) else "NO"
    out["peak RSS (MiB)"] = max(out.get("peak RSS (MiB)", 0), s.stop())
    return same


def run(kind):
    log(f"upgrade.sh: {kind}, seeding {N:,} rows")
    t0 = time.monotonic()
    url = make_database(kind)
    out = {"seeding (s)": time.monotonic() - t0}
    a = Server(A, url)
    out["A first start: index 200 (s)"] = a.until(
        "the index", lambda: a.request("GET", "/sitemap_index.xml")[0] == 200, poll=0.05)
    out["A first start: every file verified (s)"] = a.until("readiness", a.ready, poll=0.1)
    paths, files = sample_paths(a)
    out["files"] = files
    etags = {p: a.request("HEAD", p)[1] for p in paths}
    out["A version running"] = a.version()
    out["peak RSS (MiB)"] = a.stop()
    out["database size after A (MiB)"] = database_mib(kind, url)
    ok = switch(url, B, paths, etags, out, "upgrade A → B")
    ok &= switch(url, A, paths, etags, out, "plain restart of A (for comparison)")
    drop_databases()
    return out, ok


def table(columns, runs):
    keys = []
    for r in runs:
        keys += [k for k in r if k not in keys]
    show = lambda v: "–" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)
    lines = ["| measure | " + " | ".join(columns) + " |", "| --- |" + " --- |" * len(columns)]
    lines += [f"| {k} | " + " | ".join(show(r.get(k)) for r in runs) + " |" for k in keys]
    return "\n".join(lines)


def main():
    signal.signal(signal.SIGINT, lambda *_: (stop_all(), sys.exit(130)))
    signal.signal(signal.SIGTERM, lambda *_: (stop_all(), sys.exit(143)))
    kinds = os.environ["BENCH_DBS"].split()
    runs, all_ok = [], True
    try:
        for kind in kinds:
            out, ok = run(kind)
            runs.append(out)
            all_ok &= ok
    finally:
        stop_all()
    versions = subprocess.run([A, "--version"], capture_output=True, text=True).stdout.strip(), \
        subprocess.run([B, "--version"], capture_output=True, text=True).stdout.strip()
    text = (f"bench/upgrade.sh, {N:,} rows, page size 50,000; A = `{versions[0]}`, "
            f"B = `{versions[1]}` (same sources), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n"
            + table([f"{k} {N:,} rows" for k in kinds], runs) + "\n")
    print(text)
    with open(sys.argv[1], "w") as f:
        f.write(text)
    log(f"upgrade.sh: saved {sys.argv[1]}")
    sys.exit(0 if all_ok else 1)


main()
PY
