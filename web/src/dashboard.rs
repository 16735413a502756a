//! The dashboard: its settings and the router that serves it.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use pgmill::Client;
use pgmill::driver::Driver;

use crate::auth::{Auth, require_auth};
use crate::error::Error;
use crate::{assets, csrf, pages};

/// How often pages refresh their live part unless set.
const DEFAULT_REFRESH: Duration = Duration::from_secs(2);
/// The window of the overview's throughput and failure rate unless set.
const DEFAULT_ACTIVITY_WINDOW: Duration = Duration::from_secs(5 * 60);
/// Jobs per page of the jobs list unless set.
const DEFAULT_PAGE_SIZE: usize = 50;

/// The web dashboard over one client's schema.
///
/// Build it with [`Dashboard::new`], adjust it, and turn it into an axum router with
/// [`Dashboard::router`]; nest that router under any path.
///
/// # Examples
///
/// A read-only dashboard behind basic auth, mounted at `/admin/jobs`:
///
/// ```no_run
/// # fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) -> pgmill_web::Result<()> {
/// let dashboard = pgmill_web::Dashboard::new(client)
///     .read_only(true)
///     .auth(pgmill_web::Auth::basic("ops", "a long password")?);
/// let app: axum::Router = axum::Router::new().nest("/admin/jobs", dashboard.router());
/// # let _ = app;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Dashboard<D: Driver> {
    client: Client<D>,
    settings: Settings,
}

/// What every request of one dashboard shares.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Actions hidden and refused.
    pub(crate) read_only: bool,
    /// Authentication, if any.
    pub(crate) auth: Option<Auth>,
    /// Live refresh period; zero turns it off.
    pub(crate) refresh: Duration,
    /// The window of throughput and failure rate.
    pub(crate) activity_window: Duration,
    /// Jobs per page.
    pub(crate) page_size: usize,
}

/// The state handlers see.
#[derive(Debug)]
pub(crate) struct AppState<D: Driver> {
    /// The client whose operator API the dashboard uses.
    pub(crate) client: Client<D>,
    /// The settings.
    pub(crate) settings: Arc<Settings>,
}

impl<D: Driver> Clone for AppState<D> {
    fn clone(&self) -> Self {
        AppState {
            client: self.client.clone(),
            settings: Arc::clone(&self.settings),
        }
    }
}

impl<D: Driver> Dashboard<D> {
    /// A dashboard over `client`'s schema: actions on, no authentication, live refresh every 2 s,
    /// throughput over the last 5 minutes, 50 jobs per page. The client need not be started; a
    /// client that works no queue is enough.
    pub fn new(client: Client<D>) -> Self {
        Dashboard {
            client,
            settings: Settings {
                read_only: false,
                auth: None,
                refresh: DEFAULT_REFRESH,
                activity_window: DEFAULT_ACTIVITY_WINDOW,
                page_size: DEFAULT_PAGE_SIZE,
            },
        }
    }

    /// Read-only mode: pages show no actions, and every request that would change something is
    /// refused with 403. Defaults to `false`.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.settings.read_only = read_only;
        self
    }

    /// Requires this authentication on every request. Defaults to none.
    pub fn auth(mut self, auth: Auth) -> Self {
        self.settings.auth = Some(auth);
        self
    }

    /// How often pages refresh their live part; `Duration::ZERO` turns live refresh off.
    /// Defaults to 2 s.
    pub fn refresh_interval(mut self, every: Duration) -> Self {
        self.settings.refresh = every;
        self
    }

    /// The window over which the overview reports throughput and failure rate. Defaults to
    /// 5 minutes.
    pub fn activity_window(mut self, window: Duration) -> Self {
        self.settings.activity_window = window;
        self
    }

    /// Jobs per page of the jobs list (1 to 500). Defaults to 50.
    pub fn page_size(mut self, jobs: usize) -> Self {
        self.settings.page_size = jobs.clamp(1, 500);
        self
    }

    /// The axum router serving the dashboard; nest it under any path.
    pub fn router(self) -> Router {
        let auth = self.settings.auth.clone();
        let read_only = self.settings.read_only;
        let state = AppState {
            client: self.client,
            settings: Arc::new(self.settings),
        };
        Router::new()
            .route("/", get(pages::overview::page::<D>))
            .route("/charts", get(pages::charts::page::<D>))
            .route("/jobs", get(pages::jobs::page::<D>))
            .route(
                "/jobs/bulk/{action}",
                get(pages::bulk::confirm::<D>).post(pages::bulk::act::<D>),
            )
            .route("/jobs/{id}", get(pages::job::page::<D>))
            .route("/jobs/{id}/{action}", post(pages::job::act::<D>))
            .route("/queues/{action}", post(pages::overview::act::<D>))
            .route("/periodic", get(pages::periodic::page::<D>))
            .route("/periodic/{action}", post(pages::periodic::act::<D>))
            .route("/dead", get(pages::dead::page::<D>))
            .route("/dead/{action}", post(pages::dead::act::<D>))
            .route("/clients", get(pages::clients::page::<D>))
            .route(assets::STYLE_PATH, get(assets::style))
            .route(assets::SCRIPT_PATH, get(assets::script))
            .fallback(not_found)
            .with_state(state)
            .layer(middleware::from_fn(csrf::protect))
            .layer(middleware::from_fn_with_state(read_only, refuse_writes))
            .layer(middleware::from_fn(security_headers))
            .layer(middleware::from_fn_with_state(auth, require_auth))
    }
}

async fn not_found() -> Error {
    Error::NotFound("no such page".into())
}

/// In read-only mode, refuses every method but GET and HEAD.
async fn refuse_writes(
    axum::extract::State(read_only): axum::extract::State<bool>,
    request: Request,
    next: Next,
) -> Response {
    if read_only && !matches!(*request.method(), Method::GET | Method::HEAD) {
        return Error::Forbidden("the dashboard is read-only".into()).into_response();
    }
    next.run(request).await
}

/// Headers every response carries: scripts and styles from the dashboard only, never framed,
/// never cached (assets set their own caching).
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
