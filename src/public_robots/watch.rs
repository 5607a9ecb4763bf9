//! `ROBOTS_PUBLIC_CHECK=on`: the service compares each site's public robots.txt with its own at
//! start and then hourly, never more often, and keeps the last result for the status page. Off
//! by default: it fetches the site's public address, which may be on the internet.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::{public_url, PublicCheck};
use crate::site::Site;

/// How often the public file is fetched.
pub const EVERY: Duration = Duration::from_secs(3600);

/// The last check of each site, in the order of the sites.
#[derive(Debug, Default)]
pub struct PublicWatch {
    last: RwLock<Vec<Option<PublicCheck>>>,
}

impl PublicWatch {
    /// The last check of site `index`, if one ran.
    pub fn last(&self, index: usize) -> Option<PublicCheck> {
        crate::sync::read(&self.last).get(index).cloned().flatten()
    }

    /// Checks every site now, then every [`EVERY`], for as long as the task runs.
    pub async fn keep_checking(self: Arc<Self>, sites: Vec<Arc<Site>>) {
        let mut ticks = tokio::time::interval(EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let mut checks = Vec::with_capacity(sites.len());
            for site in &sites {
                let served = site.first().snapshot().robots.body.clone();
                let served = String::from_utf8_lossy(&served).into_owned();
                let check = PublicCheck::run(&public_url(site.base().url()), &served).await;
                if !check.same() {
                    tracing::warn!(url = %check.url, differences = check.differences.len(), error = ?check.error, "the public robots.txt is not the file sitemapd serves (see the status page)");
                }
                checks.push(Some(check));
            }
            *crate::sync::write(&self.last) = checks;
        }
    }
}
