//! The overview: every queue with its jobs counted by state (one query: registered queues and
//! unregistered names holding live jobs, unserved ones flagged), throughput and failure rate over
//! the activity window, the oldest available job's wait, the last hour's completed and failed
//! jobs as a chart (from the queue statistics), and pause/resume.

use std::collections::BTreeMap;

use axum::Form;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use pgmill::JobState;
use pgmill::admin::{QueueActivity, QueueOverview, QueueStatParams};
use pgmill::driver::Driver;
use serde::Deserialize;

use super::charts::{self, Range};
use super::{Nav, Shell};
use crate::chart::Chart;
use crate::dashboard::AppState;
use crate::error::{Error, Result};
use crate::filter::JobFilter;
use crate::format;

/// The live states shown as columns, in order (counted by the core's queue list).
const LIVE: [JobState; 5] = [
    JobState::Available,
    JobState::Running,
    JobState::Scheduled,
    JobState::Retryable,
    JobState::Pending,
];

/// The final states shown as columns, counted within the activity window.
const FINISHED: [JobState; 3] = [
    JobState::Completed,
    JobState::Cancelled,
    JobState::Discarded,
];

/// One line of the queue table.
#[derive(Debug, Default)]
struct Line {
    /// Its live counts; `None` for a queue known only from recent outcomes.
    queue: Option<QueueOverview>,
    activity: Option<QueueActivity>,
}

impl Line {
    /// Jobs in a live state now.
    fn count(&self, state: JobState) -> i64 {
        self.queue
            .as_ref()
            .and_then(|q| q.counts.get(&state).copied())
            .unwrap_or(0)
    }

    /// Jobs that reached a final state within the window.
    fn finished(&self, state: JobState) -> i64 {
        self.activity.as_ref().map_or(0, |a| match state {
            JobState::Completed => a.completed,
            JobState::Cancelled => a.cancelled,
            JobState::Discarded => a.discarded,
            _ => 0,
        })
    }
}

