#!/usr/bin/env python3
"""HTTP-side measures for bench/run.sh (Python 3 standard library, plus the `brotli` module,
Google's C library, for the brotli crawl and floor: `pip install brotli`).

Every request goes to 127.0.0.1 only. Each subcommand prints one JSON object on stdout
(except `freeport`, `dburl` and `wrk-parse`, which print plain values for bash, and `mycnf`,
which writes a file).

  freeport                      a free port below the ephemeral range (scripts/lib/ports.py)
  dburl ADMIN_URL DBNAME        ADMIN_URL with its database name replaced by DBNAME
  mycnf MYSQL_URL FILE          writes FILE (mode 600), an option file for the mariadb/mysql
                                client with the URL's host, port, user and password, over TCP
                                and in utf8mb4 (for --defaults-file: the password stays out of
                                the command line, and no other option file is read)
  wait  PORT TIMEOUT            poll /readyz and /sitemap_index.xml until both answer 200
  crawl PORT OUTDIR [CODING]    cold full crawl: the index, then every page it lists, in order,
                                on one keep-alive connection; timed end to end (first byte of the
                                request for the index to the last byte of the last page).
                                Bodies stay in memory while timing; afterwards each page is
                                checked (decoded, <url> count) and its XML written to OUTDIR for
                                the floors. CODING: `gz` (default) fetches the .xml.gz files the
                                index lists; `br` and `gzip` fetch the same files as .xml with
                                Accept-Encoding `gzip, deflate, br` (what Googlebot sends) or
                                `gzip`; their XML, decoded, must equal what OUTDIR holds already
                                (from the `gz` crawl), byte for byte.
  floor-br OUTDIR QUALITY LGWIN brotli (C library) of each page's XML in OUTDIR at the quality
                                and window sitemapd uses, timed, summed over pages
  latency PORT FIRST LAST REPS  REPS renders each of the first and the last page (interleaved,
                                full body), median in ms. Meant for a server started with
                                SITEMAP_CACHE_MB=0, so that every request renders.
  etag  PORT PATH [ACCEPT]      ETag of PATH (with Accept-Encoding ACCEPT, if given), and the
                                status/body size of a conditional re-fetch with the same header
  wrk-parse FILE                requests/s, p50 and p99 (ms) and status counts of a wrk run
  cpubusy SECONDS               % of all CPUs busy over SECONDS (from /proc/stat): other work
                                on the machine skews every number, so run.sh records it
"""

import gzip
import http.client
import json
import os
import re
import socket
import statistics
import sys
import time
import urllib.parse

HOST = "127.0.0.1"


def conn(port, timeout=120):
    return http.client.HTTPConnection(HOST, port, timeout=timeout)


