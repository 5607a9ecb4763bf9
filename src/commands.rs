//! One-shot commands: `migrate`, `check`, `robots test`, `export`, `import`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::TryStreamExt;

use crate::answer::{render, Coding};
use crate::app::{self, StartError};
use crate::config::{BaseUrl, Config, SiteConfig};
use crate::files::{self, File, PageId, Place, SiteShape};
use crate::import::{self, Input};
use crate::site::{Group, ServedPage, Site, Snapshot, Together};
use crate::sitemap::audit::{repeat_example, GroupAudit};
use crate::sitemap::{EntryRules, Namespaces, RawEntry, SkipCounts, SkipReason};
use crate::store::{IdRange, Store, StoreError};

/// Rows shown per skip reason by `check`.
const EXAMPLES_PER_REASON: usize = 5;
/// Progress lines appear only for runs longer than this.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);

pub async fn migrate(config: &Config) -> Result<i32, StartError> {
    let store = Store::connect(&config.database()).await?;
    store.migrate().await?;
    println!("migrations applied to {}", config.database_url);
    for (source, watch) in app::watch_sources(&store, config).await {
        println!("{}", watch.describe(&source));
    }
    Ok(0)
}

/// Counts entries served and skipped by reason, with examples, for every site; exit 1 when
/// anything is wrong.
pub async fn check(config: &Config) -> Result<i32, StartError> {
    let mut worst = 0;
    for site in &config.sites {
        if config.sites.len() > 1 {
            println!("site {}", site.base_url.as_str());
        }
        worst = worst.max(check_site(config, site).await?);
    }
    Ok(worst)
}

async fn check_site(config: &Config, site: &SiteConfig) -> Result<i32, StartError> {
    let robots = match app::served_robots(config, site) {
        Ok(robots) => robots,
        Err(e) => {
            println!("robots.txt: INVALID: {e}");
            return Ok(1);
        }
    };
    println!("robots.txt: valid");
    for warning in &robots.warnings {
        println!("warning: {warning}");
    }
    let store = Store::connect(&config.database()).await?;
    let mut worst = 0;
    for group_config in &site.groups {
        if let Some(name) = &group_config.name {
            println!("group {name} ({})", group_config.source);
        }
        // The group as the service reads it: the same rows, rules and news window.
        let settings = app::group_settings(config, site, group_config, &robots);
        let now = chrono::Utc::now().timestamp();
        let (group, _) = Group::new(settings, store.for_source(&group_config.source), now);
        let rows = group.rows(IdRange::ALL, Namespaces::ALL, None);
        worst = worst.max(check_group(rows, &group.rules).await?);
        if let Some(llms) = &group.llms {
            check_llms_titles(&group, llms).await?;
        }
    }
    Ok(worst)
}

/// Counts one group's entries served and skipped by reason, with examples; exit 1 when any
/// row, tag or extension row is left out, and when a URL comes twice (the files list it once
/// each; twice in the group is one URL submitted twice, also across files).
async fn check_group(
    mut rows: BoxStream<'_, Result<RawEntry, StoreError>>,
    rules: &EntryRules,
) -> Result<i32, StartError> {
    let mut served = 0u64;
    let mut tally = Tally::default();
    let mut audit = GroupAudit::default();
    let mut progress = Progress::new("checked");
    while let Some(raw) = rows.try_next().await? {
        match rules.accept(&raw) {
            Ok(entry) => {
                if let Err(first) = audit.add(&entry) {
                    tally.note(SkipReason::Duplicate, 1, || {
                        repeat_example(raw.id, &entry, first)
                    });
                    continue;
                }
                served += 1;
                for (reason, n) in entry.dropped.iter().filter(|(_, n)| *n > 0) {
                    tally.note(reason, n, || match (reason, raw.lastmod) {
                        (SkipReason::FutureLastmod, Some(at)) => {
                            format!("entry id {}: lastmod {} left out", raw.id, at.to_rfc3339())
                        }
                        _ => match entry.dropped.examples_of(reason).next() {
                            Some(example) => example.to_string(),
                            None => format!("entry id {}: {n} row(s) left out", raw.id),
                        },
                    });
                }
            }
            Err(reason) => tally.note(reason, 1, || {
                format!(
                    "id {}: {:?}",
                    raw.id_text(),
                    raw.loc.as_deref().unwrap_or("NULL")
                )
            }),
        }
        progress.tick(served + tally.skipped.total());
    }
    println!("entries served: {served}");
    tally.print();
    // Warnings: engines distrust these, but nothing is left out for them.
    for warning in audit.warnings() {
        println!("warning: {}", warning.message);
        for example in &warning.examples {
            println!("    {example}");
        }
    }
    Ok(if tally.skipped.total() > 0 { 1 } else { 0 })
}

