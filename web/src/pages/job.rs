//! The job page: everything about one job (args and metadata pretty-printed and cut when huge,
//! every attempt's error, timings), and retry, cancel, delete.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use pgmill::driver::Driver;
use pgmill::{JobId, JobState};

use super::{Nav, Shell, state_badge};
use crate::dashboard::AppState;
use crate::error::{Error, Result};
use crate::format;

fn pretty(value: &serde_json::Value, id: &str) -> Markup {
    let (text, cut) = format::pretty_json(value);
    html! {
        pre id=(id) { (text) }
        @if cut {
            p.note { "Cut at " (format::count(format::MAX_PRETTY_BYTES as i64)) " bytes of pretty-printed JSON." }
        }
    }
}

/// `GET /jobs/{id}`: one job.
pub(crate) async fn page<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Path(id): Path<i64>,
) -> Result<Response> {
    let job = app
        .client
        .job_get(JobId(id))
        .await?
        .ok_or_else(|| Error::NotFound(format!("no job {id}")))?;
    let path = |action: &str| format!("/jobs/{}/{action}", job.id);
    let live = html! {
        div.toolbar {
            (state_badge(job.state))
            span.spacer {}
            @if job.state != JobState::Running {
                (shell.action(&path("retry"), &[], "Retry", "primary", None))
            }
            @if !job.state.is_final() {
                (shell.action(&path("cancel"), &[], "Cancel", "", Some("Cancel this job?")))
            }
            @if job.state != JobState::Running {
                (shell.action(&path("delete"), &[], "Delete", "danger", Some("Delete this job for good?")))
            }
        }
        div.grid2 {
            div {
                h2 { "Job" }
                dl.props {
                    dt { "state" } dd #job-state { (job.state.as_str()) }
                    dt { "queue" } dd { code { (job.queue) } }
                    dt { "kind" } dd { code { (job.kind) } }
                    dt { "priority" } dd { (job.priority) }
                    dt { "attempt" } dd { (job.attempt) " of " (job.max_attempts) }
                    dt { "tags" } dd { @if job.tags.is_empty() { "—" } @else { @for t in &job.tags { span.badge { (t) } " " } } }
                    dt { "attempted by" } dd { @if job.attempted_by.is_empty() { "—" } @else { code { (job.attempted_by.join(", ")) } } }
                }
            }
            div {
                h2 { "Timings" }
                dl.props {
                    dt { "created" } dd { (format::timestamp(job.created_at)) }
                    dt { "scheduled" } dd { (format::timestamp(job.scheduled_at)) }
                    dt { "attempted" } dd { (format::maybe_timestamp(job.attempted_at)) }
                    dt { "finalized" } dd { (format::maybe_timestamp(job.finalized_at)) }
                    dt { "waited" } dd { (format::between(Some(job.scheduled_at), job.attempted_at)) }
                    dt { "last attempt ran" } dd { (format::between(job.attempted_at, job.finalized_at)) }
                    dt { "created to finalized" } dd { (format::between(Some(job.created_at), job.finalized_at)) }
                }
            }
        }
        h2 { "Errors (" (job.errors.len()) ")" }
        @if job.errors.is_empty() {
            div.empty { "No error recorded." }
        } @else {
            table #errors {
                thead { tr { th.num { "attempt" } th { "at" } th { "panic" } th { "error" } } }
                tbody {
                    @for e in job.errors.iter().rev() {
                        tr {
                            td.num { (e.attempt) }
                            td { (format::timestamp(e.at)) }
                            td { @if e.panic { span.badge.bad { "panic" } } @else { "no" } }
                            td { pre { (format::cut(e.error.clone(), format::MAX_PRETTY_BYTES).0) } }
                        }
                    }
                }
            }
        }
        h2 { "Args" }
        (pretty(&job.args, "args"))
        h2 { "Metadata" }
        (pretty(&job.metadata, "metadata"))
    };
    let title = format!("Job {}", job.id);
    Ok(shell.page(Nav::Jobs, &title, html! {}, live))
}

/// `POST /jobs/{id}/{retry|cancel|delete}`: acts on one job, then shows it (or the list once
/// deleted).
pub(crate) async fn act<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Path((id, action)): Path<(i64, String)>,
) -> Result<Response> {
    let id = JobId(id);
    let missing = || Error::NotFound(format!("no job {id}"));
    match action.as_str() {
        "retry" => {
            let job = app.client.job_retry(id).await?.ok_or_else(missing)?;
            if job.state == JobState::Running {
                return Err(Error::BadRequest(format!("job {id} is running")));
            }
        }
        "cancel" => {
            app.client.job_cancel(id).await?.ok_or_else(missing)?;
        }
        "delete" => {
            if app.client.job_delete(id).await?.is_none() {
                return Err(match app.client.job_get(id).await? {
                    Some(_) => Error::BadRequest(format!("job {id} is running; cancel it first")),
                    None => missing(),
                });
            }
            return Ok(shell.back_to("/jobs").into_response());
        }
        other => return Err(Error::NotFound(format!("no job action {other:?}"))),
    }
    Ok(shell.back_to(&format!("/jobs/{id}")).into_response())
}
