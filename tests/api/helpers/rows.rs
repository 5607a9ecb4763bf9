//! What tests put in the tables and read back: entries, images, alternates, videos, news
//! articles, and queries of the test database.

use chrono::{DateTime, Utc};

use super::databases::{each_pool, Backend, TestDb, TestPool};

impl TestDb {
    /// Inserts `(id, loc)` rows into sitemap_entries.
    pub async fn insert(&self, rows: &[(i64, &str)]) {
        let rows: Vec<Row> = rows.iter().map(|(id, loc)| Row::new(*id, loc)).collect();
        self.insert_rows(&rows).await;
    }

    /// Inserts entries with every column, values bound (so any text, on any backend).
    pub async fn insert_rows(&self, rows: &[Row]) {
        for chunk in rows.chunks(1000) {
            each_pool!(self, |pool, Db| {
                let mut q = sqlx::QueryBuilder::<Db>::new(
                    "INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority) ",
                );
                q.push_values(chunk, |mut b, row| {
                    b.push_bind(row.id)
                        .push_bind(row.loc.clone())
                        .push_bind(row.lastmod.map(|at| at.naive_utc()))
                        .push_bind(row.changefreq.clone())
                        .push_bind(row.priority);
                });
                q.build().execute(pool).await.map(|_| ())
            })
            .expect("insert entries");
        }
    }

    /// Inserts `(entry_id, loc)` rows into sitemap_images.
    pub async fn insert_images(&self, rows: &[(i64, &str)]) {
        for chunk in rows.chunks(1000) {
            each_pool!(self, |pool, Db| {
                let mut q =
                    sqlx::QueryBuilder::<Db>::new("INSERT INTO sitemap_images (entry_id, loc) ");
                q.push_values(chunk, |mut b, (id, loc)| {
                    b.push_bind(*id).push_bind(loc.to_string());
                });
                q.build().execute(pool).await.map(|_| ())
            })
            .expect("insert images");
        }
    }

    /// Inserts `(entry_id, hreflang, href)` rows into sitemap_alternates.
    pub async fn insert_alternates(&self, rows: &[(i64, &str, &str)]) {
        each_pool!(self, |pool, Db| {
            let mut q = sqlx::QueryBuilder::<Db>::new(
                "INSERT INTO sitemap_alternates (entry_id, hreflang, href) ",
            );
            q.push_values(rows, |mut b, (id, hreflang, href)| {
                b.push_bind(*id)
                    .push_bind(hreflang.to_string())
                    .push_bind(href.to_string());
            });
            q.build().execute(pool).await.map(|_| ())
        })
        .expect("insert alternates");
    }

    /// Inserts rows into sitemap_videos.
    pub async fn insert_videos(&self, rows: &[VideoRow]) {
        each_pool!(self, |pool, Db| {
            let mut q = sqlx::QueryBuilder::<Db>::new(
                "INSERT INTO sitemap_videos (entry_id, thumbnail_loc, title, description, \
                 content_loc, player_loc, duration, publication_date) ",
            );
            q.push_values(rows, |mut b, v| {
                b.push_bind(v.entry_id)
                    .push_bind(v.thumbnail_loc.map(str::to_string))
                    .push_bind(v.title.map(str::to_string))
                    .push_bind(v.description.map(str::to_string))
                    .push_bind(v.content_loc.map(str::to_string))
                    .push_bind(v.player_loc.map(str::to_string))
                    .push_bind(v.duration)
                    .push_bind(v.publication_date.map(|at| at.naive_utc()));
            });
            q.build().execute(pool).await.map(|_| ())
        })
        .expect("insert videos");
    }

    /// Creates `table` as a news group's source: `id`, `loc`, `publication_date`, `title` and
    /// the optional `language` and `publication_name`.
    pub async fn create_news_table(&self, table: &str) {
        let time = match self.backend {
            Backend::Postgres => "timestamptz",
            Backend::MariaDb => "datetime(6)",
            Backend::Sqlite => "text",
        };
        self.exec(&format!(
            "CREATE TABLE {table} (id bigint PRIMARY KEY, loc text, publication_date {time}, \
             title text, language text, publication_name text)"
        ))
        .await;
    }

