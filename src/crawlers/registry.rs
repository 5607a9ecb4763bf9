//! The crawler registry: who the crawlers are (name, robots.txt tokens, the words that name them in
//! a User-Agent, operator, purpose, how to verify them, where the facts come from), loaded from the
//! built-in `data/crawlers.toml` and an optional extension file, and the fast User-Agent classifier
//! over it.
//!
//! The registry is built once at start and shared as `Arc<Registry>`; it is not a global, so tests
//! and tools can hold registries of their own. [`Registry::classify`] sits on every request's path:
//! its patterns are lowercased and bucketed by first byte when the registry is built, and a lookup
//! neither allocates nor reads more than [`USER_AGENT_SCAN_BYTES`] of the header.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// How much of a User-Agent [`Registry::classify`] reads: real crawlers name themselves well within
/// it, and a huge header costs no more than this.
pub const USER_AGENT_SCAN_BYTES: usize = 512;

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
    /// Origins whose Web Bot Auth key directory it signs requests with, e.g.
    /// `https://chatgpt.com` (no path, no trailing slash).
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

/// One `[[crawler]]` as written, before its values are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCrawler {
    name: String,
    tokens: Vec<String>,
    /// Absent: the tokens. `[]`: never fetches.
    user_agent: Option<Vec<String>>,
    #[serde(default)]
    operator: String,
    purpose: String,
    #[serde(default)]
    verify_dns: Vec<String>,
    #[serde(default)]
    verify_ranges: Vec<String>,
    #[serde(default)]
    signature_agent: Vec<String>,
    obeys_robots: Option<bool>,
    #[serde(default)]
    docs: Vec<String>,
}

/// The crawlers and the indexes over them.
#[derive(Clone, Debug)]
pub struct Registry {
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
        Self::parse_extension(Self::builtin(), &text, &origin)
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
        let matcher = Matcher::new(&crawlers);
        Ok(Registry {
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

    /// The crawler a User-Agent names, or `None` ("other"): the longest registry pattern found as
    /// a whole word (bounded by non-alphanumerics), ignoring ASCII case, in the first
    /// [`USER_AGENT_SCAN_BYTES`] bytes. No allocation.
    pub fn classify(&self, user_agent: &str) -> Option<CrawlerId> {
        self.matcher.classify(user_agent.as_bytes())
    }

    /// Every crawler of `purpose`, in file order.
    pub fn by_purpose(&self, purpose: Purpose) -> impl Iterator<Item = CrawlerId> + '_ {
        self.ids()
            .filter(move |id| self.get(*id).purpose == purpose)
    }

    /// The crawler `agent` means, whether a product token, a registry name or a whole User-Agent
    /// string, in that order.
    pub fn resolve(&self, agent: &str) -> Option<CrawlerId> {
        self.by_token(agent)
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

/// One entry's values, checked: what is wrong with it otherwise.
fn check_entry(table: toml::Table) -> Result<CrawlerInfo, String> {
    for key in ["name", "tokens", "purpose"] {
        if !table.contains_key(key) {
            return Err(format!("missing `{key}`"));
        }
    }
    let raw: RawCrawler = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| one_line(e.message()))?;
    let purpose = Purpose::parse(raw.purpose.trim()).ok_or_else(|| {
        format!(
            "unknown purpose {:?} (expected one of {})",
            raw.purpose,
            Purpose::ALL.map(Purpose::as_str).join(", ")
        )
    })?;
    let name = raw.name.trim().to_string();
    check_text("name", &name)?;
    for token in &raw.tokens {
        check_token(token)?;
    }
    let user_agent = raw.user_agent.unwrap_or_else(|| raw.tokens.clone());
    for pattern in &user_agent {
        check_pattern(pattern)?;
    }
    if raw.tokens.is_empty() && user_agent.is_empty() {
        return Err("neither `tokens` nor `user_agent` names it".into());
    }
    let verify_dns = raw
        .verify_dns
        .iter()
        .map(|suffix| check_dns_suffix(suffix))
        .collect::<Result<_, _>>()?;
    for url in &raw.verify_ranges {
        check_ranges_url(url)?;
    }
    let signature_agent = raw
        .signature_agent
        .iter()
        .map(|origin| check_signature_agent(origin))
        .collect::<Result<_, _>>()?;
    Ok(CrawlerInfo {
        name,
        tokens: raw.tokens,
        user_agent,
        operator: raw.operator.trim().to_string(),
        purpose,
        verify_dns,
        verify_ranges: raw.verify_ranges,
        signature_agent,
        obeys_robots: raw.obeys_robots.unwrap_or(true),
        docs: raw.docs,
    })
}

fn check_text(what: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("`{what}` is empty"));
    }
    if value.chars().any(char::is_control) {
        return Err(format!("`{what}` {value:?} has a control character"));
    }
    Ok(())
}

