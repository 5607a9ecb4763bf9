//! The served robots.txt from the template and the policy: [`compile`].
//!
//! The result is the template as written, except that
//! - every product token the policy rules ([`Policy::assign`]) has exactly one group, made here:
//!   its User-agent lines are taken out of the template's groups (a group left with none goes,
//!   with its rules and group extension lines), and the generated group carries the template's
//!   rules for that agent (its own groups', or `*`'s when it has none: RFC 9309, an agent with
//!   a group of its own ignores `*`) *and* the policy's, so it never allows what the template
//!   disallowed for it. Tokens with the same lines share a group. The generated groups come
//!   after the template's last group, behind a comment naming the policy;
//! - the `*` group gets a `Content-Signal:` line ([`ContentSignal`]) unless the template's has
//!   one.
//!
//! "Allowed by the template AND by the policy" under longest-match: the policy's Disallow lines
//! are added to the template's rules; a template Allow inside a policy path (`Allow:
//! /premium/free/` under `disallow:/premium/`) is dropped, since it would outweigh the shorter
//! Disallow; a template Allow that only overlaps a policy path and is at least as long gets the
//! policy's pattern padded with `*` (which matches the same paths) until the Disallow is longer.
//! `disallow` alone is just `Disallow: /`. Rules are written longest first, Allow before
//! Disallow at equal length, so parsers that take the first matching rule agree too.
//!
//! Same template, policy and registry give the same bytes.

use std::collections::BTreeMap;

use super::lex::Extension;
use super::parse::is_group_member;
use super::pattern::Pattern;
use super::policy::{Access, Assigned, ContentSignal, Policy, PolicyError};
use super::{Group, RobotsTxt, Rule, Warning};
use crate::crawlers::registry::Registry;

/// The template's text with the policy and the Content-Signal line compiled in, and what to
/// warn about. The text is `text` itself when there is nothing to add.
pub(super) fn compile(
    text: &str,
    template: &RobotsTxt,
    policy: Option<&Policy>,
    signal: &ContentSignal,
    registry: &Registry,
) -> Result<(String, Vec<Warning>), PolicyError> {
    let assigned = match policy {
        Some(policy) => policy.assign(registry)?,
        None => Vec::new(),
    };
    let (signal_line, warnings) = content_signal_line(template, policy, signal);
    if assigned.is_empty() && signal_line.is_none() {
        return Ok((text.to_string(), warnings));
    }
    let groups = generated_groups(template, &assigned);
    let mut edit = Edit::new(text);
    for group in &template.groups {
        edit.take_out(group, &assigned);
    }
    let mut appended = String::new();
    if !groups.is_empty() {
        let policy = policy.map(Policy::written).unwrap_or_default();
        appended.push_str(&format!(
            "# Crawler policy {policy:?}: each group below keeps what the template disallows for its agents.\n"
        ));
        appended.push_str(&groups.join("\n"));
    }
    if let Some(value) = &signal_line {
        match template.groups.iter().find(|g| g.lists("*")) {
            Some(star) => {
                let last_agent = *star.agent_lines.iter().max().expect("a group has agents");
                edit.insert_after(last_agent, format!("Content-Signal: {value}\n"));
            }
            None => {
                if !appended.is_empty() {
                    appended.push('\n');
                }
                appended.push_str(&format!(
                    "User-agent: *\nContent-Signal: {value}\nAllow: /\n"
                ));
            }
        }
    }
    if !appended.is_empty() {
        edit.append_after_groups(template, &appended);
    }
    Ok((edit.finish(), warnings))
}

/// The `Content-Signal` value to write in the `*` group, if any, and a warning when the
/// setting is overruled by the template's own line.
fn content_signal_line(
    template: &RobotsTxt,
    policy: Option<&Policy>,
    signal: &ContentSignal,
) -> (Option<String>, Vec<Warning>) {
    let own = template
        .groups
        .iter()
        .filter(|g| g.lists("*"))
        .flat_map(|g| &g.extras)
        .find(|extra| extra.extension == Extension::ContentSignal);
    match own {
        None => (signal.value(policy), Vec::new()),
        Some(extra) if *signal != ContentSignal::Derived => (
            None,
            vec![Warning {
                line: Some(extra.line),
                message: "the * group has its own Content-Signal line, which is kept: \
                          ROBOTS_CONTENT_SIGNAL is not used"
                    .into(),
            }],
        ),
        Some(_) => (None, Vec::new()),
    }
}

