#!/usr/bin/env python3
"""The rules of Atom 1.0 (RFC 4287) that its RELAX NG schema (tests/schemas/atom.rnc, checked
with jing) does not enforce: the two Schematron assertions embedded in the schema as annotations,
which jing ignores, and prose requirements a grammar cannot express.

Usage: atom_rules.py FILE. Prints every problem, one per line, and exits 1 if there is any
(2 if FILE is not well-formed XML 1.0); prints a one-line summary and exits 0 otherwise.
Standard library only; run it together with jing, not instead of it.

Checked:
- Schematron, atom:feed: the feed has an atom:author unless every entry has one (RFC 4287
  4.1.1: "atom:feed elements MUST contain one or more atom:author elements, unless all of the
  atom:feed element's child atom:entry elements contain at least one atom:author element");
- Schematron, atom:entry: an atom:link with rel="alternate" (or no rel) or an atom:content
  (4.1.2), and an atom:author of its own, its feed's or its atom:source's;
- 4.1.1 and 4.1.2: no two rel="alternate" links with the same type and hreflang in a feed or in
  an entry;
- 4.1.1: the feed has an atom:link rel="self" (a SHOULD, which sitemapd keeps);
- 3.3: every date is an RFC 3339 date-time ("T" and "Z" upper case, a time zone, a real date),
  stricter than the schema's xsd:dateTime;
- 4.2.6: every atom:id is an absolute IRI; 4.1.1: entries that share an atom:id differ in
  atom:updated;
- beyond the RFC, as rss_strict.py does for RSS: every link href, and every atom:id that is an
  http(s) URL, is a well-formed absolute http(s) URL (sitemapd writes only those).
"""
import datetime
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rss_strict import url_problem  # noqa: E402

A = "{http://www.w3.org/2005/Atom}"
RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})"
)
DATES = ("updated", "published")


def date_problem(text):
    if not RFC3339.fullmatch(text):
        return "not an RFC 3339 date-time (2024-05-01T12:00:00+00:00)"
    try:
        datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as e:
        return f"no such date or time ({e})"
    hours, minutes = (int(text[-5:-3]), int(text[-2:])) if text[-1] != "Z" else (0, 0)
    if hours > 23 or minutes > 59:
        return "offset out of range"
    return None


def main(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        print(f"atom_rules: {path}: not well-formed XML: {e}")
        return 2
    problems = []
    say = lambda where, what: problems.append(f"atom_rules: {where}: {what}")  # noqa: E731
    if root.tag != f"{A}feed":
        say("/", f"the root is {root.tag}, not atom:feed")
        return report(problems, 0)

    def links(parent, where):
        alternates = set()
        for link in parent.findall(f"{A}link"):
            href = link.get("href")
            if href is not None:
                problem = url_problem(href)
                if problem:
                    say(f"{where}/link", f"href {href!r}: {problem}")
            if link.get("rel", "alternate") == "alternate":
                key = (link.get("type"), link.get("hreflang"))
                if key in alternates:
                    say(where, f"two rel=\"alternate\" links with type and hreflang {key}")
                alternates.add(key)
        return alternates

    def common(parent, where):
        for el in parent.findall(f"{A}id"):
            text = el.text or ""
            scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", text)
            if not scheme or re.search(r"[\s<>\"{}|\\^`]", text):
                say(f"{where}/id", f"{text!r} is not an absolute IRI (RFC 4287 4.2.6)")
            elif scheme[1].lower() in ("http", "https"):
                problem = url_problem(text)
                if problem:
                    say(f"{where}/id", f"{text!r}: {problem}")
        for name in DATES:
            for el in parent.findall(f"{A}{name}"):
                problem = date_problem(el.text or "")
                if problem:
                    say(f"{where}/{name}", f"{el.text!r}: {problem}")

    common(root, "/feed")
    links(root, "/feed")
    if not any(l.get("rel") == "self" for l in root.findall(f"{A}link")):
        say("/feed", "no atom:link rel=\"self\" (RFC 4287 4.1.1 SHOULD)")
    feed_author = root.find(f"{A}author") is not None
    entries = root.findall(f"{A}entry")
    seen = {}
    for i, entry in enumerate(entries, 1):
        where = f"/feed/entry[{i}]"
        common(entry, where)
        alternates = links(entry, where)
        if not alternates and entry.find(f"{A}content") is None:
            say(where, "neither an alternate link nor atom:content (Schematron, 4.1.2)")
        has_author = (
            entry.find(f"{A}author") is not None
            or entry.find(f"{A}source/{A}author") is not None
        )
        if not (feed_author or has_author):
            say(where, "no atom:author, and the feed has none (Schematron, 4.1.1)")
        key = (entry.findtext(f"{A}id"), entry.findtext(f"{A}updated"))
        if key in seen:
            say(where, f"same atom:id and atom:updated as entry {seen[key]} (4.1.1)")
        seen.setdefault(key, i)
    return report(problems, len(entries))


def report(problems, entries):
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"atom_rules: ok, {entries} entries")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
