//! The URL space: which request path names which file of a site ([`crate::files`] parses the
//! names) or which operational endpoint. Pure, so it is tested on its own.

use crate::files::{self, File};

/// What a request path names: a file of a site, or an operational endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    File(File),
    Probe(Probe),
}

/// The operational endpoints, at the root whatever the Host, and never under a mount path (a
/// proxy that forwards a site's mount path must not make `/metrics`, which names every site,
/// public).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Health,
    Ready,
    Metrics,
}

impl Route {
    /// Label for metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::File(file) => match file {
                File::Index => "index",
                File::Sitemap => "sitemap",
                File::PageGz(_) => "page_gz",
                File::PageXml(_) => "page_xml",
                File::PageTxt(_) => "page_txt",
                File::SitemapTxt => "sitemap_txt",
                File::FeedAtom => "feed_atom",
                File::FeedRss => "feed_rss",
                File::IndexNowKey => "indexnow_key",
                File::Robots => "robots",
                File::Stylesheet => "stylesheet",
                File::Css => "css",
                File::Llms => "llms",
                File::License => "license",
                File::GroupLlms(_) => "group_llms",
            },
            Self::Probe(Probe::Health) => "healthz",
            Self::Probe(Probe::Ready) => "readyz",
            Self::Probe(Probe::Metrics) => "metrics",
        }
    }
}

/// What `path` names on the base host (robots.txt and llms.txt, always at the root; the IndexNow key file,
/// when `key_file` is on, under the base's mount path). Checked across every site before any
/// site's files, so which site answers does not depend on their order.
pub fn base_route(path: &str, base: &str, key_file: Option<&str>) -> Option<Route> {
    files::parse_base_path(path, base, key_file).map(Route::File)
}

/// What `path` names among the files published at `mount` (the mount path of the sitemaps
/// URL): sitemaps, feeds and the stylesheet. `group` gives the position of the group a file
/// name names (`None`: the unnamed group), if the site has it.
pub fn file_route(
    path: &str,
    mount: &str,
    group: impl Fn(Option<&str>) -> Option<usize>,
) -> Option<Route> {
    files::parse_published_path(path, mount, group).map(Route::File)
}

/// The operational endpoints, at the root where probes expect them, whatever the Host.
pub fn probe_route(path: &str) -> Option<Route> {
    operational(path.strip_prefix('/')?)
}

fn operational(name: &str) -> Option<Route> {
    Some(Route::Probe(match name {
        "healthz" => Probe::Health,
        "readyz" => Probe::Ready,
        "metrics" => Probe::Metrics,
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::PageId;
    use Probe::{Health, Metrics};

    /// One site without groups whose files are published at its base URL, on the requested host.
    fn route(path: &str, mount: &str, key_file: Option<&str>) -> Option<Route> {
        base_route(path, mount, key_file)
            .or_else(|| file_route(path, mount, unnamed))
            .or_else(|| probe_route(path))
    }

    fn unnamed(name: Option<&str>) -> Option<usize> {
        name.is_none().then_some(0)
    }

    fn page(no: i64) -> PageId {
        PageId { group: 0, no }
    }

    #[test]
    fn pages_are_numbered_from_one_without_leading_zeros() {
        assert_eq!(
            route("/sitemap-1.xml.gz", "/", None),
            Some(Route::File(File::PageGz(page(1))))
        );
        assert_eq!(
            route("/sitemap-12.xml", "/", None),
            Some(Route::File(File::PageXml(page(12))))
        );
        assert_eq!(
            route("/sitemap-3.txt", "/", None),
            Some(Route::File(File::PageTxt(page(3))))
        );
        assert_eq!(
            route("/sitemap.txt", "/", None),
            Some(Route::File(File::SitemapTxt))
        );
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
    fn named_groups_have_files_of_their_own() {
        let groups = |name: Option<&str>| match name {
            Some("posts") => Some(0),
            Some("news_2") => Some(1),
            _ => None,
        };
        let at = |path| file_route(path, "/", groups);
        assert_eq!(
            at("/sitemap-posts-3.xml.gz"),
            Some(Route::File(File::PageGz(PageId { group: 0, no: 3 })))
        );
        assert_eq!(
            at("/sitemap-news_2-1.txt"),
            Some(Route::File(File::PageTxt(PageId { group: 1, no: 1 })))
        );
        for unknown in [
            "/sitemap-1.xml.gz",
            "/sitemap-pages-1.xml",
            "/sitemap-posts-01.xml",
            "/sitemap-posts-.xml",
            "/sitemap--1.xml",
        ] {
            assert_eq!(at(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn files_live_under_the_mount_path_and_robots_at_the_root() {
        assert_eq!(
            route("/catalog/sitemap_index.xml", "/catalog/", None),
            Some(Route::File(File::Index))
        );
        assert_eq!(route("/sitemap_index.xml", "/catalog/", None), None);
        assert_eq!(
            route("/robots.txt", "/catalog/", None),
            Some(Route::File(File::Robots))
        );
        assert_eq!(route("/catalog/robots.txt", "/catalog/", None), None);
        assert_eq!(
            route("/healthz", "/catalog/", None),
            Some(Route::Probe(Health))
        );
        assert_eq!(
            route("/metrics", "/catalog/", None),
            Some(Route::Probe(Metrics))
        );
        for probe in ["/catalog/metrics", "/catalog/healthz", "/catalog/readyz"] {
            assert_eq!(route(probe, "/catalog/", None), None, "{probe}");
        }
        assert_eq!(route("/catalog/other", "/catalog/", None), None);
    }

    #[test]
    fn the_indexnow_key_file_is_under_the_mount_path_when_on() {
        let key = Some("0123456789abcdef.txt");
        assert_eq!(
            route("/catalog/0123456789abcdef.txt", "/catalog/", key),
            Some(Route::File(File::IndexNowKey))
        );
        assert_eq!(route("/0123456789abcdef.txt", "/catalog/", key), None);
        assert_eq!(
            route("/catalog/0123456789abcdef.txt", "/catalog/", None),
            None
        );
        assert_eq!(
            route("/catalog/sitemap.xsl", "/catalog/", None),
            Some(Route::File(File::Stylesheet))
        );
        assert_eq!(route("/sitemap.xsl", "/catalog/", None), None);
    }

    #[test]
    fn nested_mount_paths_each_name_their_own_files() {
        assert_eq!(
            file_route("/shop/outlet/sitemap.xml", "/shop/outlet/", unnamed),
            Some(Route::File(File::Sitemap))
        );
        assert_eq!(
            file_route("/shop/outlet/sitemap.xml", "/shop/", unnamed),
            None
        );
        assert_eq!(
            file_route("/shop/sitemap.xml", "/shop/outlet/", unnamed),
            None
        );
        assert_eq!(file_route("/robots.txt", "/", unnamed), None);
        assert_eq!(base_route("/shop/sitemap.xml", "/shop/", None), None);
    }
}