/// The generated groups' text, each ending with a newline, tokens with the same lines
/// sharing one group, in the order their first token comes in the registry.
fn generated_groups(template: &RobotsTxt, assigned: &[Assigned]) -> Vec<String> {
    let mut groups: Vec<(Vec<&str>, String)> = Vec::new();
    for token in assigned {
        let body = group_body(template, &token.key, &token.access);
        match groups.iter_mut().find(|(_, b)| *b == body) {
            Some((tokens, _)) => tokens.push(&token.token),
            None => groups.push((vec![&token.token], body)),
        }
    }
    groups
        .into_iter()
        .map(|(tokens, body)| {
            let agents: String = tokens
                .iter()
                .map(|t| format!("User-agent: {t}\n"))
                .collect();
            agents + &body
        })
        .collect()
}

/// The lines after the User-agent lines of `key`'s generated group.
fn group_body(template: &RobotsTxt, key: &str, access: &Access) -> String {
    let sources: Vec<&Group> = template.groups_for(key).collect();
    let mut lines: Vec<String> = Vec::new();
    // The `*` group's Content-Signal speaks for the site and stays there; an agent's own
    // group's lines are its own.
    for group in &sources {
        let star = group.lists("*");
        for extra in &group.extras {
            let signal = extra.extension == Extension::ContentSignal;
            if is_group_member(extra.extension) && !(star && signal) && !lines.contains(&extra.text)
            {
                lines.push(extra.text.clone());
            }
        }
    }
    let template_rules: Vec<&Rule> = sources.iter().flat_map(|g| &g.rules).collect();
    let mut rules = match access {
        Access::Allow => template_rules
            .iter()
            .map(|r| (r.allow, r.written.clone()))
            .collect(),
        Access::Disallow(_) if access.disallows_everything() => vec![(false, "/".to_string())],
        Access::Disallow(paths) => both(&template_rules, paths),
    };
    if rules.is_empty() {
        rules.push((true, "/".into()));
    }
    sort_longest_first(&mut rules);
    let mut body = String::new();
    for line in lines {
        body.push_str(&line);
        body.push('\n');
    }
    for (allow, pattern) in rules {
        let key = if allow { "Allow" } else { "Disallow" };
        body.push_str(&format!("{key}: {pattern}\n"));
    }
    body
}

/// Rules that allow a path only when the template's rules do and no policy path matches it.
fn both(template_rules: &[&Rule], paths: &[String]) -> Vec<(bool, String)> {
    let policy: Vec<Pattern> = paths.iter().map(|p| Pattern::new(p)).collect();
    let kept: Vec<&&Rule> = template_rules
        .iter()
        .filter(|rule| !(rule.allow && policy.iter().any(|q| contains(q, &rule.pattern))))
        .collect();
    let mut rules: Vec<(bool, String)> = kept
        .iter()
        .map(|rule| (rule.allow, rule.written.clone()))
        .collect();
    for (written, pattern) in paths.iter().zip(&policy) {
        let outweigh = kept
            .iter()
            .filter(|rule| rule.allow && overlap(pattern, &rule.pattern))
            .map(|rule| weight(&rule.written, &rule.pattern))
            .max()
            .unwrap_or(0);
        rules.push((false, padded(written, pattern, outweigh)));
    }
    rules
}

/// The weight a rule may have in any parser: its length as written or in normal form (Google
/// does not decode `%7E`, we do).
fn weight(written: &str, pattern: &Pattern) -> usize {
    written.len().max(pattern.octets())
}

/// `written` made longer than `outweigh` in every parser by `*`s that match nothing more. An
/// anchored pattern (`…$`) cannot be padded and stays as it is.
fn padded(written: &str, pattern: &Pattern, outweigh: usize) -> String {
    let least = written.len().min(pattern.octets());
    if least > outweigh || written.ends_with('$') {
        return written.to_string();
    }
    format!("{written}{}", "*".repeat(outweigh + 1 - least))
}

/// The literal start of a pattern: every path it matches begins with it.
fn literal_prefix(pattern: &Pattern) -> &str {
    let normal = pattern.normal();
    let end = normal.find(['*', '$']).unwrap_or(normal.len());
    &normal[..end]
}

/// Whether every path `inner` matches also matches `outer` (known for the same pattern and for
/// a plain prefix).
fn contains(outer: &Pattern, inner: &Pattern) -> bool {
    let plain = !outer.normal().contains(['*', '$']);
    outer.normal() == inner.normal() || plain && literal_prefix(inner).starts_with(outer.normal())
}

