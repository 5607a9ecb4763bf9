//! `/sitemap.xsl`: the XSLT 1.0 stylesheet browsers show sitemaps and indexes with, as tables;
//! `/sitemap.css`: what browsers without XSLT show them with (announced second, applied only
//! where XSLT is not).
//!
//! It is built in (`templates/sitemap.xsl`) and the same for every site, so its validators are
//! constants: the ETag is the fingerprint of its bytes, and `Last-Modified` is [`CHANGED_AT`],
//! which a unit test keeps honest (it fails when the bytes change and the time does not).
//! Sitemaps name it only when `SITEMAP_STYLESHEET=true`; it is served either way.

use std::sync::LazyLock;

use crate::site::Validators;
use crate::sitemap::Fingerprint;

pub const BODY: &str = include_str!("../templates/sitemap.xsl");

/// When `templates/sitemap.xsl` last changed (Unix seconds): its `Last-Modified`.
pub const CHANGED_AT: i64 = 1796670904;

static VALIDATORS: LazyLock<Validators> = LazyLock::new(|| Validators {
    fingerprint: Fingerprint::of(BODY.as_bytes()),
    changed_at: CHANGED_AT,
});

pub fn validators() -> Validators {
    *VALIDATORS
}

pub const CSS_BODY: &str = include_str!("../templates/sitemap.css");

/// When `templates/sitemap.css` last changed (Unix seconds): its `Last-Modified`.
pub const CSS_CHANGED_AT: i64 = 1796670904;

static CSS_VALIDATORS: LazyLock<Validators> = LazyLock::new(|| Validators {
    fingerprint: Fingerprint::of(CSS_BODY.as_bytes()),
    changed_at: CSS_CHANGED_AT,
});

pub fn css_validators() -> Validators {
    *CSS_VALIDATORS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprint of the CSS that [`CSS_CHANGED_AT`] dates.
    const CSS_DATED_FINGERPRINT: &str = "38a0d556f7c06dfd4104c06067c40835";

    #[test]
    fn the_css_last_modified_moves_with_its_bytes() {
        assert_eq!(
            css_validators().fingerprint.hex(),
            CSS_DATED_FINGERPRINT,
            "templates/sitemap.css changed: set CSS_CHANGED_AT to the current Unix time ({}) and \
             CSS_DATED_FINGERPRINT to the new fingerprint",
            chrono::Utc::now().timestamp()
        );
    }

    /// The fingerprint of the stylesheet that [`CHANGED_AT`] dates.
    const DATED_FINGERPRINT: &str = "54b8d7602af14ef8b314c462bc2d1cd8";

    #[test]
    fn last_modified_moves_with_the_bytes() {
        assert_eq!(
            validators().fingerprint.hex(),
            DATED_FINGERPRINT,
            "templates/sitemap.xsl changed: set CHANGED_AT to the current Unix time ({}) and \
             DATED_FINGERPRINT to the new fingerprint",
            chrono::Utc::now().timestamp()
        );
    }
}
