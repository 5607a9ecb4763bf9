//! The ai.robots.txt project's `robots.json` read as `sitemapd crawlers update` needs it: each
//! agent's name, operator and the purpose its description supports (never `search`), or
//! `ai-training` marked for review when the description says nothing usable.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::crawlers::Purpose;

/// One agent of the list, as the project describes it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RawAgent {
    operator: String,
    function: String,
    description: String,
}

/// Why a `robots.json` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("not the ai.robots.txt robots.json (an object of agents): {0}")]
    Json(#[from] serde_json::Error),
    #[error("the list names no agent")]
    Empty,
}

/// An agent of the list, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedAgent {
    /// The list's key: the name a robots.txt group and a User-Agent use (`GPTBot`,
    /// `Kangaroo Bot`, `iaskspider/2.0`).
    pub name: String,
    /// The operator's name, `unknown` when the list does not say.
    pub operator: String,
    pub purpose: Purpose,
    /// `Some(why)` when the purpose is a guess the owner should review.
    pub review: Option<String>,
}

/// The agents of a `robots.json` body, in the list's order (its keys are sorted).
pub fn listed_agents(body: &[u8]) -> Result<Vec<ListedAgent>, SourceError> {
    let raw: BTreeMap<String, RawAgent> = serde_json::from_slice(body)?;
    if raw.is_empty() {
        return Err(SourceError::Empty);
    }
    Ok(raw
        .into_iter()
        .map(|(name, agent)| {
            let (purpose, review) = purpose_of(&agent);
            ListedAgent {
                name: name.trim().to_string(),
                operator: operator_name(&agent.operator),
                purpose,
                review,
            }
        })
        .collect())
}

/// Words that say what the fetched pages are for, strongest first: training is named before
/// answers, answers for a person before search. Every agent of the list feeds AI, so nothing here
/// is ever `search`.
const READINGS: &[(Purpose, &[&str])] = &[
    (
        Purpose::AiTraining,
        &[
            "train",
            "llm training",
            "ai data scrapers",
            "large language model",
            "machine learning",
            "dataset",
        ],
    ),
    (
        Purpose::AiUser,
        &[
            "ai assistants",
            "ai agents",
            "coding agent",
            "user prompts",
            "user request",
            "on behalf of",
            "user-initiated",
            "when prompted by a user",
        ],
    ),
    (
        Purpose::AiSearch,
        &[
            "ai search",
            "search crawlers",
            "answer engine",
            "search result",
        ],
    ),
];

/// The purpose the agent's function and description support, with the reason to review it when
/// they support none.
fn purpose_of(agent: &RawAgent) -> (Purpose, Option<String>) {
    let text = format!("{} {}", agent.function, agent.description).to_ascii_lowercase();
    // "Undocumented AI Agents" is the list saying it does not know.
    let documented = !text.contains("undocumented");
    for (purpose, words) in READINGS {
        if documented && words.iter().any(|w| text.contains(w)) {
            return (*purpose, None);
        }
    }
    let said = agent.function.trim();
    let why = if said.is_empty() {
        "the list gives no function".to_string()
    } else {
        format!("the list says {said:?}")
    };
    (Purpose::AiTraining, Some(why))
}

/// The operator as plain text: a Markdown link's text, `unknown` for the list's "Unclear".
fn operator_name(written: &str) -> String {
    let written = written.trim();
    let text = written
        .strip_prefix('[')
        .and_then(|rest| rest.split_once("]("))
        .map_or(written, |(text, _)| text)
        .trim();
    if text.is_empty() || text.to_ascii_lowercase().starts_with("unclear") {
        "unknown".to_string()
    } else {
        text.chars().filter(|c| !c.is_control()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{
        "GPTBot-new": {
            "operator": "[OpenAI](https://openai.com)",
            "respect": "Yes",
            "function": "Scrapes data to train OpenAI's products.",
            "frequency": "No information.",
            "description": "Data is used to train current and future models."
        },
        "HelperBot": {
            "operator": "Unclear at this time.",
            "respect": "Unclear at this time.",
            "function": "AI Assistants",
            "frequency": "Unclear at this time.",
            "description": "Fetches pages when users ask it to."
        },
        "FinderBot": {
            "operator": "Finder",
            "function": "AI Search Crawlers",
            "description": "Indexes pages."
        },
        "MysteryBot": {
            "operator": "Unclear at this time.",
            "function": "Undocumented AI Agents",
            "description": "Description unavailable."
        }
    }"#;

    fn agent<'a>(agents: &'a [ListedAgent], name: &str) -> &'a ListedAgent {
        agents.iter().find(|a| a.name == name).expect(name)
    }

    #[test]
    fn purposes_follow_the_description_and_an_unclear_one_is_training_for_review() {
        let agents = listed_agents(SAMPLE.as_bytes()).unwrap();
        assert_eq!(agents.len(), 4);
        let gpt = agent(&agents, "GPTBot-new");
        assert_eq!(
            (gpt.purpose, gpt.review.is_none()),
            (Purpose::AiTraining, true)
        );
        assert_eq!(gpt.operator, "OpenAI");
        assert_eq!(agent(&agents, "HelperBot").purpose, Purpose::AiUser);
        assert_eq!(agent(&agents, "HelperBot").operator, "unknown");
        assert_eq!(agent(&agents, "FinderBot").purpose, Purpose::AiSearch);
        let mystery = agent(&agents, "MysteryBot");
        assert_eq!(mystery.purpose, Purpose::AiTraining);
        assert!(mystery.review.as_deref().unwrap().contains("Undocumented"));
        assert!(agents.iter().all(|a| a.purpose != Purpose::Search));
    }

    #[test]
    fn what_is_not_the_list_is_refused() {
        assert!(listed_agents(b"[1, 2]").is_err());
        assert!(matches!(listed_agents(b"{}"), Err(SourceError::Empty)));
        assert!(listed_agents(b"<html>").is_err());
    }
}
