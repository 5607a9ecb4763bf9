//! What names a Web Bot Auth signer's key directory: a `Signature-Agent` value or a registry
//! `signature_agent`, in one of three forms — a bare origin (`https://chatgpt.com`: the directory
//! is at its well-known path), the well-known URL itself, or any URL of a JWKS (draft-ietf-
//! webbotauth-httpsig-protocol-01), fetched as written. An origin and its well-known URL name the
//! same directory. Only `https://` is taken, or `http://` on a literal loopback address
//! (127.0.0.0/8, `[::1]`) for tests: never a name such as `localhost`, which the hosts file or a
//! resolver could point anywhere.

/// Where an origin keeps its key directory.
pub const WELL_KNOWN: &str = "/.well-known/http-message-signatures-directory";

/// Why a text names no key directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignerError {
    #[error("{0:?} is not a URL")]
    NotUrl(String),
    #[error("{0:?} must be https:// (http:// only on a literal loopback address such as 127.0.0.1 or [::1])")]
    Scheme(String),
    #[error("{0:?} must not carry credentials")]
    Credentials(String),
    #[error("{0:?} must not carry a fragment")]
    Fragment(String),
}

/// The URL of the key directory `text` names: the origin's well-known URL for a bare origin
/// (a path of `/` and no query), else the URL as written (normalised as URLs serialise).
pub fn directory_url(text: &str) -> Result<String, SignerError> {
    let text = text.trim();
    let url = url::Url::parse(text).map_err(|_| SignerError::NotUrl(text.to_string()))?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(_)) | None => false,
    };
    let scheme_ok = match url.scheme() {
        "https" => url.has_host(),
        "http" => loopback,
        _ => false,
    };
    if !scheme_ok {
        return Err(SignerError::Scheme(text.to_string()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(SignerError::Credentials(text.to_string()));
    }
    if url.fragment().is_some() {
        return Err(SignerError::Fragment(text.to_string()));
    }
    if url.path() == "/" && url.query().is_none() {
        return Ok(format!(
            "{}{WELL_KNOWN}",
            url.origin().ascii_serialization()
        ));
    }
    Ok(url.to_string())
}

/// How the registry keeps a `signature_agent`: a bare origin as its origin serialises
/// (`https://chatgpt.com`, no trailing slash), any other URL as it serialises.
pub fn registry_form(text: &str) -> Result<String, SignerError> {
    let directory = directory_url(text)?;
    let url = url::Url::parse(text.trim()).map_err(|_| SignerError::NotUrl(text.to_string()))?;
    Ok(match url.path() == "/" && url.query().is_none() {
        true => url.origin().ascii_serialization(),
        false => directory,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case's expected answer: the directory URL, or the error made from the text.
    type Expected = Result<&'static str, fn(String) -> SignerError>;

    #[test]
    fn each_form_names_its_directory() {
        let well_known = "https://chatgpt.com/.well-known/http-message-signatures-directory";
        let cases: &[(&str, Expected)] = &[
            ("https://chatgpt.com", Ok(well_known)),
            ("https://chatgpt.com/", Ok(well_known)),
            ("HTTPS://ChatGPT.com:443/", Ok(well_known)),
            (well_known, Ok(well_known)),
            (
                "https://api.link.com/.well-known/http-message-signatures-directory",
                Ok("https://api.link.com/.well-known/http-message-signatures-directory"),
            ),
            (
                "https://keys.example/bots/jwks.json",
                Ok("https://keys.example/bots/jwks.json"),
            ),
            (
                "https://keys.example/?agent=1",
                Ok("https://keys.example/?agent=1"),
            ),
            (
                "http://127.0.0.1:8080",
                Ok("http://127.0.0.1:8080/.well-known/http-message-signatures-directory"),
            ),
            (
                "http://127.0.0.2:8080/k.json",
                Ok("http://127.0.0.2:8080/k.json"),
            ),
            (
                "http://[::1]:8080",
                Ok("http://[::1]:8080/.well-known/http-message-signatures-directory"),
            ),
            ("http://localhost:8080", Err(SignerError::Scheme)),
            ("http://localhost.:8080", Err(SignerError::Scheme)),
            ("http://chatgpt.com", Err(SignerError::Scheme)),
            ("http://10.0.0.1", Err(SignerError::Scheme)),
            ("http://[::ffff:127.0.0.1]", Err(SignerError::Scheme)),
            ("ftp://chatgpt.com", Err(SignerError::Scheme)),
            ("https://user:pw@chatgpt.com", Err(SignerError::Credentials)),
            ("https://chatgpt.com/#keys", Err(SignerError::Fragment)),
            ("chatgpt.com", Err(SignerError::NotUrl)),
        ];
        for (text, expected) in cases {
            let expected = expected
                .as_ref()
                .map(|url| url.to_string())
                .map_err(|error| error(text.to_string()));
            assert_eq!(directory_url(text), expected, "{text}");
        }
    }

    #[test]
    fn the_registry_keeps_origins_as_origins_and_urls_as_urls() {
        assert_eq!(
            registry_form("https://chatgpt.com/").as_deref(),
            Ok("https://chatgpt.com")
        );
        assert_eq!(
            registry_form("https://api.link.com/.well-known/http-message-signatures-directory")
                .as_deref(),
            Ok("https://api.link.com/.well-known/http-message-signatures-directory")
        );
        assert!(registry_form("http://localhost:9").is_err());
    }
}
