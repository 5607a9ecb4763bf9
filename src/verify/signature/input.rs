//! The three headers of a signed request (`Signature-Agent`, `Signature-Input`, `Signature`)
//! read into one [`Signature`]: the label tagged `web-bot-auth`, the signer origin its
//! `Signature-Agent` names, the components it covers, its parameters and its bytes.
//!
//! `Signature-Agent` comes in two forms: the RFC 9651 dictionary of
//! draft-ietf-webbotauth-httpsig-protocol-01, whose member named by the signature's label holds
//! the origin (`sig1="https://chatgpt.com"`), and the single string agents sent before
//! (`"https://chatgpt.com"`). Parsing is RFC 9651's ([`sfv`]).

use sfv::{BareItem, Dictionary, FieldType, InnerList, Item, ListEntry, Parser};

/// The tag a Web Bot Auth signature carries in its parameters.
pub const TAG: &str = "web-bot-auth";

/// The signature headers of one request (or one access-log line), as received.
#[derive(Debug, Clone, Copy)]
pub struct SignatureHeaders<'a> {
    pub agent: Option<&'a str>,
    pub input: &'a str,
    pub signature: Option<&'a str>,
}

/// One covered component: its identifier as the signature base writes it (`"@authority"`,
/// `"signature-agent";key="sig1"`), and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// The serialised component identifier.
    pub id: String,
    /// The lowercase name: `@authority`, `signature-agent`, …
    pub name: String,
    /// The `key` parameter: a dictionary member of the field rather than the whole field.
    pub key: Option<String>,
    /// Whether it has parameters this verifier does not reconstruct (`sf`, `bs`, `req`, `tr`, `name`).
    pub unsupported: bool,
}

/// A `web-bot-auth` signature that names a signer origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Its label in `Signature-Input` and `Signature` (e.g. `sig1`).
    pub label: String,
    /// The origin `Signature-Agent` names, serialised as the registry keeps origins
    /// (`https://chatgpt.com`, no trailing slash).
    pub origin: String,
    pub components: Vec<Component>,
    /// The `@signature-params` value: the serialised inner list with its parameters.
    pub params: String,
    pub keyid: Option<String>,
    pub created: Option<i64>,
    pub expires: Option<i64>,
    pub alg: Option<String>,
    /// The signature's bytes; empty when `Signature` lacks the label (a signature that fails).
    pub bytes: Vec<u8>,
}

/// Why signature headers are not a Web Bot Auth signature naming an origin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("Signature-Input is not an RFC 9651 dictionary: {0}")]
    Input(String),
    #[error("no signature in Signature-Input is tagged web-bot-auth")]
    NotWebBotAuth,
    #[error("there is no Signature-Agent header")]
    NoAgent,
    #[error("Signature-Agent names no origin for label {0}")]
    AgentMember(String),
    #[error("Signature-Agent {0:?} is not an origin")]
    AgentOrigin(String),
}

/// The first `web-bot-auth` signature of `headers` with the origin it names.
pub fn read(headers: SignatureHeaders<'_>) -> Result<Signature, InputError> {
    let inputs: Dictionary = Parser::new(headers.input)
        .parse()
        .map_err(|e| InputError::Input(e.to_string()))?;
    let (label, list) = inputs
        .iter()
        .find_map(|(label, entry)| match entry {
            ListEntry::InnerList(list) if is_web_bot_auth(list) => Some((label.as_str(), list)),
            _ => None,
        })
        .ok_or(InputError::NotWebBotAuth)?;
    let agent = headers.agent.ok_or(InputError::NoAgent)?;
    let origin = agent_origin(agent, label)?;
    let parameter = |name: &str| list.params.get(name);
    Ok(Signature {
        label: label.to_string(),
        origin,
        components: list.items.iter().map(component).collect(),
        params: serialise_inner_list(label, list),
        keyid: parameter("keyid")
            .and_then(|v| v.as_string())
            .map(|s| s.as_str().to_string()),
        created: parameter("created")
            .and_then(|v| v.as_integer())
            .map(i64::from),
        expires: parameter("expires")
            .and_then(|v| v.as_integer())
            .map(i64::from),
        alg: parameter("alg")
            .and_then(|v| v.as_string())
            .map(|s| s.as_str().to_string()),
        bytes: headers
            .signature
            .and_then(|text| signature_bytes(text, label))
            .unwrap_or_default(),
    })
}

fn is_web_bot_auth(list: &InnerList) -> bool {
    list.params
        .get("tag")
        .and_then(|tag| tag.as_string())
        .is_some_and(|tag| tag.as_str() == TAG)
}

