//! One-shot commands: `migrate`, `check`, `robots test`, `export`, `import`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::TryStreamExt;

use crate::answer::render;
use crate::app::{self, StartError};
use crate::config::{BaseUrl, Config, SiteConfig};
use crate::import::{self, Input};
use crate::site::{page_file_name, text_file_name, Group, ServedPage, Site};
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
    let registry = app::crawler_registry(config)?;
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
    let registry = app::crawler_registry(config)?;
    let refused = blocked(policy, &registry).map_err(crate::robots::RobotsError::from)?;
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
    let mut progress = Progress::new("pages written");
    let single = site.single_page().is_some();
    let mut files = 0;
    for group in &site.groups {
        files += export_group(group, dir, single, &mut progress).await?;
    }
    let together = site.together();
    write(&dir.join("sitemap_index.xml"), &together.index.body)?;
    if !single {
        write(&dir.join("sitemap.xml"), &together.index.body)?;
    }
    if let Some(feeds) = &together.feeds {
        write(&dir.join(crate::feed::ATOM_FILE), &feeds.atom.body)?;
        write(&dir.join(crate::feed::RSS_FILE), &feeds.rss.body)?;
    }
    let robots = site.first().snapshot().robots.body.clone();
    write(&robots_dir.join("robots.txt"), &robots)?;
    let llms = export_llms(&together, robots_dir)?;
    // With SITEMAP_STYLESHEET=true every file written above names the stylesheet: write it
    // beside them, so the static copy shows as the served one does.
    let stylesheet = site.first().style.stylesheet.is_some();
    if stylesheet {
        write(
            &dir.join(crate::stylesheet::FILE_NAME),
            crate::stylesheet::BODY.as_bytes(),
        )?;
    }
    let mut written = vec!["sitemap_index.xml", "sitemap.xml"];
    if single {
        written.push("sitemap.txt");
    }
    if together.feeds.is_some() {
        written.extend([crate::feed::ATOM_FILE, crate::feed::RSS_FILE]);
    }
    if stylesheet {
        written.push(crate::stylesheet::FILE_NAME);
    }
    let written = format!(
        "{files} sitemap files (.xml.gz and .txt), {}",
        written.join(", ")
    );
    let robots_files = match llms {
        true => "robots.txt, llms.txt and .well-known/llms.txt",
        false => "robots.txt",
    };
    if robots_dir == dir {
        println!("wrote {written} and {robots_files} to {}", dir.display());
    } else {
        println!(
            "wrote {written} to {}, {robots_files} to {}",
            dir.display(),
            robots_dir.display()
        );
    }
    Ok(())
}

/// Writes llms.txt at the root beside robots.txt, and the same bytes at
/// `.well-known/llms.txt` (both paths are served); says whether the site has one.
fn export_llms(together: &crate::site::Together, root: &Path) -> Result<bool, StartError> {
    let Some(llms) = &together.llms else {
        return Ok(false);
    };
    let well_known = root.join(".well-known");
    std::fs::create_dir_all(&well_known).map_err(|e| io_error(&well_known, e))?;
    write(&root.join("llms.txt"), &llms.body)?;
    write(&well_known.join("llms.txt"), &llms.body)?;
    Ok(true)
}

/// Writes one group's files (`.xml.gz` and `.txt`; with `single`, also `sitemap.xml` and
/// `sitemap.txt`); says how many.
async fn export_group(
    group: &Group,
    dir: &Path,
    single: bool,
    progress: &mut Progress,
) -> Result<usize, StartError> {
    let snapshot = group.snapshot();
    let name = group.name.as_deref();
    for (i, page) in snapshot.layout.0.iter().enumerate() {
        let served = snapshot.page(page.no).expect("a page of this snapshot");
        let gz = render_whole(group, &served).await?;
        write(&dir.join(page_file_name(name, page.no)), &gz)?;
        let text = render_text(group, &served).await?;
        write(&dir.join(text_file_name(name, page.no)), &text)?;
        if single {
            // One file holds all: sitemap.xml and sitemap.txt are that file.
            write(&dir.join("sitemap.xml"), &gunzip(&gz))?;
            write(&dir.join("sitemap.txt"), &text)?;
        }
        progress.tick(i as u64 + 1);
    }
    Ok(snapshot.layout.0.len())
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
    let mut out = Vec::new();
    let (_, last) = render::page_gz(group, served, |chunk| out.extend_from_slice(&chunk)).await?;
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

/// The names `export` writes: sitemaps (`sitemap*.xml`, `.xml.gz`, `.txt`), the index,
/// robots.txt, feeds and the stylesheet, and its own temporary files.
fn is_exported_name(name: &str) -> bool {
    let sitemap = name.starts_with("sitemap")
        && [".xml", ".xml.gz", ".txt", ".xsl"]
            .iter()
            .any(|ext| name.ends_with(ext));
    sitemap
        || matches!(name, "robots.txt" | "feed.atom" | "feed.rss")
        || (name.starts_with('.') && name.ends_with(TEMPORARY))
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
