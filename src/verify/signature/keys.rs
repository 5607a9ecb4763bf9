//! A signer's keys: the Ed25519 keys of its key directory (a JWKS), each known by its RFC 7638
//! JWK thumbprint — the `keyid` a Web Bot Auth signature names — and the check of a signature
//! with one of them (`ring`, already the TLS stack's). Keys of other types are skipped, and the
//! RFC 9421 test key (appendix B.1.4), whose private half is published, is never trusted.

use std::collections::HashMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::signature::{UnparsedPublicKey, ED25519};

/// The public half (`x`) of the RFC 9421 Ed25519 test key: anyone can sign with it.
pub const RFC9421_TEST_KEY_X: &str = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";

/// One directory's usable keys, by thumbprint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys(HashMap<String, [u8; 32]>);

/// Why a fetched body is not a key directory.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no \"keys\" array")]
    NoKeys,
}

#[derive(serde::Deserialize)]
struct Jwk {
    kty: Option<String>,
    crv: Option<String>,
    x: Option<String>,
}

impl Keys {
    /// The Ed25519 keys of a JWKS (`{"keys": [...]}`); other keys and the test key are left out.
    pub fn from_jwks(body: &[u8]) -> Result<Keys, KeysError> {
        #[derive(serde::Deserialize)]
        struct Set {
            keys: Option<Vec<serde_json::Value>>,
        }
        let set: Set = serde_json::from_slice(body)?;
        let mut keys = HashMap::new();
        for value in set.keys.ok_or(KeysError::NoKeys)? {
            let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
                continue;
            };
            if let Some((thumbprint, key)) = ed25519(&jwk) {
                keys.insert(thumbprint, key);
            }
        }
        Ok(Keys(keys))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The key whose thumbprint is `keyid`.
    pub fn get(&self, keyid: &str) -> Option<&[u8; 32]> {
        self.0.get(keyid)
    }
}

/// A usable Ed25519 JWK's thumbprint and key.
fn ed25519(jwk: &Jwk) -> Option<(String, [u8; 32])> {
    if jwk.kty.as_deref() != Some("OKP") || jwk.crv.as_deref() != Some("Ed25519") {
        return None;
    }
    let x = jwk.x.as_deref()?;
    if x == RFC9421_TEST_KEY_X {
        return None;
    }
    let key: [u8; 32] = URL_SAFE_NO_PAD.decode(x).ok()?.try_into().ok()?;
    Some((thumbprint(x), key))
}

/// The RFC 7638 thumbprint of an Ed25519 JWK: SHA-256 over its required members in
/// lexicographic order, base64url without padding (RFC 8037 section 2).
pub fn thumbprint(x: &str) -> String {
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    let digest = ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// Whether `signature` is `key`'s Ed25519 signature of `message`.
pub fn ed25519_checks(key: &[u8; 32], message: &[u8], signature: &[u8]) -> bool {
    UnparsedPublicKey::new(&ED25519, key)
        .verify(message, signature)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{Ed25519KeyPair, KeyPair};

    #[test]
    fn the_thumbprint_is_rfc_7638s() {
        // RFC 8037 appendix A.3.
        assert_eq!(
            thumbprint("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"),
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
    }

    #[test]
    fn the_rfc_9421_test_key_and_other_types_are_left_out() {
        let seed = [7u8; 32];
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
        let x = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        let body = format!(
            r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC9421_TEST_KEY_X}"}},
            {{"kty":"EC","crv":"P-256","x":"a","y":"b"}},{{"kty":"OKP","crv":"Ed25519","x":"{x}"}}]}}"#
        );
        let keys = Keys::from_jwks(body.as_bytes()).unwrap();
        assert_eq!(keys.len(), 1);
        let key = keys.get(&thumbprint(&x)).expect("the real key");
        let signed = pair.sign(b"base");
        assert!(ed25519_checks(key, b"base", signed.as_ref()));
        assert!(!ed25519_checks(key, b"other", signed.as_ref()));
        assert!(keys.get(&thumbprint(RFC9421_TEST_KEY_X)).is_none());
    }

    #[test]
    fn a_body_without_keys_is_an_error_and_an_empty_set_is_empty() {
        assert!(matches!(Keys::from_jwks(b"{}"), Err(KeysError::NoKeys)));
        assert!(Keys::from_jwks(b"<html>").is_err());
        assert!(Keys::from_jwks(br#"{"keys":[]}"#).unwrap().is_empty());
    }
}
