//! The export tree on disk: where each site's files go (one directory per host with several
//! sites), each file replaced whole by rename (never through a link), and the files of an
//! earlier layout removed — only names sitemapd writes, never anything else.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::app::StartError;
use crate::config::BaseUrl;
use crate::files;

/// How a temporary file of [`Tree::write`] ends.
const TEMPORARY: &str = ".sitemapd-tmp";

/// The files one export wrote, so that those of an earlier layout can be told apart.
#[derive(Default)]
pub(super) struct Tree {
    written: BTreeSet<PathBuf>,
}

impl Tree {
    /// Writes `bytes` to a new temporary file beside `path`, then renames it over `path`: a
    /// static host serving the directory never sees half a file, and a symlink at `path` is
    /// replaced, its target untouched (the temporary file is created new, never through a link).
    pub(super) fn write(&mut self, path: &Path, bytes: &[u8]) -> Result<(), StartError> {
        use std::io::Write;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let temporary = path.with_file_name(format!(".{name}.{}{TEMPORARY}", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
        let written = options.open(&temporary).and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_data()
        });
        let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
        if let Err(e) = renamed {
            let _ = std::fs::remove_file(&temporary);
            return Err(io_error(path, e));
        }
        self.written.insert(path.to_path_buf());
        Ok(())
    }

    /// Removes, from every directory this export wrote to, the files an earlier export wrote
    /// that this layout no longer lists: only names sitemapd writes, never anything else.
    pub(super) fn remove_stale_files(&self) -> Result<Vec<PathBuf>, StartError> {
        let dirs: BTreeSet<&Path> = self.written.iter().filter_map(|p| p.parent()).collect();
        let mut removed = Vec::new();
        for dir in dirs {
            let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, e))?;
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                let is_file = entry
                    .file_type()
                    .is_ok_and(|t| t.is_file() || t.is_symlink());
                if is_file && is_exported_name(&name) && !self.written.contains(&path) {
                    std::fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
                    removed.push(path);
                }
            }
        }
        Ok(removed)
    }
}

/// Creates `dir` and its parents.
pub(super) fn create_dir(dir: &Path) -> Result<(), StartError> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))
}

/// The directory of `url`'s host in an export tree: DIR/<host>[_<port>].
pub(super) fn host_dir(dir: &Path, url: &BaseUrl) -> PathBuf {
    dir.join(url.authority().replace(':', "_"))
}

/// Where the files of `url` go in an export tree: DIR/<host>[_<port>]/<path>, each path
/// segment percent-decoded (as a web server maps it to a file), or kept as is when decoding
/// would make it leave its directory.
pub(super) fn url_dir(dir: &Path, url: &BaseUrl) -> PathBuf {
    let mut out = host_dir(dir, url);
    for segment in url.path().split('/').filter(|s| !s.is_empty()) {
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        let safe = !matches!(decoded.as_ref(), "." | "..") && !decoded.contains(['/', '\\']);
        out.push(if safe { decoded.as_ref() } else { segment });
    }
    out
}

/// The names `export` writes (a site's files, see [`files::looks_like_a_site_file`]) and its
/// own temporary files.
fn is_exported_name(name: &str) -> bool {
    files::looks_like_a_site_file(name) || (name.starts_with('.') && name.ends_with(TEMPORARY))
}

fn io_error(path: &Path, cause: std::io::Error) -> StartError {
    StartError::Io {
        path: path.display().to_string(),
        cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_export_writes_are_ever_removed() {
        for own in [
            "robots.txt",
            "sitemap_index.xml",
            "sitemap.xml",
            "sitemap-3.xml.gz",
            "sitemap-posts-2.txt",
            "sitemap.xsl",
            "feed.atom",
            ".robots.txt.42.sitemapd-tmp",
        ] {
            assert!(is_exported_name(own), "{own}");
        }
        for other in [
            "index.html",
            "robots.txt.bak",
            "my-sitemap.xml",
            "feed.json",
            ".htaccess",
        ] {
            assert!(!is_exported_name(other), "{other}");
        }
    }

    #[test]
    fn export_directories_mirror_the_urls() {
        let dir = Path::new("/out");
        let at = |url: &str| url_dir(dir, &BaseUrl::parse(url).unwrap());
        assert_eq!(at("https://a.example.com"), Path::new("/out/a.example.com"));
        assert_eq!(
            at("http://S.example.net:8080/shop/outlet"),
            Path::new("/out/s.example.net_8080/shop/outlet")
        );
        assert_eq!(
            at("https://e.com/caf%C3%A9/a%2F..%2Fb/"),
            Path::new("/out/e.com/café/a%2F..%2Fb")
        );
    }
}
