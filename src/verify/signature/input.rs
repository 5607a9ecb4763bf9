//! The three headers of a signed request (`Signature-Agent`, `Signature-Input`, `Signature`)
//! read into [`Signature`]s: each label tagged `web-bot-auth`, the key directory its
//! `Signature-Agent` names, the components it covers, its parameters and its bytes.
//!
//! `Signature-Agent` comes in two shapes: the RFC 9651 dictionary of
//! draft-ietf-webbotauth-httpsig-protocol-01, whose member named by the signature's label names
//! the signer (`sig1="https://chatgpt.com"`), and the single string agents sent before
//! (`"https://chatgpt.com"`). What it names is an origin or a URL of a key directory
//! ([`crate::crawlers::signer`]). Parsing is RFC 9651's ([`sfv`]).

use sfv::{BareItem, Dictionary, FieldType, InnerList, Item, ListEntry, Parser};

use crate::crawlers::signer::{self, SignerError};

/// The tag a Web Bot Auth signature carries in its parameters.
pub const TAG: &str = "web-bot-auth";
/// The most `web-bot-auth` signatures of one request that are read (the rest are ignored).
pub const MOST_SIGNATURES: usize = 8;

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

/// A `web-bot-auth` signature that names a key directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Its label in `Signature-Input` and `Signature` (e.g. `sig1`).
    pub label: String,
    /// The URL of the key directory its `Signature-Agent` names
    /// ([`signer::directory_url`]).
    pub directory: String,
    pub components: Vec<Component>,
    /// The `@signature-params` value: the serialised inner list with its parameters.
    pub params: String,
    pub keyid: Option<String>,
    pub created: Option<i64>,
    pub expires: Option<i64>,
    pub alg: Option<String>,
    pub nonce: Option<String>,
    /// The signature's bytes; empty when `Signature` lacks the label (a signature that fails).
    pub bytes: Vec<u8>,
}

/// Why signature headers hold no Web Bot Auth signature naming a key directory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("Signature-Input is not an RFC 9651 dictionary: {0}")]
    Input(String),
    #[error("no signature in Signature-Input is tagged web-bot-auth")]
    NotWebBotAuth,
    #[error("there is no Signature-Agent header")]
    NoAgent,
    #[error("Signature-Agent names no signer for label {0}")]
    AgentMember(String),
    #[error("Signature-Agent names no key directory")]
    Agent(#[from] SignerError),
}