/// A token goes into a `User-agent:` line: an RFC 9309 product token (letters, `-` and `_`), with
/// the digits real tokens carry (`MJ12bot`, `360Spider`).
fn check_token(token: &str) -> Result<(), String> {
    check_text("tokens", token)?;
    if !token.bytes().all(is_token_byte) {
        return Err(format!(
            "token {token:?} is not a robots.txt product token (letters, digits, \"-\" and \"_\")"
        ));
    }
    Ok(())
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Patterns are matched as whole words, so they start and end with a letter or digit.
fn check_pattern(pattern: &str) -> Result<(), String> {
    check_text("user_agent", pattern)?;
    let bytes = pattern.as_bytes();
    if !(bytes[0].is_ascii_alphanumeric() && bytes[bytes.len() - 1].is_ascii_alphanumeric()) {
        return Err(format!(
            "user_agent pattern {pattern:?} must start and end with a letter or digit"
        ));
    }
    Ok(())
}

/// A Web Bot Auth signer's origin: `https://host[:port]`, or `http://` on a loopback address (for
/// tests); no path, query or credentials. Returned as the origin serialises (`https://chatgpt.com`).
fn check_signature_agent(origin: &str) -> Result<String, String> {
    let bad = |why: &str| format!("signature_agent {origin:?} {why}");
    let url = url::Url::parse(origin.trim()).map_err(|_| bad("is not a URL"))?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => return Err(bad("has no host")),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => {
            return Err(bad(
                "must be an https:// origin (http:// only on a loopback address)",
            ))
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not carry credentials"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(bad("must be an origin, with no path or query"));
    }
    Ok(url.origin().ascii_serialization())
}

fn check_dns_suffix(suffix: &str) -> Result<String, String> {
    let suffix = suffix.trim().trim_start_matches('.').to_ascii_lowercase();
    let valid = !suffix.is_empty()
        && suffix.contains('.')
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if valid {
        Ok(suffix)
    } else {
        Err(format!(
            "verify_dns {suffix:?} is not a domain name such as \"googlebot.com\""
        ))
    }
}

fn check_ranges_url(url: &str) -> Result<(), String> {
    match url::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(()),
        _ => Err(format!("verify_ranges {url:?} is not an http or https URL")),
    }
}

/// The User-Agent patterns, lowercase, bucketed by first byte and longest first, so a lookup
/// compares in place only the patterns that start with the byte at a word start.
#[derive(Clone, Debug)]
struct Matcher {
    buckets: Vec<Vec<(Box<[u8]>, CrawlerId)>>,
}

impl Matcher {
    fn new(crawlers: &[CrawlerInfo]) -> Self {
        let mut buckets: Vec<Vec<(Box<[u8]>, CrawlerId)>> = vec![Vec::new(); 256];
        for (i, crawler) in crawlers.iter().enumerate() {
            for pattern in &crawler.user_agent {
                let lower: Box<[u8]> = pattern.to_ascii_lowercase().into_bytes().into();
                buckets[usize::from(lower[0])].push((lower, CrawlerId(i as u16)));
            }
        }
        for bucket in &mut buckets {
            // Stable: among equally long patterns, the file's order decides.
            bucket.sort_by_key(|(pattern, _)| std::cmp::Reverse(pattern.len()));
        }
        Self { buckets }
    }

    fn classify(&self, user_agent: &[u8]) -> Option<CrawlerId> {
        let scanned = &user_agent[..user_agent.len().min(USER_AGENT_SCAN_BYTES)];
        let mut best: Option<(usize, CrawlerId)> = None;
        for start in 0..scanned.len() {
            if start > 0 && scanned[start - 1].is_ascii_alphanumeric() {
                continue;
            }
            let first = scanned[start].to_ascii_lowercase();
            for (pattern, id) in &self.buckets[usize::from(first)] {
                if best.is_some_and(|(len, _)| pattern.len() <= len) {
                    break;
                }
                let end = start + pattern.len();
                if end <= scanned.len()
                    && scanned[start..end].eq_ignore_ascii_case(pattern)
                    && !user_agent.get(end).is_some_and(u8::is_ascii_alphanumeric)
                {
                    best = Some((pattern.len(), *id));
                    break;
                }
            }
        }
        best.map(|(_, id)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_of(registry: &Registry, user_agent: &str) -> Option<String> {
        registry
            .classify(user_agent)
            .map(|id| registry.get(id).name.clone())
    }

    fn entry_error(text: &str) -> String {
        let err = Registry::parse_extension(Registry::builtin(), text, "extra.toml")
            .expect_err("the file is refused");
        err.to_string()
    }

    #[test]
    fn the_builtin_registry_loads_and_names_are_unique() {
        let registry = Registry::builtin();
        assert!(registry.len() > 200, "{} crawlers", registry.len());
        let mut names: Vec<String> = registry
            .crawlers()
            .iter()
            .map(|c| c.name.to_ascii_lowercase())
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), registry.len());
        for purpose in Purpose::ALL {
            assert!(
                registry.by_purpose(purpose).next().is_some(),
                "no crawler for {purpose}"
            );
        }
    }

