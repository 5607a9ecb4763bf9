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

/// What `path` names on the base host (robots.txt, always at the root; the IndexNow key file,
/// when `key_file` is on, under the base's mount path). Checked across every site before any
/// site's files, so which site answers does not depend on their order.
pub fn base_route(path: &str, base: &str, key_file: Option<&str>) -> Option<Route> {
    if path == "/robots.txt" {
        return Some(Route::Robots);
    }
    let name = path.strip_prefix(base)?;
    (key_file == Some(name)).then_some(Route::IndexNowKey)
}

/// What `path` names among the files published at `files` (the mount path of the sitemaps
/// URL): sitemaps, feeds, the stylesheet, and the operational endpoints. File names hold no
/// `/`, so a path names a file of exactly one mount path even when mount paths nest.
pub fn file_route(path: &str, files: &str) -> Option<Route> {
    let name = path.strip_prefix(files)?;
    Some(match name {
        "sitemap_index.xml" => Route::Index,
        "sitemap.xml" => Route::Sitemap,
        "sitemap.txt" => Route::SitemapTxt,
        "feed.atom" => Route::FeedAtom,
        "feed.rss" => Route::FeedRss,
        "sitemap.xsl" => Route::Stylesheet,
        _ => operational(name).or_else(|| page(name))?,
    })
}

/// The operational endpoints, at the root where probes expect them, whatever the Host.
pub fn probe_route(path: &str) -> Option<Route> {
    operational(path.strip_prefix('/')?)
}

fn operational(name: &str) -> Option<Route> {
    Some(match name {
        "healthz" => Route::Health,
        "readyz" => Route::Ready,
        "metrics" => Route::Metrics,
        _ => return None,
    })
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

    /// One site whose files are published at its base URL, on the requested host.
    fn route(path: &str, mount: &str, key_file: Option<&str>) -> Option<Route> {
        base_route(path, mount, key_file)
            .or_else(|| file_route(path, mount))
            .or_else(|| probe_route(path))
    }

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

    #[test]
    fn nested_mount_paths_each_name_their_own_files() {
        assert_eq!(
            file_route("/shop/outlet/sitemap.xml", "/shop/outlet/"),
            Some(Route::Sitemap)
        );
        assert_eq!(file_route("/shop/outlet/sitemap.xml", "/shop/"), None);
        assert_eq!(file_route("/shop/sitemap.xml", "/shop/outlet/"), None);
        assert_eq!(file_route("/robots.txt", "/"), None);
        assert_eq!(base_route("/shop/sitemap.xml", "/shop/", None), None);
    }
}
