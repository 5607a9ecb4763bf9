//! `sitemapd migrate`: apply the migrations, have each source's changes logged, and say so;
//! `sitemapd migrate --unwatch SOURCE`: remove what watches a source.

use crate::app::{self, StartError};
use crate::config::Config;
use crate::store::Store;

/// Applies the migrations and says, for each source, how its changes are followed.
pub async fn migrate(config: &Config) -> Result<i32, StartError> {
    let store = Store::connect(&config.database()).await?;
    store.migrate().await?;
    println!("migrations applied to {}", config.database_url);
    for (source, watch, _) in app::watch_sources(&store, config).await? {
        println!("{}", watch.describe(&source));
    }
    Ok(0)
}

/// Drops the triggers watching `source` and forgets its change log; says what was dropped.
pub async fn unwatch(config: &Config, source: &str) -> Result<i32, StartError> {
    let store = Store::connect(&config.database()).await?;
    store.migrate().await?;
    let dropped = store.unwatch(source).await?;
    if dropped.is_empty() {
        println!("{source}: no trigger watches it; its change log is forgotten");
    } else {
        println!("{source}: dropped {}", dropped.join(", "));
    }
    println!(
        "{source}: no longer watched; `sitemapd serve` and `migrate` watch every source they \
         serve again where the TRIGGER privilege allows it (revoke it to keep the source \
         unwatched)"
    );
    Ok(0)
}
