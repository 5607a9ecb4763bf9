//! The crawler registry: who the crawlers are (name, robots.txt tokens, the words that name them in
//! a User-Agent, operator, purpose, how to verify them, where the facts come from), loaded from the
//! built-in `data/crawlers.toml` and an optional extension file, with the User-Agent classifier
//! over it (the product rule itself is [`super::user_agent`]'s).
//!
//! The registry is built once at start and shared as `Arc<Registry>`; it is not a global, so tests
//! and tools can hold registries of their own. [`Registry::classify`] sits on every request's path:
//! its patterns are lowercased and bucketed by first byte when the registry is built, and a lookup
//! neither allocates nor reads more than [`USER_AGENT_SCAN_BYTES`] of the header. Everything that
//! names a crawler from a User-Agent (the ledger, the crawl log, the robots tester, robots_token)
//! goes through it.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::user_agent::Matcher;
pub use super::user_agent::USER_AGENT_SCAN_BYTES;
use entry::{check_entry, is_token_byte};

/// The built-in registry, compiled into the binary.
const BUILTIN: &str = include_str!("../../data/crawlers.toml");

/// Where the built-in registry comes from, as error messages name it.
const BUILTIN_ORIGIN: &str = "data/crawlers.toml";

/// What a crawler fetches for.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    /// Search engines' indexing crawlers.
    Search,
    /// Collecting pages to train AI models.
    AiTraining,
    /// Answers built from fetched pages (AI search, answer engines).
    AiSearch,
    /// Fetches on a person's request (an assistant or agent reading a page for someone).
    AiUser,
    /// SEO tools' crawlers.
    Seo,
    /// Web archives.
    Archive,
    /// Link previews in chats and social networks.
    Preview,
    /// Everything else: ads checks, feed readers, research crawls.
    Other,
}

impl Purpose {
    /// Every purpose, in the order the status page groups crawlers.
    pub const ALL: [Purpose; 8] = [
        Purpose::Search,
        Purpose::AiTraining,
        Purpose::AiSearch,
        Purpose::AiUser,
        Purpose::Seo,
        Purpose::Archive,
        Purpose::Preview,
        Purpose::Other,
    ];

    /// The name used in the registry file, `ROBOTS_POLICY` and JSON, e.g. `ai-training`.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Search => "search",
            Purpose::AiTraining => "ai-training",
            Purpose::AiSearch => "ai-search",
            Purpose::AiUser => "ai-user",
            Purpose::Seo => "seo",
            Purpose::Archive => "archive",
            Purpose::Preview => "preview",
            Purpose::Other => "other",
        }
    }

    /// The purpose named `s` exactly as [`Purpose::as_str`] spells it.
    pub fn parse(s: &str) -> Option<Purpose> {
        Purpose::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// A short description for people, e.g. "AI training".
    pub fn label(self) -> &'static str {
        match self {
            Purpose::Search => "Search engines",
            Purpose::AiTraining => "AI training",
            Purpose::AiSearch => "AI search and answers",
            Purpose::AiUser => "AI fetching for a person",
            Purpose::Seo => "SEO tools",
            Purpose::Archive => "Archives",
            Purpose::Preview => "Link previews",
            Purpose::Other => "Other",
        }
    }
}

impl fmt::Display for Purpose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `[[crawler]]` of data/crawlers.toml (or CRAWLERS_FILE).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrawlerInfo {
    /// Display name, unique in a registry ignoring ASCII case (e.g. "Googlebot", "GPTBot").
    pub name: String,
    /// robots.txt product tokens it obeys, its own first (e.g. ["Googlebot"]).
    pub tokens: Vec<String>,
    /// Whole-word patterns naming it in a User-Agent; empty = never fetches (Google-Extended).
    pub user_agent: Vec<String>,
    pub operator: String,
    pub purpose: Purpose,
    /// Reverse-DNS suffixes its addresses resolve to, e.g. ["googlebot.com", "google.com"].
    pub verify_dns: Vec<String>,
    /// URLs of the IP-range JSON its operator publishes.
    pub verify_ranges: Vec<String>,
    /// The Web Bot Auth signers it signs requests with: origins (`https://chatgpt.com`, no
    /// trailing slash) or URLs of their key directories ([`crate::crawlers::signer`]).
    pub signature_agent: Vec<String>,
    /// Whether it reads and obeys robots.txt; `false` for fetchers their operator documents as
    /// ignoring it (fetches a person asked for): the compliance report shows them as exempt.
    pub obeys_robots: bool,
    /// Where the facts come from.
    pub docs: Vec<String>,
}

