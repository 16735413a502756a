//! The dead-letter page: the jobs that were discarded (their attempts used up, discarded by their
//! worker, rescued with no attempt left), newest first, filtered by queue and kind, each with why
//! and when; redrive and purge by job or by the filter, and what holds vacuum back.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use pgmill::JobId;
use pgmill::admin::{DeadCursor, DeadFilter, DeadListParams, VacuumHorizon};
use pgmill::driver::Driver;
use serde::Deserialize;

use super::{Nav, Shell};
use crate::dashboard::AppState;
use crate::error::{Error, Result};
use crate::format;

/// Longest queue or kind name accepted in a filter (the schema's limit).
const MAX_NAME_CHARS: usize = 128;

/// Characters of args and of the last error a row shows.
const PREVIEW_CHARS: usize = 160;

/// The query string of the dead-letter page: `?queue=&kind=&before_at=&before_id=`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct DeadQuery {
    #[serde(default)]
    queue: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    before_at: String,
    #[serde(default)]
    before_id: String,
}

/// A checked queue or kind filter: `None` when empty.
fn name(field: &str, value: &str) -> Result<Option<String>> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    if value.chars().count() > MAX_NAME_CHARS {
        return Err(Error::BadRequest(format!(
            "{field} filter is longer than {MAX_NAME_CHARS} characters"
        )));
    }
    Ok(Some(value.to_owned()))
}

/// The filter of the page (and of its actions): queue and kind, each optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Narrowed {
    queue: Option<String>,
    kind: Option<String>,
}

impl Narrowed {
    fn parse(queue: &str, kind: &str) -> Result<Self> {
        Ok(Narrowed {
            queue: name("queue", queue)?,
            kind: name("kind", kind)?,
        })
    }

    /// The core filter: no filter at all when neither is given.
    fn dead_filter(&self) -> DeadFilter {
        let mut f = DeadFilter::new();
        if let Some(q) = &self.queue {
            f = f.queues([q.clone()]);
        }
        if let Some(k) = &self.kind {
            f = f.kinds([k.clone()]);
        }
        f
    }

    fn query_string(&self, before: Option<DeadCursor>) -> String {
        let mut parts = Vec::new();
        let enc = crate::filter::encode;
        if let Some(q) = &self.queue {
            parts.push(format!("queue={}", enc(q)));
        }
        if let Some(k) = &self.kind {
            parts.push(format!("kind={}", enc(k)));
        }
        if let Some(c) = before {
            parts.push(format!(
                "before_at={}&before_id={}",
                enc(&c.dead_at.to_rfc3339()),
                c.id
            ));
        }
        parts.join("&")
    }

    fn describe(&self) -> String {
        match (&self.queue, &self.kind) {
            (None, None) => "the dead-letter queue".to_owned(),
            (Some(q), None) => format!("queue {q}"),
            (None, Some(k)) => format!("kind {k}"),
            (Some(q), Some(k)) => format!("queue {q}, kind {k}"),
        }
    }
}

/// `GET /dead?queue=&kind=&before_at=&before_id=`: a page of the dead-letter queue.
pub(crate) async fn page<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Query(query): Query<DeadQuery>,
) -> Result<Response> {
    let narrowed = Narrowed::parse(&query.queue, &query.kind)?;
    let before = match (query.before_at.trim(), query.before_id.trim()) {
        ("", "") => None,
        (at, id) => {
            let dead_at = DateTime::parse_from_rfc3339(at)
                .map_err(|_| Error::BadRequest("before_at is not a time".into()))?
                .with_timezone(&Utc);
            let id = id
                .parse()
                .map_err(|_| Error::BadRequest("before_id is not a job id".into()))?;
            Some(DeadCursor {
                dead_at,
                id: JobId(id),
            })
        }
    };
    let mut params = DeadListParams::new()
        .filter(narrowed.dead_filter())
        .limit(app.settings.page_size);
    if let Some(b) = before {
        params = params.before(b);
    }
    let dead = app.client.dead_list(&params).await?;
    let horizon = app.client.vacuum_horizon().await?;
    let filter_fields: Vec<(&str, &str)> = [
        ("queue", narrowed.queue.as_deref()),
        ("kind", narrowed.kind.as_deref()),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let (scope, scope_fields) = if filter_fields.is_empty() {
        ("every dead job", vec![("all", "1")])
    } else {
        ("the jobs this filter matches", filter_fields.clone())
    };
    let fixed = html! {
        form.filters method="get" action=(shell.href("/dead")) {
            label { "queue" input type="text" name="queue" value=[narrowed.queue.as_deref()] placeholder="any"; }
            label { "kind" input type="text" name="kind" value=[narrowed.kind.as_deref()] placeholder="any"; }
            button.primary type="submit" { "Filter" }
            @if narrowed != Narrowed::default() { a.button href=(shell.href("/dead")) { "Clear" } }
        }
        div.actions #dead-actions {
            (shell.action("/dead/redrive", &scope_fields, &format!("Redrive {scope}"), "primary",
                Some("Put these jobs back in their queues?")))
            (shell.action("/dead/purge", &scope_fields, &format!("Purge {scope}"), "danger",
                Some("Delete these jobs for good?")))
        }
    };
    let live = html! {
        (horizon_section(&horizon))
        @if dead.jobs.is_empty() {
            div.empty { "No dead job in " (narrowed.describe()) (if before.is_some() { " on this page" } else { "" }) "." }
        } @else {
            table #dead {
                thead { tr {
                    th.num { "id" } th { "queue" } th { "kind" } th { "reason" } th { "entered" }
                    th.num { "attempts" } th.num { "redriven" } th { "last error" } th {}
                } }
                tbody {
                    @for d in &dead.jobs {
                        @let last_error = d.job.errors.last().map(|e| format::cut(e.error.clone(), PREVIEW_CHARS).0);
                        tr data-job=(d.job.id) data-reason=(d.reason) {
                            td.num { a href=(shell.href(&format!("/jobs/{}", d.job.id))) { (d.job.id) } }
                            td { code { (d.job.queue) } }
                            td { code { (d.job.kind) } }
                            td { span.badge.discarded { (d.reason) } }
                            td { (format::timestamp(d.dead_at)) }
                            td.num { (d.job.attempt) " / " (d.job.max_attempts) }
                            td.num { (d.redrive_count) }
                            td.error { (last_error.unwrap_or_default()) }
                            td {
                                (shell.action("/dead/redrive", &[("id", &d.job.id.to_string())], "Redrive", "", None))
                                (shell.action("/dead/purge", &[("id", &d.job.id.to_string())], "Purge", "danger",
                                    Some("Delete this job for good?")))
                            }
                        }
                    }
                }
            }
            @if let Some(next) = dead.next_cursor {
                a.button #older href=(shell.href(&format!("/dead?{}", narrowed.query_string(Some(next))))) { "Older" }
            }
        }
    };
    Ok(shell.page(Nav::Dead, "Dead letters", fixed, live))
}