/// The origin `Signature-Agent` names for `label`: its dictionary member of that name, or the
/// whole field when it is one string.
fn agent_origin(agent: &str, label: &str) -> Result<String, InputError> {
    let text = match Parser::new(agent).parse::<Item>() {
        Ok(item) => item_string(&item),
        Err(_) => {
            let members: Dictionary = Parser::new(agent)
                .parse()
                .map_err(|_| InputError::AgentMember(label.to_string()))?;
            match members.get(label) {
                Some(ListEntry::Item(item)) => item_string(item),
                _ => None,
            }
        }
    };
    let text = text.ok_or_else(|| InputError::AgentMember(label.to_string()))?;
    origin_of(&text).ok_or(InputError::AgentOrigin(text))
}

fn item_string(item: &Item) -> Option<String> {
    item.bare_item.as_string().map(|s| s.as_str().to_string())
}

/// `https://host[:port]` with no path beyond `/`, serialised as the registry keeps origins.
fn origin_of(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.has_host()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    plain.then(|| url.origin().ascii_serialization())
}

/// One covered component, read from its item in the inner list.
fn component(item: &Item) -> Component {
    let name = item
        .bare_item
        .as_string()
        .map_or_else(String::new, |s| s.as_str().to_string());
    let key = item
        .params
        .get("key")
        .and_then(|v| v.as_string())
        .map(|s| s.as_str().to_string());
    let unsupported = !matches!(item.bare_item, BareItem::String(_))
        || item.params.keys().any(|k| k.as_str() != "key");
    Component {
        id: item.serialize(),
        name,
        key,
        unsupported,
    }
}

/// The inner list with its parameters as RFC 9651 serialises it: `("@authority" …);created=…`.
fn serialise_inner_list(label: &str, list: &InnerList) -> String {
    let mut one = Dictionary::new();
    let Ok(key) = sfv::Key::from_string(label.to_string()) else {
        return String::new();
    };
    one.insert(key, ListEntry::InnerList(list.clone()));
    let text = one.serialize().unwrap_or_default();
    text.strip_prefix(label)
        .and_then(|rest| rest.strip_prefix('='))
        .unwrap_or_default()
        .to_string()
}

/// The bytes of `label`'s member of `Signature`.
fn signature_bytes(text: &str, label: &str) -> Option<Vec<u8>> {
    let signatures: Dictionary = Parser::new(text).parse().ok()?;
    match signatures.get(label)? {
        ListEntry::Item(item) => item.bare_item.as_byte_sequence().map(<[u8]>::to_vec),
        ListEntry::InnerList(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUT: &str = r#"sig1=("@authority" "signature-agent");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==";tag="web-bot-auth""#;

    fn headers<'a>(agent: &'a str, input: &'a str) -> SignatureHeaders<'a> {
        SignatureHeaders {
            agent: Some(agent),
            input,
            signature: Some("sig1=:AAEC:"),
        }
    }

    #[test]
    fn the_dictionary_member_named_by_the_label_gives_the_origin() {
        let signature = read(headers(r#"sig1="https://chatgpt.com/""#, INPUT)).unwrap();
        assert_eq!(signature.origin, "https://chatgpt.com");
        assert_eq!(signature.label, "sig1");
        assert_eq!(signature.created, Some(1_735_689_600));
        assert_eq!(signature.expires, Some(1_735_693_200));
        assert_eq!(signature.bytes, vec![0, 1, 2]);
        assert_eq!(signature.components[0].id, r#""@authority""#);
        assert!(signature
            .params
            .starts_with(r#"("@authority" "signature-agent");created="#));
        assert!(signature.params.ends_with(r#";tag="web-bot-auth""#));
    }

    #[test]
    fn the_older_single_string_gives_the_origin() {
        let signature = read(headers(r#""https://chatgpt.com""#, INPUT)).unwrap();
        assert_eq!(signature.origin, "https://chatgpt.com");
    }

    #[test]
    fn another_member_or_a_path_names_no_origin() {
        assert_eq!(
            read(headers(r#"sig2="https://chatgpt.com""#, INPUT)),
            Err(InputError::AgentMember("sig1".into()))
        );
        assert!(matches!(
            read(headers(r#""https://chatgpt.com/keys""#, INPUT)),
            Err(InputError::AgentOrigin(_))
        ));
    }

    #[test]
    fn a_signature_not_tagged_web_bot_auth_is_not_read() {
        let input = INPUT.replace("web-bot-auth", "other");
        assert_eq!(
            read(headers(r#""https://chatgpt.com""#, &input)),
            Err(InputError::NotWebBotAuth)
        );
    }

    #[test]
    fn a_member_component_keeps_its_key() {
        let input =
            r#"sig1=("@authority" "signature-agent";key="sig1");created=1;tag="web-bot-auth""#;
        let signature = read(headers(r#"sig1="https://chatgpt.com""#, input)).unwrap();
        let member = &signature.components[1];
        assert_eq!(member.id, r#""signature-agent";key="sig1""#);
        assert_eq!(member.key.as_deref(), Some("sig1"));
        assert!(!member.unsupported);
    }
}