/// The `web-bot-auth` signatures of `headers` (the first [`MOST_SIGNATURES`]) whose
/// `Signature-Agent` names a key directory, in their order; the first one's error when none does.
pub fn read(headers: SignatureHeaders<'_>) -> Result<Vec<Signature>, InputError> {
    let inputs: Dictionary = Parser::new(headers.input)
        .parse()
        .map_err(|e| InputError::Input(e.to_string()))?;
    let tagged: Vec<(&str, &InnerList)> = inputs
        .iter()
        .filter_map(|(label, entry)| match entry {
            ListEntry::InnerList(list) if is_web_bot_auth(list) => Some((label.as_str(), list)),
            _ => None,
        })
        .take(MOST_SIGNATURES)
        .collect();
    if tagged.is_empty() {
        return Err(InputError::NotWebBotAuth);
    }
    let agent = headers.agent.ok_or(InputError::NoAgent)?;
    let agents = Agents::parse(agent);
    let signatures = headers
        .signature
        .and_then(|text| Parser::new(text).parse::<Dictionary>().ok());
    let mut read = Vec::with_capacity(tagged.len());
    let mut first_error = None;
    for (label, list) in tagged {
        match agents.directory(label) {
            Ok(directory) => read.push(signature(label, list, directory, signatures.as_ref())),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match (read.is_empty(), first_error) {
        (true, Some(e)) => Err(e),
        _ => Ok(read),
    }
}

/// One signature read from its inner list in `Signature-Input` and its member of `Signature`.
fn signature(
    label: &str,
    list: &InnerList,
    directory: String,
    signatures: Option<&Dictionary>,
) -> Signature {
    let parameter = |name: &str| list.params.get(name);
    let string = |name: &str| {
        parameter(name)
            .and_then(|v| v.as_string())
            .map(|s| s.as_str().to_string())
    };
    let integer = |name: &str| parameter(name).and_then(|v| v.as_integer()).map(i64::from);
    Signature {
        label: label.to_string(),
        directory,
        components: list.items.iter().map(component).collect(),
        params: serialise_inner_list(label, list),
        keyid: string("keyid"),
        created: integer("created"),
        expires: integer("expires"),
        alg: string("alg"),
        nonce: string("nonce"),
        bytes: signatures
            .and_then(|all| signature_bytes(all, label))
            .unwrap_or_default(),
    }
}

fn is_web_bot_auth(list: &InnerList) -> bool {
    list.params
        .get("tag")
        .and_then(|tag| tag.as_string())
        .is_some_and(|tag| tag.as_str() == TAG)
}

/// `Signature-Agent` parsed once: one string for every label, or a dictionary of members.
enum Agents {
    One(Option<String>),
    Members(Option<Dictionary>),
}

impl Agents {
    fn parse(agent: &str) -> Agents {
        match Parser::new(agent).parse::<Item>() {
            Ok(item) => Agents::One(item_string(&item)),
            Err(_) => Agents::Members(Parser::new(agent).parse().ok()),
        }
    }

    /// The key directory named for `label`: its dictionary member of that name, or the whole
    /// field when it is one string.
    fn directory(&self, label: &str) -> Result<String, InputError> {
        let text = match self {
            Agents::One(text) => text.clone(),
            Agents::Members(members) => match members.as_ref().and_then(|m| m.get(label)) {
                Some(ListEntry::Item(item)) => item_string(item),
                _ => None,
            },
        };
        let text = text.ok_or_else(|| InputError::AgentMember(label.to_string()))?;
        Ok(signer::directory_url(&text)?)
    }
}

fn item_string(item: &Item) -> Option<String> {
    item.bare_item.as_string().map(|s| s.as_str().to_string())
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
fn signature_bytes(signatures: &Dictionary, label: &str) -> Option<Vec<u8>> {
    match signatures.get(label)? {
        ListEntry::Item(item) => item.bare_item.as_byte_sequence().map(<[u8]>::to_vec),
        ListEntry::InnerList(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUT: &str = r#"sig1=("@authority" "signature-agent");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==";tag="web-bot-auth""#;

    const CHATGPT: &str = "https://chatgpt.com/.well-known/http-message-signatures-directory";

    fn headers<'a>(agent: &'a str, input: &'a str) -> SignatureHeaders<'a> {
        SignatureHeaders {
            agent: Some(agent),
            input,
            signature: Some("sig1=:AAEC:"),
        }
    }

    fn one(agent: &str, input: &str) -> Result<Signature, InputError> {
        let mut all = read(headers(agent, input))?;
        assert_eq!(all.len(), 1, "{all:?}");
        Ok(all.remove(0))
    }

    #[test]
    fn the_dictionary_member_named_by_the_label_gives_the_directory() {
        let signature = one(r#"sig1="https://chatgpt.com/""#, INPUT).unwrap();
        assert_eq!(signature.directory, CHATGPT);
        assert_eq!(signature.label, "sig1");
        assert_eq!(signature.created, Some(1_735_689_600));
        assert_eq!(signature.expires, Some(1_735_693_200));
        assert!(signature.nonce.as_deref().unwrap().starts_with("e8N7S2"));
        assert_eq!(signature.bytes, vec![0, 1, 2]);
        assert_eq!(signature.components[0].id, r#""@authority""#);
        assert!(signature
            .params
            .starts_with(r#"("@authority" "signature-agent");created="#));
        assert!(signature.params.ends_with(r#";tag="web-bot-auth""#));
    }

    #[test]
    fn each_signature_agent_form_names_its_directory() {
        let cases = [
            (r#""https://chatgpt.com""#, CHATGPT),
            (&format!("sig1=\"{CHATGPT}\""), CHATGPT),
            (
                r#"sig1="https://keys.example/bots/jwks.json""#,
                "https://keys.example/bots/jwks.json",
            ),
        ];
        for (agent, directory) in cases {
            assert_eq!(one(agent, INPUT).unwrap().directory, directory, "{agent}");
        }
    }

    #[test]
    fn another_member_or_a_name_on_plain_http_names_no_directory() {
        assert_eq!(
            read(headers(r#"sig2="https://chatgpt.com""#, INPUT)),
            Err(InputError::AgentMember("sig1".into()))
        );
        assert!(matches!(
            read(headers(r#""http://localhost:8080""#, INPUT)),
            Err(InputError::Agent(SignerError::Scheme(_)))
        ));
    }

    #[test]
    fn every_web_bot_auth_signature_is_read_in_order() {
        let input = format!(
            "sig0=(\"@authority\");tag=\"other\", {INPUT}, {}",
            INPUT.replacen("sig1=", "sig2=", 1)
        );
        let agent = r#"sig1="https://a.example", sig2="https://b.example/k.json""#;
        let all = read(SignatureHeaders {
            agent: Some(agent),
            input: &input,
            signature: Some("sig2=:BAU=:, sig1=:AAEC:"),
        })
        .unwrap();
        let seen: Vec<(&str, &str, &[u8])> = all
            .iter()
            .map(|s| (s.label.as_str(), s.directory.as_str(), s.bytes.as_slice()))
            .collect();
        assert_eq!(
            seen,
            [
                (
                    "sig1",
                    "https://a.example/.well-known/http-message-signatures-directory",
                    &[0u8, 1, 2][..]
                ),
                ("sig2", "https://b.example/k.json", &[4u8, 5][..]),
            ]
        );
        let unnamed = r#"sig2="https://b.example/k.json""#;
        let all = read(headers(unnamed, &input)).unwrap();
        assert_eq!(
            all.len(),
            1,
            "the signature its agent names no directory for is left out"
        );
        assert_eq!(all[0].label, "sig2");
    }

    #[test]
    fn at_most_eight_signatures_are_read() {
        let input: Vec<String> = (0..20)
            .map(|i| INPUT.replacen("sig1=", &format!("s{i}="), 1))
            .collect();
        let all = read(headers(r#""https://chatgpt.com""#, &input.join(", "))).unwrap();
        assert_eq!(all.len(), MOST_SIGNATURES);
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
        let signature = one(r#"sig1="https://chatgpt.com""#, input).unwrap();
        let member = &signature.components[1];
        assert_eq!(member.id, r#""signature-agent";key="sig1""#);
        assert_eq!(member.key.as_deref(), Some("sig1"));
        assert!(!member.unsupported);
    }
}
