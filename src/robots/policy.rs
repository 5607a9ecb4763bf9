//! The site's crawler policy: `ROBOTS_POLICY` (or `[site.robots] policy`) parsed into
//! [`Policy`], resolved against the crawler registry into the rule each robots.txt product token
//! gets ([`Policy::assign`]), and `ROBOTS_CONTENT_SIGNAL` ([`ContentSignal`]). `compile.rs`
//! writes them into the served robots.txt.
//!
//! A rule is `WHO=allow`, `WHO=disallow` (all of the site) or `WHO=disallow:/path /path…`
//! (RFC 9309 patterns), WHO a purpose (`ai-training`) or a registry crawler's name (`GPTBot`).
//! A crawler's own rule replaces its purpose's rule for it. A token is ruled by the crawler the
//! registry says obeys it first ([`Registry::by_token`]), so `Googlebot-Image=disallow` never
//! touches a `Googlebot` line another crawler also lists.

use std::fmt;

use super::pattern::Pattern;
use crate::crawlers::registry::{CrawlerId, Purpose, Registry};

/// What a bad rule should look like, for errors.
const EXPECTED: &str = "expected comma-separated WHO=allow, WHO=disallow or WHO=disallow:/path \
     /path… (RFC 9309 patterns), WHO a purpose (search, ai-training, ai-search, ai-user, seo, \
     archive, preview, other) or a registry crawler's name (e.g. GPTBot)";

/// A parsed policy: its rules in written order, crawler names not yet checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<PolicyRule>,
    /// The policy as written, for messages and the comment in robots.txt.
    written: String,
    /// Where it comes from, for messages: `ROBOTS_POLICY`, or the sites file's site.
    origin: String,
}

/// One `WHO=…` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    pub who: Who,
    pub access: Access,
    /// The rule as written, for messages.
    pub written: String,
}

/// Whom a rule is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    Purpose(Purpose),
    /// A registry crawler's name as written; [`Policy::assign`] checks it.
    Crawler(String),
}

/// What a rule allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// What the template allows.
    Allow,
    /// Nothing under these patterns (`disallow` alone is `["/"]`), beside what the template
    /// disallows.
    Disallow(Vec<String>),
}

impl Access {
    /// Whether every path is disallowed.
    pub fn disallows_everything(&self) -> bool {
        match self {
            Access::Allow => false,
            Access::Disallow(paths) => paths.iter().any(|p| matches_everything(p)),
        }
    }

    /// Whether `path` (a request path, e.g. `/`) is allowed by this rule alone.
    pub fn allows(&self, path: &str) -> bool {
        match self {
            Access::Allow => true,
            Access::Disallow(paths) => {
                let path = super::pattern::request_path(path);
                !paths.iter().any(|p| Pattern::new(p).matches(&path))
            }
        }
    }

    /// `allow`, `disallow` or `disallow:/a /b`, as a rule writes it.
    pub fn written(&self) -> String {
        match self {
            Access::Allow => "allow".into(),
            Access::Disallow(_) if self.disallows_everything() => "disallow".into(),
            Access::Disallow(paths) => format!("disallow:{}", paths.join(" ")),
        }
    }
}

/// A pattern that matches every path: `/`, `*`, `/*`, `/**`...
pub(super) fn matches_everything(pattern: &str) -> bool {
    pattern
        .strip_prefix('/')
        .unwrap_or(pattern)
        .bytes()
        .all(|b| b == b'*')
        && !pattern.is_empty()
}

/// A policy that cannot be used; its Display is the one line printed before exiting 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}={written:?}: rule {rule:?}: {problem}")]
pub struct PolicyError {
    pub origin: String,
    pub written: String,
    pub rule: String,
    pub problem: String,
}

