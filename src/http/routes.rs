//! The URL space: which request path names which file. Pure, so it is tested on its own.

/// A file or endpoint the service answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Index,
    /// `/sitemap.xml`: the urlset when one file holds all, else the index.
    Sitemap,
    PageGz(i64),
    PageXml(i64),
    /// `/sitemap-K.txt`: the same entries as file K, one URL per line.
    PageTxt(i64),
    /// `/sitemap.txt`: the text sitemap when one file holds all.
    SitemapTxt,
    FeedAtom,
    FeedRss,
    /// `<key>.txt`: the IndexNow key, proving the site is ours.
    IndexNowKey,
    Robots,
    /// `/sitemap.xsl`: the stylesheet browsers show sitemaps with.
    Stylesheet,
    Health,
    Ready,
    Metrics,
}

impl Route {
    /// Label for metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Index => "index",
            Self::Sitemap => "sitemap",
            Self::PageGz(_) => "page_gz",
            Self::PageXml(_) => "page_xml",
            Self::PageTxt(_) => "page_txt",
            Self::SitemapTxt => "sitemap_txt",
            Self::FeedAtom => "feed_atom",
            Self::FeedRss => "feed_rss",
            Self::IndexNowKey => "indexnow_key",
            Self::Robots => "robots",
            Self::Stylesheet => "stylesheet",
            Self::Health => "healthz",
            Self::Ready => "readyz",
            Self::Metrics => "metrics",
        }
    }

    /// Files whose responses carry validators and `X-Robots-Tag: noindex`.
    pub fn is_document(self) -> bool {
        !matches!(self, Self::Health | Self::Ready | Self::Metrics)
    }
}

/// Routes live under `mount` (which ends with `/`); robots.txt is always at the root.
/// Operational endpoints answer at the root too, where probes expect them. `key_file` is the
/// IndexNow key file's name, when IndexNow is on.
pub fn route(path: &str, mount: &str, key_file: Option<&str>) -> Option<Route> {
    if path == "/robots.txt" {
        return Some(Route::Robots);
    }
    let under_mount = path.strip_prefix(mount);
    let name = under_mount.or_else(|| path.strip_prefix('/').filter(|n| is_operational(n)))?;
    if under_mount.is_some() && key_file == Some(name) {
        return Some(Route::IndexNowKey);
    }
    Some(match name {
        "sitemap_index.xml" => Route::Index,
        "sitemap.xml" => Route::Sitemap,
        "sitemap.txt" => Route::SitemapTxt,
        "feed.atom" => Route::FeedAtom,
        "feed.rss" => Route::FeedRss,
        "sitemap.xsl" => Route::Stylesheet,
        "healthz" => Route::Health,
        "readyz" => Route::Ready,
        "metrics" => Route::Metrics,
        _ => page(name)?,
    })
}

fn is_operational(name: &str) -> bool {
    matches!(name, "healthz" | "readyz" | "metrics")
}

fn page(name: &str) -> Option<Route> {
    let rest = name.strip_prefix("sitemap-")?;
    if let Some(digits) = rest.strip_suffix(".xml.gz") {
        return Some(Route::PageGz(page_number(digits)?));
    }
    if let Some(digits) = rest.strip_suffix(".txt") {
        return Some(Route::PageTxt(page_number(digits)?));
    }
    Some(Route::PageXml(page_number(rest.strip_suffix(".xml")?)?))
}

/// K ≥ 1 in plain decimal: no sign, no leading zero.
fn page_number(digits: &str) -> Option<i64> {
    let valid = !digits.is_empty()
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit());
    valid.then(|| digits.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_numbered_from_one_without_leading_zeros() {
        assert_eq!(
            route("/sitemap-1.xml.gz", "/", None),
            Some(Route::PageGz(1))
        );
        assert_eq!(
            route("/sitemap-12.xml", "/", None),
            Some(Route::PageXml(12))
        );
        assert_eq!(route("/sitemap-3.txt", "/", None), Some(Route::PageTxt(3)));
        assert_eq!(route("/sitemap.txt", "/", None), Some(Route::SitemapTxt));
        assert_eq!(route("/sitemap-03.txt", "/", None), None);
        for bad in [
            "/sitemap-0.xml.gz",
            "/sitemap-01.xml",
            "/sitemap-+1.xml",
            "/sitemap-.xml",
            "/sitemap-1.gz",
            "/sitemap-99999999999999999999.xml",
        ] {
            assert_eq!(route(bad, "/", None), None, "{bad}");
        }
    }

    #[test]
    fn files_live_under_the_mount_path_and_robots_at_the_root() {
        assert_eq!(
            route("/catalog/sitemap_index.xml", "/catalog/", None),
            Some(Route::Index)
        );
        assert_eq!(route("/sitemap_index.xml", "/catalog/", None), None);
        assert_eq!(route("/robots.txt", "/catalog/", None), Some(Route::Robots));
        assert_eq!(route("/catalog/robots.txt", "/catalog/", None), None);
        assert_eq!(route("/healthz", "/catalog/", None), Some(Route::Health));
        assert_eq!(
            route("/catalog/metrics", "/catalog/", None),
            Some(Route::Metrics)
        );
        assert_eq!(route("/catalog/other", "/catalog/", None), None);
    }

    #[test]
    fn the_indexnow_key_file_is_under_the_mount_path_when_on() {
        let key = Some("0123456789abcdef.txt");
        assert_eq!(
            route("/catalog/0123456789abcdef.txt", "/catalog/", key),
            Some(Route::IndexNowKey)
        );
        assert_eq!(route("/0123456789abcdef.txt", "/catalog/", key), None);
        assert_eq!(
            route("/catalog/0123456789abcdef.txt", "/catalog/", None),
            None
        );
        assert_eq!(
            route("/catalog/sitemap.xsl", "/catalog/", None),
            Some(Route::Stylesheet)
        );
        assert_eq!(route("/sitemap.xsl", "/catalog/", None), None);
    }
}
