//! The policy as the status page shows it ([`PolicySummary`]): for each purpose, its rule and
//! its crawlers, each with the rule it gets and whether the compiled robots.txt lets it fetch
//! `/`.

use serde::Serialize;

use super::policy::Policy;
use super::RobotsTxt;
use crate::crawlers::registry::{Purpose, Registry};

/// The policy table: purposes in the registry's order, crawlers in file order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicySummary {
    /// `ROBOTS_POLICY` as written; `None`: robots.txt is the template alone.
    pub policy: Option<String>,
    pub purposes: Vec<PurposeRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PurposeRow {
    pub purpose: Purpose,
    pub label: &'static str,
    /// `allow`, `disallow` or `disallow:/a /b`; `None` when the policy does not name it.
    pub rule: Option<String>,
    pub crawlers: Vec<CrawlerRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CrawlerRow {
    pub name: String,
    /// The rule it gets (its own or its purpose's); `None`: the template's alone.
    pub rule: Option<String>,
    /// Whether the rule is the crawler's own (it replaces its purpose's).
    pub own_rule: bool,
    /// The product token it reads robots.txt by, `None` for a crawler that reads none.
    pub token: Option<String>,
    /// Whether the served robots.txt allows it `/`.
    pub may_fetch_root: bool,
}

/// The summary of `policy` with `robots` (the compiled file) and `registry`.
pub fn summary(policy: Option<&Policy>, robots: &RobotsTxt, registry: &Registry) -> PolicySummary {
    let purposes = Purpose::ALL
        .iter()
        .map(|purpose| PurposeRow {
            purpose: *purpose,
            label: purpose.label(),
            rule: policy
                .and_then(|p| p.purpose_rule(*purpose))
                .map(|a| a.written()),
            crawlers: registry
                .by_purpose(*purpose)
                .map(|id| {
                    let crawler = registry.get(id);
                    let access = policy.and_then(|p| p.rule_for(registry, id));
                    let purpose_rule = policy.and_then(|p| p.purpose_rule(*purpose));
                    let token = crawler.tokens.first().cloned();
                    CrawlerRow {
                        name: crawler.name.clone(),
                        rule: access.map(|a| a.written()),
                        own_rule: access.is_some() && access != purpose_rule,
                        may_fetch_root: robots.is_allowed(token.as_deref().unwrap_or("*"), "/"),
                        token,
                    }
                })
                .collect(),
        })
        .collect();
    PolicySummary {
        policy: policy.map(|p| p.written().to_string()),
        purposes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_purpose_lists_its_crawlers_with_their_rule_and_root_verdict() {
        let registry = Registry::builtin();
        let policy = Policy::parse(
            "ai-training=disallow,GPTBot=disallow:/premium/",
            "ROBOTS_POLICY",
        )
        .unwrap();
        let robots = RobotsTxt::parse(
            "User-agent: *\nAllow: /\n\nUser-agent: CCBot\nDisallow: /\n\nUser-agent: GPTBot\nDisallow: /premium/\n",
        )
        .unwrap();
        let table = summary(Some(&policy), &robots, &registry);
        assert_eq!(table.purposes.len(), 8);
        let training = &table.purposes[1];
        assert_eq!(training.purpose, Purpose::AiTraining);
        assert_eq!(training.rule.as_deref(), Some("disallow"));
        let gptbot = training
            .crawlers
            .iter()
            .find(|c| c.name == "GPTBot")
            .unwrap();
        assert_eq!(gptbot.rule.as_deref(), Some("disallow:/premium/"));
        assert!(gptbot.own_rule && gptbot.may_fetch_root);
        let ccbot = training
            .crawlers
            .iter()
            .find(|c| c.name == "CCBot")
            .unwrap();
        assert!(!ccbot.own_rule && !ccbot.may_fetch_root);
        let search = &table.purposes[0];
        assert_eq!(search.rule, None);
        assert!(search
            .crawlers
            .iter()
            .all(|c| c.rule.is_none() && c.may_fetch_root));
        let json = serde_json::to_value(&table).unwrap();
        assert_eq!(json["purposes"][1]["purpose"], "ai-training");
    }
}
