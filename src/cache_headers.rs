//! What a shared cache in front is told about each file: a `Cache-Control` per file kind, and
//! the `Surrogate-Key` / `Cache-Tag` naming the site, the group and the file (for purging by
//! key). Both are sent on `200` and on `304` alike (RFC 9110 §15.4.5: a `304` carries the
//! `Cache-Control` a `200` would, and a cache updates its stored headers from it).
//!
//! `SITEMAP_CACHE_CONTROL` (browsers' and crawlers' part, `public, max-age=300` by default) is
//! sent as configured, followed by the shared-cache directives of the file's kind that it does
//! not name itself; none when it says `private`, `no-store` or `no-cache`. A long `s-maxage`
//! only when `CACHE_PURGE` tells the cache of every change: without it, a shared cache keeps to
//! `max-age` like any other, and gets only `stale-while-revalidate` and `stale-if-error`.

use axum::http::response::Builder;
use axum::http::HeaderValue;

use crate::files::File;
use crate::site::Site;

/// How often a kind of file changes, which decides how long a shared cache keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Sitemap files: each changes only when its own entries do.
    Page,
    /// The index, `sitemap.xml`, feeds, llms.txt: they change with any entry.
    List,
    /// robots.txt: changes with the configuration.
    Robots,
    /// The stylesheet and the IndexNow key file: change only with a release or a new key.
    Fixed,
}

/// Shared-cache directives per kind: when purges keep the cache current, and when not.
fn shared_directives(kind: Kind, purged: bool) -> &'static str {
    const DAY: &str = "s-maxage=86400, stale-while-revalidate=86400, stale-if-error=604800";
    match (kind, purged) {
        (Kind::Fixed, _) => DAY,
        // A lost purge is the only way these go stale: the TTL bounds that.
        (Kind::Page | Kind::Robots, true) => {
            "s-maxage=86400, stale-while-revalidate=3600, stale-if-error=604800"
        }
        (Kind::List, true) => "s-maxage=3600, stale-while-revalidate=60, stale-if-error=604800",
        (_, false) => "stale-while-revalidate=60, stale-if-error=86400",
    }
}

/// A news group's files change as articles come and age out: they are kept like the index.
fn kind_of(site: &Site, file: File) -> Kind {
    match file {
        File::PageGz(id) | File::PageXml(id) | File::PageTxt(id) => {
            let news = site.groups.get(id.group).is_some_and(|g| g.news.is_some());
            if news {
                Kind::List
            } else {
                Kind::Page
            }
        }
        File::Index | File::Sitemap | File::SitemapTxt => Kind::List,
        File::FeedAtom | File::FeedRss | File::Llms | File::GroupLlms(_) => Kind::List,
        File::Robots | File::License => Kind::Robots,
        File::Stylesheet | File::Css | File::IndexNowKey => Kind::Fixed,
    }
}

/// The `Cache-Control` of every kind of file, made once at start.
#[derive(Debug, Clone)]
pub struct CacheHeaders {
    page: HeaderValue,
    list: HeaderValue,
    robots: HeaderValue,
    fixed: HeaderValue,
}

impl CacheHeaders {
    /// `configured`: `SITEMAP_CACHE_CONTROL`; `purged`: whether `CACHE_PURGE` is set.
    pub fn new(configured: &str, purged: bool) -> Self {
        let value = |kind| {
            let text = combined(configured, shared_directives(kind, purged));
            HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("public, max-age=300"))
        };
        Self {
            page: value(Kind::Page),
            list: value(Kind::List),
            robots: value(Kind::Robots),
            fixed: value(Kind::Fixed),
        }
    }

    /// The `Cache-Control` of `file` of `site`.
    pub fn cache_control(&self, site: &Site, file: File) -> &HeaderValue {
        match kind_of(site, file) {
            Kind::Page => &self.page,
            Kind::List => &self.list,
            Kind::Robots => &self.robots,
            Kind::Fixed => &self.fixed,
        }
    }
}

