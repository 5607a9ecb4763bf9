//! Settings the contract names that this release does not implement yet: refused at start with
//! one line (exit 2), so that nobody runs believing them honoured (`SOURCE_DATABASE_URL` unread would
//! mean sitemapd reading and writing `DATABASE_URL`, the primary, instead of a replica).

use super::{ConfigError, Vars};

/// The settings, and what to do instead for now.
const NOT_YET: [(&str, &str); 1] = [(
    "SOURCE_DATABASE_URL",
    "unset (this release reads the entries from DATABASE_URL, where it keeps its state too)",
)];

/// `Err` naming the first such setting that is set.
pub(super) fn refuse_unimplemented(vars: &Vars) -> Result<(), ConfigError> {
    for (name, expected) in NOT_YET {
        if vars.get(name).is_some() {
            // The value is not shown: a database URL may carry a password.
            return Err(ConfigError {
                variable: name,
                shown: "(set)".into(),
                expected: expected.into(),
            });
        }
    }
    Ok(())
}