    /// Inserts `(id, loc, publication_date, title, language)` articles into `table`.
    pub async fn insert_articles(&self, table: &str, rows: &[ArticleRow<'_>]) {
        each_pool!(self, |pool, Db| {
            let mut q = sqlx::QueryBuilder::<Db>::new(format!(
                "INSERT INTO {table} (id, loc, publication_date, title, language) "
            ));
            q.push_values(rows, |mut b, (id, loc, at, title, language)| {
                b.push_bind(*id)
                    .push_bind(loc.to_string())
                    .push_bind(at.naive_utc())
                    .push_bind(title.to_string())
                    .push_bind(language.map(str::to_string));
            });
            q.build().execute(pool).await.map(|_| ())
        })
        .expect("insert articles");
    }

    /// Sets the lastmod of one entry.
    pub async fn set_lastmod(&self, id: i64, lastmod: DateTime<Utc>) {
        each_pool!(self, |pool, Db| {
            let mut q = sqlx::QueryBuilder::<Db>::new("UPDATE sitemap_entries SET lastmod = ");
            q.push_bind(lastmod.naive_utc())
                .push(" WHERE id = ")
                .push_bind(id);
            q.build().execute(pool).await.map(|_| ())
        })
        .expect("set lastmod");
    }

    /// One integer the query returns (a count, an id).
    pub async fn scalar(&self, sql: &str) -> i64 {
        each_pool!(self, |pool, _Db| sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(pool)
            .await)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// The first column, as text, of every row the query returns.
    pub async fn strings(&self, sql: &str) -> Vec<String> {
        let values = match &self.pool {
            TestPool::Postgres(pool) => sqlx::query_scalar(sql).fetch_all(pool).await,
            TestPool::Sqlite(pool) => sqlx::query_scalar(sql).fetch_all(pool).await,
            // Binary-collated text (our `loc`) only decodes as bytes.
            TestPool::MariaDb(pool) => sqlx::query_scalar::<_, Vec<u8>>(sql)
                .fetch_all(pool)
                .await
                .map(|all| {
                    all.into_iter()
                        .map(|bytes| String::from_utf8(bytes).unwrap())
                        .collect()
                }),
        };
        values.unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// `(id, loc, lastmod as YYYY-MM-DDTHH:MM:SS in UTC, changefreq, priority)` of every entry
    /// of sitemap_entries, in id order.
    pub async fn entries(&self) -> Vec<Entry> {
        let (lastmod, loc, priority) = match self.backend {
            Backend::Postgres => (
                "to_char(lastmod AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')",
                "loc",
                "priority::float8",
            ),
            Backend::MariaDb => (
                "DATE_FORMAT(lastmod, '%Y-%m-%dT%H:%i:%s')",
                "CAST(loc AS CHAR)",
                "priority",
            ),
            Backend::Sqlite => ("strftime('%Y-%m-%dT%H:%M:%S', lastmod)", "loc", "priority"),
        };
        let sql = format!(
            "SELECT id, {loc} AS loc, {lastmod} AS lastmod, changefreq, {priority} AS priority \
             FROM sitemap_entries ORDER BY id"
        );
        each_pool!(self, |pool, _Db| {
            sqlx::query_as::<_, (i64, String, Option<String>, Option<String>, Option<f64>)>(&sql)
                .fetch_all(pool)
                .await
        })
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        // As single precision: what PostgreSQL's `real` keeps.
        .map(|(id, loc, lastmod, changefreq, priority)| {
            (id, loc, lastmod, changefreq, priority.map(|p| p as f32))
        })
        .collect()
    }
}

/// An entry as [`TestDb::entries`] reads it back.
pub type Entry = (i64, String, Option<String>, Option<String>, Option<f32>);

/// A row of sitemap_entries to insert.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub id: i64,
    pub loc: String,
    pub lastmod: Option<DateTime<Utc>>,
    pub changefreq: Option<String>,
    pub priority: Option<f64>,
}

impl Row {
    pub fn new(id: i64, loc: &str) -> Self {
        Self {
            id,
            loc: loc.to_string(),
            ..Self::default()
        }
    }

    pub fn lastmod(mut self, at: &str) -> Self {
        self.lastmod = Some(utc(at));
        self
    }

    pub fn changefreq(mut self, value: &str) -> Self {
        self.changefreq = Some(value.to_string());
        self
    }

    pub fn priority(mut self, value: f64) -> Self {
        self.priority = Some(value);
        self
    }
}

/// `(id, loc, publication_date, title, language)` of a news source's row.
pub type ArticleRow<'a> = (i64, &'a str, DateTime<Utc>, &'a str, Option<&'a str>);

/// One sitemap_videos row; fields left `None` are NULL.
#[derive(Debug, Clone, Copy, Default)]
pub struct VideoRow {
    pub entry_id: i64,
    pub thumbnail_loc: Option<&'static str>,
    pub title: Option<&'static str>,
    pub description: Option<&'static str>,
    pub content_loc: Option<&'static str>,
    pub player_loc: Option<&'static str>,
    pub duration: Option<i32>,
    pub publication_date: Option<DateTime<Utc>>,
}

impl VideoRow {
    /// A video with every required field.
    pub fn complete(entry_id: i64) -> Self {
        Self {
            entry_id,
            thumbnail_loc: Some("https://cdn.example.net/thumbs/1.jpg"),
            title: Some("Grilling steaks for summer"),
            description: Some("Alkis shows you how to get perfectly done steaks & more."),
            content_loc: Some("https://cdn.example.net/video/1.mp4"),
            player_loc: None,
            duration: Some(600),
            publication_date: Some(utc("2026-11-01 10:00:00")),
        }
    }
}

/// `2024-05-01 12:00:00` (UTC) as a timestamp.
pub fn utc(at: &str) -> DateTime<Utc> {
    chrono::NaiveDateTime::parse_from_str(at, "%Y-%m-%d %H:%M:%S")
        .unwrap_or_else(|e| panic!("{at}: {e}"))
        .and_utc()
}
