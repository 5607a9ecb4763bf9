//! The catalogue of what a site serves: every file's name and path, made here and parsed back
//! here, and the list of a site's files. Nothing else spells a served name, so the routes, the
//! export tree, the index, the crawler ledger, the status page and the announcements cannot
//! disagree on one.
//!
//! Where a file lives: robots.txt and llms.txt at the root of the site's host; the IndexNow key
//! file under the base URL's mount path; everything else (the index, sitemaps, feeds, the
//! stylesheet) under the mount path of the sitemaps URL. File names hold no `/`, so a path names
//! a file of exactly one mount path even when mount paths nest.
//!
//! Pure, and it uses no other module of the crate, so every layer may use it.

/// `/robots.txt`'s name, at the root of the site's host.
pub const ROBOTS: &str = "robots.txt";
/// robots.txt's path: always the root, whatever the mount path.
pub const ROBOTS_PATH: &str = "/robots.txt";
/// The sitemap index, listing every file of every group.
pub const INDEX: &str = "sitemap_index.xml";
/// The urlset when one file holds all, else the index.
pub const SITEMAP: &str = "sitemap.xml";
/// The text sitemap when one file holds all.
pub const SITEMAP_TXT: &str = "sitemap.txt";
pub const FEED_ATOM: &str = "feed.atom";
pub const FEED_RSS: &str = "feed.rss";
/// The stylesheet browsers show sitemaps with.
pub const STYLESHEET: &str = "sitemap.xsl";
/// The CSS stylesheet browsers without XSLT show sitemaps with.
pub const CSS: &str = "sitemap.css";
/// llms.txt's name, in both of its places.
pub const LLMS: &str = "llms.txt";
/// llms.txt's paths, at the root of the site's host: the first is the one linked to.
pub const LLMS_PATHS: [&str; 2] = ["/llms.txt", "/.well-known/llms.txt"];
/// `/license.xml`'s name: the policy as an RSL licence, at the root like robots.txt (its
/// patterns are the root's).
pub const LICENSE: &str = "license.xml";
/// license.xml's path: always the root.
pub const LICENSE_PATH: &str = "/license.xml";
/// The directory of the second of [`LLMS_PATHS`].
pub const WELL_KNOWN: &str = ".well-known";

/// How every sitemap file's name begins. An IndexNow key must not begin so: its file, `<key>.txt`,
/// could hide a text sitemap.
pub const SITEMAP_STEM: &str = "sitemap";
const PAGE_PREFIX: &str = "sitemap-";
const GZ: &str = ".xml.gz";
const XML: &str = ".xml";
const TXT: &str = ".txt";
const XSL: &str = ".xsl";
const CSS_EXT: &str = ".css";

/// A file a site serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum File {
    /// `/robots.txt`, at the root of the site's host.
    Robots,
    /// `<key>.txt`: the IndexNow key, proving the site is ours.
    IndexNowKey,
    /// `/sitemap_index.xml`.
    Index,
    /// `/sitemap.xml`: the urlset when one file holds all, else the index.
    Sitemap,
    /// `/sitemap-K.xml.gz` (`/sitemap-<group>-K.xml.gz`).
    PageGz(PageId),
    /// `/sitemap-K.xml`.
    PageXml(PageId),
    /// `/sitemap-K.txt`: the same entries as file K, one URL per line.
    PageTxt(PageId),
    /// `/sitemap.txt`: the text sitemap when one file holds all.
    SitemapTxt,
    FeedAtom,
    FeedRss,
    /// `/sitemap.xsl`: the stylesheet browsers show sitemaps with.
    Stylesheet,
    /// `/sitemap.css`: what browsers without XSLT show sitemaps with.
    Css,
    /// `/llms.txt` and `/.well-known/llms.txt`, at the root of the site's host.
    Llms,
    /// `/license.xml`, at the root of the site's host.
    License,
    /// `<prefix>llms.txt`: the llms.txt of the group at this position, under its `llms_path`.
    GroupLlms(usize),
}

/// File K of one of a site's groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageId {
    /// The group's position among the site's groups.
    pub group: usize,
    pub no: i64,
}

