//! Optional authentication: a bearer token or HTTP basic auth, checked on every request.

use std::fmt;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use crate::csrf::constant_time_eq;
use crate::error::{Error, Result};

/// How requests to the dashboard authenticate. Without one, anyone who can reach the address
/// can use the dashboard (it binds to localhost by default for that reason).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth {
    /// Every request carries `Authorization: Bearer <token>` (for a proxy in front, or scripts).
    Bearer(String),
    /// HTTP basic auth with this user name and password (browsers ask for it).
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
}

impl Auth {
    /// Bearer-token auth.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] for an empty token.
    pub fn bearer(token: impl Into<String>) -> Result<Self> {
        let token = token.into();
        if token.trim().is_empty() {
            return Err(Error::InvalidSetting("the bearer token is empty".into()));
        }
        Ok(Auth::Bearer(token))
    }

    /// Basic auth.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSetting`] for an empty user name or password, or a user name with `:`.
    pub fn basic(username: impl Into<String>, password: impl Into<String>) -> Result<Self> {
        let (username, password) = (username.into(), password.into());
        if username.is_empty() || password.is_empty() || username.contains(':') {
            return Err(Error::InvalidSetting(
                "basic auth needs a user name without ':' and a non-empty password".into(),
            ));
        }
        Ok(Auth::Basic { username, password })
    }

    /// Basic auth from `user:password`.
    ///
    /// # Errors
    ///
    /// As [`Auth::basic`], or when there is no `:`.
    pub fn parse_basic(user_password: &str) -> Result<Self> {
        let (user, password) = user_password.split_once(':').ok_or_else(|| {
            Error::InvalidSetting("basic auth must be given as user:password".into())
        })?;
        Auth::basic(user, password)
    }

    /// True when the request's `Authorization` header satisfies this auth.
    pub(crate) fn accepts(&self, headers: &HeaderMap) -> bool {
        let Some(given) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return false;
        };
        let (scheme, credentials) = given.split_once(' ').unwrap_or((given, ""));
        match self {
            Auth::Bearer(token) => {
                scheme.eq_ignore_ascii_case("bearer")
                    && constant_time_eq(credentials.trim().as_bytes(), token.as_bytes())
            }
            Auth::Basic { username, password } => {
                let expected = format!("{username}:{password}");
                scheme.eq_ignore_ascii_case("basic")
                    && base64::engine::general_purpose::STANDARD
                        .decode(credentials.trim())
                        .is_ok_and(|d| constant_time_eq(&d, expected.as_bytes()))
            }
        }
    }

    fn challenge(&self) -> &'static str {
        match self {
            Auth::Bearer(_) => "Bearer realm=\"pgmill\"",
            Auth::Basic { .. } => "Basic realm=\"pgmill\", charset=\"UTF-8\"",
        }
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Bearer(_) => f.write_str("Auth::Bearer(***)"),
            Auth::Basic { username, .. } => write!(f, "Auth::Basic({username}:***)"),
        }
    }
}

/// The middleware: answers 401 with a challenge unless the request authenticates.
pub(crate) async fn require_auth(
    State(auth): State<Option<Auth>>,
    request: Request,
    next: Next,
) -> Response {
    match auth {
        Some(auth) if !auth.accepts(request.headers()) => {
            let mut response =
                (StatusCode::UNAUTHORIZED, "authentication required").into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(auth.challenge()),
            );
            response
        }
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, authorization.parse().unwrap());
        h
    }

    #[test]
    fn bearer_and_basic_accept_only_their_credentials() {
        let bearer = Auth::bearer("s3cret").unwrap();
        assert!(bearer.accepts(&headers("Bearer s3cret")));
        assert!(bearer.accepts(&headers("bearer s3cret")));
        assert!(!bearer.accepts(&headers("Bearer s3cre")));
        assert!(!bearer.accepts(&headers("Basic s3cret")));
        assert!(!bearer.accepts(&HeaderMap::new()));
        let basic = Auth::parse_basic("ops:pa:ss").unwrap();
        let good = base64::engine::general_purpose::STANDARD.encode("ops:pa:ss");
        let bad = base64::engine::general_purpose::STANDARD.encode("ops:pass");
        assert!(basic.accepts(&headers(&format!("Basic {good}"))));
        assert!(!basic.accepts(&headers(&format!("Basic {bad}"))));
        assert!(!basic.accepts(&headers("Basic !!!")));
        assert!(Auth::bearer(" ").is_err());
        assert!(Auth::parse_basic("nopassword").is_err());
        assert!(Auth::basic("", "x").is_err());
        assert_eq!(format!("{basic:?}"), "Auth::Basic(ops:***)");
    }
}
