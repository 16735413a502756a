//! The pages: each file renders one page (and handles its actions); this module holds the shell
//! every page is drawn in.

pub(crate) mod bulk;
pub(crate) mod charts;
pub(crate) mod clients;
pub(crate) mod dead;
pub(crate) mod job;
pub(crate) mod jobs;
pub(crate) mod overview;
pub(crate) mod periodic;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use maud::{DOCTYPE, Markup, html};
use pgmill::JobState;
use pgmill::driver::Driver;

use crate::assets::{SCRIPT_PATH, STYLE_PATH};
use crate::csrf::{CsrfToken, FIELD};
use crate::dashboard::AppState;
use crate::mount_path::MountPath;

/// The request header the live refresh sends; the answer is then the live part only.
const LIVE_HEADER: &str = "x-pgmill-live";

/// The sections of the navigation bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Overview,
    Charts,
    Jobs,
    Periodic,
    Dead,
    Clients,
}

/// What every page is drawn with: where the dashboard is mounted, the CSRF token for its forms,
/// whether actions are shown, and whether only the live part was asked for.
#[derive(Debug, Clone)]
pub(crate) struct Shell {
    pub(crate) mount: MountPath,
    csrf: String,
    pub(crate) read_only: bool,
    schema: String,
    refresh_ms: u128,
    live_only: bool,
}

impl<D: Driver> FromRequestParts<AppState<D>> for Shell {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState<D>,
    ) -> Result<Self, Self::Rejection> {
        let mount = MountPath::from_request_parts(parts, state).await?;
        let csrf = parts
            .extensions
            .get::<CsrfToken>()
            .map(|t| t.0.clone())
            .unwrap_or_default();
        Ok(Shell {
            mount,
            csrf,
            read_only: state.settings.read_only,
            schema: state.client.schema().name().to_owned(),
            refresh_ms: state.settings.refresh.as_millis(),
            live_only: parts.headers.contains_key(LIVE_HEADER),
        })
    }
}

impl Shell {
    /// The full path of a dashboard path.
    pub(crate) fn href(&self, path: &str) -> String {
        self.mount.to(path)
    }

    /// True when only the live part was asked for (the live refresh): what only the fixed part
    /// shows need not be read.
    pub(crate) fn is_live(&self) -> bool {
        self.live_only
    }

    /// A page: the whole document, or only its live part when the live refresh asked.
    pub(crate) fn page(&self, nav: Nav, title: &str, fixed: Markup, live: Markup) -> Response {
        if self.live_only {
            let mut response = Html(live.into_string()).into_response();
            response
                .headers_mut()
                .insert(LIVE_HEADER, HeaderValue::from_static("1"));
            return response;
        }
        let link = |n: Nav, path: &str, label: &str| {
            html! { a href=(self.href(path)) class=[(n == nav).then_some("active")] { (label) } }
        };
        let doc = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " · pgmill" }
                    link rel="stylesheet" href=(self.href(STYLE_PATH));
                    script src=(self.href(SCRIPT_PATH)) defer {}
                }
                body data-refresh-ms=(self.refresh_ms) {
                    header.top {
                        a.brand href=(self.href("/")) { "pgmill" }
                        nav {
                            (link(Nav::Overview, "/", "Overview"))
                            (link(Nav::Charts, "/charts", "Charts"))
                            (link(Nav::Jobs, "/jobs", "Jobs"))
                            (link(Nav::Periodic, "/periodic", "Periodic"))
                            (link(Nav::Dead, "/dead", "Dead letters"))
                            (link(Nav::Clients, "/clients", "Clients"))
                        }
                        div.meta {
                            span { "schema " code { (self.schema) } }
                            @if self.read_only { span.badge.readonly { "read-only" } }
                            @if self.refresh_ms > 0 { span #live-status .badge.live { "live" } }
                        }
                    }
                    main {
                        h1 { (title) }
                        (fixed)
                        div #live { (live) }
                    }
                }
            }
        };
        Html(doc.into_string()).into_response()
    }

    /// A button posting `fields` to `path` with the CSRF token; nothing in read-only mode.
    pub(crate) fn action(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        label: &str,
        class: &str,
        confirm: Option<&str>,
    ) -> Markup {
        if self.read_only {
            return html! {};
        }
        html! {
            form.inline method="post" action=(self.href(path)) data-confirm=[confirm] {
                input type="hidden" name=(FIELD) value=(self.csrf);
                @for (name, value) in fields {
                    input type="hidden" name=(name) value=(value);
                }
                button type="submit" class=(class) { (label) }
            }
        }
    }

    /// The answer to a finished action: back to `path` (a dashboard path).
    pub(crate) fn back_to(&self, path: &str) -> Redirect {
        Redirect::to(&self.href(path))
    }
}

/// A state as a coloured badge.
pub(crate) fn state_badge(state: JobState) -> Markup {
    html! { span class={ "badge " (state.as_str()) } { (state.as_str()) } }
}

/// A count cell, dimmed when zero.
pub(crate) fn count_cell(n: i64) -> Markup {
    html! { td.num.zero[n == 0] { (crate::format::count(n)) } }
}

/// The page for an error: a plain document (no shell, so it never fails itself).
pub(crate) fn error_page(status: StatusCode, message: &str) -> Response {
    let doc = html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (status.as_u16()) " · pgmill" } }
            body {
                main {
                    h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
                    p.error #error { (message) }
                }
            }
        }
    };
    (status, Html(doc.into_string())).into_response()
}
