//! Each group's stored state in the state database: its pages and files (saved compare-and-set,
//! serialised across replicas), the announcements of a save to the replicas that follow, and its
//! IndexNow progress. Statements: `sql/state.rs`.

use super::{Backend, SavedState, Store, StoreError, SubmittedThrough};

impl Store {
    /// The site's stored pages and files.
    pub async fn load_state(&self, site: &str) -> Result<SavedState, StoreError> {
        on!(&self.state, s => s.load_state(site).await)
    }

    /// Compare-and-set, serialised with other replicas (PostgreSQL: an advisory lock; MySQL:
    /// the site's lock row; SQLite: `BEGIN IMMEDIATE`): if what is stored for `site` is still
    /// `expected`, replaces it with `next` and says true; otherwise writes nothing. What to
    /// store is decided by the caller, outside the transaction.
    pub async fn replace_state(
        &self,
        site: &str,
        expected: &SavedState,
        next: &SavedState,
    ) -> Result<bool, StoreError> {
        let replaced = on!(&self.state, s => s.replace_state(site, expected, next).await)?;
        if let (true, Backend::Postgres(s)) = (replaced, &self.state) {
            // Followers poll the version too: a lost notification only delays them.
            if let Err(e) = s.announce_state(site).await {
                tracing::debug!(error = %crate::error::Chain(&e), "cannot announce the saved state");
            }
        }
        Ok(replaced)
    }

    /// PostgreSQL: a count that moves when a replica saves a state (one listening
    /// connection per process); hold the sender while listening. `None`
    /// elsewhere: followers poll the version.
    pub fn state_announcements(&self) -> Option<std::sync::Arc<tokio::sync::watch::Sender<u64>>> {
        match &self.state {
            Backend::Postgres(s) => Some(s.state_announcements()),
            _ => None,
        }
    }

    pub async fn load_submitted(&self, site: &str) -> Result<Option<SubmittedThrough>, StoreError> {
        on!(&self.state, s => s.load_submitted(site).await)
    }

    /// Moves the site's IndexNow progress to `to` if it is further than what is stored; says
    /// whether it moved (another replica may have got there first).
    pub async fn advance_submitted(
        &self,
        site: &str,
        from: Option<SubmittedThrough>,
        to: SubmittedThrough,
    ) -> Result<bool, StoreError> {
        on!(&self.state, s => s.advance_submitted(site, from, to).await)
    }
}
