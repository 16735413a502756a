//! The stylesheet and script, compiled into the binary and served with long caching (their URL
//! carries a version).

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

/// The stylesheet.
const STYLE: &str = include_str!("../assets/style.css");
/// The script: live refresh and confirmations.
const SCRIPT: &str = include_str!("../assets/dashboard.js");

/// The path of the stylesheet under the mount path; the version changes the URL on upgrade.
pub(crate) const STYLE_PATH: &str = concat!("/assets/style-", env!("CARGO_PKG_VERSION"), ".css");
/// The path of the script under the mount path.
pub(crate) const SCRIPT_PATH: &str =
    concat!("/assets/dashboard-", env!("CARGO_PKG_VERSION"), ".js");

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    response
}

/// `GET` the stylesheet.
pub(crate) async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

/// `GET` the script.
pub(crate) async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}
