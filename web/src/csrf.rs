//! CSRF protection by double-submit cookie: every page view makes sure the browser holds a
//! random token in a `SameSite=Strict` cookie and puts the same token in every form; every
//! state-changing request must send it back in the form (or the `X-Pgmill-Csrf` header), equal
//! to the cookie. Another site can neither read the cookie nor the page, so it cannot forge the
//! pair. Requests the browser marks as cross-site are refused outright.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::Error;
use crate::mount_path::MountPath;

/// The cookie holding the token.
const COOKIE: &str = "pgmill_csrf";
/// The form field holding the token.
pub(crate) const FIELD: &str = "_csrf";
/// The header that may hold the token instead of the form.
const HEADER: &str = "x-pgmill-csrf";
/// Bytes of randomness in a token (hex encoded, so twice as many characters).
const TOKEN_BYTES: usize = 32;
/// The largest form body an action may send.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// The request's CSRF token, for the forms of the page being rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CsrfToken(pub(crate) String);

impl CsrfToken {
    fn generate() -> Self {
        let bytes: [u8; TOKEN_BYTES] = rand::random();
        CsrfToken(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    fn is_well_formed(s: &str) -> bool {
        s.len() == TOKEN_BYTES * 2 && s.bytes().all(|b| b.is_ascii_hexdigit())
    }

    /// The token in the request's cookie, if well formed.
    fn from_cookie(headers: &HeaderMap) -> Option<Self> {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, value)| *name == COOKIE && Self::is_well_formed(value))
            .map(|(_, value)| CsrfToken(value.to_owned()))
    }
}

/// Compares two byte strings in time independent of where they differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token a form body carries in its `_csrf` field.
fn token_in_form(body: &[u8]) -> Option<&str> {
    std::str::from_utf8(body)
        .ok()?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == FIELD)
        .map(|(_, value)| value)
}

/// True when a request that changes something is safe to serve: not marked cross-site by the
/// browser, and carrying the cookie's token in its form or header.
fn verify(headers: &HeaderMap, body: &[u8]) -> Result<(), Error> {
    if headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site")
    {
        return Err(Error::Forbidden("cross-site request refused".into()));
    }
    let cookie = CsrfToken::from_cookie(headers)
        .ok_or_else(|| Error::Forbidden("missing CSRF cookie; reload the page".into()))?;
    let sent = headers
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .or_else(|| token_in_form(body))
        .ok_or_else(|| Error::Forbidden("missing CSRF token".into()))?;
    if constant_time_eq(sent.as_bytes(), cookie.0.as_bytes()) {
        Ok(())
    } else {
        Err(Error::Forbidden("wrong CSRF token; reload the page".into()))
    }
}

/// The middleware: hands pages their token (setting the cookie when the browser has none) and
/// refuses every other method unless [`verify`] passes.
pub(crate) async fn protect(mount: MountPath, request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        let (token, fresh) = match CsrfToken::from_cookie(request.headers()) {
            Some(t) => (t, false),
            None => (CsrfToken::generate(), true),
        };
        let mut request = request;
        request.extensions_mut().insert(token.clone());
        let mut response = next.run(request).await;
        if fresh {
            let cookie = format!(
                "{COOKIE}={}; Path={}; HttpOnly; SameSite=Strict",
                token.0,
                mount.cookie_path()
            );
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                response.headers_mut().append(header::SET_COOKIE, v);
            }
        }
        return response;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_FORM_BYTES).await else {
        return Error::BadRequest("form too large".into()).into_response();
    };
    if let Err(e) = verify(&parts.headers, &bytes) {
        return e.into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            format!("other=1; {COOKIE}={token}").parse().unwrap(),
        );
        h
    }

    #[test]
    fn only_the_cookies_own_token_passes() {
        let t = CsrfToken::generate();
        assert!(CsrfToken::is_well_formed(&t.0));
        assert_ne!(t, CsrfToken::generate());
        let h = with_cookie(&t.0);
        assert!(verify(&h, format!("queue=a&_csrf={}", t.0).as_bytes()).is_ok());
        assert!(verify(&h, b"queue=a").is_err());
        let other = CsrfToken::generate();
        assert!(verify(&h, format!("_csrf={}", other.0).as_bytes()).is_err());
        assert!(verify(&HeaderMap::new(), format!("_csrf={}", t.0).as_bytes()).is_err());
        let mut cross = h.clone();
        cross.insert("sec-fetch-site", "cross-site".parse().unwrap());
        assert!(verify(&cross, format!("_csrf={}", t.0).as_bytes()).is_err());
        let mut header = h.clone();
        header.insert(HEADER, t.0.parse().unwrap());
        assert!(verify(&header, b"").is_ok());
        assert!(CsrfToken::from_cookie(&with_cookie("short")).is_none());
    }

    #[test]
    fn comparison_needs_equal_length_and_bytes() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
