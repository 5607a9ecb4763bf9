//! The statements that name a source, built once per source: the reads by id range (bound or,
//! where the database wants them so, with literal bounds), feeds, IndexNow, the extension tables
//! and a news group's articles.

use super::{Dialect, ENTRIES_TABLE};
use crate::store::{IdRange, ALTERNATES_TABLE, IMAGES_TABLE, VIDEOS_TABLE};

/// `id` within `range`, its bounds spelt out and an open end left out: MariaDB builds a view
/// whose id is an unsigned column for far more rows than `BETWEEN -9223372036854775808 AND …`
/// holds (1.4 s against 0.18 s for the first 50,000 of the guide's WordPress view at 1M
/// posts), where `<= …` is pushed into it as any range is. Rows no range holds (a NULL id, one
/// beyond 64 bits) are left out, as by the bound statements.
pub(super) fn id_within(id: &str, range: IdRange) -> String {
    match (range.first == i64::MIN, range.last == i64::MAX) {
        (true, true) => format!("{id} <= {}", i64::MAX),
        (true, false) => format!("{id} <= {}", range.last),
        (false, true) => format!("{id} BETWEEN {} AND {}", range.first, i64::MAX),
        (false, false) => format!("{id} BETWEEN {} AND {}", range.first, range.last),
    }
}

/// Statements that name the source (or read many rows), built once per source.
pub(super) struct Reads {
    /// The source, quoted.
    pub(super) source: String,
    /// The source as configured (`view`, `db.view`).
    pub(super) name: String,
    /// Whether the source is the built-in table (indexed by id: keyset reads are bounded).
    pub(super) built_in: bool,
    /// [`Reads::range`] with its bounds spelt out (see [`Dialect::RANGES_AS_LITERALS`]): the
    /// text before [`id_within`]; `None` where they are bound as parameters.
    pub(super) range_literal: Option<String>,
    /// [`Reads::recent_in`] likewise.
    pub(super) recent_in_literal: Option<String>,
    /// The key [`Reads::recent`] orders by.
    pub(super) recent_key: String,
    pub(super) range: String,
    pub(super) chunk: String,
    /// Rows no id range holds: a NULL id, or one beyond a signed 64-bit integer.
    pub(super) unplaced: String,
    pub(super) recent: String,
    /// [`Reads::recent`] within an id range: a view's feeds, read file by file.
    pub(super) recent_in: String,
    /// [`Reads::recent`] ordered by the column itself, for a `lastmod` of a time type.
    pub(super) recent_by_column: String,
    pub(super) modified: String,
    pub(super) alternates: String,
    pub(super) images: String,
    pub(super) videos: String,
    pub(super) presence: String,
    /// A news group's articles published since a time, with and without the optional columns.
    pub(super) articles: String,
    pub(super) articles_plain: String,
    /// Every column of the source, none of its rows: whether it has the optional article
    /// columns.
    pub(super) article_columns: String,
    /// The answer, once the database gave it: asked once per source and process, not per read.
    pub(super) has_article_columns: std::sync::OnceLock<bool>,
    /// Whether the source has the optional `title` and `description` columns (llms.txt),
    /// asked once per source and process like the article columns.
    pub(super) llms_columns: std::sync::OnceLock<super::llms::LlmsColumns>,
}

impl Reads {
    /// The statements reading `source`; `read_only`: of a source database of its own, where
    /// our functions may be missing (they are written out, see
    /// [`Dialect::without_own_functions`]).
    pub(super) fn new<DB: Dialect>(source: &str, read_only: bool) -> Self {
        let reads = Self::of::<DB>(source);
        match read_only {
            true => reads.map(DB::without_own_functions),
            false => reads,
        }
    }

    /// Every statement passed through `f`.
    fn map(self, f: impl Fn(String) -> String) -> Self {
        Self {
            range_literal: self.range_literal.map(&f),
            recent_in_literal: self.recent_in_literal.map(&f),
            recent_key: f(self.recent_key),
            range: f(self.range),
            chunk: f(self.chunk),
            recent: f(self.recent),
            recent_in: f(self.recent_in),
            recent_by_column: f(self.recent_by_column),
            modified: f(self.modified),
            ..self
        }
    }

