//! `CRAWLERS_FILE`: the crawler registry, read and checked once, here. Everything else that
//! names crawlers (robots.txt policies, llms.txt, the ledger, verification, the crawl log, the
//! commands) takes it from [`super::Config::crawlers`]; a bad file stops the start in one line.

use std::path::Path;
use std::sync::Arc;

use super::{ConfigError, Vars};
use crate::crawlers::Registry;

pub(super) const CRAWLERS_FILE: &str = "CRAWLERS_FILE";

/// The built-in registry, extended by `CRAWLERS_FILE` when it is set.
pub(super) fn crawler_registry(vars: &Vars) -> Result<Arc<Registry>, ConfigError> {
    let Some(path) = vars.get(CRAWLERS_FILE) else {
        return Ok(Arc::new(Registry::builtin()));
    };
    let registry = Registry::with_file(Path::new(path)).map_err(|e| {
        let problem = crate::error::Chain(&e).to_string();
        // The registry's messages start with the file they are about: said once, as the value.
        let origin = format!("{}: ", Path::new(path).display());
        ConfigError {
            variable: CRAWLERS_FILE,
            shown: Path::new(path).display().to_string(),
            expected: problem
                .strip_prefix(&origin)
                .map_or(problem.clone(), str::to_string),
        }
    })?;
    Ok(Arc::new(registry))
}
