//! The whole-group audit, on demand: what `sitemapd check` warns of (hreflang clusters engines
//! ignore, a bulk touch of lastmods) and URLs repeated across files, for each group of a site.
//! It reads every row, so it runs only when a site owner asks for it.

use futures::TryStreamExt;
use serde::Serialize;

use crate::site::{Group, Site};
use crate::sitemap::audit::{repeat_example, GroupAudit, Warning};
use crate::sitemap::Namespaces;
use crate::store::{IdRange, StoreError};

/// Repeated URLs listed by id.
const REPEATS_LISTED: usize = 5;

#[derive(Debug, Serialize)]
pub struct SiteAudit {
    pub site: String,
    pub groups: Vec<GroupReport>,
}

#[derive(Debug, Serialize)]
pub struct GroupReport {
    pub name: String,
    pub entries: u64,
    pub warnings: Vec<Warning>,
}

/// The audits of one status page, one at a time: each holds every URL of a group in memory
/// while it reads.
pub struct Audits(tokio::sync::Semaphore);

impl Audits {
    pub fn one_at_a_time() -> Self {
        Self(tokio::sync::Semaphore::new(1))
    }

    /// Reads every row of every group of `site` and reports what the audit finds; `None` while
    /// another audit runs.
    pub async fn run(&self, site: &Site) -> Result<Option<SiteAudit>, StoreError> {
        let Ok(_one_at_a_time) = self.0.try_acquire() else {
            return Ok(None);
        };
        let mut groups = Vec::with_capacity(site.groups.len());
        for group in &site.groups {
            groups.push(group_report(group).await?);
        }
        Ok(Some(SiteAudit {
            site: site.key.clone(),
            groups,
        }))
    }
}

async fn group_report(group: &Group) -> Result<GroupReport, StoreError> {
    let mut audit = GroupAudit::default();
    let mut repeats = Vec::new();
    let mut repeated = 0u64;
    let mut entries = 0u64;
    let mut rows = group.rows(IdRange::ALL, Namespaces::ALL, None);
    while let Some(raw) = rows.try_next().await? {
        let Ok(entry) = group.rules.accept(&raw) else {
            continue;
        };
        match audit.add(&entry) {
            Err(first) => {
                repeated += 1;
                if repeats.len() < REPEATS_LISTED {
                    repeats.push(repeat_example(raw.id, &entry, first));
                }
            }
            Ok(()) => entries += 1,
        }
    }
    let mut warnings = audit.warnings();
    if repeated > 0 {
        warnings.push(Warning {
            message: format!(
                "{repeated} URLs repeat an earlier entry of the group (each file lists a URL once; across files they stay)"
            ),
            examples: repeats,
        });
    }
    Ok(GroupReport {
        name: group.name.clone().unwrap_or_default(),
        entries,
        warnings,
    })
}
