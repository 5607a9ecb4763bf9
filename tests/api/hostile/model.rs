//! What each database holds of a generated case: the model of its columns (`store`), loading
//! the case, and checking the database holds what the model says.

use std::collections::HashSet;

use chrono::{DateTime, Datelike, NaiveDateTime, Utc};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::row_strategies::{AltRow, Case, GenLastmod, ImgRow};
use crate::helpers::{Backend, TestDb, TestPool};

/// A lastmod as bound for one backend's column.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Bound {
    Null,
    /// PostgreSQL's TIMESTAMPTZ.
    Instant(DateTime<Utc>),
    /// MariaDB's DATETIME(6), bound as a DATETIME (a DateTime<Utc> would go as a TIMESTAMP).
    Naive(NaiveDateTime),
    /// SQLite's text, or a zero date MariaDB's DATETIME takes from text.
    Text(String),
}

/// A row as one backend holds it.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) id: i64,
    pub(super) loc: String,
    pub(super) lastmod: Bound,
    /// The instant the held lastmod stands for: `None` for NULL and for what is no time.
    pub(super) meant: Option<DateTime<Utc>>,
    pub(super) changefreq: Option<String>,
    /// The value the column holds (PostgreSQL's REAL widened to a double).
    pub(super) priority: Option<f64>,
}

/// A case as one backend holds it.
#[derive(Debug, Clone)]
pub(super) struct StoredCase {
    pub(super) backend: Backend,
    pub(super) rows: Vec<Stored>,
    /// What the test inserts; MariaDB may keep fewer (see [`store`]).
    pub(super) alternates: Vec<AltRow>,
    pub(super) images: Vec<ImgRow>,
}

/// Maps a generated case to what `backend` can store; the oracle is applied to these values.
///
/// | value | PostgreSQL | MariaDB | SQLite |
/// | --- | --- | --- | --- |
/// | id | any | any (0 too: the loading session sets NO_AUTO_VALUE_ON_ZERO) | any |
/// | NUL in any text | removed (TEXT cannot hold it) | kept | kept |
/// | lastmod instant | kept, any year (TIMESTAMPTZ: 4713 BC on) | kept for years 0 to 9999 (DATETIME(6), to the microsecond), else NULL | text in one of [`TextForm`], meaning the instant it writes (none when that needs a year of other than four digits) |
/// | lastmod junk | NULL | a zero date (month or day 0) kept as such, which is no time; other junk NULL | the text as it is, which is no time |
/// | priority | rounded to single precision (REAL; past its range ±inf), NaN and ±inf kept | NaN and ±inf become NULL (DOUBLE cannot hold them) | NaN becomes NULL (SQLite stores NULL for it), ±inf kept |
/// | alternates | one per (entry_id, hreflang), byte for byte | hreflang over 255 characters dropped (VARCHAR(255)); one per (entry_id, hreflang) as the column's case- and accent-insensitive collation compares: the server keeps the first (INSERT IGNORE), and the test reads back which | as PostgreSQL |
///
/// Then ids and locs are made unique, first row wins (the table's keys: bytes for loc on every
/// backend: PostgreSQL's deterministic collation, MariaDB's hash of the bytes, SQLite's BINARY).
pub(super) fn store(backend: Backend, case: &Case) -> StoredCase {
    let text = |s: &str| match backend {
        Backend::Postgres => s.replace('\0', ""),
        Backend::MariaDb | Backend::Sqlite => s.to_string(),
    };
    let (mut ids, mut locs) = (HashSet::new(), HashSet::new());
    let rows = case
        .rows
        .iter()
        .filter_map(|row| {
            let (lastmod, meant) = match (backend, &row.lastmod) {
                (_, GenLastmod::Null) => (Bound::Null, None),
                (Backend::Postgres, GenLastmod::At(at, _)) => (Bound::Instant(*at), Some(*at)),
                (Backend::Postgres, GenLastmod::Junk(..)) => (Bound::Null, None),
                (Backend::MariaDb, GenLastmod::At(at, _)) if (0..=9999).contains(&at.year()) => {
                    (Bound::Naive(at.naive_utc()), Some(*at))
                }
                (Backend::MariaDb, GenLastmod::At(..)) => (Bound::Null, None),
                (Backend::MariaDb, GenLastmod::Junk(zero_date, true)) => {
                    (Bound::Text(zero_date.clone()), None)
                }
                (Backend::MariaDb, GenLastmod::Junk(_, false)) => (Bound::Null, None),
                (Backend::Sqlite, GenLastmod::At(at, form)) => {
                    let (text, meant) = form.write(*at);
                    (Bound::Text(text), meant)
                }
                (Backend::Sqlite, GenLastmod::Junk(junk, _)) => (Bound::Text(junk.clone()), None),
            };
            let priority = match backend {
                Backend::Postgres => row.priority.map(|p| f64::from(p as f32)),
                Backend::MariaDb => row.priority.filter(|p| p.is_finite()),
                Backend::Sqlite => row.priority.filter(|p| !p.is_nan()),
            };
            let loc = text(&row.loc);
            (ids.insert(row.id) && locs.insert(loc.clone())).then(|| Stored {
                id: row.id,
                loc,
                lastmod,
                meant,
                changefreq: row.changefreq.as_deref().map(text),
                priority,
            })
        })
        .collect();
    let mut keys = HashSet::new();
    let alternates = case
        .alternates
        .iter()
        .map(|(id, hreflang, href)| (*id, text(hreflang), text(href)))
        .filter(|(id, hreflang, _)| match backend {
            Backend::MariaDb => hreflang.chars().count() <= 255,
            Backend::Postgres | Backend::Sqlite => keys.insert((*id, hreflang.clone())),
        })
        .collect();
    let images = case
        .images
        .iter()
        .map(|(id, loc)| (*id, text(loc)))
        .collect();
    StoredCase {
        backend,
        rows,
        alternates,
        images,
    }
}