impl Policy {
    /// Parses `written` (from `origin`, e.g. `ROBOTS_POLICY`): syntax, purposes and paths.
    /// Crawler names are checked by [`Policy::assign`], against the registry in use.
    pub fn parse(written: &str, origin: &str) -> Result<Policy, PolicyError> {
        let fail = |rule: &str, problem: String| PolicyError {
            origin: origin.to_string(),
            written: written.to_string(),
            rule: rule.to_string(),
            problem,
        };
        let mut rules: Vec<PolicyRule> = Vec::new();
        for item in written.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let rule = parse_rule(item).map_err(|problem| fail(item, problem))?;
            if let Some(before) = rules.iter().find(|r| same_who(&r.who, &rule.who)) {
                return Err(fail(
                    item,
                    format!(
                        "names {} again (after {:?}); give each purpose or crawler one rule, \
                         with several paths separated by spaces",
                        who_name(&rule.who),
                        before.written
                    ),
                ));
            }
            rules.push(rule);
        }
        if rules.is_empty() {
            return Err(fail(written, EXPECTED.to_string()));
        }
        Ok(Policy {
            rules,
            written: written.trim().to_string(),
            origin: origin.to_string(),
        })
    }

    pub fn rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    pub fn written(&self) -> &str {
        &self.written
    }

    /// The rule of `purpose` itself, if the policy names it.
    pub fn purpose_rule(&self, purpose: Purpose) -> Option<&Access> {
        self.rules
            .iter()
            .find(|r| r.who == Who::Purpose(purpose))
            .map(|r| &r.access)
    }

    /// The rule crawler `id` gets: its own, else its purpose's, else none (the template alone).
    /// Call [`Policy::check_names`] first.
    pub fn rule_for(&self, registry: &Registry, id: CrawlerId) -> Option<&Access> {
        let crawler = registry.get(id);
        let own = self.rules.iter().find(|r| match &r.who {
            Who::Crawler(name) => registry.by_name(name) == Some(id),
            Who::Purpose(_) => false,
        });
        own.map(|r| &r.access)
            .or_else(|| self.purpose_rule(crawler.purpose))
    }

    /// Every crawler name must be a registry crawler's.
    pub fn check_names(&self, registry: &Registry) -> Result<(), PolicyError> {
        for rule in &self.rules {
            if let Who::Crawler(name) = &rule.who {
                if registry.by_name(name).is_none() {
                    return Err(PolicyError {
                        origin: self.origin.clone(),
                        written: self.written.clone(),
                        rule: rule.written.clone(),
                        problem: unknown_who(name, registry),
                    });
                }
            }
        }
        Ok(())
    }

    /// The product tokens the policy rules, each once, in registry order, with the rule and the
    /// crawler it comes from.
    pub fn assign(&self, registry: &Registry) -> Result<Vec<Assigned>, PolicyError> {
        self.check_names(registry)?;
        let mut assigned: Vec<Assigned> = Vec::new();
        for id in registry.ids() {
            let Some(access) = self.rule_for(registry, id) else {
                continue;
            };
            for token in registry
                .get(id)
                .tokens
                .iter()
                .filter_map(|t| writable_token(t))
            {
                let key = token.to_ascii_lowercase();
                let owner = registry.by_token(token);
                if owner.is_some_and(|owner| owner != id) || assigned.iter().any(|a| a.key == key) {
                    continue;
                }
                assigned.push(Assigned {
                    token: token.to_string(),
                    key,
                    access: access.clone(),
                    crawler: id,
                });
            }
        }
        Ok(assigned)
    }
}

/// A product token the policy rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assigned {
    /// As the registry spells it, e.g. `GPTBot`.
    pub token: String,
    /// ASCII lowercase, as groups hold agents.
    pub key: String,
    pub access: Access,
    pub crawler: CrawlerId,
}

/// The RFC 9309 product token a registry token stands for: all of it, or the letters before a
/// version or domain (`iaskspider/2.0`, `panscient.com`), which is what crawlers compare.
fn writable_token(token: &str) -> Option<&str> {
    let end = token
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .unwrap_or(token.len());
    (end > 0).then(|| &token[..end])
}

fn parse_rule(item: &str) -> Result<PolicyRule, String> {
    let Some((who, what)) = item.split_once('=') else {
        return Err(EXPECTED.to_string());
    };
    let who = who.trim();
    if who.is_empty() {
        return Err(EXPECTED.to_string());
    }
    let who = match Purpose::parse(&who.to_ascii_lowercase()) {
        Some(purpose) => Who::Purpose(purpose),
        None => Who::Crawler(who.to_string()),
    };
    let what = what.trim();
    let lower = what.to_ascii_lowercase();
    let access = if lower == "allow" {
        Access::Allow
    } else if lower == "disallow" {
        Access::Disallow(vec!["/".into()])
    } else if lower.starts_with("disallow:") {
        let paths: Vec<String> = what["disallow:".len()..]
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if paths.is_empty() {
            return Err("disallow: needs at least one path, e.g. disallow:/premium/".into());
        }
        for path in &paths {
            check_path(path)?;
        }
        Access::Disallow(paths)
    } else {
        return Err(EXPECTED.to_string());
    };
    Ok(PolicyRule {
        who,
        access,
        written: item.to_string(),
    })
}

