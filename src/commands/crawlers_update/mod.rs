//! `sitemapd crawlers update`: fetches the ai.robots.txt project's `robots.json` (or a mirror, or
//! a local copy) and the range lists the registry names, writes the agents the registry lacks
//! into a registry file (`--out`, else `CRAWLERS_FILE`, else `crawlers.toml`), and prints what was
//! added and what each site's `ROBOTS_POLICY` now does with them. A fetch that fails writes
//! nothing and exits 1.

mod fetch;
mod render;
mod source;

use std::path::{Path, PathBuf};

use crate::app::StartError;
use crate::config::Config;
use crate::crawlers::{CrawlerId, Registry, RegistryError};
use crate::robots::{Access, Policy};
use fetch::{fetch, FetchError};
use source::{ListedAgent, SourceError};

/// Where the list lives when `--from` is not given.
pub const DEFAULT_SOURCE: &str =
    "https://raw.githubusercontent.com/ai-robots-txt/ai.robots.txt/main/robots.json";

/// The file written when neither `--out` nor `CRAWLERS_FILE` names one.
const DEFAULT_OUT: &str = "crawlers.toml";

/// Why an update wrote nothing.
#[derive(Debug, thiserror::Error)]
enum UpdateError {
    #[error("cannot fetch {source}")]
    Fetch {
        source: String,
        #[source]
        cause: FetchError,
    },
    #[error("{source}")]
    Source {
        source: String,
        #[source]
        cause: SourceError,
    },
    #[error("{path}: cannot read it")]
    ReadOut {
        path: String,
        #[source]
        cause: std::io::Error,
    },
    #[error("{path} is kept as it is")]
    BadOut {
        path: String,
        #[source]
        cause: RegistryError,
    },
    #[error("{path}: cannot write it")]
    Write {
        path: String,
        #[source]
        cause: std::io::Error,
    },
}

/// Runs the update; exit 0 when the file is current (written or already holding every agent),
/// 1 when nothing could be written.
pub async fn crawlers_update(
    config: &Config,
    from: Option<&str>,
    out: Option<&Path>,
) -> Result<i32, StartError> {
    let source = from.unwrap_or(DEFAULT_SOURCE);
    let out = out.unwrap_or(Path::new(DEFAULT_OUT));
    match update(config, source, out).await {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("sitemapd: crawlers update: {}", crate::error::Chain(&e));
            Ok(1)
        }
    }
}

async fn update(config: &Config, source: &str, out: &Path) -> Result<(), UpdateError> {
    let shown = out.display().to_string();
    let body = fetch(source).await.map_err(|cause| UpdateError::Fetch {
        source: source.to_string(),
        cause,
    })?;
    let listed = source::listed_agents(&body).map_err(|cause| UpdateError::Source {
        source: source.to_string(),
        cause,
    })?;
    let existing = read_existing(out)?;
    let known = match &existing {
        Some(text) => Registry::parse_extension((*config.crawlers).clone(), text, &shown).map_err(
            |cause| UpdateError::BadOut {
                path: shown.clone(),
                cause,
            },
        )?,
        None => (*config.crawlers).clone(),
    };
    let new = render::unknown_agents(&listed, &known);
    let entries = render::entries(&new, source);
    let updated = Registry::parse_extension(known, &entries, &shown).map_err(|cause| {
        UpdateError::BadOut {
            path: shown.clone(),
            cause,
        }
    })?;
    println!(
        "{source}: {} agents listed, {} new",
        listed.len(),
        new.len()
    );
    print_added(&new);
    print_policy_changes(config, &updated, &new);
    check_range_lists(&updated).await;
    if new.is_empty() {
        println!("nothing new: {shown} left as it was");
        return Ok(());
    }
    let head = existing.unwrap_or_else(|| {
        render::header(source, &chrono::Utc::now().format("%Y-%m-%d").to_string())
    });
    write_atomically(out, &(head + &entries)).map_err(|cause| UpdateError::Write {
        path: shown.clone(),
        cause,
    })?;
    println!("wrote {shown}: {} crawlers added", new.len());
    Ok(())
}

/// The text of `out` when it exists.
fn read_existing(out: &Path) -> Result<Option<String>, UpdateError> {
    match std::fs::read_to_string(out) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(cause) => Err(UpdateError::ReadOut {
            path: out.display().to_string(),
            cause,
        }),
    }
}

/// Writes beside `path`, then renames over it: a reader never sees half a file.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}

fn print_added(new: &[ListedAgent]) {
    for agent in new {
        let review = agent
            .review
            .as_ref()
            .map(|why| format!(" (review: {why})"))
            .unwrap_or_default();
        println!(
            "+ {}: operator {}, purpose {}{review}",
            agent.name, agent.operator, agent.purpose
        );
    }
}

/// What each site's policy does with the new agents.
fn print_policy_changes(config: &Config, registry: &Registry, new: &[ListedAgent]) {
    if new.is_empty() {
        return;
    }
    for site in &config.sites {
        let prefix = if config.sites.len() > 1 {
            format!("{}: ", site.base_url.as_str())
        } else {
            String::new()
        };
        let Some(policy) = site.robots.policy.as_ref() else {
            println!("{prefix}ROBOTS_POLICY is unset: robots.txt stays the template alone");
            continue;
        };
        for agent in new {
            if let Some(id) = registry.by_name(&agent.name) {
                println!("{prefix}{}", policy_change(policy, registry, id));
            }
        }
    }
}

/// One line: what `policy` now does for crawler `id`, and by which rule.
fn policy_change(policy: &Policy, registry: &Registry, id: CrawlerId) -> String {
    let crawler = registry.get(id);
    let Some(access) = policy.rule_for(registry, id) else {
        return format!(
            "{}: no rule names it or {}: the template's rules apply",
            crawler.name, crawler.purpose
        );
    };
    let verdict = match access {
        Access::Allow => "allowed".to_string(),
        Access::Disallow(_) if access.disallows_everything() => "disallowed on /".to_string(),
        Access::Disallow(paths) => format!("disallowed on {}", paths.join(" ")),
    };
    format!(
        "{}: now {verdict} by {}={}",
        crawler.name,
        crawler.purpose,
        access.written()
    )
}

/// Fetches every range list the registry names, at once, and says what each holds.
async fn check_range_lists(registry: &Registry) {
    let urls: std::collections::BTreeSet<&str> = registry
        .crawlers()
        .iter()
        .flat_map(|c| c.verify_ranges.iter().map(String::as_str))
        .collect();
    let checks = urls.iter().map(|url| async move {
        let answer = match fetch::range_list(url).await {
            Ok(count) => format!("{count} prefixes"),
            Err(e) => format!("not fetched: {}", crate::error::Chain(&e)),
        };
        (url, answer)
    });
    for (url, answer) in futures::future::join_all(checks).await {
        println!("range list {url}: {answer}");
    }
}
