//! Whether a crawler is behind on a file: what it was sent (when, and which version of the
//! file: the fingerprint its ETag names) against what is served now. Versions are compared when
//! both are known, so a change in the same second as the fetch counts; times (whole seconds)
//! only when the fetch's version is not known (a body sent under no ETag, a ledger fed without
//! one).

/// One fetch of a file by one crawler, as the ledger keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fetch {
    /// Unix seconds.
    pub at: i64,
    /// The fingerprint of the file sent (or confirmed by a `304`), when its ETag named one.
    pub version: Option<u128>,
}

impl From<i64> for Fetch {
    /// A fetch at `at` whose version is not known.
    fn from(at: i64) -> Self {
        Self { at, version: None }
    }
}

impl Fetch {
    /// A fetch at `at` of the version `etag` names (see [`version_of_etag`]).
    pub fn of_etag(at: i64, etag: Option<&str>) -> Self {
        Self {
            at,
            version: etag.and_then(version_of_etag),
        }
    }
}

/// A file as it is served now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    /// When its bytes last changed (unix seconds).
    pub changed_at: i64,
    /// Its fingerprint, when known.
    pub version: Option<u128>,
}

impl From<i64> for Served {
    /// A file changed at `changed_at` whose version is not known.
    fn from(changed_at: i64) -> Self {
        Self {
            changed_at,
            version: None,
        }
    }
}

/// Whether a crawler that made `fetch` has not got the file `now` serves.
pub fn is_behind(fetch: Fetch, now: Served) -> bool {
    match (fetch.version, now.version) {
        (Some(had), Some(served)) => had != served,
        _ => now.changed_at > fetch.at,
    }
}

/// The fingerprint a strong ETag names: its hex digits before any representation suffix
/// (`"<hex>"`, `"<hex>-gz"`, `"<hex>-txt"` are the same file); `None` for anything else.
pub fn version_of_etag(etag: &str) -> Option<u128> {
    let inner = etag.strip_prefix('"')?.strip_suffix('"')?;
    let hex = inner.split('-').next()?;
    if hex.is_empty() || hex.len() > 32 {
        return None;
    }
    u128::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_file_names_the_same_version() {
        let plain = version_of_etag("\"00ff\"");
        assert_eq!(plain, Some(0xff));
        assert_eq!(version_of_etag("\"00ff-gz\""), plain);
        assert_eq!(version_of_etag("\"00ff-txt\""), plain);
        assert_eq!(version_of_etag("W/\"00ff\""), None);
        assert_eq!(version_of_etag("\"\""), None);
        assert_eq!(version_of_etag("\"not-hex\""), None);
    }

    #[test]
    fn a_change_in_the_second_of_the_fetch_is_behind_when_versions_are_known() {
        let fetch = Fetch {
            at: 100,
            version: Some(1),
        };
        let same_second = |version| Served {
            changed_at: 100,
            version: Some(version),
        };
        assert!(is_behind(fetch, same_second(2)));
        assert!(!is_behind(fetch, same_second(1)));
        // Without a version, only a later second tells.
        assert!(!is_behind(Fetch::from(100), Served::from(100)));
        assert!(is_behind(Fetch::from(100), Served::from(101)));
    }
}
