//! `sitemapd demo`: an embedded SQLite database filled with sample entries, zero configuration.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::app::StartError;
use crate::config::{Config, Defaults};
use crate::store::{Store, StoreError};

/// Entries in the demo: enough for three files at the default page size.
pub const DEMO_ENTRIES: i64 = 120_000;

/// What the demo assumes when the user sets nothing.
pub fn defaults() -> Defaults {
    Defaults {
        base_url: Some("http://<BIND_ADDR>".into()),
        database_url: Some("sqlite://sitemapd-demo.db".into()),
    }
}

/// The demo's settings over the user's: the status page opens too, and crawlers are not
/// verified.
///
/// The status page: on `ADMIN_BIND_ADDR` when it is set, else on the port after `BIND_ADDR`'s
/// (none when `BIND_ADDR` asks for any port, or the last one). It shows what the public files
/// leave out, so a `BIND_ADDR` on every interface (`0.0.0.0`, `::`) still gets it on localhost
/// only.
///
/// Verification: off unless `CRAWLER_VERIFY` is set. Nothing a demo on localhost is asked comes
/// from a crawler's published addresses, so fetching their lists (eleven URLs, which an offline
/// machine cannot reach) would only print warnings before the addresses.
pub fn with_demo_settings(mut config: Config) -> Config {
    if config.admin_addr.is_none() {
        config.admin_addr = port_after(config.bind_addr);
    }
    if std::env::var_os("CRAWLER_VERIFY").is_none() {
        config.verify.on = false;
    }
    config
}

fn port_after(addr: SocketAddr) -> Option<SocketAddr> {
    let port = addr.port().checked_add(1).filter(|_| addr.port() != 0)?;
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    Some(SocketAddr::new(ip, port))
}

/// Where to look, on stdout: the sitemap index and, when it is open, the status page.
pub fn addresses(config: &Config) -> String {
    let index = config.first_site().index_url();
    match config.admin_addr {
        Some(admin) => format!("sitemaps at {index}, status page at http://{admin}/"),
        None => format!("sitemaps at {index}"),
    }
}

/// Creates and fills the demo database unless it already holds entries.
pub async fn prepare(config: &Config) -> Result<(), StartError> {
    let store = Store::connect(&config.database()).await?;
    store.migrate().await?;
    let Some(sqlite) = store.embedded() else {
        tracing::info!("demo on a non-SQLite database: using its entries as they are");
        return Ok(());
    };
    let pool = sqlite.pool();
    let now = chrono::Utc::now().timestamp();
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM sitemap_entries")
        .fetch_one(pool)
        .await
        .map_err(StoreError::from)?;
    if count > 0 {
        return Ok(());
    }
    tracing::info!(entries = DEMO_ENTRIES, "filling the demo database");
    let mut tx = pool.begin().await.map_err(StoreError::from)?;
    for chunk_start in (1..=DEMO_ENTRIES).step_by(1000) {
        let ids = chunk_start..(chunk_start + 1000).min(DEMO_ENTRIES + 1);
        let mut query = sqlx::QueryBuilder::new(
            "INSERT INTO sitemap_entries (id, loc, lastmod, changefreq, priority) ",
        );
        query.push_values(ids, |mut row, id| {
            let entry = sample_entry(id, now);
            row.push_bind(id)
                .push_bind(entry.0)
                .push_bind(entry.1)
                .push_bind(entry.2)
                .push_bind(entry.3);
        });
        query
            .build()
            .execute(&mut *tx)
            .await
            .map_err(StoreError::from)?;
    }
    // Extensions in the first file: French articles list their language versions (paths are
    // resolved against the base URL), product pages an image on a CDN.
    sqlx::raw_sql(
        "INSERT INTO sitemap_alternates (entry_id, hreflang, href)
           SELECT id, 'fr', '/fr/article.php?AIndex=' || id || '&lang=fr'
           FROM sitemap_entries WHERE id % 4 = 0 AND id <= 2000
           UNION ALL
           SELECT id, 'en', '/en/articles/' || id || '-news'
           FROM sitemap_entries WHERE id % 4 = 0 AND id <= 2000;
         INSERT INTO sitemap_images (entry_id, loc)
           SELECT id, 'https://cdn.example.com/produits/' || id || '.jpg'
           FROM sitemap_entries WHERE id % 4 = 2 AND id <= 2000;",
    )
    .execute(&mut *tx)
    .await
    .map_err(StoreError::from)?;
    tx.commit().await.map_err(StoreError::from)?;
    Ok(())
}

