#!/usr/bin/env python3
"""The scale benchmark (bench/scale.sh): what keeping current costs at N rows.

Python 3 standard library only; the databases are driven with psql / mariadb. Every request goes
to 127.0.0.1; every server this starts is stopped by its PID. Prints a markdown table.

For N rows in a database of its own (sitemapd_scale_<N>, seeded once with bench/seed.sql and
kept; BENCH_RESEED=1 seeds again), page size 50,000:

  first start     state tables emptied, then `serve`: seconds from spawn to robots.txt 200, to
                  the index 200 (first sweep done)
  restart         `serve` again on the stored state after one row was changed while it was down:
                  seconds to robots.txt 200, to the index 200, to the changed file's new ETag
                  (HEAD only, so no render can report it), and to /readyz "ready" (every file
                  verified in the background)
  view            a view over the table as SITEMAP_SOURCE (another base URL, so its own state),
                  SITEMAP_REFRESH_SECS=20: CPU seconds of sitemapd and of the database per
                  refresh period while nothing changes (over 60 s, after two refreshes), then
                  seconds from an UPDATE of the table to the new ETag
  compaction      (N ≤ 1M) 75 % of the rows deleted while serving: files before and after
  page size       (N ≤ 1M) 250,000 rows, SITEMAP_PAGE_SIZE 50,000 → 10,000 → 50,000: files
  peak RSS        VmHWM of each server, the largest

Environment: BENCH_DB (postgres or mariadb), BENCH_ADMIN_URL, BENCH_MYSQL_URL, SITEMAPD (the
binary), BENCH_ONLY=view (the view step alone, three times: the slowest UPDATE → new ETag).
"""

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse

HOST = "127.0.0.1"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts", "lib"))
from ports import free_port  # noqa: E402  (the checks' and benchmarks' one port helper)
DB_KIND = os.environ.get("BENCH_DB", "postgres")
PG_ADMIN = os.environ.get("BENCH_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
MY_ADMIN = os.environ.get("BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306/")
BINARY = os.environ["SITEMAPD"]
TABLE_BASE = "https://www.example.com"
VIEW_BASE = "https://view.example.com"
LIMIT = 1800  # seconds any one wait may take


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def freeport():
    """Below the ephemeral range, TCP and UDP free, never twice in a run (scripts/lib/ports.py)."""
    return free_port()


def db_url(name):
    admin = PG_ADMIN if DB_KIND == "postgres" else MY_ADMIN
    u = urllib.parse.urlsplit(admin)
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, ""))


def sql(name, statement, admin=False):
    """Runs statement in database name (or the admin database); returns stdout, stripped."""
    if DB_KIND == "postgres":
        url = PG_ADMIN if admin else db_url(name)
        cmd = ["psql", url, "-qtAX", "-v", "ON_ERROR_STOP=1", "-c", statement]
    else:
        u = urllib.parse.urlsplit(MY_ADMIN)
        cmd = ["mariadb", "-h", u.hostname or HOST, "-P", str(u.port or 3306),
               "-u", u.username or "root", "-N", "-B"]
        if u.password:
            cmd.append(f"-p{u.password}")
        if not admin:
            cmd.append(name)
        cmd += ["-e", statement]
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          timeout=LIMIT).stdout.strip()


