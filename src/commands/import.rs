//! `sitemapd import`: existing sitemap files loaded into the built-in table.

use super::progress::Progress;
use crate::app::{self, StartError};
use crate::config::Config;
use crate::import::{self, Input};
use crate::store::Store;

/// Loads a sitemap (or an index and its files) into the built-in table and prints a summary;
/// exit 1 when an entry was skipped or a file failed.
pub async fn import(config: &Config, file: &str) -> Result<i32, StartError> {
    let site = config.first_site();
    let robots = app::served_robots(config, site)?;
    let rules = app::entry_rules(config, site, &robots);
    let store = Store::connect(&config.database()).await?;
    store.migrate().await?;
    let mut progress = Progress::new("entries imported");
    let report = import::run(&store, rules, Input::from_arg(file), |written| {
        progress.tick(written.entries())
    })
    .await;
    print!("{report}");
    Ok(report.exit_code())
}
