//! The charts page: one queue or all queues over the last hour (a point a minute) or day (a
//! point a quarter hour): jobs completed and failed, jobs waiting and running by state, and how
//! long jobs wait. Drawn from the leader's queue statistics, never from the job table, so a page
//! reads a row or two per point whatever the number of jobs.

use axum::extract::{Query, State};
use axum::response::Response;
use chrono::TimeDelta;
use maud::{Markup, html};
use pgmill::JobState;
use pgmill::admin::{QueueStatParams, QueueStatPoint, QueueStats};
use pgmill::driver::Driver;
use serde::Deserialize;

use super::{Nav, Shell};
use crate::chart::{Chart, Series, Shape, Unit, bin_span, label};
use crate::dashboard::AppState;
use crate::error::{Error, Result};
use crate::format;

/// Most queues the page offers to choose from.
const MAX_QUEUES: usize = 200;

/// SQLSTATE of a missing table: the schema predates the queue statistics.
const UNDEFINED_TABLE: &str = "42P01";

/// What the dashboard says when the schema has no statistics table.
pub(crate) const UNMIGRATED: &str = "No charts: this schema predates the queue statistics. Run the \
     migrations (pgmill migrate up) to get them.";

/// The statistics, or `None` when the schema has no statistics table (not migrated yet): the
/// overview then goes without its chart rather than failing.
pub(crate) async fn stats_unless_unmigrated<D: Driver>(
    client: &pgmill::Client<D>,
    params: &QueueStatParams,
) -> pgmill::Result<Option<QueueStats>> {
    match client.queue_stats(params).await {
        Ok(stats) => Ok(Some(stats)),
        Err(e) if e.sqlstate() == Some(UNDEFINED_TABLE) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The query string: `?queue=&range=hour|day`; empty fields mean all queues, the last hour.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChartsQuery {
    #[serde(default)]
    queue: String,
    #[serde(default)]
    range: String,
}

/// The window a page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Range {
    Hour,
    Day,
}

impl Range {
    fn name(self) -> &'static str {
        match self {
            Range::Hour => "hour",
            Range::Day => "day",
        }
    }

    fn params(self) -> QueueStatParams {
        match self {
            Range::Hour => QueueStatParams::last_hour(),
            Range::Day => QueueStatParams::last_day(),
        }
    }

    /// "per minute", "per 15 minutes".
    fn per(self) -> &'static str {
        match self {
            Range::Hour => "per minute",
            Range::Day => "per 15 minutes",
        }
    }
}

impl ChartsQuery {
    fn parse(&self) -> Result<(Option<String>, Range)> {
        let range = match self.range.trim() {
            "" | "hour" => Range::Hour,
            "day" => Range::Day,
            other => {
                return Err(Error::BadRequest(format!(
                    "unknown range {other:?}: hour or day"
                )));
            }
        };
        let queue = match self.queue.trim() {
            "" => None,
            q => {
                QueueStatParams::last_hour()
                    .queue(q)
                    .map_err(|e| Error::BadRequest(e.to_string()))?;
                Some(q.to_owned())
            }
        };
        Ok((queue, range))
    }
}

/// The link to the charts of `queue` (all: `None`) over `range`.
pub(crate) fn link(shell: &Shell, queue: Option<&str>, range: Range) -> String {
    let mut query = format!("range={}", range.name());
    if let Some(q) = queue {
        // Queue names are ASCII letters, digits and _ - . : / (checked): only ':' and '/' are
        // reserved in a query value, and both are allowed there.
        query.push_str("&queue=");
        query.push_str(q);
    }
    shell.href(&format!("/charts?{query}"))
}