def get(c, path, headers=None):
    """One GET on connection c; returns (status, headers dict (lower-case), body bytes)."""
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def freeport():
    """Below the ephemeral range, TCP and UDP free (scripts/lib/ports.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "lib"))
    from ports import free_port
    print(free_port())


def dburl(admin_url, name):
    u = urllib.parse.urlsplit(admin_url)
    print(urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment)))


def mycnf(url, path):
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("mysql", "mariadb"):
        raise SystemExit(f"not a mysql:// URL: {u.scheme}://…")

    def value(v):  # option-file value: quoted, so '#', spaces and quotes survive
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = ["[client]", f"host={value(u.hostname or '127.0.0.1')}", f"port={u.port or 3306}",
             "protocol=tcp", "default-character-set=utf8mb4"]
    if u.username:
        lines.append(f"user={value(urllib.parse.unquote(u.username))}")
    if u.password:
        lines.append(f"password={value(urllib.parse.unquote(u.password))}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")


def wait(port, timeout):
    """Both /readyz and the index must answer 200: the first start sweeps every row first."""
    deadline = time.monotonic() + float(timeout)
    start = time.monotonic()
    last = "no answer yet"
    while time.monotonic() < deadline:
        try:
            c = conn(port, timeout=10)
            s1, _, _ = get(c, "/readyz")
            s2, _, _ = get(c, "/sitemap_index.xml") if s1 == 200 else (None, None, None)
            c.close()
            if s1 == 200 and s2 == 200:
                print(json.dumps({"ready_s": round(time.monotonic() - start, 3)}))
                return 0
            last = f"/readyz {s1}, index {s2}"
        except (OSError, http.client.HTTPException) as e:
            last = repr(e)
        time.sleep(0.2)
    print(json.dumps({"error": f"not ready after {timeout}s: {last}"}))
    return 1


LOC = re.compile(rb"<loc>([^<]+)</loc>")


def page_paths(index_body):
    """Local paths of the pages an index lists (https://www.example.com/sitemap-K.xml.gz → /sitemap-K.xml.gz)."""
    return [urllib.parse.urlsplit(m.decode()).path for m in LOC.findall(index_body)]


CRAWL_ACCEPT = {"gz": None, "br": "gzip, deflate, br", "gzip": "gzip"}


def decode(body, encoding):
    if encoding == "br":
        import brotli  # Google's C decoder: independent of the encoder sitemapd uses

        return brotli.decompress(body)
    if encoding == "gzip":
        return gzip.decompress(body)  # raises on a truncated or corrupt body
    if encoding:
        raise SystemExit(f"unexpected Content-Encoding {encoding!r}")
    return body


def crawl(port, outdir, coding="gz"):
    if coding not in CRAWL_ACCEPT:
        raise SystemExit(f"crawl: CODING must be one of {sorted(CRAWL_ACCEPT)}, got {coding!r}")
    accept = CRAWL_ACCEPT[coding]
    headers = {"Accept-Encoding": accept} if accept else {}
    c = conn(port)
    t0 = time.perf_counter()
    status, index_headers, index = get(c, "/sitemap_index.xml", headers)
    if status != 200:
        raise SystemExit(f"index answered {status}")
    paths = page_paths(decode(index, index_headers.get("content-encoding", "")))
    if coding != "gz":
        paths = [p.removesuffix(".gz") for p in paths]
    bodies, per_page = [], []
    for p in paths:
        t = time.perf_counter()
        status, h, body = get(c, p, headers)
        per_page.append(time.perf_counter() - t)
        if status != 200:
            raise SystemExit(f"{p} answered {status}")
        bodies.append((p, h, body))
    wall = time.perf_counter() - t0
    c.close()

    # Checks and files for the floors, outside the timed part.
    os.makedirs(outdir, exist_ok=True)
    urls, xml_bytes = 0, 0
    for i, (p, h, body) in enumerate(bodies):
        ctype, encoding = h.get("content-type", ""), h.get("content-encoding", "")
        if coding == "gz":
            if not ctype.startswith("application/gzip") or encoding:
                raise SystemExit(f"{p}: Content-Type {ctype!r}, Content-Encoding {encoding!r}")
            xml = gzip.decompress(body)
        else:
            want = "br" if coding == "br" else "gzip"
            if encoding != want:
                raise SystemExit(f"{p}: Content-Encoding {encoding!r}, not {want}")
            xml = decode(body, encoding)
        urls += xml.count(b"<url>")
        xml_bytes += len(xml)
        path = os.path.join(outdir, f"page-{i + 1:05d}.xml")
        if coding == "gz":
            with open(path, "wb") as f:
                f.write(xml)
        else:
            with open(path, "rb") as f:
                if f.read() != xml:
                    raise SystemExit(f"{p}: {coding} decodes to other bytes than the .xml.gz file")
    print(json.dumps({
        "wall_s": round(wall, 4),
        "bytes": len(index) + sum(len(b) for _, _, b in bodies),
        "index_bytes": len(index),
        "xml_bytes": xml_bytes,
        "pages": len(paths),
        "urls": urls,
        "first": paths[0],
        "last": paths[-1],
        "slowest_page_s": round(max(per_page), 4),
        "median_page_s": round(statistics.median(per_page), 4),
    }))


def floor_br(outdir, quality, lgwin):
    import brotli

    files = sorted(f for f in os.listdir(outdir) if f.startswith("page-") and f.endswith(".xml"))
    total, out = 0.0, 0
    for name in files:
        with open(os.path.join(outdir, name), "rb") as f:
            xml = f.read()
        t = time.perf_counter()
        out += len(brotli.compress(xml, quality=int(quality), lgwin=int(lgwin)))
        total += time.perf_counter() - t
    print(json.dumps({"seconds": round(total, 3), "bytes": out, "pages": len(files)}))


def latency(port, first, last, reps):
    times = {first: [], last: []}
    c = conn(port)
    for _ in range(int(reps)):
        for p in (first, last):  # interleaved, so drift hits both alike
            t = time.perf_counter()
            status, _, body = get(c, p)
            times[p].append((time.perf_counter() - t) * 1000)
            if status != 200 or not body:
                raise SystemExit(f"{p} answered {status} with {len(body)} bytes")
    c.close()
    f, l = statistics.median(times[first]), statistics.median(times[last])
    print(json.dumps({
        "first_ms": round(f, 2), "last_ms": round(l, 2), "ratio": round(l / f, 3),
        "first_all_ms": [round(x, 1) for x in times[first]],
        "last_all_ms": [round(x, 1) for x in times[last]],
    }))


def etag(port, path, accept=None):
    headers = {"Accept-Encoding": accept} if accept else {}
    c = conn(port)
    status, h, _ = get(c, path, headers)
    tag = h.get("etag")
    if status != 200 or not tag:
        raise SystemExit(f"{path}: status {status}, ETag {tag!r}")
    s304, _, body = get(c, path, {**headers, "If-None-Match": tag})
    c.close()
    print(json.dumps({"etag": tag, "encoding": h.get("content-encoding", ""),
                      "conditional_status": s304, "conditional_body": len(body)}))


UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def wrk_parse(path):
    text = open(path, encoding="utf-8", errors="replace").read()

    def pct(p):
        m = re.search(rf"^\s*{p}%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)
        return round(float(m.group(1)) * UNIT_MS[m.group(2)], 3) if m else None

    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    total = re.search(r"(\d+) requests in", text)
    errors = re.search(r"Socket errors: (.*)", text)
    statuses = {int(k): int(v) for k, v in re.findall(r"^status (\d+) (\d+)$", text, re.M)}
    print(json.dumps({
        "rps": float(rps.group(1)) if rps else None,
        "requests": int(total.group(1)) if total else None,
        "p50_ms": pct(50), "p99_ms": pct(99),
        "statuses": statuses,
        "all_304": bool(statuses) and set(statuses) == {304},
        "socket_errors": errors.group(1).strip() if errors else "",
    }))


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle + iowait
    return sum(v[:8]) - idle, sum(v[:8])


def cpubusy(seconds):
    b0, t0 = cpu_times()
    time.sleep(float(seconds))
    b1, t1 = cpu_times()
    print(round(100.0 * (b1 - b0) / max(1, t1 - t0)))


def main(argv):
    cmd, args = argv[1], argv[2:]
    fns = {"freeport": freeport, "dburl": dburl, "mycnf": mycnf, "wait": wait, "crawl": crawl,
           "floor-br": floor_br, "latency": latency, "etag": etag, "wrk-parse": wrk_parse, "cpubusy": cpubusy}
    if cmd not in fns:
        raise SystemExit(__doc__)
    rc = fns[cmd](*args)
    return rc or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
