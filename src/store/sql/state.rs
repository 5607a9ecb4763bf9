//! Our own state tables, the same on every backend: each site's pages (`sitemapd_pages`), its
//! whole files (`sitemapd_files`) and its IndexNow progress (`sitemapd_indexnow`).

use std::collections::HashMap;

use sqlx::Row;

use super::super::{
    FileRecord, PageRecord, SavedState, StoreError, SubmittedThrough, IMPORT_ROWS_PER_STATEMENT,
};
use super::{impl_sql, placeholder_list, values_rows, Upsert};

impl_sql! {
    pub async fn load_submitted(&self, site: &str) -> Result<Option<SubmittedThrough>, StoreError> {
        let row = sqlx::query::<DB>(&DB::placeholders(
            "SELECT through_us, through_id FROM sitemapd_indexnow WHERE site = ?",
        ))
        .bind(site)
        .fetch_optional(&self.pool)
        .await?;
        Ok(match row {
            Some(r) => Some(SubmittedThrough {
                lastmod_us: r.try_get("through_us")?,
                id: r.try_get("through_id")?,
            }),
            None => None,
        })
    }

    /// Moves the site's IndexNow progress from `from` to `to`; false when another replica moved
    /// it first.
    pub async fn advance_submitted(
        &self,
        site: &str,
        from: Option<SubmittedThrough>,
        to: SubmittedThrough,
    ) -> Result<bool, StoreError> {
        let moved = match from {
            None => sqlx::query::<DB>(&DB::placeholders(&DB::insert_ignoring(
                "sitemapd_indexnow (site, through_us, through_id) VALUES (?, ?, ?)",
            )))
            .bind(site)
            .bind(to.lastmod_us)
            .bind(to.id)
            .execute(&self.pool)
            .await?,
            Some(from) => sqlx::query::<DB>(&DB::placeholders(
                "UPDATE sitemapd_indexnow SET through_us = ?, through_id = ? \
                 WHERE site = ? AND through_us = ? AND through_id = ?",
            ))
            .bind(to.lastmod_us)
            .bind(to.id)
            .bind(site)
            .bind(from.lastmod_us)
            .bind(from.id)
            .execute(&self.pool)
            .await?,
        };
        Ok(DB::rows_affected(&moved) == 1)
    }

    /// The site's stored pages and files.
    pub async fn load_state(&self, site: &str) -> Result<SavedState, StoreError> {
        let mut conn = self.pool.acquire().await?;
        Self::state_in(&mut conn, site).await
    }

    /// Compare-and-set under the site's write lock: if what is stored for `site` is still
    /// `expected`, replaces it with `next` and says true; otherwise writes nothing.
    pub async fn replace_state(
        &self,
        site: &str,
        expected: &SavedState,
        next: &SavedState,
    ) -> Result<bool, StoreError> {
        let mut tx = DB::begin_site_write(&self.pool, site).await?;
        if Self::state_in(&mut tx, site).await? != *expected {
            return Ok(false);
        }
        let SavedState { pages, files } = next;
        // Only the rows of files that changed are written: a sweep of one file at 2,000 files
        // writes one row, not 2,000.
        let before: HashMap<i64, &PageRecord> =
            expected.pages.iter().map(|p| (p.page_no, p)).collect();
        let after: HashMap<i64, &PageRecord> = pages.iter().map(|p| (p.page_no, p)).collect();
        let gone: Vec<i64> = expected
            .pages
            .iter()
            .filter(|p| after.get(&p.page_no) != Some(p))
            .map(|p| p.page_no)
            .collect();
        let written: Vec<&PageRecord> = pages
            .iter()
            .filter(|p| before.get(&p.page_no) != Some(p))
            .collect();
        for chunk in gone.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "DELETE FROM sitemapd_pages WHERE site = ? AND page_no IN ({})",
                placeholder_list(chunk.len())
            ));
            let mut delete = sqlx::query::<DB>(&sql).bind(site);
            for page_no in chunk {
                delete = delete.bind(*page_no);
            }
            delete.execute(&mut *tx).await?;
        }
        for chunk in written.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "INSERT INTO sitemapd_pages \
                 (site, page_no, first_id, urls, bytes, fingerprint, changed_at, extensions, \
                  summary) VALUES {}",
                values_rows(9, chunk.len())
            ));
            let mut insert = sqlx::query::<DB>(&sql);
            for p in chunk {
                insert = insert
                    .bind(site)
                    .bind(p.page_no)
                    .bind(p.first_id)
                    .bind(p.urls)
                    .bind(p.bytes)
                    .bind(p.fingerprint.hex())
                    .bind(p.changed_at)
                    .bind(p.extensions)
                    .bind(p.summary.as_deref());
            }
            insert.execute(&mut *tx).await?;
        }
        let upsert_file = DB::placeholders(&format!(
            "INSERT INTO sitemapd_files (site, name, fingerprint, changed_at) VALUES (?, ?, ?, ?){}",
            DB::on_conflict_update("site, name", &["fingerprint", "changed_at"])
        ));
        for f in files {
            sqlx::query::<DB>(&upsert_file)
                .bind(site)
                .bind(f.name.as_str())
                .bind(f.fingerprint.hex())
                .bind(f.changed_at)
                .execute(&mut *tx)
                .await?;
        }
        Self::bump_state_version(&mut tx, site).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Pages and files as one connection (or transaction) reads them.
    async fn state_in(conn: &mut DB::Connection, site: &str) -> Result<SavedState, StoreError> {
        let pages = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT page_no, first_id, urls, bytes, {} AS fingerprint, changed_at, extensions, \
                    {} AS summary \
             FROM sitemapd_pages WHERE site = ? ORDER BY first_id",
            DB::text("fingerprint"),
            DB::text("summary")
        )))
        .bind(site)
        .fetch_all(&mut *conn)
        .await?;
        let files = sqlx::query::<DB>(&DB::placeholders(&format!(
            "SELECT {} AS name, {} AS fingerprint, changed_at \
             FROM sitemapd_files WHERE site = ? ORDER BY name",
            DB::text("name"),
            DB::text("fingerprint")
        )))
        .bind(site)
        .fetch_all(&mut *conn)
        .await?;
        let pages = pages.iter().map(PageRecord::from_row).collect::<Result<_, _>>()?;
        let files = files.iter().map(FileRecord::from_row).collect::<Result<_, _>>()?;
        Ok(SavedState { pages, files })
    }
}