/// Says how many of the entries llms.txt lists for the group have no title (they show their
/// URL's path instead); a warning, not a failure.
async fn check_llms_titles(group: &Group, llms: &crate::llms::GroupLlms) -> Result<(), StartError> {
    if !llms.listed {
        return Ok(());
    }
    let links = crate::llms::read_links(&group.store, &group.rules, llms).await?;
    let untitled: Vec<&crate::llms::Link> = links
        .iter()
        .filter(|l| l.title.as_deref().is_none_or(|t| t.trim().is_empty()))
        .collect();
    println!(
        "llms.txt: {} entries in section {:?}, {} without a title",
        links.len(),
        llms.title,
        untitled.len()
    );
    if !untitled.is_empty() {
        println!(
            "warning: llms.txt entries without a title (shown by their path; add a title \
             column to the source)"
        );
        for link in untitled.iter().take(EXAMPLES_PER_REASON) {
            println!("    {}", link.url);
        }
    }
    Ok(())
}

/// What `check` left out, by reason, with the first few examples of each.
#[derive(Default)]
struct Tally {
    skipped: SkipCounts,
    examples: BTreeMap<SkipReason, Vec<String>>,
}

impl Tally {
    fn note(&mut self, reason: SkipReason, n: u64, example: impl FnOnce() -> String) {
        self.skipped.add_n(reason, n);
        let list = self.examples.entry(reason).or_default();
        if list.len() < EXAMPLES_PER_REASON {
            list.push(example());
        }
    }

    fn print(&self) {
        let (entries, parts): (Vec<_>, Vec<_>) = self
            .skipped
            .iter()
            .partition(|(reason, _)| reason.drops_entry());
        let sum = |list: &[(SkipReason, u64)]| list.iter().map(|(_, n)| n).sum::<u64>();
        println!("entries skipped: {}", sum(&entries));
        println!("extension rows and tags skipped: {}", sum(&parts));
        for (reason, count) in self.skipped.iter().filter(|(_, n)| *n > 0) {
            println!("  {}: {count}", reason.as_str());
            for example in self.examples.get(&reason).into_iter().flatten() {
                println!("    {example}");
            }
        }
    }
}

/// Says whether robots.txt allows `url` for `agent` (a token, a registry name or a whole
/// User-Agent, read through the registry as that crawler would), and which rule decided.
pub fn robots_test(config: &Config, url: &str, agent: &str) -> Result<i32, StartError> {
    let site = config.first_site();
    let served = crate::robots::RobotsTxt::parse(&app::served_robots(config, site)?.body)?;
    let tested = match crate::admin::tester::tested_url(url, site.base_url.host()) {
        Ok(tested) => tested,
        Err(refused) => {
            eprintln!("robots test {url:?}: {refused}");
            return Ok(2);
        }
    };
    if let Some(note) = &tested.note {
        println!("note: {note}");
    }
    let path = tested.path;
    // A crawler's name or whole User-Agent string answers for the token that crawler obeys.
    let registry = &config.crawlers;
    let token = registry.robots_token(agent);
    let verdict = served.evaluate(token, &path);
    let agent = match registry.resolve(agent) {
        Some(id) if !registry.get(id).name.eq_ignore_ascii_case(token) => {
            format!("{} (token {token})", registry.get(id).name)
        }
        Some(_) => token.to_string(),
        None => agent.to_string(),
    };
    let word = if verdict.allowed {
        "allowed"
    } else {
        "disallowed"
    };
    match &verdict.decided_by {
        Some(rule) => println!(
            "{word}: {path} for {agent}, by line {}: {}: {}",
            rule.line,
            if rule.allow { "Allow" } else { "Disallow" },
            rule.pattern
        ),
        None => println!("{word}: {path} for {agent}, no rule matched"),
    }
    Ok(if verdict.allowed { 0 } else { 1 })
}

/// Prints the `robots enforce` snippet for `server` (the first site's policy).
pub fn robots_enforce(config: &Config, server: &str) -> Result<i32, StartError> {
    use crate::robots::enforce::{blocked, snippet, Server};
    let server = Server::parse(server).expect("clap allows only known servers");
    let policy = config.first_site().robots.policy.as_ref();
    let registry = &config.crawlers;
    let refused = blocked(policy, registry).map_err(crate::robots::RobotsError::from)?;
    print!("{}", snippet(server, &refused, policy));
    Ok(0)
}