impl CrawlerInfo {
    /// Whether requests can carry this crawler's name (tokens such as Google-Extended never fetch).
    pub fn fetches(&self) -> bool {
        !self.user_agent.is_empty()
    }

    /// The robots.txt product token it obeys: its own (the first of its tokens), or its name
    /// when it lists none.
    pub fn token(&self) -> &str {
        self.tokens.first().unwrap_or(&self.name)
    }

    /// Whether it crawls for a search engine (purpose `search`): the crawl log keeps coverage,
    /// recrawl and freshness for it.
    pub fn crawls_for_search(&self) -> bool {
        self.purpose == Purpose::Search
    }

    /// Whether its operator documents a way to prove a request came from it.
    pub fn is_verifiable(&self) -> bool {
        !self.verify_dns.is_empty()
            || !self.verify_ranges.is_empty()
            || !self.signature_agent.is_empty()
    }
}

/// Index of a crawler in its registry (cheap to copy, used by the ledger and metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CrawlerId(pub u16);

impl CrawlerId {
    /// The position in [`Registry::crawlers`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// A bad registry file: exit 2 naming the file and the entry (its name or index) and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{origin}: cannot read the crawler registry: {source}")]
    Read {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: line {line}: not a crawler registry: {message}")]
    Syntax {
        origin: String,
        line: usize,
        message: String,
    },
    #[error("{origin}: crawler {entry}: {problem}")]
    Entry {
        origin: String,
        /// `"GPTBot"` (the entry's name) or `#3` (its position, from 1) when it has no name.
        entry: String,
        problem: String,
    },
    #[error("{origin}: more than {max} crawlers", max = u16::MAX)]
    TooMany { origin: String },
}

/// A registry file as written: `[[crawler]]` tables and nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    crawler: Vec<toml::Table>,
}

/// How current a registry is: the built-in file's date, or when `CRAWLERS_FILE` last changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dated {
    /// `2026-12-07`, or `2026-12-07 10:30 UTC` for a file's modification time.
    pub date: String,
    /// `built in`, or the path of `CRAWLERS_FILE`.
    pub source: String,
}

impl Dated {
    fn builtin() -> Dated {
        let date = BUILTIN
            .lines()
            .find_map(|line| line.strip_prefix("# date: "))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("unknown");
        Dated {
            date: date.to_string(),
            source: "built in".to_string(),
        }
    }

    fn of_file(path: &Path) -> Dated {
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let date = modified.map_or("unknown".to_string(), |time| {
            chrono::DateTime::<chrono::Utc>::from(time)
                .format("%Y-%m-%d %H:%M UTC")
                .to_string()
        });
        Dated {
            date,
            source: path.display().to_string(),
        }
    }
}

/// The crawlers and the indexes over them.
#[derive(Clone, Debug)]
pub struct Registry {
    dated: Dated,
    crawlers: Vec<CrawlerInfo>,
    names: HashMap<String, CrawlerId>,
    tokens: HashMap<String, CrawlerId>,
    matcher: Matcher,
}

impl Registry {
    /// The built-in registry (data/crawlers.toml). Its validity is a unit test, so this never fails.
    pub fn builtin() -> Registry {
        Self::parse(BUILTIN, BUILTIN_ORIGIN).expect("the built-in crawler registry is valid")
    }

