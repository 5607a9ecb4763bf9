//! The RFC 9421 signature base of a [`Signature`] over one request: a line per covered
//! component (`"@authority": example.com`), then `"@signature-params"`. The request is what
//! sitemapd saw or what an access-log line kept of it ([`Message`]); a component the message
//! does not carry makes the base impossible ([`BaseError`]), never a guess. `@target-uri` is the
//! public origin the site is served at (its base URL's scheme and authority: sitemapd behind a
//! proxy sees neither as the signer did) followed by the request's path and query.

use sfv::{Dictionary, FieldType, ListEntry, Parser};

use super::input::{Component, Signature};

/// What a verifier knows of a request: the derived components' sources and its header fields.
pub struct Message<'a> {
    /// `GET`, `HEAD`, … as received.
    pub method: &'a str,
    /// The Host (or the URI's authority) as received; a port may follow.
    pub authority: &'a str,
    /// The request target's path and query, as received (`/sitemap.xml?x=1`).
    pub target: &'a str,
    /// A header field's value by lowercase name (several lines joined with `, `); `None`: the
    /// request has none, or the message did not keep it.
    pub field: &'a dyn Fn(&str) -> Option<String>,
}

/// Why the signature base cannot be built from a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaseError {
    #[error("the signature covers {0}, which this request does not carry")]
    Missing(String),
    #[error("the signature covers {0}, which this verifier does not reconstruct")]
    Unsupported(String),
}

/// The signature base `signature` signed, reconstructed from `message`; `public` is the origin
/// the request's site is served at (`https://www.example.com`), for `@target-uri`.
pub fn signature_base(
    signature: &Signature,
    message: &Message<'_>,
    public: Option<&str>,
) -> Result<String, BaseError> {
    let mut base = String::with_capacity(256);
    for component in &signature.components {
        let value = component_value(component, message, public)?;
        if value.contains(['\n', '\r']) {
            return Err(BaseError::Unsupported(component.id.clone()));
        }
        base.push_str(&component.id);
        base.push_str(": ");
        base.push_str(&value);
        base.push('\n');
    }
    base.push_str("\"@signature-params\": ");
    base.push_str(&signature.params);
    Ok(base)
}

fn component_value(
    component: &Component,
    message: &Message<'_>,
    public: Option<&str>,
) -> Result<String, BaseError> {
    let unsupported = || BaseError::Unsupported(component.id.clone());
    let missing = || BaseError::Missing(component.id.clone());
    if component.unsupported {
        return Err(unsupported());
    }
    let (path, query) = match message.target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (message.target, None),
    };
    Ok(match component.name.as_str() {
        "@method" => message.method.to_string(),
        "@authority" => authority(message.authority),
        "@path" if path.is_empty() => "/".to_string(),
        "@path" => path.to_string(),
        "@query" => format!("?{}", query.unwrap_or_default()),
        "@request-target" => message.target.to_string(),
        "@target-uri" => target_uri(public.ok_or_else(missing)?, message.target),
        name if name.starts_with('@') => return Err(unsupported()),
        name => {
            let value = (message.field)(name).ok_or_else(missing)?;
            match &component.key {
                None => value.trim().to_string(),
                Some(key) => dictionary_member(&value, key).ok_or_else(missing)?,
            }
        }
    })
}

/// `@authority`: the host lowercased, without the default port of http or https (RFC 9421
/// section 2.2.3; the scheme behind a proxy is unknown here, and a signer omits both).
fn authority(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    match host
        .strip_suffix(":80")
        .or_else(|| host.strip_suffix(":443"))
    {
        Some(bare) => bare.to_string(),
        None => host,
    }
}

/// `@target-uri`: the public origin, then the path (at least `/`) and query as received.
fn target_uri(public: &str, target: &str) -> String {
    let public = public.trim_end_matches('/');
    match target.starts_with('/') {
        true => format!("{public}{target}"),
        false => format!("{public}/{target}"),
    }
}

