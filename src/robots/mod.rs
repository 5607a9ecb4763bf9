//! robots.txt: everything sitemapd knows about it.
//!
//! This module owns
//! - rendering the robots.txt template (built-in or `ROBOTS_TEMPLATE`) with minijinja
//!   ([`render`], in `template.rs`), including the staging override and the `Sitemap:` lines
//!   that must always be served;
//! - strict validation of the rendered text ([`RobotsTxt::parse`], in `lex.rs` and `parse.rs`):
//!   sitemapd serves robots.txt, so it refuses anything a crawler could misread, even where
//!   Google's parser would be lenient;
//! - answering "may this crawler fetch this path?" exactly as RFC 9309 says
//!   ([`RobotsTxt::evaluate`], in `matcher.rs` and `pattern.rs`), used to keep disallowed URLs
//!   out of the sitemaps and by `sitemapd robots test`.
//!
//! Line numbers (in errors and in [`MatchedRule`]) count lines of the text that was parsed, LF,
//! CR and CRLF each ending a line. For [`render`] errors they are template lines (see
//! `template.rs` for how a rendered line is traced back to the template).
//!
//! No robots.txt crate is used at run time: the candidates are lenient by design (typos such as
//! `Dissallow`, a missing `:`, Google-specific rewrites such as `index.html`) and one ends a group
//! on a `Sitemap` line, which RFC 9309 forbids. Google's parser port (`robotstxt`) is used in the
//! tests as a second opinion on the cases where Google and the RFC agree.

use std::fmt;

mod compile;
pub mod enforce;
mod lex;
pub mod license;
mod matcher;
pub mod page_headers;
mod parse;
mod pattern;
mod policy;
mod server;
mod summary;
mod template;

pub use license::{License, LicenseSetting, LicenseTerms, RSL_NS, RSL_TYPE};
pub use policy::{Access, ContentSignal, Policy, PolicyError, CONTENT_SIGNAL_EXPECTED};
pub use summary::{summary, PolicySummary};
pub use template::compile_template;

/// The built-in template, used when `ROBOTS_TEMPLATE` is not set.
pub const BUILTIN_TEMPLATE: &str = include_str!("../../templates/robots.txt");

/// Crawlers must read at least 500 KiB of a robots.txt (RFC 9309 section 2.5) and Google stops
/// there, so a larger file would be cut at an arbitrary rule: we refuse to serve one.
pub const MAX_BYTES: usize = 500 * 1024;

/// What the template sees, and what [`render`] guarantees to announce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotsContext {
    /// `SITEMAP_BASE_URL`, e.g. `https://example.com/catalog/`.
    pub base_url: String,
    /// Absolute URL of the sitemap index; always listed as a `Sitemap:` line.
    pub sitemap_index_url: String,
    /// `SITEMAP_ENV`.
    pub environment: Environment,
    /// `ROBOTS_EXTRA_SITEMAPS`: absolute URLs, other hosts too; each always listed.
    pub extra_sitemaps: Vec<String>,
}

/// `SITEMAP_ENV`: staging serves a robots.txt that disallows everything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Environment {
    #[default]
    Production,
    Staging,
}

impl Environment {
    /// The value of the `environment` template variable (and of `SITEMAP_ENV`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Production => "production",
            Self::Staging => "staging",
        }
    }
}

/// A validated robots.txt: its groups in file order and its `Sitemap:` URLs.
#[derive(Debug, Clone, Default)]
pub struct RobotsTxt {
    groups: Vec<Group>,
    sitemaps: Vec<String>,
    warnings: Vec<Warning>,
}

/// One group: the user-agent lines that open it and the lines after them.
#[derive(Debug, Clone)]
struct Group {
    /// Product tokens in ASCII lowercase, or `*`.
    agents: Vec<String>,
    /// The line of each of `agents`.
    agent_lines: Vec<usize>,
    rules: Vec<Rule>,
    /// Extension lines (Crawl-delay, Content-Signal, ...) after the User-agent lines, as written.
    extras: Vec<Extra>,
}

/// An extension line of a group, never a rule.
#[derive(Debug, Clone)]
struct Extra {
    line: usize,
    extension: lex::Extension,
    /// `Name: value` as written (comment and surrounding blanks removed).
    text: String,
}

/// Something crawlers read differently from what the file seems to say: reported by `check`
/// and logged at start, never a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// 1-based line of the parsed text (of the template once [`render`] has traced it back);
    /// `None` for a line that no template line produced verbatim.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "robots template line {line}: {}", self.message),
            None => write!(f, "robots template: {}", self.message),
        }
    }
}

/// One `Allow` or `Disallow` line.
#[derive(Debug, Clone)]
struct Rule {
    line: usize,
    allow: bool,
    /// The pattern as written, for reports.
    written: String,
    pattern: pattern::Pattern,
}

/// The answer of [`RobotsTxt::evaluate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    /// The rule that decided, or `None` when no rule matched (everything not disallowed is
    /// allowed, and `/robots.txt` itself always is).
    pub decided_by: Option<MatchedRule>,
}

/// The rule that decided a [`Verdict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchedRule {
    /// 1-based line of the rule in the parsed text.
    pub line: usize,
    pub allow: bool,
    /// The pattern as written in the file.
    pub pattern: String,
}

impl fmt::Display for MatchedRule {
    /// `line 4: Disallow: /admin/`, as `sitemapd robots test` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let directive = if self.allow { "Allow" } else { "Disallow" };
        write!(f, "line {}: {directive}: {}", self.line, self.pattern)
    }
}

impl fmt::Display for Verdict {
    /// `disallowed by line 4: Disallow: /admin/` or `allowed: no rule matched`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.allowed {
            "allowed"
        } else {
            "disallowed"
        };
        match &self.decided_by {
            Some(rule) => write!(f, "{verdict} by {rule}"),
            None => write!(f, "{verdict}: no rule matched"),
        }
    }
}

/// Why a robots.txt template cannot be served. Each error is one line naming the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RobotsError {
    /// minijinja refused the template (syntax error, undefined variable, ...).
    #[error("robots template{}: {message}", at_line(*.line))]
    Template {
        line: Option<usize>,
        message: String,
    },
    #[error("robots.txt would be {bytes} bytes, over the {MAX_BYTES}-byte (500 KiB) limit")]
    TooLarge { bytes: usize },
    /// A line that is not strict robots.txt.
    #[error("robots template line {line}: {reason}")]
    Line { line: usize, reason: String },
    /// A bad line produced by a template expression, so with no template line of its own.
    #[error("robots template: line {line} of the rendered robots.txt: {reason}")]
    RenderedLine { line: usize, reason: String },
    /// The policy names a crawler the registry does not know.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The crawler registry the policy is resolved against cannot be loaded.
    #[error("{0}")]
    Registry(String),
    /// A sitemap URL from the configuration that cannot be announced.
    #[error("robots.txt: sitemap URL {url:?} {reason}")]
    SitemapUrl { url: String, reason: String },
}

fn at_line(line: Option<usize>) -> String {
    line.map(|n| format!(" line {n}")).unwrap_or_default()
}
