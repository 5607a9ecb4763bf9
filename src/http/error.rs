//! What a request can fail with, and the one place that turns failures into status codes.
//! Clients see a short reason, never internal detail; the detail, with every cause, goes to the
//! log here, once.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::answer::AnswerError;
use crate::error::Chain;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("not found")]
    NotFound,
    /// HTTP/1.1 without a Host header, or with more than one (RFC 9112, section 3.2).
    #[error("bad Host header")]
    BadHost,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("could not answer")]
    Unavailable(#[source] std::io::Error),
    #[error("not ready")]
    NotReady(#[source] StoreError),
    #[error("the first sweep is under way")]
    FirstSweep,
}

impl From<AnswerError> for HttpError {
    fn from(e: AnswerError) -> Self {
        match e {
            AnswerError::NotFound => Self::NotFound,
            AnswerError::Unavailable(cause) => Self::Unavailable(cause),
            AnswerError::FirstSweep => Self::FirstSweep,
        }
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let (status, body) = match &self {
            Self::NotFound => (StatusCode::NOT_FOUND, "not found\n"),
            Self::BadHost => (
                StatusCode::BAD_REQUEST,
                "bad request: exactly one Host header is required\n",
            ),
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n"),
            Self::FirstSweep => (
                StatusCode::SERVICE_UNAVAILABLE,
                "starting: the first sweep of the database is under way\n",
            ),
            Self::Unavailable(_) | Self::NotReady(_) => {
                tracing::warn!(error = %Chain(&self), "answering 503");
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
            Self::Unavailable(_) | Self::NotReady(_) | Self::FirstSweep => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            Self::NotFound | Self::BadHost => {}
        }
        response
    }
}