/// Replaces the tables' rows with the case's, in one transaction: a sweep the change
/// notifications start meanwhile sees all of it or none.
pub(super) async fn load(db: &TestDb, case: &StoredCase) {
    const CLEAR: &str =
        "DELETE FROM sitemap_entries; DELETE FROM sitemap_alternates; DELETE FROM sitemap_images";
    const ENTRIES: &str = "INSERT INTO sitemap_entries (id, loc, changefreq, lastmod, priority) ";
    const IMAGES: &str = "INSERT INTO sitemap_images (entry_id, loc) ";
    macro_rules! fill {
        ($pool:expr, $Db:ty, $session:expr, $alternates:expr, |$b:ident, $row:ident| $bind:block) => {
            async {
                let mut tx = $pool.begin().await?;
                sqlx::raw_sql($session).execute(&mut *tx).await?;
                sqlx::raw_sql(CLEAR).execute(&mut *tx).await?;
                for chunk in case.rows.chunks(500) {
                    let mut q = sqlx::QueryBuilder::<$Db>::new(ENTRIES);
                    q.push_values(chunk, |mut $b, $row| {
                        $b.push_bind($row.id)
                            .push_bind($row.loc.clone())
                            .push_bind($row.changefreq.clone());
                        $bind
                    });
                    q.build().execute(&mut *tx).await?;
                }
                for chunk in case.alternates.chunks(500) {
                    let mut q = sqlx::QueryBuilder::<$Db>::new($alternates);
                    q.push_values(chunk, |mut b, (id, hreflang, href)| {
                        b.push_bind(*id)
                            .push_bind(hreflang.clone())
                            .push_bind(href.clone());
                    });
                    q.build().execute(&mut *tx).await?;
                }
                for chunk in case.images.chunks(500) {
                    let mut q = sqlx::QueryBuilder::<$Db>::new(IMAGES);
                    q.push_values(chunk, |mut b, (id, loc)| {
                        b.push_bind(*id).push_bind(loc.clone());
                    });
                    q.build().execute(&mut *tx).await?;
                }
                tx.commit().await
            }
            .await
        };
    }
    let alternates = "INSERT INTO sitemap_alternates (entry_id, hreflang, href) ";
    let loaded = match &db.pool {
        TestPool::Postgres(pool) => {
            fill!(pool, sqlx::Postgres, "SELECT 1", alternates, |b, row| {
                b.push_bind(match &row.lastmod {
                    Bound::Null => None,
                    Bound::Instant(at) => Some(*at),
                    other => unreachable!("{other:?} on PostgreSQL"),
                })
                .push_bind(row.priority.map(|p| p as f32));
            })
        }
        // Zero dates are refused under NO_ZERO_DATE/NO_ZERO_IN_DATE (MySQL's default); this
        // session allows them, as CMS installations commonly do. An id of 0 would make
        // AUTO_INCREMENT assign the next id, unless NO_AUTO_VALUE_ON_ZERO (as mysqldump sets
        // it). Alternates whose hreflang equals another's in the column's collation are left
        // to the server: INSERT IGNORE.
        TestPool::MariaDb(pool) => fill!(
            pool,
            sqlx::MySql,
            "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO'",
            "INSERT IGNORE INTO sitemap_alternates (entry_id, hreflang, href) ",
            |b, row| {
                match &row.lastmod {
                    Bound::Null => b.push_bind(None::<NaiveDateTime>),
                    Bound::Naive(at) => b.push_bind(Some(*at)),
                    Bound::Text(zero_date) => b.push_bind(Some(zero_date.clone())),
                    other => unreachable!("{other:?} on MariaDB"),
                };
                b.push_bind(row.priority);
            }
        ),
        TestPool::Sqlite(pool) => fill!(pool, sqlx::Sqlite, "SELECT 1", alternates, |b, row| {
            b.push_bind(match &row.lastmod {
                Bound::Null => None,
                Bound::Text(text) => Some(text.clone()),
                other => unreachable!("{other:?} on SQLite"),
            })
            .push_bind(row.priority);
        }),
    };
    loaded.expect("load the case");
}

