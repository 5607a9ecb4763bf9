//! What `sitemapd check` warns of beyond the rows it leaves out, over a whole group: lastmods
//! that mostly share one instant (a bulk touch: engines then stop trusting lastmod), and
//! hreflang clusters that engines ignore (an alternate that is an entry of the site but does not
//! link back, or an entry with alternates that does not list itself).

use std::collections::{HashMap, HashSet};

use super::Entry;

/// Fewest dated entries before a shared instant says anything.
const BULK_TOUCH_MIN_ENTRIES: u64 = 1000;
/// Examples printed per finding.
const EXAMPLES: usize = 5;

/// The group's entries as the audit needs them.
#[derive(Debug, Default)]
pub struct GroupAudit {
    /// Entries per lastmod instant (unix seconds).
    instants: HashMap<i64, u64>,
    dated: u64,
    /// For each entry with alternates: its URL, id, and its alternates' URLs.
    clusters: HashMap<String, (i64, HashSet<String>)>,
    /// Every URL of the group with the id that listed it first: a later entry with the same
    /// URL repeats it, and an alternate that is an entry is told from one on another host.
    entries: HashMap<String, i64>,
}

/// One warning, with a few examples.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Warning {
    pub message: String,
    pub examples: Vec<String>,
}

/// How a repeated URL is shown: the repeating entry and the entry that had the URL first.
pub fn repeat_example(id: i64, entry: &Entry, first: i64) -> String {
    format!("id {id}: {} (as id {first})", entry.loc.as_str())
}

impl GroupAudit {
    /// Takes in an entry of the group, in id order; `Err` with the id of the entry that had its
    /// URL first when it repeats one (the repeat is not counted again).
    pub fn add(&mut self, entry: &Entry) -> Result<(), i64> {
        let loc = entry.loc.as_str();
        if let Some(first) = self.entries.get(loc) {
            return Err(*first);
        }
        if let Some(lastmod) = entry.lastmod {
            self.dated += 1;
            *self.instants.entry(lastmod.at().timestamp()).or_default() += 1;
        }
        let loc = loc.to_string();
        if !entry.alternates.is_empty() {
            let hrefs = entry
                .alternates
                .iter()
                .map(|a| a.href.as_str().to_string())
                .collect();
            self.clusters.insert(loc.clone(), (entry.id, hrefs));
        }
        self.entries.insert(loc, entry.id);
        Ok(())
    }

    pub fn warnings(&self) -> Vec<Warning> {
        let mut warnings = Vec::new();
        if let Some(bulk) = self.bulk_touch() {
            warnings.push(bulk);
        }
        warnings.extend(self.hreflang());
        warnings
    }

    /// More than half the lastmods (of at least 1,000) on one instant.
    fn bulk_touch(&self) -> Option<Warning> {
        if self.dated < BULK_TOUCH_MIN_ENTRIES {
            return None;
        }
        let (&instant, &count) = self.instants.iter().max_by_key(|(at, n)| (**n, **at))?;
        (count * 2 > self.dated).then(|| Warning {
            message: format!(
                "{count} of {} lastmods are the same instant ({}): a bulk touch; engines stop \
                 trusting a site's lastmods when they do not follow real changes",
                self.dated,
                chrono::DateTime::from_timestamp(instant, 0)
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_default()
            ),
            examples: Vec::new(),
        })
    }

    /// Alternates without return links, and entries with alternates not listing themselves.
    fn hreflang(&self) -> Vec<Warning> {
        let mut no_self = Vec::new();
        let mut no_return = Vec::new();
        let mut sorted: Vec<_> = self.clusters.iter().collect();
        sorted.sort_by_key(|(_, (id, _))| *id);
        for (loc, (id, hrefs)) in sorted {
            if !hrefs.contains(loc) {
                no_self.push(format!("id {id}: {loc}"));
            }
            for href in hrefs
                .iter()
                .filter(|h| *h != loc && self.entries.contains_key(*h))
            {
                let links_back = self
                    .clusters
                    .get(href)
                    .is_some_and(|(_, theirs)| theirs.contains(loc));
                if !links_back {
                    no_return.push(format!("id {id}: {loc} → {href}, which does not link back"));
                }
            }
        }
        let mut warnings = Vec::new();
        for (list, message) in [
            (
                no_self,
                "entries with alternates that do not list themselves (engines ignore such clusters)",
            ),
            (
                no_return,
                "alternates that are entries of the site but do not link back (engines ignore one-way hreflang)",
            ),
        ] {
            if !list.is_empty() {
                warnings.push(Warning {
                    message: format!("{} {message}", list.len()),
                    examples: list.into_iter().take(EXAMPLES).collect(),
                });
            }
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sitemap::entry::{RawAlternate, RawEntry};
    use crate::sitemap::BaseUrl;
    use crate::sitemap::EntryRules;

    fn entry(id: i64, loc: &str, alternates: &[(&str, &str)], lastmod: Option<i64>) -> Entry {
        let rules = EntryRules::new(BaseUrl::parse("https://e.com/").unwrap(), None, vec![]);
        rules
            .accept(&RawEntry {
                id,
                loc: Some(loc.into()),
                lastmod: lastmod.and_then(|s| chrono::DateTime::from_timestamp(s, 0)),
                alternates: alternates
                    .iter()
                    .map(|(lang, href)| RawAlternate {
                        hreflang: Some(lang.to_string()),
                        href: Some(href.to_string()),
                    })
                    .collect(),
                ..RawEntry::default()
            })
            .unwrap()
    }

    #[test]
    fn a_one_way_alternate_and_a_cluster_without_itself_are_reported() {
        let mut audit = GroupAudit::default();
        // en and fr link each other and themselves: fine.
        audit
            .add(&entry(1, "/en", &[("en", "/en"), ("fr", "/fr")], None))
            .unwrap();
        audit
            .add(&entry(2, "/fr", &[("en", "/en"), ("fr", "/fr")], None))
            .unwrap();
        // de names en, which does not name de; and de does not name itself.
        audit.add(&entry(3, "/de", &[("en", "/en")], None)).unwrap();
        let warnings = audit.warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0]
            .message
            .starts_with("1 entries with alternates that do not list"));
        assert_eq!(warnings[0].examples, ["id 3: https://e.com/de"]);
        assert_eq!(
            warnings[1].examples,
            ["id 3: https://e.com/de → https://e.com/en, which does not link back"]
        );
    }

    #[test]
    fn most_lastmods_on_one_instant_is_a_bulk_touch() {
        let mut audit = GroupAudit::default();
        for id in 0..999 {
            audit
                .add(&entry(id, &format!("/{id}"), &[], Some(1_700_000_000)))
                .unwrap();
        }
        assert!(
            audit.warnings().is_empty(),
            "fewer than 1,000 dated entries"
        );
        audit
            .add(&entry(999, "/999", &[], Some(1_600_000_000)))
            .unwrap();
        let warnings = audit.warnings();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].message.starts_with("999 of 1000 lastmods"),
            "{warnings:?}"
        );
    }
}