/// `GET /charts?queue=&range=`: the charts.
pub(crate) async fn page<D: Driver>(
    State(app): State<AppState<D>>,
    shell: Shell,
    Query(query): Query<ChartsQuery>,
) -> Result<Response> {
    let (queue, range) = query.parse()?;
    let mut params = range.params();
    if let Some(q) = &queue {
        params = params.queue(q.as_str())?;
    }
    let (stats, queues) = if shell.is_live() {
        (
            stats_unless_unmigrated(&app.client, &params).await?,
            Vec::new(),
        )
    } else {
        let queues = async {
            match app
                .client
                .queue_stat_queues(params.window(), MAX_QUEUES)
                .await
            {
                Err(e) if e.sqlstate() == Some(UNDEFINED_TABLE) => Ok(Vec::new()),
                other => other,
            }
        };
        tokio::try_join!(stats_unless_unmigrated(&app.client, &params), queues)?
    };
    let title = match &queue {
        Some(q) => format!("Charts · {q}"),
        None => "Charts".to_owned(),
    };
    let fixed = html! {
        div.toolbar {
            div.states {
                @for r in [Range::Hour, Range::Day] {
                    a href=(link(&shell, queue.as_deref(), r)) class=[(r == range).then_some("active")] {
                        "last " (r.name())
                    }
                }
            }
            span.spacer {}
            span.note { "Times in UTC. With the default settings a minute shows up 15 to 25 s after it ends." }
        }
        div.states #chart-queues {
            a href=(link(&shell, None, range)) class=[queue.is_none().then_some("active")] { "all queues" }
            @for q in &queues {
                a href=(link(&shell, Some(q), range)) class=[(queue.as_deref() == Some(q.as_str())).then_some("active")] { (q) }
            }
        }
    };
    let live = match &stats {
        Some(stats) => html! {
            (summary(stats))
            div.charts {
                (throughput(stats, range).render())
                (depth(stats, range).render())
                (wait(stats, range).render())
            }
        },
        None => html! { div.notice #no-stats { (UNMIGRATED) } },
    };
    Ok(shell.page(Nav::Charts, &title, fixed, live))
}