    #[test]
    fn no_two_builtin_crawlers_share_a_token_or_a_pattern() {
        let registry = Registry::builtin();
        let mut tokens = HashMap::new();
        let mut patterns = HashMap::new();
        for crawler in registry.crawlers() {
            for token in &crawler.tokens {
                let before = tokens.insert(token.to_ascii_lowercase(), &crawler.name);
                assert_eq!(before, None, "token {token} of {}", crawler.name);
            }
            for pattern in &crawler.user_agent {
                let before = patterns.insert(pattern.to_ascii_lowercase(), &crawler.name);
                assert_eq!(before, None, "pattern {pattern} of {}", crawler.name);
            }
        }
    }

    #[test]
    fn the_operators_crawlers_have_the_documented_purpose_and_verification() {
        let registry = Registry::builtin();
        let info = |name: &str| registry.get(registry.by_name(name).expect(name)).clone();
        for (name, purpose) in [
            ("Googlebot", Purpose::Search),
            ("bingbot", Purpose::Search),
            ("GPTBot", Purpose::AiTraining),
            ("OAI-SearchBot", Purpose::AiSearch),
            ("ChatGPT-User", Purpose::AiUser),
            ("ClaudeBot", Purpose::AiTraining),
            ("Claude-SearchBot", Purpose::AiSearch),
            ("Claude-User", Purpose::AiUser),
            ("PerplexityBot", Purpose::AiSearch),
            ("Perplexity-User", Purpose::AiUser),
            ("CCBot", Purpose::AiTraining),
            ("Google-Extended", Purpose::AiTraining),
            ("Applebot-Extended", Purpose::AiTraining),
            ("AhrefsBot", Purpose::Seo),
            ("ia_archiver", Purpose::Archive),
            ("facebookexternalhit", Purpose::Preview),
        ] {
            assert_eq!(info(name).purpose, purpose, "{name}");
        }
        assert!(!info("Google-Extended").fetches());
        assert!(!info("Applebot-Extended").fetches());
        assert!(info("Googlebot")
            .verify_dns
            .contains(&"googlebot.com".to_string()));
        assert_eq!(info("bingbot").verify_dns, ["search.msn.com"]);
        assert_eq!(
            info("GPTBot").verify_ranges,
            ["https://openai.com/gptbot.json"]
        );
        assert!(info("GPTBot").is_verifiable());
        assert!(info("Googlebot")
            .docs
            .iter()
            .all(|d| d.starts_with("https://")));
    }

