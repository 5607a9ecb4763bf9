//! Test harness: a database of its own per test, the real server on port 0, a real HTTP client.

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use sitemapd::config::{Config, Defaults, Vars};
use sitemapd::http::App;
use sitemapd::store::Change;
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

/// Where tests create their databases; the test script exports it.
pub fn admin_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A PostgreSQL database made for one test.
pub struct TestDb {
    pub url: String,
    pub pool: PgPool,
}

impl TestDb {
    pub async fn new() -> Self {
        let admin = admin_url();
        let name = format!("sitemapd_test_{}", uuid_like());
        let admin_pool = PgPoolOptions::new().max_connections(1).connect(&admin).await.expect(
            "PostgreSQL is not reachable at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres); \
             run the tests with ./scripts/test.sh, which prepares it",
        );
        sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&admin_pool)
            .await
            .expect("create test database");
        admin_pool.close().await;
        let url = replace_database(&admin, &name);
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(&url)
            .await
            .expect("connect test database");
        Self { url, pool }
    }

    /// Runs SQL statements (setup, changes) on the test database.
    pub async fn exec(&self, sql: &str) {
        sqlx::raw_sql(sql)
            .execute(&self.pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Inserts `(loc, lastmod, changefreq, priority)` rows into sitemap_entries with given ids.
    pub async fn insert(&self, rows: &[(i64, &str)]) {
        for chunk in rows.chunks(1000) {
            let mut q = sqlx::QueryBuilder::new("INSERT INTO sitemap_entries (id, loc) ");
            q.push_values(chunk, |mut b, (id, loc)| {
                b.push_bind(*id).push_bind(*loc);
            });
            q.build().execute(&self.pool).await.expect("insert entries");
        }
    }
}

fn replace_database(url: &str, name: &str) -> String {
    let mut u = url::Url::parse(url).expect("TEST_DATABASE_URL");
    u.set_path(&format!("/{name}"));
    u.to_string()
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The real server, listening on a random port.
pub struct TestApp {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    pub client: reqwest::Client,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub const BASE: &str = "https://www.example.com/";

/// Starts a server on `database_url` with the given variables (SITEMAP_BASE_URL defaults to BASE).
pub async fn spawn_app(database_url: &str, vars: &[(&str, &str)]) -> TestApp {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    spawn_app_on(listener, database_url, vars).await
}

/// [`spawn_app`] on a listener bound already, for a base URL that names its own address.
pub async fn spawn_app_on(
    listener: tokio::net::TcpListener,
    database_url: &str,
    vars: &[(&str, &str)],
) -> TestApp {
    let mut pairs: Vec<(&str, &str)> = vec![
        ("SITEMAP_BASE_URL", BASE),
        ("DATABASE_URL", database_url),
        ("SITEMAP_REFRESH_SECS", "3600"),
    ];
    pairs.extend_from_slice(vars);
    let config =
        Config::from_vars(&Vars::from_pairs(pairs), &Defaults::default()).expect("test config");
    let app = sitemapd::app::build(&config).await.expect("build app");
    let addr = listener.local_addr().unwrap();
    sitemapd::app::keep_current(&app, config.refresh);
    let server_app = app.clone();
    let server = tokio::spawn(async move {
        let _ = sitemapd::http::serve(
            listener,
            server_app,
            Default::default(),
            std::future::pending(),
        )
        .await;
    });
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    TestApp {
        addr,
        app,
        client,
        server,
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.expect("GET")
    }

    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.expect("GET")
    }

    /// Re-measures everything now, as the background sweep would after a change.
    pub async fn sweep(&self) {
        self.app
            .site()
            .sweep(Change::Everything)
            .await
            .expect("sweep");
    }

    /// Page numbers the index lists, in order.
    pub async fn index_pages(&self) -> Vec<String> {
        let body = self.get("/sitemap_index.xml").await.text().await.unwrap();
        locs(body.as_bytes())
            .into_iter()
            .map(|l| {
                l.strip_prefix(BASE)
                    .expect("index loc under base")
                    .to_string()
            })
            .collect()
    }

    /// Every loc of every page, in order, checking each page against the schema on the way.
    pub async fn all_locs(&self) -> Vec<String> {
        let mut all = Vec::new();
        for file in self.index_pages().await {
            let gz = self.get(&format!("/{file}")).await.bytes().await.unwrap();
            let xml = gunzip(&gz);
            assert_valid(&xml, Schema::Urlset);
            all.extend(locs(&xml));
        }
        all
    }

    pub async fn metric(&self, name: &str) -> f64 {
        let text = self.get("/metrics").await.text().await.unwrap();
        text.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

pub fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .expect("a complete gzip file");
    out
}

/// Text of every `<loc>`, unescaped, read with a real XML parser.
pub fn locs(xml: &[u8]) -> Vec<String> {
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut out = Vec::new();
    let mut in_loc = false;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf).expect("well-formed XML") {
            quick_xml::events::Event::Start(e) if e.local_name().as_ref() == b"loc" => {
                in_loc = true
            }
            quick_xml::events::Event::End(e) if e.local_name().as_ref() == b"loc" => in_loc = false,
            quick_xml::events::Event::Text(t) if in_loc => {
                out.push(t.unescape().expect("valid entities").into_owned())
            }
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

pub enum Schema {
    Urlset,
    Index,
}

/// Validates with xmllint against the official sitemaps.org schemas and, for urlsets, the
/// extension schemas (copies in tests/schemas).
pub fn assert_valid(xml: &[u8], schema: Schema) {
    let xsd = match schema {
        Schema::Urlset => "sitemap-extensions.xsd",
        Schema::Index => "siteindex.xsd",
    };
    if let Some(errors) = schema_errors(xml, xsd) {
        panic!(
            "schema validation failed: {errors}\n{}",
            String::from_utf8_lossy(&xml[..xml.len().min(2000)])
        );
    }
}

/// xmllint's complaint about `xml` against `xsd` (a file in tests/schemas), if any.
pub fn schema_errors(xml: &[u8], xsd: &str) -> Option<String> {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/schemas")
        .join(xsd);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), xml).unwrap();
    let out = Command::new("xmllint")
        .args(["--noout", "--nonet", "--schema"])
        .arg(&xsd)
        .arg(file.path())
        .output()
        .expect("xmllint (Debian package libxml2-utils) must be installed; ./scripts/test.sh installs it");
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

pub fn header<'a>(resp: &'a reqwest::Response, name: &str) -> &'a str {
    resp.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}
