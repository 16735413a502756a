//! pgmill's web dashboard: an [axum] [`Router`](axum::Router) to look at and act on a pgmill
//! schema: queues, jobs, periodic schedules, clients and the leader.
//!
//! Mount it under a path of your choice, over a [`pgmill::Client`] on any driver (a client that
//! works no queue is enough; the dashboard only uses its operator API):
//!
//! ```no_run
//! # async fn run<D: pgmill::driver::Driver>(client: pgmill::Client<D>) -> std::io::Result<()> {
//! let dashboard = pgmill_web::Dashboard::new(client).router();
//! let app = axum::Router::new().nest("/pgmill", dashboard);
//! axum::serve(tokio::net::TcpListener::bind("127.0.0.1:3000").await?, app).await
//! # }
//! ```
//!
//! or run it on its own with `pgmill serve --listen 127.0.0.1:8080`.
//!
//! # Pages
//!
//! | page | shows | actions |
//! |------|-------|---------|
//! | overview | queues with counts by state, throughput and failure rate over the last minutes, oldest available wait, paused and unserved queues, and the last hour's completed and failed jobs as a chart | pause/resume a queue or all |
//! | charts | one queue or all over the last hour or day: completed and failed jobs, jobs waiting and running by state, the oldest available job's wait and the pickup p95, as charts (from the leader's queue statistics, never the job table) | |
//! | jobs | newest first, filtered by state, queue and kind, keyset pages | bulk retry/cancel/delete of the filter, after a confirmation with the count |
//! | job | args and metadata pretty-printed (cut when huge), every attempt's error, timings | retry, cancel, delete |
//! | periodic | schedules with next and last run, counts, failure streak | pause/resume |
//! | clients | every registered client (live or presumed dead, heartbeat age, host, pid, queues) and the leader with its term | |
//!
//! Pages are rendered on the server with escaping throughout, charts as SVG; a small embedded
//! script refreshes the live part of each page (charts included) every few seconds without
//! reloading it. The stylesheet and script
//! are compiled into the binary: nothing to build besides cargo.
//!
//! # Safety
//!
//! - Optional authentication: a bearer token or basic auth ([`Auth`]).
//! - A read-only mode ([`Dashboard::read_only`]) hides every action and refuses every request
//!   that would change something.
//! - Every state-changing request must carry the CSRF token of a double-submit cookie, and is
//!   refused when the browser says it comes from another site.
//! - Filters reach SQL only as bound parameters; list pages carry args only as short previews.
//! - Responses carry a strict content security policy (scripts and styles from the dashboard
//!   only) and are never framed.

mod assets;
mod auth;
mod chart;
mod csrf;
mod dashboard;
mod error;
mod filter;
mod format;
mod mount_path;
mod pages;

pub use auth::Auth;
pub use dashboard::Dashboard;
pub use error::{Error, Result};