/// Writes what the server serves, byte for byte, for static hosting: into DIR, or with
/// SITEMAP_SITES_FILE into a tree that mirrors the URLs, one directory per host: each site's
/// files in DIR/<sitemaps_url host>/<its path>/, its robots.txt in DIR/<base_url host>/.
pub async fn export(config: &Config, dir: &Path) -> Result<i32, StartError> {
    let service = app::Service::start(config).await?;
    for sweeper in &service.sweepers {
        sweeper.sweep_now().await?;
    }
    for site in &service.app.sites {
        let (files_dir, robots_dir) = if config.routed_by_host {
            (url_dir(dir, site.files()), host_dir(dir, site.base()))
        } else {
            (dir.to_path_buf(), dir.to_path_buf())
        };
        export_site(site, &files_dir, &robots_dir).await?;
    }
    for stale in remove_stale_files()? {
        println!("removed {} (not in this layout)", stale.display());
    }
    Ok(0)
}

/// The directory of `url`'s host in an export tree: DIR/<host>[_<port>].
fn host_dir(dir: &Path, url: &BaseUrl) -> PathBuf {
    dir.join(url.authority().replace(':', "_"))
}

/// Where the files of `url` go in an export tree: DIR/<host>[_<port>]/<path>, each path
/// segment percent-decoded (as a web server maps it to a file), or kept as is when decoding
/// would make it leave its directory.
fn url_dir(dir: &Path, url: &BaseUrl) -> PathBuf {
    let mut out = host_dir(dir, url);
    for segment in url.path().split('/').filter(|s| !s.is_empty()) {
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        let safe = !matches!(decoded.as_ref(), "." | "..") && !decoded.contains(['/', '\\']);
        out.push(if safe { decoded.as_ref() } else { segment });
    }
    out
}

async fn export_site(site: &Site, dir: &Path, robots_dir: &Path) -> Result<(), StartError> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    std::fs::create_dir_all(robots_dir).map_err(|e| io_error(robots_dir, e))?;
    let mut export = SiteExport::new(site);
    let listed = files::site_files(&export.shape());
    for file in &listed {
        let path = match file.place {
            Place::Published => dir.join(&file.path),
            Place::Root => robots_dir.join(&file.path),
        };
        // `.well-known/llms.txt` is the one file in a directory of its own.
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
        }
        if let Some(body) = export.body(file.file).await? {
            write(&path, &body)?;
        }
    }
    print_exported(&listed, dir, robots_dir);
    Ok(())
}

/// The bodies of one site's files, as the server sends them, for `export`.
struct SiteExport<'a> {
    site: &'a Site,
    /// Each group's snapshot, taken once: every file written is of the same layout.
    snapshots: Vec<Arc<Snapshot>>,
    together: Arc<Together>,
    /// One file holds all.
    single: bool,
    /// With SITEMAP_STYLESHEET=true every file names the stylesheet: it is written beside them,
    /// so the static copy shows as the served one does.
    stylesheet: bool,
    /// The last page rendered, gzip and text: when one file holds all, `sitemap.xml` and
    /// `sitemap.txt` are that page, written from the same render.
    last_page: Option<(Bytes, Bytes)>,
    progress: Progress,
}

impl<'a> SiteExport<'a> {
    fn new(site: &'a Site) -> Self {
        Self {
            site,
            snapshots: site.groups.iter().map(|g| g.snapshot()).collect(),
            together: site.together(),
            single: site.single_page().is_some(),
            stylesheet: site.first().style.stylesheet.is_some(),
            last_page: None,
            progress: Progress::new("pages written"),
        }
    }

    /// What decides the site's list of files.
    fn shape(&self) -> SiteShape<'a> {
        let groups = self.site.groups.iter().zip(&self.snapshots);
        SiteShape {
            groups: groups
                .map(|(group, snapshot)| (group.name.as_deref(), snapshot.layout.page_numbers()))
                .collect(),
            single: self.single,
            feeds: self.together.feeds.is_some(),
            stylesheet: self.stylesheet,
            llms: self.together.llms.is_some(),
        }
    }

    /// The bytes of `file`; `None` for a file export does not write.
    async fn body(&mut self, file: File) -> Result<Option<Bytes>, StartError> {
        let feeds = self.together.feeds.as_ref();
        Ok(Some(match file {
            File::PageGz(id) => {
                let (group, served) = self.page(id);
                let gz = Bytes::from(render_whole(&group, &served).await?);
                self.last_page = Some((gz.clone(), Bytes::new()));
                gz
            }
            File::PageTxt(id) => {
                let (group, served) = self.page(id);
                let text = Bytes::from(render_text(&group, &served).await?);
                if let Some((_, last)) = &mut self.last_page {
                    *last = text.clone();
                }
                // Counted per group, from 1.
                let layout = &self.snapshots[id.group].layout;
                let position = layout.find(id.no).map_or(0, |(i, _)| i);
                self.progress.tick(position as u64 + 1);
                text
            }
            File::Index => self.together.index.body.clone(),
            File::Sitemap => match (self.single, &self.last_page) {
                (true, Some((gz, _))) => Bytes::from(gunzip(gz)),
                _ => self.together.index.body.clone(),
            },
            File::SitemapTxt => match &self.last_page {
                Some((_, text)) => text.clone(),
                None => return Ok(None),
            },
            File::FeedAtom => match feeds {
                Some(feeds) => feeds.atom.body.clone(),
                None => return Ok(None),
            },
            File::FeedRss => match feeds {
                Some(feeds) => feeds.rss.body.clone(),
                None => return Ok(None),
            },
            File::Stylesheet => Bytes::from_static(crate::stylesheet::BODY.as_bytes()),
            File::Robots => self.site.first().snapshot().robots.body.clone(),
            File::Llms => match &self.together.llms {
                Some(llms) => llms.body.clone(),
                None => return Ok(None),
            },
            // Served from configuration only; a page's other forms come from its gzip file.
            File::IndexNowKey | File::PageXml(_) => return Ok(None),
        }))
    }

    /// A page of this export's snapshot, with its group.
    fn page(&self, id: PageId) -> (Arc<Group>, ServedPage) {
        let group = self.site.groups[id.group].clone();
        let served = self.snapshots[id.group]
            .page(id.no)
            .expect("a page of this snapshot");
        (group, served)
    }
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

