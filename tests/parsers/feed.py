#!/usr/bin/env python3
"""Reads a feed with feedparser (an independent parser) and prints what it understood as JSON.

Usage: feed.py FILE. Exits 1 if feedparser finds the feed malformed (its `bozo` flag) or if an
element the format requires is missing: Atom 1.0 (RFC 4287) feed id, title, updated and, for each
entry, id, title, updated and a link; RSS 2.0 channel title, link, description and, per item, a
link and a pubDate.
"""
import json
import sys
import time

import feedparser


def iso(parsed):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", parsed) if parsed else None


def main(path):
    d = feedparser.parse(path)
    problems = []
    if d.bozo:
        problems.append(f"malformed: {d.bozo_exception!r}")
    version = d.version
    feed = d.feed
    if version == "atom10":
        required_feed = ["id", "title", "updated"]
        required_entry = ["id", "title", "updated", "link"]
    elif version == "rss20":
        required_feed = ["title", "link", "subtitle"]  # feedparser names description "subtitle"
        required_entry = ["link", "published"]
    else:
        problems.append(f"not Atom 1.0 or RSS 2.0 but {version!r}")
        required_feed, required_entry = [], []
    problems += [f"feed lacks {k}" for k in required_feed if not feed.get(k)]
    for i, e in enumerate(d.entries):
        problems += [f"entry {i} lacks {k}" for k in required_entry if not e.get(k)]
    out = {
        "version": version,
        "updated": iso(feed.get("updated_parsed")),
        "entries": [
            {
                "link": e.get("link"),
                "title": e.get("title"),
                "id": e.get("id"),
                "updated": iso(e.get("updated_parsed") or e.get("published_parsed")),
            }
            for e in d.entries
        ],
        "problems": problems,
    }
    print(json.dumps(out))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
