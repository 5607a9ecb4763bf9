//! `SOURCE_DATABASE_URL` (and a site's `source_database_url`): the database a site's entries are
//! read from when it is not `DATABASE_URL`: a PostgreSQL hot standby, a MySQL/MariaDB replica,
//! read-only to sitemapd. The value is never shown (it may carry a password).

use super::sites_file::SiteConfig;
use super::{ConfigError, DatabaseUrl, Vars};

const NAME: &str = "SOURCE_DATABASE_URL";

/// `sites` with `SOURCE_DATABASE_URL` given to each that names no source database of its own;
/// a source database that is `database_url` itself is no database of its own (nothing changes).
pub(super) fn with_source_databases(
    vars: &Vars,
    mut sites: Vec<SiteConfig>,
    database_url: &DatabaseUrl,
) -> Result<Vec<SiteConfig>, ConfigError> {
    let default = match vars.get(NAME) {
        Some(value) => Some(DatabaseUrl::parse(value).map_err(|expected| ConfigError {
            variable: NAME,
            shown: "(set)".into(),
            expected,
        })?),
        None => None,
    };
    for site in &mut sites {
        if site.source_database_url.is_none() {
            site.source_database_url = default.clone();
        }
        if site.source_database_url.as_ref() == Some(database_url) {
            site.source_database_url = None;
        }
    }
    Ok(sites)
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, Defaults, Vars};

    fn config(pairs: Vec<(&str, &str)>) -> Result<Config, String> {
        let mut all = vec![("SITEMAP_BASE_URL", "https://e.com/")];
        all.extend(pairs);
        Config::from_vars(&Vars::from_pairs(all), &Defaults::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_source_database_is_taken_and_its_password_never_shown() {
        let c = config(vec![("SOURCE_DATABASE_URL", "postgres://u:pw@standby/cms")]).unwrap();
        let url = c.sites[0].source_database_url.as_ref().unwrap();
        assert_eq!(url.expose(), "postgres://u:pw@standby/cms");
        assert!(c.database().source_database_url.is_some());
        let err = config(vec![("SOURCE_DATABASE_URL", "oracle://u:secret@h/db")]).unwrap_err();
        assert!(err.contains("SOURCE_DATABASE_URL"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn the_state_database_named_again_is_no_source_database_of_its_own() {
        let c = config(vec![
            ("DATABASE_URL", "postgres://p@primary/cms"),
            ("SOURCE_DATABASE_URL", "postgres://p@primary/cms"),
        ])
        .unwrap();
        assert!(c.sites[0].source_database_url.is_none());
    }
}