def seed(name, n):
    """A database of n rows, made once (the same rows as bench/run.sh's)."""
    exists = sql(name, f"SELECT 1 FROM pg_database WHERE datname = '{name}'", admin=True) \
        if DB_KIND == "postgres" else \
        sql(name, f"SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{name}'",
            admin=True)
    if exists and not os.environ.get("BENCH_RESEED"):
        try:
            if int(sql(name, "SELECT count(*) FROM sitemap_entries")) == n:
                return
        except subprocess.CalledProcessError:
            pass
    log(f"seeding {n:,} rows into {name}")
    if DB_KIND == "postgres":
        sql(name, f'DROP DATABASE IF EXISTS "{name}"', admin=True)
        sql(name, f'CREATE DATABASE "{name}"', admin=True)
    else:
        sql(name, f"DROP DATABASE IF EXISTS `{name}`", admin=True)
        sql(name, f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4", admin=True)
    subprocess.run([BINARY, "migrate"], check=True, capture_output=True, timeout=LIMIT,
                   env=server_env(name, TABLE_BASE, {}))
    if DB_KIND == "postgres":
        subprocess.run(["psql", db_url(name), "-q", "-v", f"n={n}", "-f",
                        os.path.join(HERE, "seed.sql")], check=True, timeout=LIMIT,
                       capture_output=True)
    else:
        with open(os.path.join(HERE, "seed-mysql.sql")) as f:
            sql(name, f"SET @n = {n}; " + f.read())


def server_env(name, base, extra):
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
    env.update({"DATABASE_URL": db_url(name), "SITEMAP_BASE_URL": base, "RUST_LOG": "warn",
                "DATABASE_MAX_CONNECTIONS": "8"})
    env.update(extra)
    return env


class Server:
    def __init__(self, name, base, extra=None):
        self.port = freeport()
        env = server_env(name, base, extra or {})
        env["BIND_ADDR"] = f"{HOST}:{self.port}"
        self.host = urllib.parse.urlsplit(base).netloc
        self.started = time.monotonic()
        self.proc = subprocess.Popen([BINARY, "serve"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def request(self, method, path):
        try:
            c = http.client.HTTPConnection(HOST, self.port, timeout=60)
            c.request(method, path, headers={"Host": self.host})
            r = c.getresponse()
            body = r.read()
            c.close()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, body
        except OSError:
            return None, {}, b""

    def until(self, what, check, poll=0.02):
        """Seconds since spawn when check() first holds."""
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the server exited while waiting for {what}")
            if check():
                return time.monotonic() - self.started
            time.sleep(poll)
        raise SystemExit(f"timed out waiting for {what}")

    def status_is(self, path, status=200):
        return lambda: self.request("GET", path)[0] == status

    def ready(self):
        return lambda: self.request("GET", "/readyz")[2] == b"ready\n"

    def etag(self, path):
        return self.request("HEAD", path)[1].get("etag")

    def files(self):
        body = self.request("GET", "/sitemap_index.xml")[2].decode()
        return len(re.findall(r"<loc>", body))

    def rss_peak_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def cpu_seconds(self):
        return process_cpu(self.proc.pid)

    def stop(self):
        peak = self.rss_peak_mib()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return peak


def process_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def database_cpu():
    """CPU seconds of every process of the database server (all its backends)."""
    names = ("postgres",) if DB_KIND == "postgres" else ("mariadbd", "mysqld")
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            if comm in names:
                total += process_cpu(int(pid))
        except OSError:
            pass
    return total


def file_of(name, site, row_id):
    page = sql(name, "SELECT page_no FROM sitemapd_pages WHERE site = '{}' AND first_id <= {} "
                     "ORDER BY first_id DESC LIMIT 1".format(site, row_id))
    return f"/sitemap-{page}.xml.gz"


def clear_state(name):
    for table in ("sitemapd_pages", "sitemapd_files", "sitemapd_cursors"):
        sql(name, f"DELETE FROM {table}")


def starts(name, n, out):
    clear_state(name)
    s = Server(name, TABLE_BASE)
    out["first start: robots.txt 200 (s)"] = s.until("robots.txt", s.status_is("/robots.txt"))
    out["first start: sitemaps served (s)"] = s.until("the index", s.status_is("/sitemap_index.xml"))
    s.until("ready", s.ready())
    out["files"] = s.files()
    changed = n // 2
    path = file_of(name, TABLE_BASE + "/", changed)
    before = s.etag(path)
    peaks = [s.stop()]
    sql(name, f"UPDATE sitemap_entries SET loc = '/changed-while-down-{time.time_ns()}' "
              f"WHERE id = {changed}")
    s = Server(name, TABLE_BASE)
    out["restart: robots.txt 200 (s)"] = s.until("robots.txt", s.status_is("/robots.txt"))
    out["restart: sitemaps served (s)"] = s.until("the index", s.status_is("/sitemap_index.xml"))
    out["restart: changed file's new ETag (s)"] = s.until(
        "the new ETag", lambda: s.etag(path) not in (None, before), poll=0.05)
    out["restart: every file verified (s)"] = s.until("verified", s.ready(), poll=0.5)
    peaks.append(s.stop())
    return peaks


def view(name, n, out):
    sql(name, "DROP VIEW IF EXISTS scale_view")
    sql(name, "CREATE VIEW scale_view AS "
              "SELECT id, loc, lastmod, changefreq, priority FROM sitemap_entries")
    clear_state(name)
    refresh = 20
    s = Server(name, VIEW_BASE, {"SITEMAP_SOURCE": "scale_view",
                                 "SITEMAP_REFRESH_SECS": str(refresh)})
    s.until("ready", s.ready(), poll=0.5)
    # Steady state: a view nothing logs is read whole once more at its first refresh (the
    # first sweep's new files have no summaries yet); measure the refreshes after that.
    time.sleep(2 * refresh + 2)
    window = 60
    cpu0, db0 = s.cpu_seconds(), database_cpu()
    time.sleep(window)
    cpu1, db1 = s.cpu_seconds(), database_cpu()
    periods = window / refresh
    out["view idle: sitemapd CPU-s per refresh"] = (cpu1 - cpu0) / periods
    out["view idle: database CPU-s per refresh"] = (db1 - db0) / periods
    changed = n // 3
    path = file_of(name, VIEW_BASE + "/", changed)
    before = s.etag(path)
    sql(name, f"UPDATE sitemap_entries SET loc = '/changed-behind-view-{time.time_ns()}' "
              f"WHERE id = {changed}")
    t0 = time.monotonic()
    s.until("the new ETag", lambda: s.etag(path) not in (None, before), poll=0.05)
    out["view: UPDATE → new ETag (s)"] = time.monotonic() - t0
    return [s.stop()]


def compaction(out):
    name, n = "sitemapd_scale_compact", 1_000_000
    seed(name, n)
    clear_state(name)
    s = Server(name, TABLE_BASE)
    s.until("ready", s.ready(), poll=0.5)
    out["compaction: files before"] = s.files()
    sql(name, "DELETE FROM sitemap_entries WHERE id % 4 <> 0")
    time.sleep(5)
    s.until("settled", s.ready(), poll=0.5)
    deadline = time.monotonic() + 120
    files = s.files()
    while time.monotonic() < deadline:
        time.sleep(2)
        now = s.files()
        if now == files:
            break
        files = now
    out["compaction: files after deleting 75 %"] = files
    peak = s.stop()
    sql(name, f'DROP DATABASE "{name}"' if DB_KIND == "postgres" else f"DROP DATABASE `{name}`",
        admin=True)
    return [peak]


def page_size(out):
    name, n = "sitemapd_scale_250k", 250_000
    seed(name, n)
    clear_state(name)
    peaks, counts = [], []
    for size in (50000, 10000, 50000):
        s = Server(name, TABLE_BASE, {"SITEMAP_PAGE_SIZE": str(size)})
        s.until("ready", s.ready(), poll=0.2)
        counts.append(str(s.files()))
        peaks.append(s.stop())
    out["page size 50,000 → 10,000 → 50,000 (files)"] = " → ".join(counts)
    return peaks


def main():
    n = int(sys.argv[1])
    name = f"sitemapd_scale_{n}"
    seed(name, n)
    out = {}
    if os.environ.get("BENCH_ONLY") == "view":
        # The view step alone, three times (the measure is the slowest of three runs).
        slowest = 0.0
        for _ in range(3):
            peaks = view(name, n, out)
            slowest = max(slowest, out["view: UPDATE → new ETag (s)"])
        out["view: UPDATE → new ETag, slowest of 3 (s)"] = slowest
        out["peak RSS (MiB)"] = max(peaks)
        print(json.dumps(out))
        return
    peaks = starts(name, n, out)
    peaks += view(name, n, out)
    if n <= 1_000_000:
        peaks += compaction(out)
        peaks += page_size(out)
    out["peak RSS (MiB)"] = max(peaks)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