    fn of<DB: Dialect>(source: &str) -> Self {
        // The built-in table's columns have the types the migrations gave them; anything else
        // (a view over CMS tables) may hold text where a time or number belongs.
        let built_in = source == ENTRIES_TABLE;
        let (columns, key) = match built_in {
            true => (DB::entry_columns(), DB::instant_key("src.lastmod")),
            false => (
                DB::tolerant_entry_columns(),
                DB::tolerant_instant_key("src.lastmod"),
            ),
        };
        let select = format!("SELECT {columns} FROM {} AS src", DB::quote(source));
        let literal = |text: String| (DB::RANGES_AS_LITERALS && !built_in).then_some(text);
        let in_range = "entry_id BETWEEN ? AND ?";
        let sql = |text: String| DB::placeholders(&text);
        Self {
            source: DB::quote(source),
            name: source.to_string(),
            built_in,
            range_literal: literal(format!("{select} WHERE ")),
            recent_key: key.clone(),
            recent_in_literal: literal(format!(
                "{select} WHERE src.lastmod IS NOT NULL AND {key} IS NOT NULL AND "
            )),
            range: sql(format!("{select} WHERE src.id BETWEEN ? AND ? ORDER BY src.id")),
            chunk: sql(format!(
                "{select} WHERE src.id BETWEEN ? AND ? ORDER BY src.id LIMIT ?"
            )),
            unplaced: format!(
                "SELECT COALESCE({}, 'NULL') AS id_text, {} AS loc FROM {} AS src \
                 WHERE src.id IS NULL OR src.id > 9223372036854775807",
                DB::text("src.id"),
                DB::text("src.loc"),
                DB::quote(source)
            ),
            recent: sql(format!(
                "{select} WHERE src.lastmod IS NOT NULL AND {key} IS NOT NULL \
                 ORDER BY {key} DESC, src.id DESC LIMIT ?"
            )),
            recent_in: sql(format!(
                "{select} WHERE src.id BETWEEN ? AND ? AND src.lastmod IS NOT NULL \
                 AND {key} IS NOT NULL ORDER BY {key} DESC, src.id DESC LIMIT ?"
            )),
            recent_by_column: sql(format!(
                "{select} WHERE src.lastmod IS NOT NULL ORDER BY src.lastmod DESC, src.id DESC LIMIT ?"
            )),
            modified: sql(format!(
                "SELECT {columns}, {key} AS lastmod_key FROM {} AS src WHERE src.lastmod IS NOT NULL AND {key} IS NOT NULL \
                 AND ({key} > ? OR ({key} = ? AND src.id > ?)) AND {key} <= ? \
                 ORDER BY {key}, src.id LIMIT ?",
                DB::quote(source)
            )),
            alternates: sql(format!(
                "SELECT {} AS entry_id, {} AS hreflang, {} AS href FROM {ALTERNATES_TABLE} \
                 WHERE {in_range} ORDER BY entry_id, {}, {}",
                DB::int("entry_id"),
                DB::text("hreflang"),
                DB::text("href"),
                DB::sort_key("hreflang"),
                DB::sort_key("href"),
            )),
            images: sql(format!(
                "SELECT {} AS entry_id, {} AS loc FROM {IMAGES_TABLE} \
                 WHERE {in_range} ORDER BY entry_id, id",
                DB::int("entry_id"),
                DB::text("loc"),
            )),
            videos: sql(format!(
                "SELECT {} AS entry_id, {} AS thumbnail_loc, {} AS title, {} AS description, \
                 {} AS content_loc, {} AS player_loc, {} AS duration, {} AS publication_date \
                 FROM {VIDEOS_TABLE} WHERE {in_range} ORDER BY entry_id, id",
                DB::int("entry_id"),
                DB::text("thumbnail_loc"),
                DB::text("title"),
                DB::text("description"),
                DB::text("content_loc"),
                DB::text("player_loc"),
                DB::int("duration"),
                DB::time("publication_date"),
            )),
            articles: sql(articles::<DB>(source, true)),
            articles_plain: sql(articles::<DB>(source, false)),
            article_columns: format!("SELECT * FROM {} WHERE 1 = 0", DB::quote(source)),
            has_article_columns: std::sync::OnceLock::new(),
            llms_columns: std::sync::OnceLock::new(),
            presence: sql(format!(
                "SELECT {} AS xhtml, {} AS image, {} AS video",
                DB::int(&format!(
                    "CASE WHEN EXISTS (SELECT 1 FROM {ALTERNATES_TABLE} WHERE {in_range}) \
                     THEN 1 ELSE 0 END"
                )),
                DB::int(&format!(
                    "CASE WHEN EXISTS (SELECT 1 FROM {IMAGES_TABLE} WHERE {in_range}) \
                     THEN 1 ELSE 0 END"
                )),
                DB::int(&format!(
                    "CASE WHEN EXISTS (SELECT 1 FROM {VIDEOS_TABLE} WHERE {in_range}) \
                     THEN 1 ELSE 0 END"
                )),
            )),
        }
    }
}

/// The articles of a news source with ids in a range, published at or after a time; with or
/// without the optional `language` and `publication_name` columns.
fn articles<DB: Dialect>(source: &str, optional_columns: bool) -> String {
    let optional = if optional_columns {
        format!(
            ", {} AS language, {} AS publication_name",
            DB::text("src.language"),
            DB::text("src.publication_name")
        )
    } else {
        String::new()
    };
    format!(
        "SELECT {} AS id, {} AS loc, {} AS publication_date, {} AS title{optional} \
         FROM {} AS src WHERE src.id BETWEEN ? AND ? AND {published} BETWEEN ? AND ? \
         ORDER BY src.id",
        DB::int("src.id"),
        DB::text("src.loc"),
        DB::time("src.publication_date"),
        DB::text("src.title"),
        DB::quote(source),
        published = DB::instant_key("src.publication_date"),
    )
}
