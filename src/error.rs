//! What a request can fail with, and the one place that turns failures into status codes.
//! Clients see a short reason, never internal detail; the detail goes to the log, once.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("not found")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("database unavailable: {0}")]
    Unavailable(String),
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let (status, body) = match &self {
            Self::NotFound => (StatusCode::NOT_FOUND, "not found\n"),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
            Self::Unavailable(detail) => {
                tracing::warn!(error = %detail, "answering 503");
                (StatusCode::SERVICE_UNAVAILABLE, "temporarily unavailable\n")
            }
        };
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        match self {
            Self::MethodNotAllowed => {
                headers.insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            }
            Self::Unavailable(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            Self::NotFound => {}
        }
        response
    }
}
