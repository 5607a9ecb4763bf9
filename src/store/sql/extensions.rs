//! The extension tables (`sitemap_alternates`, `sitemap_images`, `sitemap_videos`): which of
//! them hold rows for an id range, and their rows. Our migrations make them; a source database
//! of its own (`SOURCE_DATABASE_URL`) may have none, which is asked of its catalogue once.

use sqlx::Row;

use super::super::{IdRange, Keyed, StoreError};
use super::impl_sql;
use crate::sitemap::entry::{RawAlternate, RawImage};
use crate::sitemap::rich::RawVideo;
use crate::sitemap::Namespaces;

/// The extension tables, as our migrations name them.
pub(crate) const EXTENSION_TABLES: [&str; 3] =
    ["sitemap_alternates", "sitemap_images", "sitemap_videos"];

impl_sql! {
    /// Whether the database has every table of `names` (asked of its catalogue: a statement
    /// naming a missing table would be an error in the server's log).
    pub async fn has_tables(&self, names: &[&str]) -> Result<bool, StoreError> {
        let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
        let sql = format!("SELECT {} AS n", DB::int(&DB::tables_named(&quoted.join(", "))));
        let n: i64 = sqlx::query_scalar::<DB, i64>(&sql).fetch_one(&self.pool).await?;
        Ok(n == names.len() as i64)
    }

    /// Whether the database has the extension tables (all three, as our migrations make them).
    pub async fn has_extension_tables(&self) -> Result<bool, StoreError> {
        let known = self
            .extension_tables
            .get_or_try_init(|| self.has_tables(&EXTENSION_TABLES))
            .await?;
        Ok(*known)
    }

    pub async fn alternates(&self, range: IdRange) -> Result<Keyed<RawAlternate>, StoreError> {
        let rows = sqlx::query::<DB>(&self.reads.alternates)
            .bind(range.first)
            .bind(range.last)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(super::super::keyed_alternate).collect())
    }

    pub async fn images(&self, range: IdRange) -> Result<Keyed<RawImage>, StoreError> {
        let rows = sqlx::query::<DB>(&self.reads.images)
            .bind(range.first)
            .bind(range.last)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(super::super::keyed_image).collect())
    }

    pub async fn videos(&self, range: IdRange) -> Result<Keyed<RawVideo>, StoreError> {
        let rows = sqlx::query::<DB>(&self.reads.videos)
            .bind(range.first)
            .bind(range.last)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|row| {
                let text = |c: &'static str| row.try_get::<Option<String>, _>(c).ok().flatten();
                let video = RawVideo {
                    thumbnail_loc: text("thumbnail_loc"),
                    title: text("title"),
                    description: text("description"),
                    content_loc: text("content_loc"),
                    player_loc: text("player_loc"),
                    duration: row.try_get::<Option<i64>, _>("duration").ok().flatten(),
                    publication_date: DB::read_time(row, "publication_date"),
                };
                (row.try_get("entry_id").unwrap_or_default(), video)
            })
            .collect())
    }

    /// Which extension tables have rows for entries in `range`.
    pub async fn extension_presence(&self, range: IdRange) -> Result<Namespaces, StoreError> {
        if !self.has_extension_tables().await? {
            return Ok(Namespaces::default());
        }
        let mut query = sqlx::query::<DB>(&self.reads.presence);
        for _ in 0..3 {
            query = query.bind(range.first).bind(range.last);
        }
        let row = query.fetch_one(&self.pool).await?;
        Ok(Namespaces {
            xhtml: row.try_get::<i64, _>("xhtml")? != 0,
            image: row.try_get::<i64, _>("image")? != 0,
            video: row.try_get::<i64, _>("video")? != 0,
            news: false,
        })
    }
}
