#!/usr/bin/env python3
"""A strict RSS 2.0 checker: what the RSS 2.0 specification (rssboard.org) requires, and no
leniency. RSS 2.0 has no official schema, so this is written from the specification's text.

Usage: rss_strict.py FILE. Prints every problem found, one per line, and exits 1 if there is any
(2 if FILE is not well-formed XML 1.0); prints a one-line summary and exits 0 otherwise.
Standard library only.

Checked:
- well-formed XML 1.0 (expat: also refuses characters XML cannot carry, even as `&#1;`);
- the root is <rss version="2.0"> in no namespace, holding exactly one <channel> and nothing
  else in the empty namespace;
- the channel has exactly one non-empty <title>, <link> and <description>;
- no element in the empty namespace under <rss>, <channel> or <item> that the specification
  does not define (elements in other namespaces are extensions and allowed), no element that
  may appear once appearing twice, and no child elements inside elements that hold text;
- each item has a non-empty <title> or <description>;
- every <link>, <docs>, <comments>, <guid> (when it is a permalink, the default) and the
  url attributes of <enclosure> and <source> are well-formed absolute http(s) URLs: only
  RFC 3986 characters, `%` only in `%XX` escapes, a host, a valid port, no surrounding space;
- <guid isPermaLink> is "true" or "false";
- <pubDate> and <lastBuildDate> are RFC 822 date-times as RSS 2.0 amends them (two- or
  four-digit year): the grammar of RFC 822 section 5 (day and month names in English, as
  RFC 822 spells them, a time with hours and minutes, a zone), a real calendar date and time,
  the day name (when given) matching the date, a four-digit year of 1900 or later
  (RFC 2822 3.3: earlier years are not representable), no military one-letter zone
  (RFC 1123 5.2.14: their meaning was specified wrongly), and email.utils.parsedate_to_datetime
  reading the very same instant;
- <ttl> a non-negative integer, <language> a language tag, <enclosure> with url, length and
  type, <source> with url;
- every atom:link in the channel has an absolute URL href and a rel; at most one rel="self",
  whose type, if given, is application/rss+xml.
"""
import datetime
import email.utils
import re
import sys
import urllib.parse
import xml.etree.ElementTree as ET

ATOM = "{http://www.w3.org/2005/Atom}"

# RSS 2.0 "Required channel elements" and "Optional channel elements".
CHANNEL_ELEMENTS = {
    "title", "link", "description",
    "language", "copyright", "managingEditor", "webMaster", "pubDate", "lastBuildDate",
    "category", "generator", "docs", "cloud", "ttl", "image", "rating", "textInput",
    "skipHours", "skipDays", "item",
}
# RSS 2.0 "Elements of <item>".
ITEM_ELEMENTS = {
    "title", "link", "description", "author", "category", "comments", "enclosure", "guid",
    "pubDate", "source",
}
# Elements that may appear more than once where they are allowed.
REPEATABLE = {"category", "item"}
# Elements that hold elements; every other element in the empty namespace holds text only.
CONTAINERS = {
    "image": {"url", "title", "link", "width", "height", "description"},
    "textInput": {"title", "description", "name", "link"},
    "skipHours": {"hour"},
    "skipDays": {"day"},
    "cloud": set(),
}

# RFC 822 section 5.1, with the RSS 2.0 amendment that the year has two or four digits.
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
NAMED_ZONES = {
    "UT": 0, "GMT": 0, "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6,
    "PST": -8, "PDT": -7,
}
RFC822 = re.compile(
    r"(?:(?P<day>" + "|".join(DAYS) + r"), +)?"
    r"(?P<date>\d{1,2}) +(?P<month>" + "|".join(MONTHS) + r") +(?P<year>\d{4}|\d{2}) +"
    r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))? +"
    r"(?P<zone>" + "|".join(NAMED_ZONES) + r"|[A-IK-Za-ik-z]|[+-]\d{4})"
)

URL_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
LANGUAGE = re.compile(r"[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*")


