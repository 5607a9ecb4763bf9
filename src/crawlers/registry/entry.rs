//! One `[[crawler]]` entry of a registry file: its fields as written and the checks that turn
//! them into a [`CrawlerInfo`], or say what is wrong with it.

use serde::Deserialize;

use super::{one_line, CrawlerInfo, Purpose};
use crate::crawlers::signer;

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

/// One entry's values, checked: what is wrong with it otherwise.
pub(super) fn check_entry(table: toml::Table) -> Result<CrawlerInfo, String> {
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
        .map(|agent| check_signature_agent(agent))
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

pub(super) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Patterns are matched as products (see `crate::crawlers::user_agent`), so they start and end with
/// a letter or digit.
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

/// A Web Bot Auth signer: an origin, its well-known directory URL or any URL of a JWKS, by the
/// rules of [`crate::crawlers::signer`]; kept in [`signer::registry_form`].
fn check_signature_agent(agent: &str) -> Result<String, String> {
    signer::registry_form(agent).map_err(|e| format!("signature_agent {e}"))
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
