//! `sitemapd migrate`: apply the migrations, have each source's changes logged, and say so.

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
