//! Which URLs llms.txt may list: those the robots.txt rules allow for every crawler that builds
//! answers from fetched pages (`ai-search`), by each of its product tokens.

use std::sync::Arc;

use crate::crawlers::{Purpose, Registry};
use crate::robots::RobotsTxt;

/// The robots.txt tokens of every `ai-search` crawler of the registry.
pub fn ai_search_tokens(registry: &Registry) -> Vec<String> {
    registry
        .by_purpose(Purpose::AiSearch)
        .flat_map(|id| registry.get(id).tokens.iter().cloned())
        .collect()
}

/// The robots.txt rules and the tokens every listed URL must be allowed for.
#[derive(Clone)]
pub struct AiSearchPolicy {
    rules: Arc<RobotsTxt>,
    tokens: Vec<String>,
}

impl AiSearchPolicy {
    /// Tokens that no group of `rules` can disallow anything for are not checked at all.
    pub fn new(rules: Arc<RobotsTxt>, tokens: impl IntoIterator<Item = String>) -> Self {
        let tokens = tokens
            .into_iter()
            .filter(|token| rules.may_disallow(token))
            .collect();
        Self { rules, tokens }
    }

    /// Whether llms.txt may list `path_and_query`.
    pub fn allows(&self, path_and_query: &str) -> bool {
        allowed_for_all(&self.rules, &self.tokens, path_and_query)
    }
}

/// Whether `rules` allow `path_and_query` for each of `tokens`.
pub fn allowed_for_all(rules: &RobotsTxt, tokens: &[String], path_and_query: &str) -> bool {
    tokens
        .iter()
        .all(|token| rules.is_allowed(token, path_and_query))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(robots: &str) -> AiSearchPolicy {
        let rules = Arc::new(RobotsTxt::parse(robots).unwrap());
        AiSearchPolicy::new(rules, ai_search_tokens(&Registry::builtin()))
    }

    #[test]
    fn the_registry_names_the_answer_engines_crawlers() {
        let tokens = ai_search_tokens(&Registry::builtin());
        for token in ["OAI-SearchBot", "Claude-SearchBot", "PerplexityBot"] {
            assert!(tokens.iter().any(|t| t == token), "{token}: {tokens:?}");
        }
        assert!(!tokens.iter().any(|t| t == "GPTBot"), "{tokens:?}");
    }

    #[test]
    fn a_url_disallowed_for_any_ai_search_crawler_is_not_listed() {
        let p =
            policy("User-agent: *\nAllow: /\n\nUser-agent: OAI-SearchBot\nDisallow: /private/\n");
        assert!(p.allows("/public/a"));
        assert!(!p.allows("/private/a"));
        let all = policy("User-agent: *\nDisallow: /drafts/\n");
        assert!(!all.allows("/drafts/x"));
        assert!(all.allows("/x"));
        let googlebot_only = policy("User-agent: Googlebot\nDisallow: /\n");
        assert!(googlebot_only.allows("/x"));
    }
}