/// Whether some path may match both (false only when their literal starts differ).
fn overlap(a: &Pattern, b: &Pattern) -> bool {
    let (a, b) = (literal_prefix(a), literal_prefix(b));
    a.starts_with(b) || b.starts_with(a)
}

/// Longest pattern first, Allow before Disallow at equal length (the longest-match verdict,
/// also for parsers that take the first match), then as they came.
fn sort_longest_first(rules: &mut [(bool, String)]) {
    rules.sort_by_key(|(allow, pattern)| {
        (std::cmp::Reverse(Pattern::new(pattern).octets()), !*allow)
    });
}

/// The template's lines with some taken out and text inserted after others.
struct Edit<'a> {
    lines: Vec<&'a str>,
    /// By 1-based line number.
    dropped: Vec<bool>,
    inserted: BTreeMap<usize, String>,
}

impl<'a> Edit<'a> {
    fn new(text: &'a str) -> Self {
        let lines = super::lex::lines(text);
        let dropped = vec![false; lines.len() + 1];
        Edit {
            lines,
            dropped,
            inserted: BTreeMap::new(),
        }
    }

    /// Takes the assigned tokens' User-agent lines out of `group`, and the whole group when
    /// none is left.
    fn take_out(&mut self, group: &Group, assigned: &[Assigned]) {
        let ruled = |agent: &String| assigned.iter().any(|a| a.key == *agent);
        for (agent, line) in group.agents.iter().zip(&group.agent_lines) {
            if ruled(agent) {
                self.dropped[*line] = true;
            }
        }
        if group.agents.iter().all(ruled) {
            for rule in &group.rules {
                self.dropped[rule.line] = true;
            }
            for extra in group.extras.iter().filter(|e| is_group_member(e.extension)) {
                self.dropped[extra.line] = true;
            }
        }
    }

    fn insert_after(&mut self, line: usize, text: String) {
        self.inserted.entry(line).or_default().push_str(&text);
    }

    /// `text` after the template's last group (at the end when it has none), after a blank
    /// line. A last group left without rules gets an empty `Disallow:` (which disallows
    /// nothing) so that the appended User-agent lines do not join it.
    fn append_after_groups(&mut self, template: &RobotsTxt, text: &str) {
        let last = template
            .groups
            .iter()
            .rev()
            .find(|g| g.agent_lines.iter().any(|line| !self.dropped[*line]));
        let end = template.groups.last().map(group_end);
        let mut block = String::new();
        if let Some(group) = last {
            if group.rules.iter().all(|r| self.dropped[r.line]) {
                block.push_str("Disallow:\n");
            }
        }
        match end {
            Some(end) => {
                block.push('\n');
                block.push_str(text);
                self.insert_after(end, block);
            }
            None => {
                let end = self.lines.len();
                if self.lines.iter().any(|l| !l.trim().is_empty()) {
                    block.push('\n');
                }
                block.push_str(text);
                self.insert_after(end, block);
            }
        }
    }

    /// The edited text, ending with a newline. A blank line left next to another by a removed
    /// group goes too.
    fn finish(self) -> String {
        let mut out = String::new();
        let mut removed_since = false;
        let mut last_blank = true;
        let count = self.lines.len();
        for (i, line) in self.lines.iter().enumerate() {
            let number = i + 1;
            let is_last = number == count;
            if self.dropped[number] {
                removed_since = true;
            } else if line.trim().is_empty() && last_blank && removed_since {
                // A blank line doubled by a removal.
            } else if !(is_last && line.is_empty()) {
                out.push_str(line);
                out.push('\n');
                last_blank = line.trim().is_empty();
                removed_since = false;
            }
            if let Some(text) = self.inserted.get(&number) {
                if text.starts_with('\n') && last_blank {
                    out.push_str(&text[1..]);
                } else {
                    out.push_str(text);
                }
                last_blank = text.ends_with("\n\n");
                removed_since = false;
            }
        }
        out
    }
}

/// The last line of a group: its last User-agent, rule or extension line.
fn group_end(group: &Group) -> usize {
    let agents = group.agent_lines.iter().copied();
    let rules = group.rules.iter().map(|r| r.line);
    let extras = group.extras.iter().map(|e| e.line);
    agents.chain(rules).chain(extras).max().unwrap_or(0)
}

#[cfg(test)]
mod tests;