    /// The built-in registry extended by the file at `path` (an entry with an existing name
    /// replaces it, others are added after the built-in ones).
    pub fn with_file(path: &Path) -> Result<Registry, RegistryError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RegistryError::Read {
            origin: origin.clone(),
            source,
        })?;
        let mut registry = Self::parse_extension(Self::builtin(), &text, &origin)?;
        registry.dated = Dated::of_file(path);
        Ok(registry)
    }

    /// How current the registry is (the built-in file's date, or the extension file's time).
    pub fn dated(&self) -> &Dated {
        &self.dated
    }

    /// `builtin` extended by the registry text `text` (named `origin` in errors).
    pub fn parse_extension(
        builtin: Registry,
        text: &str,
        origin: &str,
    ) -> Result<Registry, RegistryError> {
        let mut crawlers = builtin.crawlers;
        for extra in parse_entries(text, origin)? {
            match crawlers
                .iter_mut()
                .find(|c| c.name.eq_ignore_ascii_case(&extra.name))
            {
                Some(known) => *known = extra,
                None => crawlers.push(extra),
            }
        }
        Self::from_crawlers(crawlers, origin)
    }

    /// A registry of the text alone (no built-in entries).
    pub fn parse(text: &str, origin: &str) -> Result<Registry, RegistryError> {
        Self::from_crawlers(parse_entries(text, origin)?, origin)
    }

    fn from_crawlers(crawlers: Vec<CrawlerInfo>, origin: &str) -> Result<Registry, RegistryError> {
        if crawlers.len() > usize::from(u16::MAX) {
            return Err(RegistryError::TooMany {
                origin: origin.to_string(),
            });
        }
        let ids = (0..).map(CrawlerId);
        let names = crawlers
            .iter()
            .zip(ids.clone())
            .map(|(c, id)| (c.name.to_ascii_lowercase(), id))
            .collect();
        // A crawler's own (first) token wins over another's secondary token, then file order.
        let mut tokens = HashMap::new();
        for rank in [true, false] {
            for (crawler, id) in crawlers.iter().zip(ids.clone()) {
                for (i, token) in crawler.tokens.iter().enumerate() {
                    if (i == 0) == rank {
                        tokens.entry(token.to_ascii_lowercase()).or_insert(id);
                    }
                }
            }
        }
        let matcher = Matcher::new(crawlers.iter().map(|c| c.user_agent.as_slice()));
        Ok(Registry {
            dated: Dated::builtin(),
            crawlers,
            names,
            tokens,
            matcher,
        })
    }

    /// Every crawler, in file order (built-in first, then the extension's new ones).
    pub fn crawlers(&self) -> &[CrawlerInfo] {
        &self.crawlers
    }

    /// Every crawler's id, in file order.
    pub fn ids(&self) -> impl Iterator<Item = CrawlerId> + '_ {
        (0..self.crawlers.len()).map(|i| CrawlerId(i as u16))
    }

    /// How many crawlers there are.
    pub fn len(&self) -> usize {
        self.crawlers.len()
    }

    /// Whether the registry has no crawlers at all.
    pub fn is_empty(&self) -> bool {
        self.crawlers.is_empty()
    }

    /// The crawler `id` names. Panics on an id of another registry that is out of range.
    pub fn get(&self, id: CrawlerId) -> &CrawlerInfo {
        &self.crawlers[id.index()]
    }

    /// `id` when it is one of this registry's crawlers (a signed request's signer, say).
    pub fn checked(&self, id: CrawlerId) -> Option<CrawlerId> {
        (id.index() < self.crawlers.len()).then_some(id)
    }

    /// Whether the crawler named `name` is one whose operator documents that it ignores
    /// robots.txt (`obeys_robots = false`, e.g. fetches a person asked for): its fetches of
    /// disallowed paths are exempt, not violations. A name the registry does not know is not
    /// exempt.
    pub fn exempt_from_robots(&self, name: &str) -> bool {
        self.by_name(name)
            .is_some_and(|id| !self.get(id).obeys_robots)
    }

    /// The search crawlers that fetch, in file order: those the crawl log reports coverage for.
    pub fn fetching_search_crawlers(&self) -> impl Iterator<Item = CrawlerId> + '_ {
        self.ids().filter(|id| {
            let crawler = self.get(*id);
            crawler.crawls_for_search() && crawler.fetches()
        })
    }

    /// The crawler named `name`, ignoring ASCII case.
    pub fn by_name(&self, name: &str) -> Option<CrawlerId> {
        self.names.get(&name.trim().to_ascii_lowercase()).copied()
    }

    /// The crawler that obeys the robots.txt product token `token`, ignoring ASCII case; what
    /// follows the token (`iaskspider/2.0`, `panscient.com`) is ignored when `token` as a whole
    /// is not one.
    pub fn by_token(&self, token: &str) -> Option<CrawlerId> {
        let token = token.trim();
        let end = token
            .bytes()
            .position(|b| !is_token_byte(b))
            .unwrap_or(token.len());
        [token, &token[..end]]
            .into_iter()
            .find_map(|t| self.tokens.get(&t.to_ascii_lowercase()).copied())
    }

    /// The crawler a User-Agent names, or `None` ("other"): the longest registry pattern that
    /// stands as a product (a `name/version`, a comment item's first word; never a word of a URL,
    /// an address or comment text: see [`super::user_agent`]), ignoring ASCII case, in the first
    /// [`USER_AGENT_SCAN_BYTES`] bytes. No allocation.
    pub fn classify(&self, user_agent: &str) -> Option<CrawlerId> {
        self.matcher.classify(user_agent.as_bytes()).map(CrawlerId)
    }

    /// Every crawler of `purpose`, in file order.
    pub fn by_purpose(&self, purpose: Purpose) -> impl Iterator<Item = CrawlerId> + '_ {
        self.ids()
            .filter(move |id| self.get(*id).purpose == purpose)
    }

    /// The crawler `agent` means, whether a product token (the whole of `agent`), a registry name
    /// or a whole User-Agent string ([`Registry::classify`], as a request would be named), in that
    /// order.
    pub fn resolve(&self, agent: &str) -> Option<CrawlerId> {
        let agent = agent.trim();
        self.tokens
            .get(&agent.to_ascii_lowercase())
            .copied()
            .or_else(|| self.by_name(agent))
            .or_else(|| self.classify(agent))
    }

    /// The robots.txt product token a crawler sending `agent` would look for: its registry
    /// crawler's first token when [`Registry::resolve`] knows it, else the RFC 9309 product token
    /// that starts `agent` (letters, `_` and `-`), else `agent` trimmed.
    pub fn robots_token<'a>(&'a self, agent: &'a str) -> &'a str {
        if let Some(token) = self
            .resolve(agent)
            .and_then(|id| self.get(id).tokens.first())
        {
            return token;
        }
        let agent = agent.trim();
        let end = agent
            .find(|c: char| !(c.is_ascii_alphabetic() || c == '_' || c == '-'))
            .unwrap_or(agent.len());
        if end > 0 {
            &agent[..end]
        } else {
            agent
        }
    }
}