    #[test]
    fn real_user_agents_are_classified_by_their_most_specific_name() {
        let registry = Registry::builtin();
        let cases = [
            (
                "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
                Some("Googlebot"),
            ),
            ("Googlebot-Image/1.0", Some("Googlebot-Image")),
            (
                "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 \
                 (KHTML, like Gecko) Chrome/120.0.6099.71 Mobile Safari/537.36 (compatible; \
                 Googlebot/2.1; +http://www.google.com/bot.html)",
                Some("Googlebot"),
            ),
            (
                "Mozilla/5.0 (Linux; Android 5.0; SM-G920A) AppleWebKit (KHTML, like Gecko) \
                 Chrome Mobile Safari (compatible; AdsBot-Google-Mobile; \
                 +http://www.google.com/mobile/adsbot.html)",
                Some("AdsBot-Google-Mobile"),
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; \
                 +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
                Some("bingbot"),
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; \
                 +https://openai.com/gptbot)",
                Some("GPTBot"),
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; \
                 +https://openai.com/bot",
                Some("ChatGPT-User"),
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; \
                 +claudebot@anthropic.com)",
                Some("ClaudeBot"),
            ),
            (
                "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; \
                 PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)",
                Some("PerplexityBot"),
            ),
            ("CCBot/2.0 (https://commoncrawl.org/faq/)", Some("CCBot")),
            (
                "DuckDuckBot-Https/1.1; (+https://duckduckgo.com/duckduckbot)",
                Some("DuckDuckBot"),
            ),
            (
                "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
                Some("Baiduspider"),
            ),
            (
                "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
                Some("facebookexternalhit"),
            ),
            (
                "Screaming Frog SEO Spider/20.0",
                Some("Screaming Frog SEO Spider"),
            ),
            ("Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", Some("AhrefsBot")),
            ("claude-code/1.0.83", Some("Claude-Code")),
            ("curl/8.5.0", None),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) \
                 Chrome/124.0.0.0 Safari/537.36",
                None,
            ),
            ("", None),
        ];
        for (user_agent, expected) in cases {
            assert_eq!(
                name_of(&registry, user_agent).as_deref(),
                expected,
                "{user_agent}"
            );
        }
    }

    #[test]
    fn patterns_match_whole_words_ignoring_case_in_a_bounded_prefix() {
        let registry = Registry::parse(
            "[[crawler]]\nname = \"Bot\"\ntokens = [\"bot\"]\npurpose = \"other\"\n\
             [[crawler]]\nname = \"Googlebot\"\ntokens = [\"Googlebot\"]\npurpose = \"search\"\n",
            "t",
        )
        .unwrap();
        assert_eq!(
            name_of(&registry, "Googlebot/2.1").as_deref(),
            Some("Googlebot")
        );
        assert_eq!(
            name_of(&registry, "GOOGLEBOT").as_deref(),
            Some("Googlebot")
        );
        assert_eq!(name_of(&registry, "xgooglebot"), None);
        assert_eq!(name_of(&registry, "googlebot2"), None);
        assert_eq!(name_of(&registry, "googlebo"), None);
        assert_eq!(name_of(&registry, "some bot/1.0").as_deref(), Some("Bot"));
        assert_eq!(name_of(&registry, "robot"), None);
        assert_eq!(
            name_of(&registry, "é googlebot é").as_deref(),
            Some("Googlebot")
        );
        let padded = format!("{}Googlebot/2.1", "x ".repeat(USER_AGENT_SCAN_BYTES / 2));
        assert_eq!(name_of(&registry, &padded), None);
    }

    #[test]
    fn tokens_names_and_user_agents_resolve_to_crawlers() {
        let registry = Registry::builtin();
        let name = |id: Option<CrawlerId>| id.map(|id| registry.get(id).name.as_str());
        assert_eq!(name(registry.by_token("gptbot")), Some("GPTBot"));
        assert_eq!(name(registry.by_token("msnbot")), Some("bingbot"));
        assert_eq!(name(registry.by_token("iaskspider/2.0")), Some("iAskBot"));
        assert_eq!(name(registry.by_token("panscient.com")), Some("Panscient"));
        assert_eq!(
            name(registry.by_token("Kangaroo Bot")),
            Some("Kangaroo Bot")
        );
        assert_eq!(name(registry.by_name("Kangaroo Bot")), Some("Kangaroo Bot"));
        assert_eq!(name(registry.by_name("CHATGPT-USER")), Some("ChatGPT-User"));
        assert_eq!(registry.by_name("nobody"), None);
        assert_eq!(registry.robots_token("Googlebot-News"), "Googlebot-News");
        assert_eq!(
            registry
                .robots_token("Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)"),
            "GPTBot"
        );
        assert_eq!(
            registry.robots_token("ExampleBot/3.1 (+https://x)"),
            "ExampleBot"
        );
    }

    #[test]
    fn an_extension_replaces_by_name_and_adds_new_crawlers() {
        let builtin = Registry::builtin();
        let count = builtin.len();
        let gptbot = builtin.by_name("GPTBot").unwrap();
        let registry = Registry::parse_extension(
            builtin,
            r#"
            [[crawler]]
            name = "gptbot"
            tokens = ["GPTBot"]
            user_agent = ["GPTBot", "GPTBot-Next"]
            operator = "OpenAI (local note)"
            purpose = "ai-search"

            [[crawler]]
            name = "ExampleBot"
            tokens = ["ExampleBot"]
            operator = "Example"
            purpose = "seo"
            verify_dns = [".Example.net"]
            docs = ["https://example.net/bot"]
            "#,
            "extra.toml",
        )
        .unwrap();
        assert_eq!(registry.len(), count + 1);
        assert_eq!(
            registry.by_name("GPTBot"),
            Some(gptbot),
            "replaced in place"
        );
        let replaced = registry.get(gptbot);
        assert_eq!(replaced.operator, "OpenAI (local note)");
        assert_eq!(replaced.purpose, Purpose::AiSearch);
        assert_eq!(registry.classify("GPTBot-Next/0.1"), Some(gptbot));
        let example = registry.by_name("examplebot").unwrap();
        assert_eq!(example.index(), count);
        let info = registry.get(example);
        assert_eq!(
            info.user_agent,
            ["ExampleBot"],
            "user_agent defaults to the tokens"
        );
        assert_eq!(info.verify_dns, ["example.net"]);
        assert_eq!(registry.classify("ExampleBot/1.0"), Some(example));
        assert_eq!(registry.by_purpose(Purpose::Seo).last(), Some(example));
    }

    #[test]
    fn bad_entries_are_refused_naming_the_entry_and_the_problem() {
        let cases = [
            (
                "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"ads\"\n",
                ["\"Foo\" (#1)", "unknown purpose \"ads\"", "ai-training"],
            ),
            (
                "[[crawler]]\ntokens = [\"Foo\"]\npurpose = \"seo\"\n",
                ["crawler #1", "missing `name`", "extra.toml"],
            ),
            (
                "[[crawler]]\nname = \"A\"\ntokens = [\"A\"]\npurpose = \"seo\"\n\
                 [[crawler]]\nname = \"Foo\"\npurpose = \"seo\"\n",
                ["\"Foo\" (#2)", "missing `tokens`", "extra.toml"],
            ),
            (
                "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"seo\"\n\
                 [[crawler]]\nname = \"foo\"\ntokens = [\"Bar\"]\npurpose = \"seo\"\n",
                ["\"foo\" (#2)", "already used by crawler #1", "extra.toml"],
            ),
            (
                "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"seo\"\ncolour = 1\n",
                ["\"Foo\" (#1)", "colour", "extra.toml"],
            ),
            (
                "[[crawler]]\nname = \"Foo\"\ntokens = \"Foo\"\npurpose = \"seo\"\n",
                ["\"Foo\" (#1)", "sequence", "extra.toml"],
            ),
            (
                "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo Bot\"]\npurpose = \"seo\"\n",
                ["\"Foo\" (#1)", "not a robots.txt product token", "extra.toml"],
            ),
            (
                "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\nuser_agent = [\"-Foo\"]\npurpose = \"seo\"\n",
                ["\"Foo\" (#1)", "letter or digit", "extra.toml"],
            ),
            (
                "[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"]\npurpose = \"seo\"\nverify_ranges = [\"ftp://x/y.json\"]\n",
                ["\"Foo\" (#1)", "http or https", "extra.toml"],
            ),
            (
                "[[crawler]]\nname = \"Foo\"\ntokens = []\nuser_agent = []\npurpose = \"seo\"\n",
                ["\"Foo\" (#1)", "neither", "extra.toml"],
            ),
        ];
        for (text, wanted) in cases {
            let message = entry_error(text);
            for part in wanted {
                assert!(message.contains(part), "{part:?} not in {message:?}");
            }
        }
    }

    #[test]
    fn bad_toml_is_refused_with_its_line() {
        let message =
            entry_error("[[crawler]]\nname = \"Foo\"\ntokens = [\"Foo\"\n\n\npurpose = \"seo\"\n");
        assert!(message.starts_with("extra.toml: line 6"), "{message}");
        assert!(!message.contains('\n'), "{message}");
        let message = entry_error("[[crawler]]\nname = \"Foo\ntokens = []\n");
        assert!(message.starts_with("extra.toml: line 2"), "{message}");
        let message = entry_error("\n\n[robots]\nx = 1\n");
        assert!(message.starts_with("extra.toml: line 3"), "{message}");
    }

    #[test]
    fn a_missing_file_is_a_read_error_naming_it() {
        let err = Registry::with_file(Path::new("/nonexistent/crawlers.toml")).unwrap_err();
        assert!(matches!(err, RegistryError::Read { .. }));
        assert!(err.to_string().contains("/nonexistent/crawlers.toml"));
    }

    #[test]
    fn purposes_round_trip_through_their_names() {
        for purpose in Purpose::ALL {
            assert_eq!(Purpose::parse(purpose.as_str()), Some(purpose));
            let json = serde_json::to_string(&purpose).unwrap();
            assert_eq!(json, format!("\"{purpose}\""));
        }
        assert_eq!(Purpose::parse("AI-training"), None);
    }
}
