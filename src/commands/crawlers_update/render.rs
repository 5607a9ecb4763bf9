//! The new agents as registry text (the format `CRAWLERS_FILE` reads), each entry saying where it
//! comes from and, when its purpose is a guess, that the owner should review it.

use std::collections::HashSet;

use super::source::ListedAgent;
use crate::crawlers::Registry;

/// Where the ai.robots.txt project lives: every written entry cites it.
pub const PROJECT: &str = "https://github.com/ai-robots-txt/ai.robots.txt";

/// The agents of `listed` that `known` does not name (by name, token or as a User-Agent would),
/// once each, in the list's order.
pub fn unknown_agents(listed: &[ListedAgent], known: &Registry) -> Vec<ListedAgent> {
    let mut seen = HashSet::new();
    listed
        .iter()
        .filter(|agent| {
            let token = token_of(&agent.name);
            !token.is_empty()
                && known.resolve(&agent.name).is_none()
                && known.by_token(token).is_none()
                && seen.insert(token.to_ascii_lowercase())
        })
        .cloned()
        .collect()
}

/// The robots.txt product token of a list name: its leading letters, digits, `-` and `_`
/// (`Kangaroo Bot` → `Kangaroo`, `iaskspider/2.0` → `iaskspider`), what an RFC 9309 parser reads.
pub fn token_of(name: &str) -> &str {
    let end = name
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .unwrap_or(name.len());
    &name[..end]
}

/// The User-Agent pattern of a list name: the name itself when it is one product (words of
/// letters, digits, `-`, `_`, `.`), else its token.
fn pattern_of(name: &str) -> &str {
    let one_product = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b' '))
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric());
    if one_product {
        name
    } else {
        token_of(name)
    }
}

/// A TOML basic string holding `text`.
fn quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The `[[crawler]]` entries of `agents`, each after a comment naming its source.
pub fn entries(agents: &[ListedAgent], source: &str) -> String {
    let mut docs = vec![quoted(PROJECT)];
    if source.starts_with("http://") || source.starts_with("https://") {
        docs.insert(0, quoted(source));
    }
    let docs = docs.join(", ");
    let mut text = String::new();
    for agent in agents {
        text.push_str(&format!("\n# From the ai.robots.txt list ({source}).\n"));
        if let Some(why) = &agent.review {
            text.push_str(&format!(
                "# review: purpose ai-training is a guess ({}); change it if you know better.\n",
                why.replace('\n', " ")
            ));
        }
        text.push_str(&format!(
            "[[crawler]]\nname = {}\ntokens = [{}]\nuser_agent = [{}]\noperator = {}\n\
             purpose = {}\ndocs = [{docs}]\n",
            quoted(&agent.name),
            quoted(token_of(&agent.name)),
            quoted(pattern_of(&agent.name)),
            quoted(&agent.operator),
            quoted(agent.purpose.as_str()),
        ));
    }
    text
}

/// The head of a file the command creates.
pub fn header(source: &str, date: &str) -> String {
    format!(
        "# Crawler registry extension (CRAWLERS_FILE), written by `sitemapd crawlers update` on \
         {date}\n# from {source}: the agents of the ai.robots.txt list that the registry built into \
         sitemapd\n# lacks. Edit freely: a later update keeps this file and adds only agents it \
         does not name.\n# Entries marked \"review\" have a purpose the list does not support.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawlers::Purpose;

    fn listed(name: &str, review: bool) -> ListedAgent {
        ListedAgent {
            name: name.to_string(),
            operator: "Op \"quoted\"".to_string(),
            purpose: Purpose::AiTraining,
            review: review.then(|| "the list says \"AI Data Providers\"".to_string()),
        }
    }

    #[test]
    fn only_agents_the_registry_lacks_are_kept_once() {
        let builtin = Registry::builtin();
        let agents = [
            listed("GPTBot", false),
            listed("iaskspider/2.0", false),
            listed("Totally-New-Bot", false),
            listed("totally-new-bot", false),
        ];
        let unknown = unknown_agents(&agents, &builtin);
        let names: Vec<&str> = unknown.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["Totally-New-Bot"]);
    }

    #[test]
    fn written_entries_load_back_as_a_registry_extension() {
        let agents = [listed("Fresh Bot", true), listed("odd/1.0", false)];
        let text = header("https://example.test/robots.json", "2026-12-07")
            + &entries(&agents, "https://example.test/robots.json");
        assert!(text.contains("# review: purpose ai-training is a guess"));
        let registry = Registry::parse_extension(Registry::builtin(), &text, "written").unwrap();
        let fresh = registry.get(registry.by_name("Fresh Bot").unwrap());
        assert_eq!(fresh.tokens, ["Fresh"]);
        assert_eq!(fresh.operator, "Op \"quoted\"");
        assert_eq!(fresh.docs[0], "https://example.test/robots.json");
        let odd = registry.get(registry.by_name("odd/1.0").unwrap());
        assert_eq!(odd.user_agent, ["odd"]);
        assert_eq!(
            registry.classify("odd/1.0 (+https://x.test)"),
            registry.by_name("odd/1.0")
        );
    }
}