/// Totals over the window.
fn summary(stats: &QueueStats) -> Markup {
    let sum = |f: fn(&QueueStatPoint) -> i64| stats.points.iter().map(f).sum::<i64>();
    let peak_waiting = stats
        .points
        .iter()
        .map(|p| p.depth_of(JobState::Available))
        .max()
        .unwrap_or(0);
    let worst_p95 = stats.points.iter().filter_map(|p| p.pickup_p95).max();
    let worst_wait = stats.points.iter().filter_map(|p| p.oldest_available).max();
    let duration = |d: Option<std::time::Duration>| {
        d.and_then(|d| TimeDelta::from_std(d).ok())
            .map_or_else(|| "—".to_owned(), format::duration)
    };
    html! {
        div.cards #chart-summary {
            div.card { div.label { "completed" } div.value #sum-completed { (format::count(sum(|p| p.completed))) } }
            div.card { div.label { "failed" } div.value #sum-failed .bad[sum(QueueStatPoint::failed) > 0] { (format::count(sum(QueueStatPoint::failed))) } }
            div.card { div.label { "discarded" } div.value { (format::count(sum(|p| p.discarded))) } }
            div.card { div.label { "retried" } div.value { (format::count(sum(|p| p.retried))) } }
            div.card { div.label { "most available" } div.value { (format::count(peak_waiting)) } }
            div.card { div.label { "longest wait" } div.value { (duration(worst_wait)) } }
            div.card { div.label { "worst pickup p95" } div.value { (duration(worst_p95)) } }
        }
    }
}

/// The bins' starts and width.
fn bins(stats: &QueueStats) -> (Vec<chrono::DateTime<chrono::Utc>>, TimeDelta) {
    let bin = TimeDelta::from_std(stats.bin).unwrap_or(TimeDelta::minutes(1));
    (stats.points.iter().map(|p| p.at).collect(), bin)
}

/// What a bin with nothing recorded says.
const NOT_WRITTEN: &str = "no statistics recorded (not yet, or no leader then)";

/// Completed and failed (discarded and retried) jobs per bin.
pub(crate) fn throughput(stats: &QueueStats, range: Range) -> Chart {
    let (bins, bin) = bins(stats);
    #[allow(clippy::cast_precision_loss)]
    let values = |f: fn(&QueueStatPoint) -> i64| -> Vec<Option<f64>> {
        stats
            .points
            .iter()
            .map(|p| p.covered.then(|| f(p) as f64))
            .collect()
    };
    let tooltips = stats
        .points
        .iter()
        .map(|p| {
            let span = bin_span(p.at, bin);
            if p.covered {
                format!(
                    "{span}\ncompleted {}\nfailed {}: discarded {}, retried {}\ncancelled {}",
                    format::count(p.completed),
                    format::count(p.failed()),
                    format::count(p.discarded),
                    format::count(p.retried),
                    format::count(p.cancelled)
                )
            } else {
                format!("{span}\n{NOT_WRITTEN}")
            }
        })
        .collect();
    Chart {
        id: "throughput",
        title: format!("Completed and failed jobs, {}", range.per()),
        shape: Shape::Lines,
        unit: Unit::Count,
        bins,
        bin,
        series: vec![
            Series {
                key: "completed".into(),
                label: "completed".into(),
                values: values(|p| p.completed),
            },
            Series {
                key: "failed".into(),
                label: "failed (discarded and retried)".into(),
                values: values(QueueStatPoint::failed),
            },
        ],
        tooltips,
        empty_note: "No statistics yet: the leader writes each minute's once it has ended.".into(),
        wide: false,
    }
}

/// The live states drawn, in stacking order: every state a job is in before it finishes.
fn live_states() -> impl Iterator<Item = JobState> {
    JobState::ALL.into_iter().filter(|s| !s.is_final())
}

/// Live jobs by state, sampled in each bin.
pub(crate) fn depth(stats: &QueueStats, range: Range) -> Chart {
    let (bins, bin) = bins(stats);
    #[allow(clippy::cast_precision_loss)]
    let series = live_states()
        .map(|s| Series {
            key: s.as_str().into(),
            label: s.as_str().into(),
            values: stats
                .points
                .iter()
                .map(|p| p.depth.as_ref().map(|_| p.depth_of(s) as f64))
                .collect(),
        })
        .collect();
    let tooltips = stats
        .points
        .iter()
        .map(|p| {
            let span = bin_span(p.at, bin);
            match &p.depth {
                Some(_) => {
                    let lines: Vec<String> = live_states()
                        .map(|s| format!("{} {}", s.as_str(), format::count(p.depth_of(s))))
                        .collect();
                    format!("{span}\n{}", lines.join("\n"))
                }
                None => format!("{span}\nno sample"),
            }
        })
        .collect();
    Chart {
        id: "depth",
        title: match range {
            Range::Hour => "Jobs waiting and running, by state".to_owned(),
            Range::Day => {
                "Jobs waiting and running, by state (the most in each 15 minutes)".to_owned()
            }
        },
        shape: Shape::StackedBars,
        unit: Unit::Count,
        bins,
        bin,
        series,
        tooltips,
        empty_note: "No sample yet: the leader samples each queue once a minute.".into(),
        wide: false,
    }
}

/// How long the oldest available job had waited, and the 95th percentile of the pickup wait
/// (drawn across the page, under the other two).
pub(crate) fn wait(stats: &QueueStats, range: Range) -> Chart {
    let (bins, bin) = bins(stats);
    let secs = |d: std::time::Duration| d.as_secs_f64();
    let tooltips = stats
        .points
        .iter()
        .map(|p| {
            let span = bin_span(p.at, bin);
            let oldest = p
                .oldest_available
                .map_or_else(|| "no sample".to_owned(), |d| label(secs(d), Unit::Seconds));
            let p95 = match p.pickup_p95 {
                Some(d) if p.covered => format!(
                    "{} ({} picked up)",
                    label(secs(d), Unit::Seconds),
                    format::count(p.pickup_count)
                ),
                _ if p.covered => "none picked up".to_owned(),
                _ => NOT_WRITTEN.to_owned(),
            };
            format!("{span}\noldest available {oldest}\npickup p95 {p95}")
        })
        .collect();
    Chart {
        id: "wait",
        title: match range {
            Range::Hour => "Wait: oldest available job, and pickup p95".to_owned(),
            Range::Day => {
                "Wait: oldest available job, and pickup p95 (the worst in each 15 minutes)"
                    .to_owned()
            }
        },
        shape: Shape::Lines,
        unit: Unit::Seconds,
        bins,
        bin,
        series: vec![
            Series {
                key: "oldest".into(),
                label: "oldest available job".into(),
                values: stats
                    .points
                    .iter()
                    .map(|p| p.oldest_available.map(secs))
                    .collect(),
            },
            Series {
                key: "p95".into(),
                label: "pickup p95".into(),
                values: stats
                    .points
                    .iter()
                    .map(|p| p.pickup_p95.filter(|_| p.covered).map(secs))
                    .collect(),
            },
        ],
        tooltips,
        empty_note: "No statistics yet.".into(),
        wide: true,
    }
}