/// A dictionary field's member `key`, serialised (RFC 9421 section 2.1.2).
fn dictionary_member(field: &str, key: &str) -> Option<String> {
    let members: Dictionary = Parser::new(field).parse().ok()?;
    match members.get(key)? {
        ListEntry::Item(item) => Some(item.serialize()),
        ListEntry::InnerList(list) => {
            let mut one = Dictionary::new();
            one.insert(
                sfv::Key::from_string(key.to_string()).ok()?,
                ListEntry::InnerList(list.clone()),
            );
            let text = one.serialize()?;
            Some(text.strip_prefix(key)?.strip_prefix('=')?.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::input::{read, SignatureHeaders};
    use super::*;

    fn base(agent: &str, input: &str, host: &str) -> Result<String, BaseError> {
        based(agent, input, host, None)
    }

    fn based(
        agent: &str,
        input: &str,
        host: &str,
        public: Option<&str>,
    ) -> Result<String, BaseError> {
        let signature = read(SignatureHeaders {
            agent: Some(agent),
            input,
            signature: None,
        })
        .unwrap()
        .remove(0);
        let field = |name: &str| (name == "signature-agent").then(|| agent.to_string());
        let message = Message {
            method: "GET",
            authority: host,
            target: "/sitemap.xml?page=2",
            field: &field,
        };
        signature_base(&signature, &message, public)
    }

    #[test]
    fn the_base_lists_each_component_then_the_parameters() {
        let input = r#"sig1=("@authority" "signature-agent" "@path" "@query" "@method");created=1;keyid="k";tag="web-bot-auth""#;
        let text = base(r#""https://chatgpt.com""#, input, "Example.COM:443").unwrap();
        assert_eq!(
            text,
            "\"@authority\": example.com\n\"signature-agent\": \"https://chatgpt.com\"\n\
             \"@path\": /sitemap.xml\n\"@query\": ?page=2\n\"@method\": GET\n\
             \"@signature-params\": (\"@authority\" \"signature-agent\" \"@path\" \"@query\" \"@method\");created=1;keyid=\"k\";tag=\"web-bot-auth\""
        );
    }

    #[test]
    fn a_keyed_component_is_the_members_value() {
        let input =
            r#"sig1=("@authority" "signature-agent";key="sig1");created=1;tag="web-bot-auth""#;
        let text = base(
            r#"sig1="https://chatgpt.com", sig0="https://x.example""#,
            input,
            "example.com:8080",
        )
        .unwrap();
        assert!(text.starts_with(
            "\"@authority\": example.com:8080\n\"signature-agent\";key=\"sig1\": \"https://chatgpt.com\"\n"
        ));
    }

    #[test]
    fn a_field_the_message_lacks_makes_no_base() {
        let input = r#"sig1=("@authority" "signature-agent" "content-digest");created=1;tag="web-bot-auth""#;
        assert_eq!(
            base(r#""https://chatgpt.com""#, input, "example.com"),
            Err(BaseError::Missing("\"content-digest\"".into()))
        );
        let input = r#"sig1=("@authority" "@scheme");created=1;tag="web-bot-auth""#;
        assert_eq!(
            base(r#""https://chatgpt.com""#, input, "example.com"),
            Err(BaseError::Unsupported("\"@scheme\"".into()))
        );
    }

    #[test]
    fn the_target_uri_is_the_public_origin_and_the_received_target() {
        let input = r#"sig1=("@target-uri" "signature-agent");created=1;tag="web-bot-auth""#;
        let agent = r#""https://chatgpt.com""#;
        let line = |public| {
            based(agent, input, "127.0.0.1:8080", public)
                .map(|base| base.lines().next().unwrap_or_default().to_string())
        };
        assert_eq!(
            line(Some("https://www.example.com")),
            Ok("\"@target-uri\": https://www.example.com/sitemap.xml?page=2".to_string())
        );
        assert_eq!(
            line(None),
            Err(BaseError::Missing("\"@target-uri\"".into())),
            "no public origin: no guess"
        );
        let cases = [
            ("https://a.example", "/x?y=1", "https://a.example/x?y=1"),
            ("https://a.example/", "/", "https://a.example/"),
            ("http://a.example:8080", "", "http://a.example:8080/"),
        ];
        for (public, target, uri) in cases {
            assert_eq!(target_uri(public, target), uri, "{public} {target}");
        }
    }
}