/// `configured`, then each directive of `shared` it does not name; nothing added to a value
/// that keeps shared caches out.
fn combined(configured: &str, shared: &str) -> String {
    let names: Vec<String> = configured
        .split(',')
        .map(|d| {
            d.split('=')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let keeps_out = names
        .iter()
        .any(|n| matches!(n.as_str(), "private" | "no-store" | "no-cache"));
    if keeps_out {
        return configured.to_string();
    }
    let mut value = configured.to_string();
    for directive in shared.split(", ") {
        let name = directive.split('=').next().unwrap_or(directive);
        if !names.iter().any(|n| n == name) {
            value.push_str(", ");
            value.push_str(directive);
        }
    }
    value
}

/// `response` with the `Surrogate-Key` and `Cache-Tag` of `file` of `site`, requested at `path`.
pub fn tagged(response: Builder, site: &Site, file: File, path: &str) -> Builder {
    let keys = surrogate_keys(site, file, path);
    let tags = keys.replace(' ', ",");
    response
        .header("surrogate-key", keys)
        .header("cache-tag", tags)
}

/// The keys a file is cached under, space-separated (`Surrogate-Key`; `Cache-Tag` takes them
/// comma-separated): the site (its base URL without the scheme: `example.com`,
/// `example.com/shop`), each group the file belongs to (`example.com#posts`; `#default` for a
/// site without groups) and the file's own URL without the scheme. The index, `sitemap.xml`,
/// feeds and llms.txt belong to every group; robots.txt, the stylesheet and the key file to
/// none. Built into one string: this runs for every answer.
fn surrogate_keys(site: &Site, file: File, path: &str) -> String {
    let site_key = site_key(site);
    let mut keys = String::with_capacity(4 * site_key.len() + path.len() + 32);
    keys.push_str(site_key);
    let push_group = |keys: &mut String, name: Option<&str>| {
        keys.push(' ');
        keys.push_str(site_key);
        keys.push('#');
        keys.push_str(name.unwrap_or("default"));
    };
    match file {
        File::PageGz(id) | File::PageXml(id) | File::PageTxt(id) => {
            let name = site.groups.get(id.group).and_then(|g| g.name.as_deref());
            push_group(&mut keys, name);
        }
        File::GroupLlms(group) => {
            let name = site.groups.get(group).and_then(|g| g.name.as_deref());
            push_group(&mut keys, name);
        }
        File::Index
        | File::Sitemap
        | File::SitemapTxt
        | File::FeedAtom
        | File::FeedRss
        | File::Llms => {
            for group in &site.groups {
                push_group(&mut keys, group.name.as_deref());
            }
        }
        File::Robots | File::License | File::Stylesheet | File::Css | File::IndexNowKey => {}
    }
    let served_from = match file {
        File::Robots | File::License | File::Llms | File::GroupLlms(_) | File::IndexNowKey => {
            site.base()
        }
        _ => site.files(),
    };
    let url = served_from.url();
    keys.push(' ');
    keys.push_str(url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        keys.push(':');
        keys.push_str(&port.to_string());
    }
    keys.push_str(path);
    keys
}

/// The site's key: its base URL without scheme or trailing `/`.
fn site_key(site: &Site) -> &str {
    let key = site.key.as_str();
    let without_scheme = key.split_once("://").map_or(key, |(_, rest)| rest);
    without_scheme.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_directives_follow_the_configured_value() {
        let headers = CacheHeaders::new("public, max-age=300", true);
        assert_eq!(
            headers.page,
            "public, max-age=300, s-maxage=86400, stale-while-revalidate=3600, stale-if-error=604800"
        );
        assert_eq!(
            headers.list,
            "public, max-age=300, s-maxage=3600, stale-while-revalidate=60, stale-if-error=604800"
        );
    }

    #[test]
    fn without_purges_no_long_shared_ttl_is_sent() {
        let headers = CacheHeaders::new("public, max-age=300", false);
        let value = headers.list.to_str().unwrap();
        assert!(!value.contains("s-maxage"), "{value}");
        assert!(value.contains("stale-if-error=86400"), "{value}");
        let fixed = headers.fixed.to_str().unwrap();
        assert!(fixed.contains("s-maxage=86400"), "{fixed}");
    }

    #[test]
    fn the_operators_own_directives_win_and_private_keeps_shared_caches_out() {
        assert_eq!(
            combined(
                "public, max-age=60, S-Maxage=30",
                "s-maxage=3600, stale-if-error=1"
            ),
            "public, max-age=60, S-Maxage=30, stale-if-error=1"
        );
        assert_eq!(
            combined("private, max-age=60", "s-maxage=3600"),
            "private, max-age=60"
        );
        assert_eq!(combined("no-store", "s-maxage=3600"), "no-store");
    }
}
