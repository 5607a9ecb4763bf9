//! llms.txt's reads: a source's newest entries with their optional `title` and `description`
//! columns, read when the source has them (asked of the database once per source).

use sqlx::Row;

use super::super::StoreError;
use super::{impl_sql, Dialect};
use crate::sitemap::RawEntry;

/// Characters of a title or description read from the database: more than llms.txt shows
/// (it cuts them shorter), few enough that no row can make a read large.
const TEXT_READ_CHARS: usize = 2000;

/// Which of the optional llms.txt columns a source has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlmsColumns {
    pub title: bool,
    pub description: bool,
}

/// An entry with its optional title and description.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TitledEntry {
    pub entry: RawEntry,
    pub title: Option<String>,
    pub description: Option<String>,
}

/// The newest entries: dated ones by lastmod, newest first (then id), or, with `dated` false,
/// the undated ones by id; each with the optional columns the source has (NULL otherwise).
fn newest<DB: Dialect>(quoted_source: &str, columns: LlmsColumns, dated: bool) -> String {
    let optional = |has: bool, column: &str| match has {
        true => format!(
            "SUBSTR({}, 1, {TEXT_READ_CHARS})",
            DB::text(&format!("src.{column}"))
        ),
        false => DB::text("NULL"),
    };
    let key = DB::instant_key("src.lastmod");
    let (filter, order) = match dated {
        true => (
            format!("src.lastmod IS NOT NULL AND {key} IS NOT NULL"),
            format!("{key} DESC, src.id"),
        ),
        false => (
            format!("(src.lastmod IS NULL OR {key} IS NULL)"),
            "src.id".to_string(),
        ),
    };
    DB::placeholders(&format!(
        "SELECT {}, {} AS llms_title, {} AS llms_description FROM {} AS src \
         WHERE {filter} ORDER BY {order} LIMIT ?",
        DB::entry_columns(),
        optional(columns.title, "title"),
        optional(columns.description, "description"),
        quoted_source,
    ))
}

impl_sql! {
    /// Whether the source has the optional `title` and `description` columns, as the database
    /// describes it. Asked once: columns added while the service runs are read from its next
    /// start.
    pub async fn llms_columns(&self) -> Result<LlmsColumns, StoreError> {
        use sqlx::{Column, Executor};
        if let Some(known) = self.reads.llms_columns.get() {
            return Ok(*known);
        }
        let described = (&self.pool).describe(&self.reads.article_columns).await?;
        let has = |name: &str| {
            described
                .columns()
                .iter()
                .any(|c| c.name().eq_ignore_ascii_case(name))
        };
        let known = LlmsColumns {
            title: has("title"),
            description: has("description"),
        };
        Ok(*self.reads.llms_columns.get_or_init(|| known))
    }

    /// Up to `limit` entries, the most recently modified first (ties: lowest id first), then
    /// those without a lastmod by id; each with its title and description when the source has
    /// those columns.
    pub async fn newest_titled(&self, limit: i64) -> Result<Vec<TitledEntry>, StoreError> {
        let columns = self.llms_columns().await?;
        let mut entries = Vec::new();
        for dated in [true, false] {
            let wanted = limit - entries.len() as i64;
            if wanted <= 0 {
                break;
            }
            let rows = sqlx::query::<DB>(&newest::<DB>(&self.reads.source, columns, dated))
                .bind(wanted)
                .fetch_all(&self.pool)
                .await?;
            entries.extend(rows.iter().map(|row| {
                let text = |c: &'static str| row.try_get::<Option<String>, _>(c).ok().flatten();
                TitledEntry {
                    entry: DB::raw_entry(row),
                    title: text("llms_title"),
                    description: text("llms_description"),
                }
            }));
        }
        Ok(entries)
    }
}
