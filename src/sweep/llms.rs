//! The group's part of llms.txt a sweep reads (see [`crate::llms`]): its links and the
//! fingerprint its stored time is settled by.

use std::sync::Arc;

use crate::files::LLMS;
use crate::llms::{read_links, Link, Section};
use crate::site::Group;
use crate::sitemap::Fingerprint;
use crate::store::{SavedState, StoreError};

/// The group's links as the database holds them now, with the fingerprint of the text they
/// make; `None` when the site serves no llms.txt.
pub async fn read(group: &Group) -> Result<Option<(Vec<Link>, Fingerprint)>, StoreError> {
    let Some(llms) = &group.llms else {
        return Ok(None);
    };
    let links = read_links(&group.store, &group.rules, llms).await?;
    let fingerprint = Fingerprint::of(llms.section_text(&links).as_bytes());
    Ok(Some((links, fingerprint)))
}

/// Whether what was read is what the snapshot holds (nothing read: the site serves none).
pub fn unchanged(read: Option<&(Vec<Link>, Fingerprint)>, held: Option<&Section>) -> bool {
    match (read, held) {
        (None, _) => true,
        (Some((links, _)), Some(section)) => *section.links == *links,
        (Some(_), None) => false,
    }
}

/// The section with the time its text last changed, as `saved` holds it.
pub fn section(links: Vec<Link>, saved: &SavedState) -> Section {
    let changed_at = saved
        .files
        .iter()
        .find(|f| f.name == LLMS)
        .map_or_else(|| chrono::Utc::now().timestamp(), |f| f.changed_at);
    Section {
        links: Arc::new(links),
        changed_at,
    }
}
