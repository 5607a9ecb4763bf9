//! `sitemapd export DIR`: what the server serves, byte for byte, for static hosting.
//!
//! The sites are opened as `serve` opens them ([`Sites::open`]) and swept once; nothing
//! listens, verifies or reads the access log, so an export beside a running service never
//! contends for its ports. Every body comes from the reader the server answers from
//! ([`Reader`]), as a client taking no compression gets it; `tree.rs` writes them.

mod tree;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;

use super::progress::Progress;
use crate::answer::{Accepts, AnswerError, Reader};
use crate::app::{Sites, StartError};
use crate::config::Config;
use crate::files::{self, File, Place, SiteShape};
use crate::metrics::Metrics;
use crate::notify::Notifier;
use crate::site::Site;
use tree::{create_dir, host_dir, url_dir, Tree};

/// Writes what the server serves into DIR, or with SITEMAP_SITES_FILE into a tree that mirrors
/// the URLs, one directory per host: each site's files in DIR/<sitemaps_url host>/<its path>/,
/// its robots.txt in DIR/<base_url host>/.
pub async fn export(config: &Config, dir: &Path) -> Result<i32, StartError> {
    let metrics = Arc::new(Metrics::new());
    // A sweep announces what it changes, as the service's would.
    let notifier = Arc::new(
        Notifier::start(&config.notify, metrics.notify.clone()).map_err(StartError::Notify)?,
    );
    let opened = Sites::open(config, &notifier, None, &metrics).await?;
    for sweeper in &opened.sweepers {
        sweeper.sweep_now().await?;
    }
    let reader = Arc::new(Reader::new(
        config.cache_budget_bytes,
        metrics,
        notifier.indexnow_key().cloned(),
    ));
    let mut tree = Tree::default();
    for site in &opened.sites {
        let (files_dir, robots_dir) = if config.routed_by_host {
            (url_dir(dir, site.files()), host_dir(dir, site.base()))
        } else {
            (dir.to_path_buf(), dir.to_path_buf())
        };
        export_site(&reader, site, &files_dir, &robots_dir, &mut tree).await?;
    }
    for stale in tree.remove_stale_files()? {
        println!("removed {} (not in this layout)", stale.display());
    }
    Ok(0)
}

async fn export_site(
    reader: &Arc<Reader>,
    site: &Site,
    dir: &Path,
    robots_dir: &Path,
    tree: &mut Tree,
) -> Result<(), StartError> {
    create_dir(dir)?;
    create_dir(robots_dir)?;
    let listed = files::site_files(&shape(site));
    let mut progress = Progress::new("pages written");
    let mut pages = 0;
    for file in &listed {
        let path = match file.place {
            Place::Published => dir.join(&file.path),
            Place::Root => robots_dir.join(&file.path),
        };
        // `.well-known/llms.txt` is the one file in a directory of its own.
        if let Some(parent) = path.parent() {
            create_dir(parent)?;
        }
        if let Some(body) = body(reader, site, file.file, &path).await? {
            tree.write(&path, &body)?;
        }
        if matches!(file.file, File::PageTxt(_)) {
            pages += 1;
            progress.tick(pages);
        }
    }
    print_exported(&listed, dir, robots_dir);
    Ok(())
}

/// What decides the site's list of files, as it is now.
fn shape(site: &Site) -> SiteShape<'_> {
    let together = site.together();
    SiteShape {
        groups: site
            .groups
            .iter()
            .map(|group| {
                let pages = group.snapshot().layout.page_numbers();
                (group.name.as_deref(), pages)
            })
            .collect(),
        single: site.single_page().is_some(),
        feeds: together.feeds.is_some(),
        stylesheet: site.first().style.stylesheet.is_some(),
        llms: together.llms.is_some(),
        license: site.first().license.is_some(),
        group_llms: site
            .groups
            .iter()
            .enumerate()
            .filter(|(i, _)| together.group_llms.get(*i).is_some_and(Option::is_some))
            .filter_map(|(i, g)| Some((i, g.llms.as_ref()?.path.as_deref()?)))
            .collect(),
    }
}

/// The bytes the server sends for `file` of `site` to a client that takes no compression;
/// `None` for a file the site does not serve.
async fn body(
    reader: &Arc<Reader>,
    site: &Site,
    file: File,
    path: &Path,
) -> Result<Option<Bytes>, StartError> {
    let unreadable = |cause| StartError::Unreadable {
        path: path.display().to_string(),
        cause,
    };
    let document = match reader.document(site, file, Accepts::Identity) {
        Ok(document) => document,
        Err(AnswerError::NotFound) => return Ok(None),
        Err(e) => return Err(unreadable(e)),
    };
    let opened = reader.open(document.body).await.map_err(unreadable)?;
    let chunks: Vec<Bytes> = opened
        .stream
        .try_collect()
        .await
        .map_err(|e| unreadable(AnswerError::Unavailable(e)))?;
    Ok(Some(chunks.concat().into()))
}

/// Says what was written where: the sitemap files counted, the others by name.
fn print_exported(listed: &[files::Listed], dir: &Path, robots_dir: &Path) {
    let pages = listed
        .iter()
        .filter(|l| matches!(l.file, File::PageGz(_)))
        .count();
    let named = |place: Place| {
        listed
            .iter()
            .filter(move |l| {
                l.place == place && !matches!(l.file, File::PageGz(_) | File::PageTxt(_))
            })
            .map(|l| l.path.as_str())
            .collect::<Vec<_>>()
    };
    let written = format!(
        "{pages} sitemap files (.xml.gz and .txt), {}",
        named(Place::Published).join(", ")
    );
    let robots_files = and_list(&named(Place::Root));
    if robots_dir == dir {
        println!("wrote {written} and {robots_files} to {}", dir.display());
    } else {
        println!(
            "wrote {written} to {}, {robots_files} to {}",
            dir.display(),
            robots_dir.display()
        );
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [only] => only.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