/// The entries of a registry text, each checked, in order.
fn parse_entries(text: &str, origin: &str) -> Result<Vec<CrawlerInfo>, RegistryError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| RegistryError::Syntax {
        origin: origin.to_string(),
        line: e.span().map_or(1, |span| line_of(text, span.start)),
        message: one_line(e.message()),
    })?;
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut crawlers = Vec::with_capacity(raw.crawler.len());
    for (index, table) in raw.crawler.into_iter().enumerate() {
        let entry = entry_label(&table, index);
        let fail = |problem: String| RegistryError::Entry {
            origin: origin.to_string(),
            entry: entry.clone(),
            problem,
        };
        let crawler = check_entry(table).map_err(fail)?;
        if let Some(first) = seen.insert(crawler.name.to_ascii_lowercase(), index) {
            return Err(fail(format!(
                "the name is already used by crawler #{}",
                first + 1
            )));
        }
        crawlers.push(crawler);
    }
    Ok(crawlers)
}

/// How an entry is named in errors: its name when it has a usable one, else its position.
fn entry_label(table: &toml::Table, index: usize) -> String {
    match table.get("name").and_then(toml::Value::as_str) {
        Some(name) if !name.trim().is_empty() => format!("{name:?} (#{})", index + 1),
        _ => format!("#{}", index + 1),
    }
}

/// A parser message on one line, as an exit message is.
fn one_line(message: &str) -> String {
    message.trim().lines().collect::<Vec<_>>().join("; ")
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

mod entry;
#[cfg(test)]
mod tests;
