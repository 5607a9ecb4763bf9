//! The replica roles: how a group is kept current when replicas share a site's lease
//! ([`super::lease`]). The holder keeps the files current ([`Sweeper::hold`], the scheduler in
//! `schedule.rs`); a follower serves the stored state and loads it again whenever the holder
//! saves ([`Sweeper::follow`]); on taking the lease a replica serves what the one before
//! stored and holds from there ([`Sweeper::take_over`]). Without a lease (SQLite, or
//! `REPLICA_LEASE=off`) a replica only ever holds.

use std::sync::Arc;
use std::time::Duration;

use super::lease::SiteLease;
use super::Sweeper;
use crate::site::Readiness;

/// How often a follower reads the version of the stored state (one row by its key); on
/// PostgreSQL it also reads it as soon as the holder announces a save.
const FOLLOW_POLL: Duration = Duration::from_secs(1);

impl Sweeper {
    /// Runs sweeps for as long as the process lives (see [`super::schedule`]). With a lease,
    /// only while this replica holds it: otherwise it follows the stored state, and takes over
    /// when the lease comes to it.
    pub async fn keep_current(self: Arc<Self>, refresh: Duration) {
        let Some(mut inbox) = self.inbox.lock().await.take() else {
            tracing::error!("this group is kept current already");
            return;
        };
        let Some(mut lease) = self.lease.clone().filter(|_| self.group.news.is_none()) else {
            return self
                .hold(&mut inbox, refresh, self.opening_plan(), None)
                .await;
        };
        lease.decided().await;
        // Holding from the start goes by the opening; any later holding, by a take-over.
        let mut opening = Some(self.opening_plan());
        loop {
            if !lease.holds() {
                self.follow(&mut lease, &mut inbox.stale).await;
                self.take_over().await;
                opening = None;
            }
            let plan = opening
                .take()
                .unwrap_or_else(|| self.take_over_plan(inbox.start));
            self.hold(&mut inbox, refresh, plan, Some(&mut lease)).await;
        }
    }

    /// Serves the stored state while another replica keeps it current: loads it again whenever
    /// its version moves, and tells the holder of rows a render here met that the stored files
    /// do not describe (through the source's change log). Until the lease is taken.
    ///
    /// The holder is configured as this replica is (the lease's name says so): files stored
    /// under other settings are the holder's before its first sweep (or an older replica's, in
    /// a rolling upgrade), so they are not served, and the holder's own are awaited.
    async fn follow(&self, lease: &mut SiteLease, stale: &mut crate::site::StaleReports) {
        let group = &self.group;
        tracing::info!(group = %group.key, "following the replica that keeps this site current");
        // PostgreSQL: the holder announces each save, heard at once; the poll stays, in case
        // a notification is lost (and is the only way elsewhere).
        let announcements = group.store.state_announcements();
        let mut announced = announcements.as_ref().map(|sender| sender.subscribe());
        let mut seen: Option<i64> = None;
        loop {
            match group.store.state_version(&group.key).await {
                Ok(version) if seen != Some(version) => {
                    match group.store.load_state(&group.key).await {
                        Ok(stored) if stored.is_empty() || !super::made_under(&stored, group) => {
                            seen = Some(version)
                        }
                        Ok(stored) => {
                            self.install_stored(&stored);
                            group.set_readiness(Readiness::Current);
                            seen = Some(version);
                        }
                        Err(e) => {
                            tracing::debug!(error = %crate::error::Chain(&e), "cannot load the stored state")
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %crate::error::Chain(&e), "cannot read the stored state's version")
                }
            }
            tokio::select! {
                () = lease.taken() => return,
                Some(report) = stale.recv() => {
                    if let Err(e) = group.store.log_change(&group.source, report.range).await {
                        tracing::debug!(error = %crate::error::Chain(&e), "cannot tell the holder of a stale file");
                    }
                }
                () = tokio::time::sleep(FOLLOW_POLL) => {}
                () = announced_save(&mut announced) => {}
            }
        }
    }

    /// On taking the lease: serves what the replica before stored, when it was laid out under
    /// this replica's settings (files laid out under others are laid out again by the sweeps).
    async fn take_over(&self) {
        match self.group.store.load_state(&self.group.key).await {
            Ok(stored) if !stored.is_empty() && super::made_under(&stored, &self.group) => {
                self.install_stored(&stored)
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %crate::error::Chain(&e), "cannot load the stored state on taking over")
            }
        }
    }
}

/// Completes when a replica announces a saved state; never where none are announced.
async fn announced_save(announced: &mut Option<tokio::sync::watch::Receiver<u64>>) {
    match announced {
        Some(rx) => {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}
