#!/usr/bin/env python3
"""Replicas that share the work (bench/replicas.sh): what the database reads from the entries
table with one and with three replicas, for the same changes and while idle, in one run.

For N rows (default 200,000) in a database of its own (sitemapd_replicas_<N>, seeded once with
bench/seed.sql and kept), page size 50,000:

  changes   the replicas started and current, then the same 20 single-row UPDATEs, each waited
            for until every replica serves its file's new ETag: rows read from sitemap_entries
            in that time
  idle      then 60 s with nothing changed: rows read from sitemap_entries

Rows read: PostgreSQL's pg_stat_user_tables (seq_tup_read + idx_tup_fetch); MariaDB's
information_schema.TABLE_STATISTICS.ROWS_READ (the userstat plugin, switched on here).
Python 3 standard library only; every server is on 127.0.0.1 and stopped by its PID.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale  # noqa: E402  (shares the seeding, the SQL runner and the server wrapper)

IDLE_SECS = int(os.environ.get("BENCH_IDLE_SECS", "60"))
UPDATES = 20


def rows_read(name):
    if scale.DB_KIND == "postgres":
        scale.sql(name, "SELECT pg_stat_clear_snapshot()")
        out = scale.sql(name, "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
                              "FROM pg_stat_user_tables WHERE relname = 'sitemap_entries'")
    else:
        out = scale.sql(name, "SELECT coalesce(sum(ROWS_READ), 0) FROM "
                              "information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = "
                              f"'{name}' AND TABLE_NAME = 'sitemap_entries'")
    return int(out or 0)


def settle_stats():
    # PostgreSQL's statistics reach the view after up to a second.
    time.sleep(1.5 if scale.DB_KIND == "postgres" else 0.2)


def run(name, n, replicas):
    scale.clear_state(name)
    if scale.DB_KIND != "postgres":
        scale.sql(name, "SET GLOBAL userstat = 1", admin=True)
    servers = [scale.Server(name, scale.TABLE_BASE, {"SITEMAP_REFRESH_SECS": "60", "REPLICA_LEASE": "on"})
               for _ in range(replicas)]
    try:
        for s in servers:
            s.until("index 200", s.status_is("/sitemap_index.xml"))
        for s in servers:
            s.until("ready", s.ready())
        time.sleep(3)
        settle_stats()
        before = rows_read(name)
        step = max(n // UPDATES, 1)
        for i in range(UPDATES):
            row = 1 + i * step
            file = scale.file_of(name, scale.TABLE_BASE + "/", row)
            etags = [s.etag(file) for s in servers]
            scale.sql(name, f"UPDATE sitemap_entries SET lastmod = now() WHERE id = {row}"
                      if scale.DB_KIND == "postgres" else
                      f"UPDATE sitemap_entries SET lastmod = NOW(6) WHERE id = {row}")
            for s, etag in zip(servers, etags):
                s.until("the new ETag", lambda s=s, etag=etag: s.etag(file) != etag)
        settle_stats()
        changes = rows_read(name) - before
        before = rows_read(name)
        time.sleep(IDLE_SECS)
        settle_stats()
        idle = rows_read(name) - before
        return {"changes": changes, "idle": idle}
    finally:
        for s in servers:
            s.stop()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    name = f"sitemapd_replicas_{n}"
    scale.seed(name, n)
    one = run(name, n, 1)
    three = run(name, n, 3)
    print(json.dumps({"rows": n, "db": scale.DB_KIND, "one": one, "three": three}))


if __name__ == "__main__":
    main()
