#!/usr/bin/env python3
"""scripts/lib/ports.py: the one way the check scripts and the benchmarks pick ports for the
servers they start (sitemapd, nginx, Apache, Caddy, DNS and syslog stand-ins).

A port is handed out from PORT_FIRST..PORT_LAST, below the kernel's ephemeral range (Linux:
32768-60999), where `bind(...:0)` probes and every outgoing connection take theirs: a port freed
by a bind-to-0 probe can be handed to the next outgoing connection (curl, a database client)
before the server binds it, and the server then fails with "address already in use". A port is
handed out only when TCP and UDP can both be bound to it on every interface (a server given
`:PORT` binds all of them) and nothing listens on it. The tests (tests/api/helpers/servers.rs)
take theirs from 20000-31999; these come from 10000-19999, so the two never compete.

Ports handed out by one run are noted in PORTS_LEDGER (a file, when set) and never handed out
again by that run, even before their server has bound them. Each run starts at a different
place in the range (from its process ids), so runs side by side rarely even try the same port.

    python3 scripts/lib/ports.py [COUNT] [--except PORT...]   prints COUNT free ports, one a line
    from ports import free_port                               (Python: sys.path to scripts/lib)
"""

import os
import socket
import sys

PORT_FIRST = 10000
PORT_LAST = 19999


def is_free(port):
    """Whether TCP and UDP can both be bound to port on every interface and nothing listens."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                return False
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) != 0


def _ledger():
    return os.environ.get("PORTS_LEDGER") or None


def _handed_out():
    path = _ledger()
    if not path:
        return set()
    try:
        with open(path) as f:
            return {int(line) for line in f if line.strip().isdigit()}
    except FileNotFoundError:
        return set()


def _note(port):
    path = _ledger()
    if path:
        with open(path, "a") as f:
            f.write(f"{port}\n")


_next = None


def free_port(*excluded):
    """A free port below the ephemeral range, never one of `excluded` nor one handed out before
    by this run; raises RuntimeError when the range is full."""
    global _next
    count = PORT_LAST - PORT_FIRST + 1
    if _next is None:
        taken = len(_handed_out())
        _next = (os.getppid() * 7919 + os.getpid() * 31 + taken) % count
    skip = {int(p) for p in excluded} | _handed_out()
    for _ in range(count):
        port = PORT_FIRST + _next % count
        _next += 1
        if port not in skip and is_free(port):
            _note(port)
            return port
    raise RuntimeError(f"no free port in {PORT_FIRST}-{PORT_LAST}")


def main(args):
    count, excluded = 1, []
    if args and args[0].isdigit():
        count, args = int(args[0]), args[1:]
    if args and args[0] == "--except":
        excluded = args[1:]
    try:
        ports = []
        for _ in range(count):
            ports.append(free_port(*excluded, *ports))
    except RuntimeError as e:
        print(f"ports.py: {e}", file=sys.stderr)
        return 1
    print("\n".join(map(str, ports)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