def rfc822_problem(text):
    """Why `text` is not an RSS 2.0 date-time, or None."""
    m = RFC822.fullmatch(text)
    if not m:
        return "not an RFC 822 date-time ('Wed, 01 May 2024 12:00:00 +0000')"
    zone = m["zone"]
    if len(zone) == 1:
        return f"military zone {zone!r} (RFC 1123 5.2.14: do not use)"
    year = int(m["year"])
    if len(m["year"]) == 2:
        year += 1900 if year > 49 else 2000  # RFC 2822 4.3
    elif year < 1900:
        return f"year {m['year']} before 1900 (RFC 2822 3.3; readers take 00xx as 19xx/20xx)"
    if zone in NAMED_ZONES:
        offset = datetime.timedelta(hours=NAMED_ZONES[zone])
    else:
        hours, minutes = int(zone[1:3]), int(zone[3:5])
        if minutes > 59:
            return f"zone {zone} has {minutes} minutes"
        offset = datetime.timedelta(hours=hours, minutes=minutes)
        if zone[0] == "-":
            offset = -offset
    try:
        at = datetime.datetime(
            year,
            MONTHS.index(m["month"]) + 1,
            int(m["date"]),
            int(m["hour"]),
            int(m["minute"]),
            int(m["second"] or 0),
            tzinfo=datetime.timezone(offset),
        )
    except ValueError as e:
        return f"no such date or time ({e})"
    if m["day"] and DAYS[at.weekday()] != m["day"]:
        return f"{m['day']} but that date is a {DAYS[at.weekday()]}"
    try:
        read = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError) as e:
        return f"email.utils cannot read it ({e})"
    if read != at:
        return f"email.utils reads {read.isoformat()}, the text says {at.isoformat()}"
    return None


def url_problem(text):
    """Why `text` is not a well-formed absolute http(s) URL, or None."""
    if text != text.strip():
        return "surrounding whitespace"
    if not URL_CHARS.fullmatch(text):
        bad = sorted({c for c in text if not URL_CHARS.fullmatch(c)})
        return f"characters RFC 3986 does not allow: {bad!r}"
    if re.search(r"%(?![0-9A-Fa-f]{2})", text):
        return "a % that starts no %XX escape"
    if text.count("#") > 1:
        return "more than one #"
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError as e:
        return f"does not parse ({e})"
    if parts.scheme.lower() not in ("http", "https"):
        return f"not an absolute http(s) URL (scheme {parts.scheme!r})"
    if not parts.hostname:
        return "no host"
    if port is not None and not 0 < port < 65536:
        return f"port {port}"
    return None


