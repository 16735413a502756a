//! Where the dashboard is mounted: the path prefix an application nested its router under, so
//! links and cookies work at any mount point.

use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::request::Parts;
use std::convert::Infallible;

/// The path prefix of the dashboard (`""` at the root, `"/admin/jobs"` when nested there), with
/// no trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountPath(pub(crate) String);

impl MountPath {
    /// The prefix for a request whose full path is `original` and whose path inside the
    /// dashboard is `inner`.
    pub(crate) fn from_paths(original: &str, inner: &str) -> Self {
        let prefix = match original.strip_suffix(inner) {
            Some(p) => p,
            None if inner == "/" => original,
            None => "",
        };
        MountPath(prefix.trim_end_matches('/').to_owned())
    }

    /// The full path of a dashboard path (`to("/jobs")`).
    pub(crate) fn to(&self, path: &str) -> String {
        if path == "/" && !self.0.is_empty() {
            return self.0.clone();
        }
        format!("{}{path}", self.0)
    }

    /// The cookie path: the prefix, or `/` at the root.
    pub(crate) fn cookie_path(&self) -> &str {
        if self.0.is_empty() { "/" } else { &self.0 }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for MountPath {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let inner = parts.uri.path().to_owned();
        let original = parts
            .extensions
            .get::<OriginalUri>()
            .map_or_else(|| inner.clone(), |o| o.0.path().to_owned());
        Ok(MountPath::from_paths(&original, &inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_is_what_the_application_nested_under() {
        assert_eq!(MountPath::from_paths("/jobs", "/jobs").0, "");
        assert_eq!(MountPath::from_paths("/", "/").0, "");
        assert_eq!(
            MountPath::from_paths("/admin/q/jobs/7", "/jobs/7").0,
            "/admin/q"
        );
        assert_eq!(MountPath::from_paths("/admin/q", "/").0, "/admin/q");
        assert_eq!(MountPath::from_paths("/admin/q/", "/").0, "/admin/q");
        let m = MountPath("/admin".into());
        assert_eq!(m.to("/jobs"), "/admin/jobs");
        assert_eq!(m.to("/"), "/admin");
        assert_eq!(MountPath(String::new()).to("/"), "/");
        assert_eq!(m.cookie_path(), "/admin");
        assert_eq!(MountPath(String::new()).cookie_path(), "/");
    }
}