/// What the database holds, read back without the service: entries as
/// `(id, loc, lastmod as text, changefreq, priority)`, alternates and images in the order the
/// service reads them (its own ORDER BY: alternates by hreflang, on MariaDB byte for byte).
pub(super) struct HeldRows {
    pub(super) entries: Vec<HeldEntry>,
    pub(super) alternates: Vec<AltRow>,
    pub(super) images: Vec<ImgRow>,
}

/// `(id, loc, lastmod, changefreq, priority)` as read back; lastmod as text but on PostgreSQL.
type HeldEntry<Lastmod = Option<String>> = (i64, String, Lastmod, Option<String>, Option<f64>);

async fn held(db: &TestDb) -> HeldRows {
    let (entries, alternates, images) = match &db.pool {
        TestPool::Postgres(pool) => {
            let entries: Vec<HeldEntry<Option<DateTime<Utc>>>> =
                sqlx::query_as(
                    "SELECT id, loc, lastmod, changefreq, priority::float8 \
                     FROM sitemap_entries ORDER BY id",
                )
                .fetch_all(pool)
                .await
                .unwrap();
            let entries = entries
                .into_iter()
                .map(|(id, loc, at, c, p)| (id, loc, at.map(pg_text), c, p))
                .collect();
            (
                entries,
                sqlx::query_as(
                    "SELECT entry_id::int8 AS entry_id, hreflang::text AS hreflang, \
                     href::text AS href FROM sitemap_alternates ORDER BY entry_id, hreflang, href",
                )
                .fetch_all(pool)
                .await
                .unwrap(),
                sqlx::query_as(
                    "SELECT entry_id::int8 AS entry_id, loc::text AS loc \
                     FROM sitemap_images ORDER BY entry_id, id",
                )
                .fetch_all(pool)
                .await
                .unwrap(),
            )
        }
        TestPool::MariaDb(pool) => (
            sqlx::query_as(
                "SELECT id, CONVERT(loc USING utf8mb4), CAST(lastmod AS CHAR), changefreq, \
                 priority FROM sitemap_entries ORDER BY id",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            sqlx::query_as(
                "SELECT CAST(entry_id AS SIGNED) AS entry_id, CAST(hreflang AS CHAR) AS hreflang, \
                 CAST(href AS CHAR) AS href FROM sitemap_alternates ORDER BY entry_id, CAST(hreflang AS BINARY), CAST(href AS BINARY)",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            sqlx::query_as(
                "SELECT CAST(entry_id AS SIGNED) AS entry_id, CAST(loc AS CHAR) AS loc \
                 FROM sitemap_images ORDER BY entry_id, id",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
        ),
        TestPool::Sqlite(pool) => (
            sqlx::query_as(
                "SELECT id, loc, lastmod, changefreq, priority FROM sitemap_entries ORDER BY id",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            sqlx::query_as(
                "SELECT entry_id, CAST(hreflang AS TEXT) AS hreflang, CAST(href AS TEXT) AS href \
                 FROM sitemap_alternates ORDER BY entry_id, hreflang, href",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            sqlx::query_as(
                "SELECT entry_id, CAST(loc AS TEXT) AS loc FROM sitemap_images ORDER BY entry_id, id",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
        ),
    };
    HeldRows {
        entries,
        alternates,
        images,
    }
}

fn pg_text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// A lastmod as [`held`] reads it back.
fn held_text(bound: &Bound) -> Option<String> {
    match bound {
        Bound::Null => None,
        Bound::Instant(at) => Some(pg_text(*at)),
        Bound::Naive(at) => Some(at.format("%Y-%m-%d %H:%M:%S%.6f").to_string()),
        Bound::Text(text) => Some(text.clone()),
    }
}

fn sorted<T: Ord + Clone>(rows: &[T]) -> Vec<T> {
    let mut rows = rows.to_vec();
    rows.sort();
    rows
}

/// Checks that the database holds what [`store`] says: otherwise the test's model of the
/// backend is wrong, not the service. Returns what it holds.
pub(super) async fn check_model(db: &TestDb, case: &StoredCase) -> Result<HeldRows, TestCaseError> {
    let held = held(db).await;
    let mut model: Vec<&Stored> = case.rows.iter().collect();
    model.sort_by_key(|r| r.id);
    prop_assert_eq!(held.entries.len(), model.len(), "entries held");
    for (held, row) in held.entries.iter().zip(model) {
        let mut lastmod = held_text(&row.lastmod);
        if case.backend == Backend::MariaDb {
            // MariaDB writes a zero date back with its microseconds.
            if let (Bound::Text(_), Some(text)) = (&row.lastmod, &mut lastmod) {
                text.push_str(".000000");
            }
        }
        let same_priority = match (held.4, row.priority) {
            (Some(a), Some(b)) => a == b || (a.is_nan() && b.is_nan()),
            (a, b) => a.is_none() && b.is_none(),
        };
        prop_assert!(
            held.0 == row.id
                && held.1 == row.loc
                && held.2 == lastmod
                && held.3 == row.changefreq
                && same_priority,
            "{:?} holds {:?} for {:?}",
            case.backend,
            held,
            row
        );
    }
    // Images keep their order of insertion within an entry.
    let mut images = case.images.clone();
    images.sort_by_key(|(id, _)| *id);
    prop_assert_eq!(&held.images, &images, "images held");
    let kept = sorted(&held.alternates);
    match case.backend {
        Backend::Postgres | Backend::Sqlite => {
            prop_assert_eq!(&kept, &sorted(&case.alternates), "alternates held")
        }
        Backend::MariaDb => {
            let mut inserted = sorted(&case.alternates);
            for row in &kept {
                let Some(at) = inserted.iter().position(|r| r == row) else {
                    return Err(TestCaseError::fail(format!(
                        "MariaDB holds an alternate that was not inserted: {row:?}"
                    )));
                };
                inserted.remove(at);
            }
            let entries = |rows: &[AltRow]| rows.iter().map(|r| r.0).collect::<HashSet<_>>();
            prop_assert_eq!(
                entries(&kept),
                entries(&case.alternates),
                "every entry keeps an alternate"
            );
        }
    }
    Ok(held)
}
