# Varnish in front of sitemapd, kept exactly current by sitemapd's purges.
#
# sitemapd (CACHE_PURGE=http://<this varnish>:<port>) sends one `PURGE <path>` with the site's
# Host for every URL whose bytes a save changed: the files, the index, robots.txt, llms.txt and
# the feeds. Everything else stays cached, so the TTLs here can be long: a file is refetched
# when it changed, not when a timer says so. Only the addresses in `purgers` may purge.
#
# Keep sitemapd's headers: its strong ETag and Last-Modified (revalidations after the TTL are
# 304s, hence `beresp.keep`), `Vary: Accept-Encoding` (one object per coding; a purge drops them
# all), `Cache-Control` with s-maxage / stale-while-revalidate / stale-if-error per kind of file,
# and `Surrogate-Key` naming the site, the group and the file.
#
# Checked against a real varnishd by scripts/varnish-check.sh. Varnish 6.0 or later.
vcl 4.1;

import std;

# sitemapd's BIND_ADDR (or the web server in front of it that routes to sitemapd).
backend sitemapd {
    .host = "127.0.0.1";
    .port = "8080";
    .connect_timeout = 5s;
    .first_byte_timeout = 60s;
    .between_bytes_timeout = 30s;
    .probe = {
        .url = "/healthz";
        .interval = 5s;
        .timeout = 2s;
        .window = 5;
        .threshold = 3;
    }
}

# Who may purge: sitemapd's hosts. Loopback when sitemapd runs beside this Varnish.
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(405, "PURGE not allowed from this address"));
        }
        # Every variant (coding) of this Host and path.
        return (purge);
    }
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    # While sitemapd answers, an expired file is served at most a minute past its TTL while it
    # is revalidated; while it does not, for up to the week of grace below (stale-if-error).
    if (std.healthy(req.backend_hint)) {
        set req.grace = 60s;
    }
    # sitemapd's files depend on the path, the Host and the coding only: cookies and query
    # strings a browser or a tracker adds must not split (or bypass) the cache.
    unset req.http.Cookie;
    unset req.http.Authorization;
    set req.url = regsub(req.url, "\?.*$", "");
    return (hash);
}

sub vcl_backend_response {
    if (beresp.status == 200 || beresp.status == 304) {
        # Long: sitemapd purges what changes. Without sitemapd's s-maxage (CACHE_PURGE unset,
        # so nothing would tell this cache of a change), keep to what sitemapd says instead.
        if (beresp.http.Cache-Control ~ "s-maxage") {
            set beresp.ttl = 1d;
        }
        # After the TTL, revalidate with If-None-Match / If-Modified-Since: a 304 refreshes
        # the object without sending its bytes again.
        set beresp.keep = 7d;
        set beresp.grace = 7d;
    } else {
        # 404s, 503s during a first sweep: briefly, so a new file shows at once.
        set beresp.ttl = 5s;
        set beresp.grace = 0s;
    }
    return (deliver);
}

sub vcl_backend_error {
    # sitemapd unreachable: a file still within its grace is served stale instead.
    return (deliver);
}

sub vcl_deliver {
    # What the cache did, for operators (and scripts/varnish-check.sh).
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
    set resp.http.X-Cache-Hits = obj.hits;
}