/// A path pattern as robots.txt can carry it.
fn check_path(path: &str) -> Result<(), String> {
    if !path.starts_with(['/', '*']) {
        return Err(format!(
            "path {path:?} must start with \"/\" or \"*\" (an RFC 9309 pattern such as /premium/ or /*.pdf$)"
        ));
    }
    if path.chars().any(|c| c.is_control() || c == '#') {
        return Err(format!(
            "path {path:?} holds a control character or \"#\"; percent-encode it"
        ));
    }
    Ok(())
}

fn same_who(a: &Who, b: &Who) -> bool {
    match (a, b) {
        (Who::Purpose(a), Who::Purpose(b)) => a == b,
        (Who::Crawler(a), Who::Crawler(b)) => a.eq_ignore_ascii_case(b),
        _ => false,
    }
}

fn who_name(who: &Who) -> &str {
    match who {
        Who::Purpose(purpose) => purpose.as_str(),
        Who::Crawler(name) => name,
    }
}

/// Why `name` is neither a purpose nor a registry crawler, with the likely intended one.
fn unknown_who(name: &str, registry: &Registry) -> String {
    let by_token = registry
        .by_token(name)
        .map(|id| registry.get(id).name.as_str())
        .filter(|found| !found.eq_ignore_ascii_case(name));
    let hint = match by_token {
        Some(found) => format!(" (the crawler obeying that token is named {found:?})"),
        None => String::new(),
    };
    format!(
        "{name:?} is neither a purpose nor a registry crawler's name{hint}; expected a purpose \
         (search, ai-training, ai-search, ai-user, seo, archive, preview, other) or the name of \
         a crawler of the registry (data/crawlers.toml, CRAWLERS_FILE), e.g. GPTBot"
    )
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

/// `ROBOTS_CONTENT_SIGNAL`: the `Content-Signal:` line written in the `*` group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ContentSignal {
    /// From the policy's rules on `/` (search, ai-input, ai-train), only for purposes it names.
    #[default]
    Derived,
    /// No line.
    Off,
    /// This value, as given.
    Value(String),
}

/// What `ROBOTS_CONTENT_SIGNAL` accepts, for errors.
pub const CONTENT_SIGNAL_EXPECTED: &str =
    "off, or comma-separated signals like \"search=yes, ai-input=no, ai-train=no\"";

impl ContentSignal {
    /// `off` or a signal list; `None` for anything else.
    pub fn parse(value: &str) -> Option<ContentSignal> {
        let value = value.trim();
        if value.eq_ignore_ascii_case("off") {
            return Some(ContentSignal::Off);
        }
        super::parse::is_content_signal(value).then(|| ContentSignal::Value(value.to_string()))
    }

    /// The line's value for `policy`: as set, or derived; `None` for no line.
    pub fn value(&self, policy: Option<&Policy>) -> Option<String> {
        match self {
            ContentSignal::Off => None,
            ContentSignal::Value(value) => Some(value.clone()),
            ContentSignal::Derived => derived_signal(policy?),
        }
    }
}

/// `search=yes, ai-input=no, ai-train=no`, from the purposes' rules on `/`.
fn derived_signal(policy: &Policy) -> Option<String> {
    const SIGNALS: [(Purpose, &str); 3] = [
        (Purpose::Search, "search"),
        (Purpose::AiSearch, "ai-input"),
        (Purpose::AiTraining, "ai-train"),
    ];
    let pairs: Vec<String> = SIGNALS
        .iter()
        .filter_map(|(purpose, signal)| {
            let access = policy.purpose_rule(*purpose)?;
            let answer = if access.allows("/") { "yes" } else { "no" };
            Some(format!("{signal}={answer}"))
        })
        .collect();
    (!pairs.is_empty()).then(|| pairs.join(", "))
}
