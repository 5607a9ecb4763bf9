#!/usr/bin/env python3
"""bench/writes.py: writes at a steady rate while a crawler fetches every file; used by
bench/writes.sh. Prints one line: rate, requests, non-2xx/304 answers and cut bodies.

    writes.py RATE SECONDS BASE_HTTP CLIENT_CMD...

CLIENT_CMD is a SQL client reading statements on stdin (psql or mariadb), kept open for the
whole run; RATE statements per second are written to it, each an UPDATE of one random row.
"""
import http.client
import random
import re
import subprocess
import sys
import threading
import time

rate, seconds, base = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
client_cmd = sys.argv[4:]
host, port = re.match(r"http://([^:/]+):(\d+)", base).groups()
port = int(port)
stop = threading.Event()


def writer(rows):
    proc = subprocess.Popen(client_cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True)
    sent, start = 0, time.monotonic()
    while not stop.is_set():
        due = int((time.monotonic() - start) * rate)
        while sent < due:
            sent += 1
            row = random.randint(1, rows)
            proc.stdin.write(
                f"UPDATE sitemap_entries SET loc = '/w/{row}/{sent}', "
                f"lastmod = CURRENT_TIMESTAMP WHERE id = {row};\n")
        proc.stdin.flush()
        time.sleep(0.005)
    proc.stdin.close()
    proc.wait(timeout=60)
    writer.sent = sent


def fetch(conn, path):
    conn.request("GET", path, headers={"Accept-Encoding": "gzip"})
    resp = conn.getresponse()
    body = resp.read()  # raises IncompleteRead on a cut body
    return resp.status, body


def crawler(results):
    conn = http.client.HTTPConnection(host, port, timeout=60)
    while not stop.is_set():
        try:
            status, index = fetch(conn, "/sitemap_index.xml")
            results["requests"] += 1
            if status not in (200, 304):
                results["failed"] += 1
                results["statuses"][status] = results["statuses"].get(status, 0) + 1
                continue
            files = re.findall(rb"<loc>[^<]*/(sitemap-\d+\.xml\.gz)</loc>", index)
            for name in files:
                if stop.is_set():
                    break
                status, _ = fetch(conn, "/" + name.decode())
                results["requests"] += 1
                if status not in (200, 304):
                    results["failed"] += 1
                    results["statuses"][status] = results["statuses"].get(status, 0) + 1
        except (http.client.HTTPException, OSError) as e:
            results["requests"] += 1
            results["cut"] += 1
            results["statuses"][type(e).__name__] = results["statuses"].get(type(e).__name__, 0) + 1
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=60)


rows = int(subprocess.check_output(client_cmd + ["-c" if "psql" in client_cmd[0] else "-e",
                                                 "SELECT max(id) FROM sitemap_entries"],
                                   text=True).split()[-1])
results = {"requests": 0, "failed": 0, "cut": 0, "statuses": {}}
threads = [threading.Thread(target=writer, args=(rows,)), threading.Thread(target=crawler,
                                                                           args=(results,))]
for t in threads:
    t.start()
time.sleep(seconds)
stop.set()
for t in threads:
    t.join(timeout=120)
bad = results["failed"] + results["cut"]
share = 100.0 * bad / max(results["requests"], 1)
print(f"| {rate} | {getattr(writer, 'sent', 0)} | {results['requests']} | {results['failed']} "
      f"| {results['cut']} | {share:.2f} % | {results['statuses'] or '-'} |")
