//! The jobs page: newest first, filtered by state, queue and kind, in keyset pages; args only as
//! short previews; links to the bulk actions on the filter.

use axum::extract::{Query, State};
use axum::response::Response;
use maud::html;
use pgmill::JobState;
use pgmill::driver::Driver;

use super::{Nav, Shell, state_badge};
use crate::dashboard::AppState;
use crate::error::Result;
use crate::filter::{FilterQuery, JobFilter};
use crate::format;

/// Characters of args and of the last error a list row shows.
const PREVIEW_CHARS: usize = 160;

/// `GET /jobs?state=&queue=&kind=&before=`: a page of jobs.
pub(crate) async fn page<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Query(query): Query<FilterQuery>,
) -> Result<Response> {
    let page = query.parse()?;
    let filter = &page.filter;
    let mut params = filter
        .summary_params()
        .limit(app.settings.page_size)
        .preview_chars(PREVIEW_CHARS);
    if let Some(b) = page.before {
        params = params.before(b);
    }
    let jobs = app.client.job_list_newest(&params).await?;
    let with_state = |state: Option<JobState>| {
        let f = JobFilter {
            state,
            ..filter.clone()
        };
        shell.href(&format!("/jobs?{}", f.query_string(None)))
    };
    let fixed = html! {
        div.states {
            a href=(with_state(None)) class=[filter.state.is_none().then_some("active")] { "all" }
            @for s in JobState::ALL {
                a href=(with_state(Some(s))) class=[(filter.state == Some(s)).then_some("active")] { (s.as_str()) }
            }
        }
        form.filters method="get" action=(shell.href("/jobs")) {
            label { "state"
                select name="state" {
                    option value="" { "any" }
                    @for s in JobState::ALL {
                        option value=(s.as_str()) selected[filter.state == Some(s)] { (s.as_str()) }
                    }
                }
            }
            label { "queue" input type="text" name="queue" value=[filter.queue.as_deref()] placeholder="any"; }
            label { "kind" input type="text" name="kind" value=[filter.kind.as_deref()] placeholder="any"; }
            button.primary type="submit" { "Filter" }
            @if !filter.is_empty() { a.button href=(shell.href("/jobs")) { "Clear" } }
        }
        (super::bulk::links(&shell, filter))
    };
    let live = html! {
        @if jobs.jobs.is_empty() {
            div.empty { "No job matches " (filter.describe()) (if page.before.is_some() { " on this page" } else { "" }) "." }
        } @else {
            table #jobs {
                thead { tr {
                    th.num { "id" } th { "state" } th { "queue" } th { "kind" } th { "args" }
                    th.num { "attempt" } th { "created" } th { "scheduled / finalized" } th { "last error" }
                } }
                tbody {
                    @for j in &jobs.jobs {
                        tr data-job=(j.id) {
                            td.num { a href=(shell.href(&format!("/jobs/{}", j.id))) { (j.id) } }
                            td { (state_badge(j.state)) }
                            td { code { (j.queue) } }
                            td { code { (j.kind) } }
                            td.args.mono title=(j.args_preview) {
                                (j.args_preview)
                                @if j.args_truncated() { "…" }
                            }
                            td.num { (j.attempt) "/" (j.max_attempts) }
                            td { (format::timestamp(j.created_at)) }
                            td { (format::timestamp(j.finalized_at.unwrap_or(j.scheduled_at))) }
                            td.args { @if let Some(e) = &j.last_error { span title=(e) { (e) } } }
                        }
                    }
                }
            }
        }
        div.pager {
            @if page.before.is_some() {
                a.button href=(with_state(filter.state)) { "← Newest" }
            }
            @if let Some(cursor) = jobs.next_cursor {
                a.button #older href=(shell.href(&format!("/jobs?{}", filter.query_string(Some(cursor))))) { "Older →" }
            }
            span { (jobs.jobs.len()) " jobs shown, newest first" }
        }
    };
    Ok(shell.page(Nav::Jobs, "Jobs", fixed, live))
}
