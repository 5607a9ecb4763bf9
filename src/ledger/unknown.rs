//! The User-Agents of requests no registry crawler made ("other"), counted so the status page can
//! show the ones seen most: candidates for `CRAWLERS_FILE` or `sitemapd crawlers update`.
//!
//! Memory is bounded whatever comes: at most [`SLOTS`] strings of at most [`MAX_AGENT_BYTES`]
//! bytes are held. When every slot is taken, a new string replaces the least counted one and
//! starts from its count (the Space-Saving algorithm): an agent seen often is never pushed out
//! by a stream of one-off strings, and a count is high by at most the `overestimate` shown.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

use crate::sync::lock;

/// Most distinct User-Agents held at once.
const SLOTS: usize = 200;
/// How many the status page shows.
pub const SHOWN: usize = 20;
/// The longest User-Agent kept; longer ones are cut at a character boundary.
const MAX_AGENT_BYTES: usize = 256;

/// One User-Agent and how often it came.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnknownAgent {
    pub user_agent: String,
    pub requests: u64,
    /// How much of `requests` may belong to strings it replaced (0: exact).
    pub overestimate: u64,
}

#[derive(Debug, Default)]
struct Slot {
    requests: u64,
    overestimate: u64,
}

/// The bounded counter.
#[derive(Debug, Default)]
pub struct UnknownAgents {
    slots: Mutex<HashMap<String, Slot>>,
}

impl UnknownAgents {
    /// Counts one request from `user_agent` (an empty one is not counted).
    pub fn record(&self, user_agent: &str) {
        let agent = cut(user_agent.trim());
        if agent.is_empty() {
            return;
        }
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.get_mut(agent) {
            slot.requests += 1;
            return;
        }
        let mut floor = 0;
        if slots.len() >= SLOTS {
            let least = slots
                .iter()
                .min_by_key(|(_, slot)| slot.requests)
                .map(|(agent, slot)| (agent.clone(), slot.requests));
            if let Some((agent, requests)) = least {
                slots.remove(&agent);
                floor = requests;
            }
        }
        slots.insert(
            agent.to_string(),
            Slot {
                requests: floor + 1,
                overestimate: floor,
            },
        );
    }

    /// The [`SHOWN`] most counted, most first (ties by the string).
    pub fn top(&self) -> Vec<UnknownAgent> {
        let mut all: Vec<UnknownAgent> = lock(&self.slots)
            .iter()
            .map(|(agent, slot)| UnknownAgent {
                user_agent: agent.clone(),
                requests: slot.requests,
                overestimate: slot.overestimate,
            })
            .collect();
        all.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.user_agent.cmp(&b.user_agent))
        });
        all.truncate(SHOWN);
        all
    }
}

/// `agent` cut to [`MAX_AGENT_BYTES`] at a character boundary.
fn cut(agent: &str) -> &str {
    if agent.len() <= MAX_AGENT_BYTES {
        return agent;
    }
    let mut end = MAX_AGENT_BYTES;
    while !agent.is_char_boundary(end) {
        end -= 1;
    }
    &agent[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_seen_come_first_and_one_off_strings_never_push_them_out() {
        let agents = UnknownAgents::default();
        for _ in 0..50 {
            agents.record("FrequentBot/1.0");
        }
        // Space-Saving keeps whatever came more than requests / SLOTS times (here about 25).
        for _ in 0..40 {
            agents.record("SometimesBot/2.0");
        }
        for i in 0..5_000 {
            agents.record(&format!("OneOff/{i}"));
        }
        let top = agents.top();
        assert_eq!(top.len(), SHOWN);
        assert_eq!(top[0].user_agent, "FrequentBot/1.0");
        assert_eq!((top[0].requests, top[0].overestimate), (50, 0));
        assert_eq!(top[1].user_agent, "SometimesBot/2.0");
        assert_eq!(top[1].requests, 40);
        assert!(lock(&agents.slots).len() <= SLOTS);
    }

    #[test]
    fn long_and_empty_agents_are_bounded_or_left_out() {
        let agents = UnknownAgents::default();
        agents.record("   ");
        agents.record(&"é".repeat(400));
        let top = agents.top();
        assert_eq!(top.len(), 1);
        assert!(top[0].user_agent.len() <= MAX_AGENT_BYTES);
    }
}