/// Name of page K of `group` as the index lists it: `sitemap-K.xml.gz`, or
/// `sitemap-<group>-K.xml.gz`. The crawler ledger and the status page know a page by it.
pub fn page_name(group: Option<&str>, no: i64) -> String {
    format!("{}{GZ}", page_stem(group, no))
}

/// Name of page K's text sitemap: `sitemap-K.txt`, or `sitemap-<group>-K.txt`.
pub fn page_text_name(group: Option<&str>, no: i64) -> String {
    format!("{}{TXT}", page_stem(group, no))
}

fn page_stem(group: Option<&str>, no: i64) -> String {
    match group {
        None => format!("{PAGE_PREFIX}{no}"),
        Some(name) => format!("{PAGE_PREFIX}{name}-{no}"),
    }
}

/// Name of the IndexNow key file of `key`: `<key>.txt`.
pub fn key_file_name(key: &str) -> String {
    format!("{key}{TXT}")
}

/// What `path` names on a site's base host: robots.txt and llms.txt, always at the root; the
/// IndexNow key file (when `key_file` is on) under the base URL's mount path `base`.
pub fn parse_base_path(path: &str, base: &str, key_file: Option<&str>) -> Option<File> {
    if path == ROBOTS_PATH {
        return Some(File::Robots);
    }
    if LLMS_PATHS.contains(&path) {
        return Some(File::Llms);
    }
    if path == LICENSE_PATH {
        return Some(File::License);
    }
    let name = path.strip_prefix(base)?;
    (key_file == Some(name)).then_some(File::IndexNowKey)
}

/// Whether `path` is the llms.txt of a group whose pages are under `prefix` (`/blog/`).
pub fn is_group_llms_path(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix) == Some(LLMS)
}

/// What `path` names among the files published at the mount path `files`: the index, sitemaps,
/// feeds and the stylesheet. `group` gives the position of the group a page's name names
/// (`None`: the unnamed group), if the site has it.
pub fn parse_published_path(
    path: &str,
    files: &str,
    group: impl Fn(Option<&str>) -> Option<usize>,
) -> Option<File> {
    parse_published_name(path.strip_prefix(files)?, group)
}

/// What a file name (no directory) names among the files published at a mount path.
pub fn parse_published_name(
    name: &str,
    group: impl Fn(Option<&str>) -> Option<usize>,
) -> Option<File> {
    Some(match name {
        INDEX => File::Index,
        SITEMAP => File::Sitemap,
        SITEMAP_TXT => File::SitemapTxt,
        FEED_ATOM => File::FeedAtom,
        FEED_RSS => File::FeedRss,
        STYLESHEET => File::Stylesheet,
        CSS => File::Css,
        _ => return parse_page_name(name, group),
    })
}

/// `sitemap-K.xml.gz`, `.xml`, `.txt` of the unnamed group, `sitemap-<name>-K.*` of a named
/// one (names hold no `-`).
fn parse_page_name(name: &str, group: impl Fn(Option<&str>) -> Option<usize>) -> Option<File> {
    let rest = name.strip_prefix(PAGE_PREFIX)?;
    let (form, stem): (fn(PageId) -> File, &str) = if let Some(s) = rest.strip_suffix(GZ) {
        (File::PageGz, s)
    } else if let Some(s) = rest.strip_suffix(TXT) {
        (File::PageTxt, s)
    } else {
        (File::PageXml, rest.strip_suffix(XML)?)
    };
    let (name, digits) = match stem.rsplit_once('-') {
        Some((name, digits)) => (Some(name), digits),
        None => (None, stem),
    };
    let no = page_number(digits)?;
    Some(form(PageId {
        group: group(name)?,
        no,
    }))
}

/// K ≥ 1 in plain decimal: no sign, no leading zero.
fn page_number(digits: &str) -> Option<i64> {
    let valid = !digits.is_empty()
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit());
    valid.then(|| digits.parse().ok()).flatten()
}

/// Whether `name` has the shape of a sitemap's name (the index, `sitemap.xml`, a page in any
/// form): loose on purpose, so the names of a layout that is gone count too.
pub fn looks_like_a_sitemap(name: &str) -> bool {
    name.starts_with(SITEMAP_STEM) && [XML, GZ, TXT].iter().any(|ext| name.ends_with(ext))
}

