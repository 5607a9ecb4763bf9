//! `ADMIN_TOKEN`: the secret the status page requires when it listens beyond loopback.

use std::fmt;

use super::{ConfigError, Vars};

/// The status page's token: never shown by `Debug`, compared in constant time.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

impl AdminToken {
    pub const NAME: &'static str = "ADMIN_TOKEN";

    /// Unset: no token. Set: 16 to 256 visible ASCII characters without spaces, `;` or `,`
    /// (it travels in a header and a cookie).
    pub fn from_vars(vars: &Vars) -> Result<Option<Self>, ConfigError> {
        let Some(raw) = vars.get(Self::NAME) else {
            return Ok(None);
        };
        let valid = (16..=256).contains(&raw.len())
            && raw
                .bytes()
                .all(|b| b.is_ascii_graphic() && b != b';' && b != b',' && b != b'"');
        if !valid {
            return Err(ConfigError {
                variable: Self::NAME,
                // A secret is never printed, not even a wrong one.
                shown: format!("<{} characters>", raw.len()),
                expected: "16 to 256 visible ASCII characters without spaces, ';', ',' or '\"' \
                           (e.g. the output of `openssl rand -hex 24`)"
                    .into(),
            });
        }
        Ok(Some(Self(raw.to_string())))
    }

    /// Whether `offered` is the token, in time that does not depend on where they differ.
    pub fn matches(&self, offered: &str) -> bool {
        let (a, b) = (self.0.as_bytes(), offered.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}