/// `GET /`: the overview.
pub(crate) async fn page<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
) -> Result<Response> {
    let window = chrono::TimeDelta::from_std(app.settings.activity_window)
        .unwrap_or(chrono::TimeDelta::minutes(5));
    let last_hour = QueueStatParams::last_hour();
    let (queues, activity, leader, hour) = tokio::try_join!(
        app.client.queue_overview(),
        app.client.queue_activity(window),
        app.client.leader(),
        charts::stats_unless_unmigrated(&app.client, &last_hour),
    )?;
    let mut lines: BTreeMap<String, Line> = BTreeMap::new();
    for q in queues {
        let name = q.name.clone();
        lines.entry(name).or_default().queue = Some(q);
    }
    for a in activity {
        let name = a.queue.clone();
        lines.entry(name).or_default().activity = Some(a);
    }
    let unserved = lines
        .values()
        .filter(|l| l.queue.as_ref().is_some_and(QueueOverview::is_unserved))
        .count();
    let minutes = (window.num_seconds() as f64 / 60.0).max(1.0 / 60.0);
    let total = |s: JobState| lines.values().map(|l| l.count(s)).sum::<i64>();
    let done: i64 = lines
        .values()
        .filter_map(|l| l.activity.as_ref())
        .map(|a| a.completed)
        .sum();
    let failed: i64 = lines
        .values()
        .filter_map(|l| l.activity.as_ref())
        .map(|a| a.discarded)
        .sum();
    let window_label = if window.num_seconds().rem_euclid(60) == 0 {
        format!("{} min", window.num_minutes())
    } else {
        format::duration(window)
    };
    let rate = |n: i64| format!("{:.1}/min", n as f64 / minutes);
    let percent = |a: i64, b: i64| {
        if a + b == 0 {
            "—".to_owned()
        } else {
            format!("{:.1}%", 100.0 * b as f64 / (a + b) as f64)
        }
    };
    let jobs_link = |queue: &str, state: Option<JobState>| {
        let f = JobFilter {
            state,
            queue: Some(queue.to_owned()),
            kind: None,
        };
        shell.href(&format!("/jobs?{}", f.query_string(None)))
    };
    let fixed = html! {
        div.toolbar {
            span.note { "Throughput and failure rate over the last " (window_label) "." }
            span.spacer {}
            (shell.action("/queues/pause", &[("queue", "*")], "Pause all", "", Some("Pause every queue?")))
            (shell.action("/queues/resume", &[("queue", "*")], "Resume all", "", None))
        }
    };
    let live = html! {
        div.cards {
            div.card { div.label { "available" } div.value #total-available { (format::count(total(JobState::Available))) } }
            div.card { div.label { "running" } div.value { (format::count(total(JobState::Running))) } }
            div.card { div.label { "retryable" } div.value { (format::count(total(JobState::Retryable))) } }
            div.card { div.label { "discarded, " (window_label) } div.value { (format::count(failed)) } }
            div.card { div.label { "completed, " (window_label) } div.value { (rate(done)) } }
            div.card { div.label { "failure rate, " (window_label) } div.value { (percent(done, failed)) } }
            div.card {
                div.label { "unserved queues" }
                div.value #unserved-count .bad[unserved > 0] { (unserved) }
            }
            div.card {
                div.label { "leader" }
                div.value.small {
                    @match &leader {
                        Some(l) => a href=(shell.href("/clients")) { code { (l.leader_id) } },
                        None => span.badge.bad { "none" },
                    }
                }
            }
        }
        @if lines.is_empty() {
            div.empty { "No queue yet: a working client registers its queues, and inserted jobs show here." }
        } @else {
            table #queues {
                thead { tr {
                    th { "queue" } th { "status" }
                    @for s in LIVE { th.num { (s.as_str()) } }
                    th.num { "oldest wait" }
                    @for s in FINISHED { th.num title={ "within the last " (window_label) } { (s.as_str()) } }
                    th.num { "done/min" } th.num { "failed" } th {}
                } }
                tbody {
                    @for (name, line) in &lines {
                        @let queue = line.queue.as_ref();
                        @let paused = queue.is_some_and(|q| q.paused_at.is_some());
                        @let registered = queue.is_some_and(|q| q.registered);
                        @let unserved = queue.is_some_and(QueueOverview::is_unserved);
                        tr data-queue=(name) class=[unserved.then_some("unserved")] {
                            td {
                                a href=(jobs_link(name, None)) { code { (name) } }
                                " " a.chart-link href=(charts::link(&shell, Some(name), Range::Hour)) title={ "charts of " (name) } { "chart" }
                            }
                            td {
                                @if paused { span.badge.paused { "paused" } }
                                @else if registered { span.badge.active { "active" } }
                                @else { span.badge { "unregistered" } }
                                @if unserved {
                                    " " span.badge.bad title="it holds live jobs, and no live client works it: they wait until one starts" { "unserved" }
                                }
                            }
                            @for s in LIVE {
                                @if queue.is_some() {
                                    @let n = line.count(s);
                                    td.num.zero[n == 0] { a href=(jobs_link(name, Some(s))) { (format::count(n)) } }
                                } @else {
                                    td.num.zero { a href=(jobs_link(name, Some(s))) { "—" } }
                                }
                            }
                            td.num {
                                (queue.and_then(|q| q.oldest_available_age)
                                    .and_then(|d| chrono::TimeDelta::from_std(d).ok())
                                    .map_or_else(|| "—".to_owned(), format::duration))
                            }
                            @for s in FINISHED {
                                @let n = line.finished(s);
                                td.num.zero[n == 0] { a href=(jobs_link(name, Some(s))) { (format::count(n)) } }
                            }
                            td.num { (rate(line.finished(JobState::Completed))) }
                            td.num { (percent(line.finished(JobState::Completed), line.finished(JobState::Discarded))) }
                            td {
                                @if registered {
                                    @if paused {
                                        (shell.action("/queues/resume", &[("queue", name)], "Resume", "", None))
                                    } @else {
                                        (shell.action("/queues/pause", &[("queue", name)], "Pause", "", None))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        div.charts.overview-chart {
            @match &hour {
                Some(hour) => {
                    (Chart { wide: true, ..charts::throughput(hour, Range::Hour) }.render())
                    p.note { a href=(charts::link(&shell, None, Range::Hour)) { "All charts: depth by state, wait, per queue, last day →" } }
                }
                None => p.note #no-stats { (charts::UNMIGRATED) }
            }
        }
    };
    Ok(shell.page(Nav::Overview, "Overview", fixed, live))
}

/// The form of a queue action.
#[derive(Debug, Deserialize)]
pub(crate) struct QueueForm {
    queue: String,
}

/// `POST /queues/{pause|resume}`: pauses or resumes a queue (`*`: all) in every process.
pub(crate) async fn act<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Path(action): Path<String>,
    Form(form): Form<QueueForm>,
) -> Result<Response> {
    match action.as_str() {
        "pause" => app.client.queue_pause(&form.queue).await?,
        "resume" => app.client.queue_resume(&form.queue).await?,
        other => return Err(Error::NotFound(format!("no queue action {other:?}"))),
    };
    Ok(shell.back_to("/").into_response())
}