class Checker:
    def __init__(self):
        self.problems = []

    def say(self, where, what):
        self.problems.append(f"{where}: {what}")

    def text_of(self, el, where):
        if len(el):
            self.say(where, f"holds elements ({el[0].tag}), only text is allowed")
        return el.text or ""

    def children(self, parent, allowed, where):
        """The children of `parent` in the empty namespace, by name; complains about unknown
        and repeated ones."""
        seen = {}
        for child in parent:
            if not isinstance(child.tag, str) or child.tag.startswith("{"):
                continue  # comments, processing instructions, namespaced extensions
            if child.tag not in allowed:
                self.say(where, f"<{child.tag}> is not an RSS 2.0 element here")
                continue
            seen.setdefault(child.tag, []).append(child)
        for name, els in seen.items():
            if len(els) > 1 and name not in REPEATABLE:
                self.say(where, f"<{name}> appears {len(els)} times")
        for name, els in seen.items():
            for el in els:
                here = f"{where}/{name}"
                if name in CONTAINERS:
                    for sub in el:
                        if isinstance(sub.tag, str) and not sub.tag.startswith("{"):
                            if sub.tag not in CONTAINERS[name]:
                                self.say(here, f"<{sub.tag}> is not an RSS 2.0 element here")
                            else:
                                self.text_of(sub, f"{here}/{sub.tag}")
                elif name != "item":
                    self.text_of(el, here)
        return {name: els[0] for name, els in seen.items()} | {"item*": seen.get("item", [])}

    def url(self, el, where, text=None):
        value = (el.text or "") if text is None else text
        problem = url_problem(value)
        if problem:
            self.say(where, f"{value!r}: {problem}")

    def date(self, el, where):
        problem = rfc822_problem(el.text or "")
        if problem:
            self.say(where, f"{el.text!r}: {problem}")

    def check(self, root):
        if root.tag != "rss":
            self.say("/", f"the root is <{root.tag}>, not <rss>")
            return
        if root.get("version") != "2.0":
            self.say("/rss", f"version={root.get('version')!r}, not \"2.0\"")
        channels = [c for c in root if c.tag == "channel"]
        others = [
            c.tag for c in root
            if isinstance(c.tag, str) and not c.tag.startswith("{") and c.tag != "channel"
        ]
        if others:
            self.say("/rss", f"elements other than <channel>: {others}")
        if len(channels) != 1:
            self.say("/rss", f"{len(channels)} <channel> elements, exactly one is required")
            return
        channel = channels[0]
        where = "/rss/channel"
        found = self.children(channel, CHANNEL_ELEMENTS, where)
        for name in ("title", "link", "description"):
            if name not in found:
                self.say(where, f"lacks the required <{name}>")
            elif not (found[name].text or "").strip():
                self.say(f"{where}/{name}", "is empty")
        for name in ("link", "docs"):
            if name in found:
                self.url(found[name], f"{where}/{name}")
        for name in ("pubDate", "lastBuildDate"):
            if name in found:
                self.date(found[name], f"{where}/{name}")
        if "ttl" in found and not re.fullmatch(r"\d+", found["ttl"].text or ""):
            self.say(f"{where}/ttl", f"{found['ttl'].text!r} is not a number of minutes")
        if "language" in found and not LANGUAGE.fullmatch(found["language"].text or ""):
            self.say(f"{where}/language", f"{found['language'].text!r} is not a language tag")
        if "image" in found:
            image = found["image"]
            for name in ("url", "title", "link"):
                if image.find(name) is None:
                    self.say(f"{where}/image", f"lacks the required <{name}>")
        self.atom_links(channel, where)
        for i, item in enumerate(found["item*"], 1):
            self.item(item, f"{where}/item[{i}]")
        return len(found["item*"])

    def item(self, item, where):
        found = self.children(item, ITEM_ELEMENTS, where)
        if not any((found[n].text or "").strip() for n in ("title", "description") if n in found):
            self.say(where, "has neither a <title> nor a <description>")
        for name in ("link", "comments"):
            if name in found:
                self.url(found[name], f"{where}/{name}")
        if "pubDate" in found:
            self.date(found["pubDate"], f"{where}/pubDate")
        if "guid" in found:
            guid = found["guid"]
            permalink = guid.get("isPermaLink", "true")
            if permalink not in ("true", "false"):
                self.say(f"{where}/guid", f"isPermaLink={permalink!r}, not true or false")
            if not (guid.text or "").strip():
                self.say(f"{where}/guid", "is empty")
            elif permalink == "true":
                self.url(guid, f"{where}/guid")
        if "author" in found and "@" not in (found["author"].text or ""):
            self.say(f"{where}/author", "is not an email address")
        if "enclosure" in found:
            enclosure = found["enclosure"]
            for name in ("url", "length", "type"):
                if enclosure.get(name) is None:
                    self.say(f"{where}/enclosure", f"lacks the required {name} attribute")
            if enclosure.get("url") is not None:
                self.url(enclosure, f"{where}/enclosure@url", enclosure.get("url"))
        if "source" in found:
            if found["source"].get("url") is None:
                self.say(f"{where}/source", "lacks the required url attribute")
            else:
                self.url(found["source"], f"{where}/source@url", found["source"].get("url"))

    def atom_links(self, channel, where):
        selves = 0
        for link in channel.findall(f"{ATOM}link"):
            here = f"{where}/atom:link"
            href, rel = link.get("href"), link.get("rel")
            if href is None:
                self.say(here, "lacks href")
            else:
                self.url(link, f"{here}@href", href)
            if not rel:
                self.say(here, "lacks rel")
            if rel == "self":
                selves += 1
                kind = link.get("type")
                if kind is not None and kind != "application/rss+xml":
                    self.say(here, f"rel=\"self\" with type={kind!r}, not application/rss+xml")
            if len(link) or (link.text or "").strip():
                self.say(here, "is not empty")
        if selves > 1:
            self.say(where, f"{selves} atom:link rel=\"self\"")


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        print(f"rss_strict: {path}: not well-formed XML: {e}")
        return 2
    checker = Checker()
    items = checker.check(root)
    for problem in checker.problems:
        print(f"rss_strict: {problem}")
    if checker.problems:
        return 1
    print(f"rss_strict: ok, {items} items")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
