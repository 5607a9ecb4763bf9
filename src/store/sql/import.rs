//! `sitemapd import`'s writes, the same statements on every backend: upsert a batch of entries
//! by `loc` into `sitemap_entries`, then replace their extension rows. What the batch does is
//! planned in [`super::super::import`]; this only writes it.

use std::collections::HashMap;

use sqlx::Row;

use super::super::import::{alternate_rows, entry_columns, image_rows, video_rows};
use super::super::{
    EntryDetails, ImportCounts, ImportPlan, ImportedEntry, StoreError, ALTERNATES_TABLE,
    IMAGES_TABLE, IMPORT_ROWS_PER_STATEMENT, VIDEOS_TABLE,
};
use super::{impl_sql, placeholder_list, values_rows, Upsert};

impl_sql! {
    /// Upserts `batch` by `loc`, in one transaction: new URLs get new ids (in batch order),
    /// existing ones keep theirs and get the file's fields; the extension rows of both are
    /// replaced by the file's.
    pub async fn import_batch(&self, batch: &[ImportedEntry]) -> Result<ImportCounts, StoreError> {
        let mut tx = DB::begin_write(&self.pool).await?;
        DB::before_import(&mut tx).await?;
        let existing = Self::ids_by_loc(&mut tx, batch.iter().map(|e| e.loc.as_str())).await?;
        let plan = ImportPlan::new(batch, &existing);
        let on_conflict = DB::on_conflict_update("loc", &["lastmod", "changefreq", "priority"]);
        for chunk in plan.upserts.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "INSERT INTO sitemap_entries (loc, lastmod, changefreq, priority) VALUES {}{}",
                values_rows(4, chunk.len()),
                on_conflict
            ));
            let mut upsert = sqlx::query::<DB>(&sql);
            for entry in chunk {
                let (lastmod, changefreq, priority) = entry_columns(entry);
                upsert = upsert
                    .bind(entry.loc.as_str())
                    .bind(lastmod.map(DB::written))
                    .bind(changefreq)
                    .bind(priority);
            }
            upsert.execute(&mut *tx).await?;
        }
        let locs = plan.upserts.iter().map(|e| e.loc.as_str());
        let ids = Self::ids_by_loc(&mut tx, locs).await?;
        let owners = plan.extension_owners(&ids);
        Self::replace_extensions(&mut tx, &owners).await?;
        tx.commit().await?;
        Ok(plan.counts(&owners))
    }

    /// Ids of those `locs` that exist in the built-in table.
    async fn ids_by_loc<'a>(
        conn: &mut DB::Connection,
        locs: impl Iterator<Item = &'a str>,
    ) -> Result<HashMap<String, i64>, StoreError> {
        let locs: Vec<&str> = locs.collect();
        let (column, before, after) = DB::loc_key();
        let mut ids = HashMap::with_capacity(locs.len());
        let key = format!("{before}?{after}");
        for chunk in locs.chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "SELECT id, {} AS loc FROM sitemap_entries WHERE {column} IN ({})",
                DB::text("loc"),
                vec![key.as_str(); chunk.len()].join(", ")
            ));
            let mut select = sqlx::query::<DB>(&sql);
            for loc in chunk {
                select = select.bind(*loc);
            }
            for row in select.fetch_all(&mut *conn).await? {
                ids.insert(row.try_get("loc")?, row.try_get("id")?);
            }
        }
        Ok(ids)
    }

    /// Deletes the extension rows of `owners`, then writes the file's.
    async fn replace_extensions(
        conn: &mut DB::Connection,
        owners: &[(i64, Option<&EntryDetails>)],
    ) -> Result<(), StoreError> {
        let ids: Vec<i64> = owners.iter().map(|(id, _)| *id).collect();
        for table in [ALTERNATES_TABLE, IMAGES_TABLE, VIDEOS_TABLE] {
            for chunk in ids.chunks(IMPORT_ROWS_PER_STATEMENT) {
                let sql = DB::placeholders(&format!(
                    "DELETE FROM {table} WHERE entry_id IN ({})",
                    placeholder_list(chunk.len())
                ));
                let mut delete = sqlx::query::<DB>(&sql);
                for id in chunk {
                    delete = delete.bind(*id);
                }
                delete.execute(&mut *conn).await?;
            }
        }
        for chunk in alternate_rows(owners).chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "INSERT INTO {ALTERNATES_TABLE} (entry_id, hreflang, href) VALUES {}",
                values_rows(3, chunk.len())
            ));
            let mut insert = sqlx::query::<DB>(&sql);
            for (id, alternate) in chunk {
                insert = insert
                    .bind(*id)
                    .bind(alternate.hreflang.as_str())
                    .bind(alternate.href.as_str());
            }
            insert.execute(&mut *conn).await?;
        }
        for chunk in image_rows(owners).chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "INSERT INTO {IMAGES_TABLE} (entry_id, loc) VALUES {}",
                values_rows(2, chunk.len())
            ));
            let mut insert = sqlx::query::<DB>(&sql);
            for (id, loc) in chunk {
                insert = insert.bind(*id).bind(*loc);
            }
            insert.execute(&mut *conn).await?;
        }
        for chunk in video_rows(owners).chunks(IMPORT_ROWS_PER_STATEMENT) {
            let sql = DB::placeholders(&format!(
                "INSERT INTO {VIDEOS_TABLE} (entry_id, thumbnail_loc, title, description, \
                 content_loc, player_loc, duration, publication_date) VALUES {}",
                values_rows(8, chunk.len())
            ));
            let mut insert = sqlx::query::<DB>(&sql);
            for (id, video) in chunk {
                insert = insert
                    .bind(*id)
                    .bind(video.thumbnail_loc.as_deref())
                    .bind(video.title.as_deref())
                    .bind(video.description.as_deref())
                    .bind(video.content_loc.as_deref())
                    .bind(video.player_loc.as_deref())
                    .bind(video.duration)
                    .bind(video.publication_date.map(DB::written));
            }
            insert.execute(&mut *conn).await?;
        }
        Ok(())
    }
}
