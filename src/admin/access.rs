//! Who may read the status page: without `ADMIN_TOKEN`, requests naming a local host only (the
//! bind address, `localhost` names, loopback IPs), so a DNS-rebinding page cannot read it
//! through a visitor's browser; with a token, requests that carry it (`Authorization: Bearer`,
//! or the `token` cookie that `/?token=` sets). Every answer forbids framing, sniffing and any
//! active content.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::config::AdminToken;

/// The page needs its own inline `<style>` and `style=` attributes, nothing else: no script,
/// no image, no frame, forms only to itself.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The cookie `/?token=` sets.
const COOKIE: &str = "token";

/// What guards the status page.
#[derive(Debug, Clone)]
pub struct Access {
    /// Where it listens: its own address is a Host it answers to.
    pub bind: SocketAddr,
    pub token: Option<AdminToken>,
}

/// `router` behind `access`, every answer with the security headers.
pub fn guard(router: Router, access: Access) -> Router {
    router
        .layer(middleware::from_fn_with_state(Arc::new(access), check))
        .layer(middleware::from_fn(security_headers))
}

/// Adds the headers that keep the page out of frames and scripts (also on refusals).
pub async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The token may be in the URL once (`/?token=`): never pass it on.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn check(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    match &access.token {
        Some(token) => {
            if let Some(offered) = query_token(&request) {
                return if token.matches(&offered) {
                    set_cookie_and_reload(token, request.uri().path())
                } else {
                    refused(StatusCode::UNAUTHORIZED, "wrong token\n")
                };
            }
            if carries_token(request.headers(), token) {
                next.run(request).await
            } else {
                refused(
                    StatusCode::UNAUTHORIZED,
                    "this status page needs its token: Authorization: Bearer <ADMIN_TOKEN>, or open /?token=<ADMIN_TOKEN> once\n",
                )
            }
        }
        None => match request_host(&request) {
            Some(host) if is_local_host(host, access.bind) => next.run(request).await,
            Some(_) => refused(
                StatusCode::MISDIRECTED_REQUEST,
                "this status page answers only to localhost, loopback addresses and its bind address\n",
            ),
            None => refused(StatusCode::BAD_REQUEST, "bad request: no Host header\n"),
        },
    }
}

fn refused(status: StatusCode, text: &'static str) -> Response {
    let mut response = (status, text).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// The host a request names: the URI's authority (HTTP/2), else its only Host header.
fn request_host(request: &Request) -> Option<&str> {
    if let Some(authority) = request.uri().authority() {
        return Some(authority.as_str());
    }
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = hosts.next()?;
    if hosts.next().is_some() {
        return None;
    }
    host.to_str().ok()
}

/// `localhost` and `*.localhost` (RFC 6761: always loopback), loopback IPs, and the bind
/// address itself, with any port.
fn is_local_host(host: &str, bind: SocketAddr) -> bool {
    let Ok(authority) = host.trim().parse::<axum::http::uri::Authority>() else {
        return false;
    };
    let name = authority.host().trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    let ip = name.trim_start_matches('[').trim_end_matches(']');
    match ip.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip == bind.ip(),
        Err(_) => false,
    }
}

/// `?token=` of the request, if it has one.
fn query_token(request: &Request) -> Option<String> {
    let query = request.uri().query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == COOKIE)
        .map(|(_, value)| value.into_owned())
}

fn carries_token(headers: &HeaderMap, token: &AdminToken) -> bool {
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer "))
        .any(|offered| token.matches(offered.trim()));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .any(|(name, value)| name == COOKIE && token.matches(value));
    bearer || cookie
}

/// After `/?token=`: the cookie, and the same page without the token in its URL.
fn set_cookie_and_reload(token: &AdminToken, path: &str) -> Response {
    let cookie = format!(
        "{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
        token.expose()
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    if let Ok(location) = HeaderValue::from_str(path) {
        headers.insert(header::LOCATION, location);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_and_the_bind_address_are_local_hosts() {
        let bind: SocketAddr = "127.0.0.1:8081".parse().unwrap();
        for host in [
            "127.0.0.1:8081",
            "localhost:8081",
            "LOCALHOST",
            "status.localhost:8081",
            "[::1]:8081",
            "127.0.0.2",
        ] {
            assert!(is_local_host(host, bind), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8081",
            "localhost.evil.example",
            "10.0.0.1:8081",
            "",
        ] {
            assert!(!is_local_host(host, bind), "{host}");
        }
    }
}