/// A realistic mix: PHP virtual pages with query strings, accented paths, `&` in queries.
/// Lastmods lie in the two years before `now` (unix seconds), newer ids more recently changed,
/// as on a site that keeps adding pages; one in five has none.
fn sample_entry(id: i64, now: i64) -> (String, Option<String>, Option<&'static str>, Option<f64>) {
    let loc = match id % 4 {
        0 => format!("/fr/article.php?AIndex={id}&lang=fr"),
        1 => format!("/en/articles/{id}-news"),
        2 => format!("/produits/café-crème-{id}?couleur=rouge&taille=M"),
        _ => format!("/événements/{}/été-{id}", 2020 + id % 6),
    };
    let lastmod = (id % 5 != 0).then(|| {
        const TWO_YEARS: i64 = 2 * 365 * 86_400;
        let age = (DEMO_ENTRIES - id) * TWO_YEARS / DEMO_ENTRIES + (id * 7919) % 86_400;
        let minute = (now - age) / 60 * 60;
        chrono::DateTime::from_timestamp(minute, 0)
            .map(crate::sitemap::entry::w3c_datetime)
            .unwrap_or_default()
    });
    let changefreq = ["daily", "weekly", "monthly"]
        .get((id % 4) as usize)
        .copied();
    let priority = (id % 3 == 0).then_some(0.5 + (id % 6) as f64 / 10.0);
    (loc, lastmod, changefreq, priority)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Vars;

    fn demo_config(vars: &[(&str, &str)]) -> Config {
        with_demo_settings(
            Config::from_vars(&Vars::from_pairs(vars.iter().copied()), &defaults()).unwrap(),
        )
    }

    #[test]
    fn the_status_page_opens_on_the_next_port_unless_set() {
        let config = demo_config(&[("BIND_ADDR", "127.0.0.1:8080")]);
        assert_eq!(
            addresses(&config),
            "sitemaps at http://127.0.0.1:8080/sitemap_index.xml, status page at http://127.0.0.1:8081/"
        );
        let config = demo_config(&[
            ("BIND_ADDR", "127.0.0.1:8080"),
            ("ADMIN_BIND_ADDR", "127.0.0.1:9000"),
        ]);
        assert_eq!(config.admin_addr, Some("127.0.0.1:9000".parse().unwrap()));
    }

    #[test]
    fn the_demo_verifies_no_crawler_so_fetches_no_range_list() {
        if std::env::var_os("CRAWLER_VERIFY").is_some() {
            return; // The user's setting wins; nothing to check here.
        }
        let config = demo_config(&[("BIND_ADDR", "127.0.0.1:8080")]);
        assert!(!config.verify.on);
    }

    #[test]
    fn no_next_port_after_the_last_or_any() {
        assert_eq!(port_after("127.0.0.1:65535".parse().unwrap()), None);
        assert_eq!(port_after("127.0.0.1:0".parse().unwrap()), None);
        assert_eq!(
            port_after("[::1]:80".parse().unwrap()),
            Some("[::1]:81".parse().unwrap())
        );
    }

    #[test]
    fn a_public_bind_address_keeps_the_status_page_on_localhost() {
        assert_eq!(
            port_after("0.0.0.0:8080".parse().unwrap()),
            Some("127.0.0.1:8081".parse().unwrap())
        );
        assert_eq!(
            port_after("[::]:8080".parse().unwrap()),
            Some("[::1]:8081".parse().unwrap())
        );
    }
}
