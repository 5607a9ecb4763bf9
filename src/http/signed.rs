//! A request's Web Bot Auth signature as the verifier reads it: read only when the request has
//! `Signature-Input`, so an unsigned request costs one header lookup.

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName};

use crate::verify::{Message, SignatureHeaders, Signed, Verifier};

/// Looked up on every crawler's request: a name made once, not parsed per request.
static SIGNATURE_INPUT: HeaderName = HeaderName::from_static("signature-input");

/// The request's signature when it carries one that names a registry signer.
pub fn signature(verifier: &Verifier, request: &Request) -> Option<Signed> {
    let headers = request.headers();
    let input = headers.get(&SIGNATURE_INPUT)?.to_str().ok()?;
    let host = authority(request)?;
    let field = |name: &str| field(headers, name);
    let message = Message {
        method: request.method().as_str(),
        authority: host,
        target: request
            .uri()
            .path_and_query()
            .map_or("/", |target| target.as_str()),
        field: &field,
    };
    let agent = field("signature-agent");
    let signature = field("signature");
    let signature_headers = SignatureHeaders {
        agent: agent.as_deref(),
        input,
        signature: signature.as_deref(),
    };
    verifier.signed_request(signature_headers, &message)
}

/// A header field's value, its lines joined with `, ` (RFC 9110 section 5.3).
fn field(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut values = headers.get_all(name).iter();
    let mut text = values.next()?.to_str().ok()?.trim().to_string();
    for value in values {
        text.push_str(", ");
        text.push_str(value.to_str().ok()?.trim());
    }
    Some(text)
}

/// The Host a request names, for `@authority` (the URI's authority when it has one).
fn authority(request: &Request) -> Option<&str> {
    match request.uri().authority() {
        Some(authority) => Some(authority.as_str()),
        None => request.headers().get(header::HOST)?.to_str().ok(),
    }
}
