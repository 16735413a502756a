//! The dashboard's error: what a request can fail with, and the error page it turns into.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Why a dashboard request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The database or the engine refused or failed.
    #[error(transparent)]
    Pgmill(#[from] pgmill::Error),
    /// No such page, job or schedule.
    #[error("not found: {0}")]
    NotFound(String),
    /// A malformed request (a bad filter or form field).
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The request may not be served: read-only mode, or a missing or wrong CSRF token.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// A setting given to the dashboard is invalid.
    #[error("invalid dashboard setting: {0}")]
    InvalidSetting(String),
}

/// The dashboard's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The HTTP status the error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::Pgmill(e) if e.as_database().is_some() => StatusCode::SERVICE_UNAVAILABLE,
            Error::Pgmill(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::BadRequest(_) | Error::InvalidSetting(_) => StatusCode::BAD_REQUEST,
            Error::Forbidden(_) => StatusCode::FORBIDDEN,
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(error = %self, "dashboard request failed");
        }
        crate::pages::error_page(status, &self.to_string()).into_response()
    }
}
