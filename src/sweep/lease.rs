//! Which replica keeps a site current. Each replica runs one [`SiteLease`] per site: it tries
//! to take the site's lease (a database lock held by a connection of its own, see
//! [`crate::store::lease`]) every [`LEASE_TRY`], and once it holds it, checks every
//! [`LEASE_TRY`] that it still does. Its sweepers keep the site's files current while it holds
//! the lease and follow the stored state otherwise ([`super::Sweeper::keep_current`]).
//!
//! The lease is named after the site and what its replicas are configured to keep current
//! (its groups and their settings, see [`lease_key`]): replicas configured alike share one,
//! and a replica configured otherwise (a rolling upgrade that adds a group or changes a
//! setting) takes a lease of its own and keeps its files current by itself, as every replica
//! did before leases. A follower never waits on a holder that does not keep its groups.
//!
//! The lock ends with its connection, so a replica that stops, crashes or is killed frees it at
//! once, and another takes it at its next try: a clean stop is taken over within a second or
//! two, a killed replica as soon as the database sees its connection close.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;
use xxhash_rust::xxh3::xxh3_64;

use prometheus_client::metrics::gauge::Gauge;

use crate::site::{Keeper, Site};
use crate::store::lease::LeaseConnection;
use crate::store::Store;

/// How often a follower tries to take the lease, and a holder checks it still has it.
pub const LEASE_TRY: Duration = Duration::from_secs(1);
/// A follower reads which replica holds the lease every this many tries.
const KEEPER_READ: u32 = 5;
/// Pause after the database could not be reached, before a new connection is tried.
const RECONNECT_PAUSE: Duration = Duration::from_secs(2);

/// Whether this replica keeps a site current: watched by the site's sweepers.
#[derive(Clone)]
pub struct SiteLease {
    /// `None` until the first try ended.
    holding: watch::Receiver<Option<bool>>,
    /// This replica's name, as the status page shows the holder.
    pub replica: Arc<str>,
}

impl SiteLease {
    /// `site`'s lease, as its sweepers watch it, and what takes it once started
    /// ([`LeaseHolder::start`]); nothing is tried before then.
    pub fn new(
        store: Store,
        site: Arc<Site>,
        held: Gauge,
        replica: Arc<str>,
    ) -> (Self, LeaseHolder) {
        let (tx, holding) = watch::channel(None);
        let holder = Holder {
            store,
            key: lease_key(&site),
            site,
            held,
            replica: replica.clone(),
        };
        (Self { holding, replica }, LeaseHolder { holder, tx })
    }

    pub fn holds(&self) -> bool {
        *self.holding.borrow() == Some(true)
    }

    /// Waits until the first try to take the lease ended.
    pub async fn decided(&mut self) {
        let _ = self.holding.wait_for(Option::is_some).await;
    }

    /// Waits until this replica holds the lease (at once if it does).
    pub async fn taken(&mut self) {
        if self
            .holding
            .wait_for(|held| *held == Some(true))
            .await
            .is_err()
        {
            std::future::pending::<()>().await;
        }
    }

    /// Waits until this replica no longer holds the lease.
    pub async fn lost(&mut self) {
        if self
            .holding
            .wait_for(|held| *held == Some(false))
            .await
            .is_err()
        {
            // The lease task ended (the service is stopping): never lost from here on.
            std::future::pending::<()>().await;
        }
    }
}

/// What takes and keeps a site's lease, not started yet.
pub struct LeaseHolder {
    holder: Holder,
    tx: watch::Sender<Option<bool>>,
}

impl LeaseHolder {
    /// Starts trying to take the lease in the background; the task ends when the returned
    /// handle is aborted (with the service), and the lease with it.
    pub fn start(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(self.holder.hold(self.tx))
    }
}

/// This replica's name: the host name (a pod's name on Kubernetes) and the process id.
pub fn replica_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}", std::process::id())
}