/// Loads a sitemap (or an index and its files) into the built-in table and prints a summary;
/// exit 1 when an entry was skipped or a file failed.
pub async fn import(config: &Config, file: &str) -> Result<i32, StartError> {
    let site = config.first_site();
    let robots = app::served_robots(config, site)?;
    let rules = app::entry_rules(config, site, &robots);
    let store = Store::connect(&config.database()).await?;
    store.migrate().await?;
    let mut progress = Progress::new("entries imported");
    let report = import::run(&store, rules, Input::from_arg(file), |written| {
        progress.tick(written.entries())
    })
    .await;
    print!("{report}");
    Ok(report.exit_code())
}

async fn render_whole(group: &Group, served: &ServedPage) -> Result<Vec<u8>, StoreError> {
    // The chunks come from the compressor's own thread.
    let chunks = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = chunks.clone();
    let emit = move |chunk: bytes::Bytes| sink.lock().expect("chunks").push(chunk);
    let (_, last) = render::page(group, served, Coding::Gzip, emit).await?;
    let mut out: Vec<u8> = chunks.lock().expect("chunks").concat();
    out.extend_from_slice(&last);
    Ok(out)
}

/// The text sitemap of `page`, as `/sitemap-K.txt` serves it.
async fn render_text(group: &Group, served: &ServedPage) -> Result<Vec<u8>, StoreError> {
    let (text, _) = render::page_text(group, served).await?;
    Ok(text.to_vec())
}

fn gunzip(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    let _ = flate2::read::GzDecoder::new(gz).read_to_end(&mut out);
    out
}

/// Files this export wrote, so that those of an earlier layout can be told apart.
static WRITTEN: std::sync::Mutex<std::collections::BTreeSet<PathBuf>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Writes `bytes` to a new temporary file beside `path`, then renames it over `path`: a static
/// host serving the directory never sees half a file, and a symlink at `path` is replaced,
/// its target untouched (the temporary file is created new, never through a link).
fn write(path: &Path, bytes: &[u8]) -> Result<(), StartError> {
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
    WRITTEN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.to_path_buf());
    Ok(())
}

/// How a temporary file of [`write`] ends.
const TEMPORARY: &str = ".sitemapd-tmp";

/// Removes, from every directory this export wrote to, the files an earlier export wrote that
/// this layout no longer lists: only names sitemapd writes, never anything else.
fn remove_stale_files() -> Result<Vec<PathBuf>, StartError> {
    let written = WRITTEN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let dirs: std::collections::BTreeSet<&Path> =
        written.iter().filter_map(|p| p.parent()).collect();
    let mut removed = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, e))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry
                .file_type()
                .is_ok_and(|t| t.is_file() || t.is_symlink());
            if is_file && is_exported_name(&name) && !written.contains(&path) {
                std::fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
                removed.push(path);
            }
        }
    }
    Ok(removed)
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

/// Prints a count on stderr now and then, once a run has lasted more than a moment.
struct Progress {
    what: &'static str,
    started: Instant,
    last: Instant,
}

impl Progress {
    fn new(what: &'static str) -> Self {
        let now = Instant::now();
        Self {
            what,
            started: now,
            last: now,
        }
    }

    fn tick(&mut self, done: u64) {
        if self.started.elapsed() > PROGRESS_AFTER && self.last.elapsed() > Duration::from_secs(1) {
            self.last = Instant::now();
            eprintln!("… {done} {}", self.what);
        }
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