/// Whether `name` is one a site's files are written under (see [`site_files`]), in this layout
/// or an earlier one: sitemaps, the stylesheet, robots.txt and the feeds.
pub fn looks_like_a_site_file(name: &str) -> bool {
    looks_like_a_sitemap(name)
        || (name.starts_with(SITEMAP_STEM) && (name.ends_with(XSL) || name.ends_with(CSS_EXT)))
        || matches!(name, ROBOTS | FEED_ATOM | FEED_RSS)
}

/// What decides which files a site has.
#[derive(Debug, Clone, Default)]
pub struct SiteShape<'a> {
    /// Each group's name (`None`: the unnamed group) and its page numbers, in order.
    pub groups: Vec<(Option<&'a str>, Vec<i64>)>,
    /// One file holds all: `sitemap.xml` is that file, and `sitemap.txt` its text.
    pub single: bool,
    pub feeds: bool,
    pub stylesheet: bool,
    pub llms: bool,
    pub license: bool,
    /// Each group with a llms.txt of its own: its position and path prefix (`/blog/`).
    pub group_llms: Vec<(usize, &'a str)>,
}

/// Where a file is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Under the mount path of the sitemaps URL.
    Published,
    /// At the root of the base URL's host.
    Root,
}

/// One file of a site and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub file: File,
    pub place: Place,
    /// Relative to its place; `.well-known/llms.txt` is in a directory.
    pub path: String,
}