/// The name of `site`'s lease: its key and a fingerprint of what this replica keeps current
/// there (each group's key and everything that decides its files' bytes), so only replicas
/// that would write the same files share it.
pub fn lease_key(site: &Site) -> String {
    let mut config = String::new();
    for group in &site.groups {
        let llms = group
            .llms
            .as_ref()
            .map(|l| (l.title.as_str(), l.optional, l.listed));
        config.push_str(&format!(
            "{}\n{}\n{}\n{}\n{}\n{llms:?}\n",
            group.key,
            group.settings.fingerprint.hex(),
            group.robots_rules.hex(),
            group.feed_size,
            group.news.is_some(),
        ));
    }
    format!("{} {:016x}", site.key, xxh3_64(config.as_bytes()))
}

/// What the lease task works with.
struct Holder {
    store: Store,
    /// The lease's name (see [`lease_key`]).
    key: String,
    site: Arc<Site>,
    /// `sitemapd_lease_held{site}`.
    held: Gauge,
    replica: Arc<str>,
}

impl Holder {
    /// Takes and keeps the lease for as long as the task runs, saying on `tx` whether it holds
    /// it; while it does not, reads which replica does every [`KEEPER_READ`].
    async fn hold(self, tx: watch::Sender<Option<bool>>) {
        let mut connection: Option<LeaseConnection> = None;
        let mut tries = 0u32;
        loop {
            let held = *tx.borrow() == Some(true);
            let conn = match connection.as_mut() {
                Some(conn) => conn,
                None => match self.store.lease_connection(&self.key).await {
                    Ok(conn) => connection.insert(conn),
                    Err(e) => {
                        tracing::debug!(error = %crate::error::Chain(&e), "cannot reach the database for the lease");
                        self.say(&tx, false);
                        tokio::time::sleep(RECONNECT_PAUSE).await;
                        continue;
                    }
                },
            };
            let now_held = match held {
                false => conn.try_take().await,
                true => conn.still_held().await,
            };
            match (held, now_held) {
                (false, Ok(true)) => self.taken(&tx).await,
                (false, Ok(false)) => {
                    self.say(&tx, false);
                    if tries % KEEPER_READ == 0 {
                        self.read_keeper().await;
                    }
                }
                (true, Ok(true)) => {}
                (_, Ok(false) | Err(_)) => {
                    if held {
                        tracing::warn!(site = %self.site.key, "lost the lease; following the replica that takes it");
                    }
                    connection = None; // Closing it frees whatever it held.
                    self.say(&tx, false);
                }
            }
            tries = tries.wrapping_add(1);
            tokio::time::sleep(LEASE_TRY).await;
        }
    }

    async fn taken(&self, tx: &watch::Sender<Option<bool>>) {
        let since = Utc::now().timestamp();
        tracing::info!(site = %self.site.key, replica = %self.replica, "this replica keeps the site current");
        if let Err(e) = self
            .store
            .note_holder(&self.site.key, &self.replica, since)
            .await
        {
            tracing::debug!(error = %crate::error::Chain(&e), "cannot note the lease's holder");
        }
        self.site.set_keeper(Some(Keeper {
            replica: self.replica.to_string(),
            since,
            this_replica: true,
        }));
        self.say(tx, true);
    }

    /// Says whether this replica holds the lease (to the sweepers and the metric).
    fn say(&self, tx: &watch::Sender<Option<bool>>, held: bool) {
        self.held.set(i64::from(held));
        tx.send_if_modified(|now| now.replace(held) != Some(held));
    }

    /// Reads which replica the database notes as keeping the site current.
    async fn read_keeper(&self) {
        match self.store.holder(&self.site.key).await {
            Ok(holder) => self.site.set_keeper(holder.map(|(replica, since)| Keeper {
                this_replica: false,
                replica,
                since,
            })),
            Err(e) => {
                tracing::debug!(error = %crate::error::Chain(&e), "cannot read the lease's holder")
            }
        }
    }
}