/// What holds vacuum back, when anything does: who, for how long, doing what.
pub(crate) fn horizon_section(horizon: &VacuumHorizon) -> Markup {
    html! {
        @if horizon.holders.is_empty() {
            div.horizon.quiet #horizon { "Nothing holds vacuum back." }
        } @else {
            div.horizon #horizon {
                h2 { "What holds vacuum back" }
                p {
                    "While one of these holds an old snapshot, vacuum removes no dead row of any table, and the job table's dead rows pile up. "
                    @if horizon.has_hidden_holders() {
                        "Some sessions belong to other roles: without pg_read_all_stats, when they started and what they do are hidden."
                    }
                }
                table #horizon-holders {
                    thead { tr {
                        th { "kind" } th { "holder" } th { "role" } th { "application" } th { "state" }
                        th.num { "held for" } th.num { "transactions old" }
                    } }
                    tbody {
                        @for h in &horizon.holders {
                            tr data-holder=(h.holder) {
                                td { (h.kind) }
                                td { code { (h.holder) } }
                                td { (h.role.as_deref().unwrap_or("—")) }
                                td { (h.application_name.as_deref().unwrap_or("—")) }
                                td { (h.state.as_deref().unwrap_or(if h.visible { "—" } else { "hidden" })) }
                                td.num {
                                    @match h.held_for {
                                        Some(d) => (format::duration(chrono::TimeDelta::from_std(d).unwrap_or_default())),
                                        None => "—",
                                    }
                                }
                                td.num { (format::count(h.xmin_age)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The form of a dead-letter action: one job, or the filter, or every job (`all`).
#[derive(Debug, Deserialize)]
pub(crate) struct DeadForm {
    #[serde(default)]
    id: Option<i64>,
    #[serde(default)]
    queue: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    all: Option<String>,
}

/// `POST /dead/{redrive|purge}`: redrives or purges one dead job, the jobs a filter matches, or
/// every dead job (`all`); a form with none of these is refused.
pub(crate) async fn act<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Path(action): Path<String>,
    Form(form): Form<DeadForm>,
) -> Result<Response> {
    let filter = match form.id {
        Some(id) => DeadFilter::new().ids([JobId(id)]),
        None => {
            let narrowed = Narrowed::parse(
                form.queue.as_deref().unwrap_or(""),
                form.kind.as_deref().unwrap_or(""),
            )?;
            if narrowed == Narrowed::default() {
                if form.all.is_some() {
                    DeadFilter::all()
                } else {
                    return Err(Error::BadRequest(
                        "a dead-letter action needs a job, a filter or all".into(),
                    ));
                }
            } else {
                narrowed.dead_filter()
            }
        }
    };
    match action.as_str() {
        "redrive" => {
            app.client.dead_redrive(&filter).await?;
        }
        "purge" => {
            app.client.dead_purge(&filter).await?;
        }
        other => return Err(Error::NotFound(format!("no dead-letter action {other:?}"))),
    }
    Ok(shell.back_to("/dead").into_response())
}