/// The files of a site with `shape`: each page (as `.xml.gz` and `.txt`, group by group), then
/// the index, `sitemap.xml` and `sitemap.txt`, the feeds and the stylesheet under the mount path;
/// robots.txt, llms.txt and license.xml at the root. The IndexNow key file is the process's, not a site's,
/// and is left out.
pub fn site_files(shape: &SiteShape<'_>) -> Vec<Listed> {
    let published = |file, path: &str| Listed {
        file,
        place: Place::Published,
        path: path.to_string(),
    };
    let root = |path: String| Listed {
        file: match path.as_str() {
            ROBOTS => File::Robots,
            LICENSE => File::License,
            _ => File::Llms,
        },
        place: Place::Root,
        path,
    };
    let mut files = Vec::new();
    for (group, (name, pages)) in shape.groups.iter().enumerate() {
        for &no in pages {
            let id = PageId { group, no };
            files.push(published(File::PageGz(id), &page_name(*name, no)));
            files.push(published(File::PageTxt(id), &page_text_name(*name, no)));
        }
    }
    files.push(published(File::Index, INDEX));
    files.push(published(File::Sitemap, SITEMAP));
    if shape.single {
        files.push(published(File::SitemapTxt, SITEMAP_TXT));
    }
    if shape.feeds {
        files.push(published(File::FeedAtom, FEED_ATOM));
        files.push(published(File::FeedRss, FEED_RSS));
    }
    if shape.stylesheet {
        files.push(published(File::Stylesheet, STYLESHEET));
        files.push(published(File::Css, CSS));
    }
    files.push(root(ROBOTS.to_string()));
    if shape.llms {
        files.push(root(LLMS.to_string()));
        files.push(root(format!("{WELL_KNOWN}/{LLMS}")));
    }
    if shape.license {
        files.push(root(LICENSE.to_string()));
    }
    for &(group, prefix) in &shape.group_llms {
        files.push(Listed {
            file: File::GroupLlms(group),
            place: Place::Root,
            path: format!("{}{LLMS}", prefix.trim_start_matches('/')),
        });
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unnamed(name: Option<&str>) -> Option<usize> {
        name.is_none().then_some(0)
    }

    fn page(no: i64) -> PageId {
        PageId { group: 0, no }
    }

    #[test]
    fn pages_are_numbered_from_one_without_leading_zeros() {
        let at = |name| parse_published_name(name, unnamed);
        assert_eq!(at("sitemap-1.xml.gz"), Some(File::PageGz(page(1))));
        assert_eq!(at("sitemap-12.xml"), Some(File::PageXml(page(12))));
        assert_eq!(at("sitemap-3.txt"), Some(File::PageTxt(page(3))));
        assert_eq!(at("sitemap.txt"), Some(File::SitemapTxt));
        for bad in [
            "sitemap-03.txt",
            "sitemap-0.xml.gz",
            "sitemap-01.xml",
            "sitemap-+1.xml",
            "sitemap-.xml",
            "sitemap-1.gz",
            "sitemap-99999999999999999999.xml",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_page_name_parses_back_to_its_page() {
        let groups = |name: Option<&str>| match name {
            None => Some(0),
            Some("posts") => Some(1),
            _ => None,
        };
        for (group, name) in [(0, None), (1, Some("posts"))] {
            let id = PageId { group, no: 7 };
            assert_eq!(
                parse_published_name(&page_name(name, 7), groups),
                Some(File::PageGz(id))
            );
            assert_eq!(
                parse_published_name(&page_text_name(name, 7), groups),
                Some(File::PageTxt(id))
            );
        }
        assert_eq!(page_name(Some("posts"), 3), "sitemap-posts-3.xml.gz");
        assert_eq!(page_text_name(None, 3), "sitemap-3.txt");
    }

    #[test]
    fn robots_and_llms_are_at_the_root_and_the_key_under_the_mount_path() {
        let name = key_file_name("0123456789abcdef");
        assert_eq!(name, "0123456789abcdef.txt");
        let key = Some(name.as_str());
        assert_eq!(
            parse_base_path("/robots.txt", "/shop/", key),
            Some(File::Robots)
        );
        for llms in LLMS_PATHS {
            assert_eq!(parse_base_path(llms, "/shop/", None), Some(File::Llms));
        }
        assert_eq!(
            parse_base_path("/shop/0123456789abcdef.txt", "/shop/", key),
            Some(File::IndexNowKey)
        );
        assert_eq!(parse_base_path("/shop/robots.txt", "/shop/", key), None);
    }

    #[test]
    fn every_listed_file_parses_back_to_itself() {
        let shape = SiteShape {
            groups: vec![(None, vec![1, 4]), (Some("posts"), vec![2])],
            single: false,
            feeds: true,
            stylesheet: true,
            llms: true,
            license: true,
            group_llms: vec![(1, "/blog/")],
        };
        let groups = |name: Option<&str>| match name {
            None => Some(0),
            Some("posts") => Some(1),
            _ => None,
        };
        for listed in site_files(&shape) {
            let parsed = match listed.place {
                Place::Published => parse_published_name(&listed.path, groups),
                Place::Root if listed.path == "blog/llms.txt" => {
                    assert!(is_group_llms_path("/blog/llms.txt", "/blog/"));
                    Some(File::GroupLlms(1))
                }
                Place::Root => parse_base_path(&format!("/{}", listed.path), "/", None),
            };
            assert_eq!(parsed, Some(listed.file), "{}", listed.path);
            assert!(
                matches!(listed.file, File::Llms | File::License | File::GroupLlms(_))
                    || looks_like_a_site_file(&listed.path),
                "{}",
                listed.path
            );
        }
    }

    #[test]
    fn a_site_lists_its_pages_then_its_other_files() {
        let shape = SiteShape {
            groups: vec![(None, vec![1])],
            single: true,
            ..SiteShape::default()
        };
        let paths: Vec<String> = site_files(&shape).into_iter().map(|l| l.path).collect();
        assert_eq!(
            paths,
            [
                "sitemap-1.xml.gz",
                "sitemap-1.txt",
                "sitemap_index.xml",
                "sitemap.xml",
                "sitemap.txt",
                "robots.txt"
            ]
        );
    }

    #[test]
    fn only_names_of_site_files_look_like_them() {
        for own in [
            "robots.txt",
            "sitemap_index.xml",
            "sitemap.xml",
            "sitemap-3.xml.gz",
            "sitemap-posts-2.txt",
            "sitemap.xsl",
            "feed.atom",
        ] {
            assert!(looks_like_a_site_file(own), "{own}");
        }
        for other in [
            "index.html",
            "robots.txt.bak",
            "my-sitemap.xml",
            "feed.json",
            ".htaccess",
        ] {
            assert!(!looks_like_a_site_file(other), "{other}");
        }
        assert!(!looks_like_a_sitemap("sitemap.xsl"));
    }
}
