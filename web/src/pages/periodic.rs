//! The periodic page: every durable schedule with its next run (on the wall clock of its time
//! zone) and last run, statistics and failure streak, and pause/resume.

use axum::Form;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use pgmill::driver::Driver;
use serde::Deserialize;

use super::{Nav, Shell, count_cell};
use crate::dashboard::AppState;
use crate::error::{Error, Result};
use crate::format;

/// `GET /periodic`: the schedules.
pub(crate) async fn page<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
) -> Result<Response> {
    let schedules = app.client.periodic_list().await?;
    let live = html! {
        @if schedules.is_empty() {
            div.empty { "No periodic job registered: a client built with periodic jobs registers them when it starts." }
        } @else {
            table #periodic {
                thead { tr {
                    th { "name" } th { "schedule" } th { "status" } th { "next run" } th { "last run" }
                    th { "last job" } th.num { "runs" } th.num { "succeeded" } th.num { "failed" }
                    th.num { "failing in a row" } th { "last success" } th { "last failure" } th {}
                } }
                tbody {
                    @for p in &schedules {
                        tr data-periodic=(p.name) {
                            td { code { (p.name) } }
                            td { code { (p.schedule) } }
                            td {
                                @if p.paused { span.badge.paused { "paused" } }
                                @else { span.badge.active { "active" } }
                            }
                            td.next-run title=(format::timestamp(p.next_run_at)) {
                                (format::next_run(p))
                            }
                            td { (format::maybe_timestamp(p.last_run_at)) }
                            td {
                                @if let Some(id) = p.last_job_id {
                                    a href=(shell.href(&format!("/jobs/{id}"))) { "#" (id) }
                                } @else { "—" }
                            }
                            (count_cell(p.run_count))
                            (count_cell(p.success_count))
                            (count_cell(p.failure_count))
                            td.num {
                                @if p.consecutive_failures > 0 {
                                    span.badge.bad { (p.consecutive_failures) }
                                } @else { span.zero { "0" } }
                            }
                            td { (format::maybe_timestamp(p.last_success_at)) }
                            td { (format::maybe_timestamp(p.last_failure_at)) }
                            td {
                                @if p.paused {
                                    (shell.action("/periodic/resume", &[("name", &p.name)], "Resume", "", None))
                                } @else {
                                    (shell.action("/periodic/pause", &[("name", &p.name)], "Pause", "", None))
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(shell.page(Nav::Periodic, "Periodic jobs", html! {}, live))
}

/// The form of a periodic action.
#[derive(Debug, Deserialize)]
pub(crate) struct PeriodicForm {
    name: String,
}

/// `POST /periodic/{pause|resume}`: pauses or resumes a schedule.
pub(crate) async fn act<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Path(action): Path<String>,
    Form(form): Form<PeriodicForm>,
) -> Result<Response> {
    let found = match action.as_str() {
        "pause" => app.client.periodic_pause(&form.name).await?,
        "resume" => app.client.periodic_resume(&form.name).await?,
        other => return Err(Error::NotFound(format!("no periodic action {other:?}"))),
    };
    if !found {
        return Err(Error::NotFound(format!("no periodic job {:?}", form.name)));
    }
    Ok(shell.back_to("/periodic").into_response())
}
