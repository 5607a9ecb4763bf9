//! The database URL, whose password never reaches a log or an error, and the kind of database
//! it names.

use url::Url;

/// Which database the service reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseKind {
    Postgres,
    /// MySQL or MariaDB.
    Mysql,
    Sqlite,
}

/// A database URL plus the kind it names; Display never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    raw: String,
    kind: DatabaseKind,
}

impl DatabaseUrl {
    pub fn parse(value: &str) -> Result<Self, String> {
        let kind = if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            DatabaseKind::Postgres
        } else if value.starts_with("mysql://") || value.starts_with("mariadb://") {
            DatabaseKind::Mysql
        } else if value.starts_with("sqlite:") {
            DatabaseKind::Sqlite
        } else {
            return Err("a postgres://…, mysql://… or sqlite://… URL".into());
        };
        match kind {
            DatabaseKind::Postgres => {
                Url::parse(value).map_err(|e| format!("a valid postgres:// URL ({e})"))?;
            }
            DatabaseKind::Mysql => {
                let url = Url::parse(value).map_err(|e| format!("a valid mysql:// URL ({e})"))?;
                if url.path().trim_start_matches('/').is_empty() {
                    return Err(
                        "a mysql:// URL that names a database, e.g. mysql://user@host/cms".into(),
                    );
                }
            }
            DatabaseKind::Sqlite => {}
        }
        Ok(Self {
            raw: value.to_string(),
            kind,
        })
    }

    pub fn kind(&self) -> DatabaseKind {
        self.kind
    }

    /// The URL with its password, for the driver only.
    pub fn expose(&self) -> &str {
        &self.raw
    }

    /// The URL with any password replaced by `***`, safe for logs and errors.
    pub fn redacted(&self) -> String {
        redact_password(&self.raw)
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl std::fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

pub fn redact_password(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(mut url) if url.password().is_some() => {
            let _ = url.set_password(Some("***"));
            url.to_string()
        }
        Ok(_) => raw.to_string(),
        // Unparseable: do not risk echoing `user:secret@` back.
        Err(_) => match (raw.find("://"), raw.rfind('@')) {
            (Some(start), Some(at)) if at > start => {
                format!("{}***{}", &raw[..start + 3], &raw[at..])
            }
            _ => raw.to_string(),
        },
    }
}
