//! `sitemapd_listed` in the state database: the URLs a view-fed group last listed, by id, so a
//! row that leaves the view can be submitted to IndexNow as removed. Statements: `sql/listed.rs`.

use super::{IdRange, Store, StoreError};

impl Store {
    /// The URLs a view-fed group listed with ids in `range` (see `sitemapd_listed`), in id
    /// order.
    pub async fn listed(
        &self,
        site: &str,
        range: IdRange,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        on!(&self.state, s => s.listed(site, range).await)
    }

    /// Whether anything is listed for `site`.
    pub async fn any_listed(&self, site: &str) -> Result<bool, StoreError> {
        on!(&self.state, s => s.any_listed(site).await)
    }

    /// Forgets the listed URLs of ids `forget`, then notes `note`, in one transaction.
    pub async fn relist(
        &self,
        site: &str,
        forget: &[i64],
        note: &[(i64, String)],
    ) -> Result<(), StoreError> {
        on!(&self.state, s => s.relist(site, forget, note).await)
    }

    /// Forgets every URL listed for `site`.
    pub async fn forget_all_listed(&self, site: &str) -> Result<(), StoreError> {
        on!(&self.state, s => s.forget_all_listed(site).await)
    }
}
