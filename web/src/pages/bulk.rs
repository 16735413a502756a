//! Bulk actions on the jobs page's filter: a confirmation page that shows how many jobs the
//! action would change, then the action itself, run in batches by the core's bulk API.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use pgmill::admin::BulkAction;
use pgmill::driver::Driver;

use super::{Nav, Shell};
use crate::dashboard::AppState;
use crate::error::{Error, Result};
use crate::filter::{FilterQuery, JobFilter};
use crate::format;

/// Jobs changed per statement of a bulk action.
const BATCH: usize = 500;

/// The bulk actions, by the name their paths carry, with the verb their buttons show.
const ACTIONS: [(&str, BulkAction, &str); 3] = [
    ("retry", BulkAction::Retry, "Retry"),
    ("cancel", BulkAction::Cancel, "Cancel"),
    ("delete", BulkAction::Delete, "Delete"),
];

fn action(name: &str) -> Result<(BulkAction, &'static str)> {
    ACTIONS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, a, verb)| (*a, *verb))
        .ok_or_else(|| Error::NotFound(format!("no bulk action {name:?}")))
}

/// The links to the bulk actions on `filter`, for the jobs page; nothing in read-only mode.
pub(crate) fn links(shell: &Shell, filter: &JobFilter) -> maud::Markup {
    if shell.read_only {
        return html! {};
    }
    let query = filter.query_string(None);
    html! {
        div.toolbar.bulk {
            span.note { "All jobs matching " (filter.describe()) ":" }
            @for (name, _, verb) in ACTIONS {
                a.button data-bulk=(name) href=(shell.href(&format!("/jobs/bulk/{name}?{query}"))) { (verb) "…" }
            }
        }
    }
}

/// `GET /jobs/bulk/{action}?state=&queue=&kind=`: how many jobs the action would change, and
/// the button that does it.
pub(crate) async fn confirm<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Path(name): Path<String>,
    Query(query): Query<FilterQuery>,
) -> Result<Response> {
    let (bulk, verb) = action(&name)?;
    if shell.read_only {
        return Err(Error::Forbidden("the dashboard is read-only".into()));
    }
    let filter = query.parse()?.filter;
    let n = app
        .client
        .job_bulk_count(bulk, &filter.list_params())
        .await?;
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    let states: Vec<&str> = bulk.states().iter().map(|s| s.as_str()).collect();
    let back = shell.href(&format!("/jobs?{}", filter.query_string(None)));
    let mut fields: Vec<(&str, &str)> = Vec::new();
    if let Some(s) = filter.state {
        fields.push(("state", s.as_str()));
    }
    if let Some(q) = &filter.queue {
        fields.push(("queue", q));
    }
    if let Some(k) = &filter.kind {
        fields.push(("kind", k));
    }
    let label = format!("{verb} {} jobs", format::count(n));
    let fixed = html! {
        div.confirm #confirm {
            p { (verb) " every job matching " strong { (filter.describe()) } " that is " (states.join(", ")) ":" }
            p.count #bulk-count data-count=(n) { (format::count(n)) " jobs" }
            div.toolbar {
                @if n > 0 {
                    (shell.action(&format!("/jobs/bulk/{name}"), &fields, &label, if bulk == BulkAction::Delete { "danger" } else { "primary" }, None))
                } @else {
                    span.note { "Nothing to do." }
                }
                a.button href=(back) { "Back" }
            }
        }
    };
    let title = format!("{verb} jobs");
    Ok(shell.page(Nav::Jobs, &title, fixed, html! {}))
}

/// `POST /jobs/bulk/{action}` with the filter's fields: applies the action to every matching job,
/// batch by batch, then shows the filtered list.
pub(crate) async fn act<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Path(name): Path<String>,
    Form(form): Form<FilterQuery>,
) -> Result<Response> {
    let (bulk, _) = action(&name)?;
    let filter = form.parse()?.filter;
    let mut params = filter.list_params().limit(BATCH);
    let mut changed = 0;
    loop {
        let batch = app.client.job_bulk(bulk, &params).await?;
        changed += batch.changed;
        match batch.next_cursor {
            Some(cursor) => params = params.after(cursor),
            None => break,
        }
    }
    tracing::info!(action = name, filter = %filter.describe(), changed, "bulk action from the dashboard");
    Ok(shell
        .back_to(&format!("/jobs?{}", filter.query_string(None)))
        .into_response())
}
