//! `pgmill job`: look at jobs, and act on one or on every job a filter matches (cancel, retry,
//! delete).

use std::io::{BufRead, IsTerminal, Write};

use clap::{Args, Subcommand};
use pgmill::admin::{
    BulkAction, JobFilter, JobListPage, JobListParams, JobSummaryPage, JobSummaryParams,
};
use pgmill::{Client, JobId, JobRow, JobState};
use pgmill_driver_tokio_postgres::TokioPostgresDriver;
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table, time};

/// Characters of args or metadata `job get` shows unless `--full`.
const SHOWN_CHARS: usize = 2_000;

/// Jobs changed per statement by a bulk action.
const BULK_BATCH: u32 = 500;

/// The filter of a bulk action, and its confirmation.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct BulkFilter {
    /// Every job in these states (repeat or separate with commas), instead of one id.
    #[arg(long, value_delimiter = ',', value_parser = parse_state)]
    state: Vec<JobState>,
    /// Every job in these queues (repeat or separate with commas), instead of one id.
    #[arg(long, value_delimiter = ',')]
    queue: Vec<String>,
    /// Every job of these kinds (repeat or separate with commas), instead of one id.
    #[arg(long, value_delimiter = ',')]
    kind: Vec<String>,
    /// Do it without asking (the count is still printed first).
    #[arg(long, short = 'y')]
    yes: bool,
}

impl BulkFilter {
    fn is_empty(&self) -> bool {
        self.state.is_empty() && self.queue.is_empty() && self.kind.is_empty()
    }
}

/// The `job` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum JobCommand {
    /// Shows one job (args and metadata longer than 2,000 characters cut, unless `--full`).
    Get {
        /// The job's id.
        id: i64,
        /// Shows args and metadata whole.
        #[arg(long)]
        full: bool,
    },
    /// Lists jobs, newest first (`--oldest`: in id order), filtered, one page at a time.
    List {
        /// Only jobs in these states (repeat or separate with commas).
        #[arg(long, value_delimiter = ',', value_parser = parse_state)]
        state: Vec<JobState>,
        /// Only jobs in these queues (repeat or separate with commas).
        #[arg(long, value_delimiter = ',')]
        queue: Vec<String>,
        /// Only jobs of these kinds (repeat or separate with commas).
        #[arg(long, value_delimiter = ',')]
        kind: Vec<String>,
        /// Page size.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Oldest first, in id order.
        #[arg(long, conflicts_with = "before")]
        oldest: bool,
        /// Only jobs older than this id (newest first): the cursor printed under the previous page.
        #[arg(long)]
        before: Option<i64>,
        /// Only jobs after this id (oldest first): the cursor printed under the previous page.
        #[arg(long, conflicts_with = "before")]
        after: Option<i64>,
    },
    /// Cancels a job (at once when not running; a running job is told to stop), or every job a
    /// filter matches.
    Cancel {
        /// The job's id.
        #[arg(required_unless_present_any = ["state", "queue", "kind"], conflicts_with_all = ["state", "queue", "kind"])]
        id: Option<i64>,
        #[command(flatten)]
        filter: BulkFilter,
    },
    /// Makes a job that is not running available now (with one more attempt if it used them up),
    /// or every job a filter matches.
    Retry {
        /// The job's id.
        #[arg(required_unless_present_any = ["state", "queue", "kind"], conflicts_with_all = ["state", "queue", "kind"])]
        id: Option<i64>,
        #[command(flatten)]
        filter: BulkFilter,
    },
    /// Deletes a job that is not running, or every job a filter matches.
    Delete {
        /// The job's id.
        #[arg(required_unless_present_any = ["state", "queue", "kind"], conflicts_with_all = ["state", "queue", "kind"])]
        id: Option<i64>,
        #[command(flatten)]
        filter: BulkFilter,
    },
}

/// Parses a job state name (`available`, `completed`, ...).
///
/// # Errors
///
/// An unknown name, listing the known ones.
pub(crate) fn parse_state(s: &str) -> Result<JobState, String> {
    s.parse::<JobState>().map_err(|_| {
        let known: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
        format!("unknown state {s:?}; one of {}", known.join(", "))
    })
}

/// Runs one `job` subcommand.
///
/// # Errors
///
/// A missing job, a job in the wrong state for the action, the connection or database error.
pub(crate) async fn run(command: JobCommand, ctx: &CommandContext) -> Result<Output, CliError> {
    let client = ctx.client().await?;
    let json = ctx.json;
    match command {
        JobCommand::Get { id, full } => {
            let job = found(id, client.job_get(JobId(id)).await?)?;
            Ok(detail_output(&job, json, full))
        }
        JobCommand::List {
            state,
            queue,
            kind,
            limit,
            oldest,
            before,
            after,
        } => {
            if oldest || after.is_some() {
                let params = list_params(state, queue, kind, limit, after);
                return Ok(list_output(&client.job_list(&params).await?, json));
            }
            let params = newest_params(state, queue, kind, limit, before);
            Ok(newest_output(&client.job_list_newest(&params).await?, json))
        }
        JobCommand::Cancel { id: None, filter } => {
            bulk(&client, BulkAction::Cancel, filter, json).await
        }
        JobCommand::Retry { id: None, filter } => {
            bulk(&client, BulkAction::Retry, filter, json).await
        }
        JobCommand::Delete { id: None, filter } => {
            bulk(&client, BulkAction::Delete, filter, json).await
        }
        JobCommand::Cancel { id: Some(id), .. } => {
            let job = found(id, client.job_cancel(JobId(id)).await?)?;
            let note = match job.state {
                JobState::Cancelled => "cancelled",
                JobState::Running => "running; its client was told to cancel it",
                _ => "already finished; left alone",
            };
            Ok(action_output(&job, note, json))
        }
        JobCommand::Retry { id: Some(id), .. } => {
            let job = found(id, client.job_retry(JobId(id)).await?)?;
            if job.state == JobState::Running {
                return Err(CliError::new(format!(
                    "job {id} is running; it cannot be retried until its attempt ends"
                )));
            }
            Ok(action_output(&job, "available again", json))
        }
        JobCommand::Delete { id: Some(id), .. } => match client.job_delete(JobId(id)).await? {
            Some(job) => Ok(action_output(&job, "deleted", json)),
            None => match client.job_get(JobId(id)).await? {
                Some(job) => Err(CliError::new(format!(
                    "job {id} is {}; a running job cannot be deleted (cancel it first)",
                    job.state
                ))),
                None => Err(not_found(id)),
            },
        },
    }
}

/// What a bulk action is called in messages: the verb, and its past.
fn verbs(action: BulkAction) -> (&'static str, &'static str) {
    match action {
        BulkAction::Retry => ("retry", "retried"),
        BulkAction::Cancel => ("cancel", "cancelled"),
        _ => ("delete", "deleted"),
    }
}

/// Applies `action` to every job `filter` matches: the count first (on stderr), a confirmation
/// unless `--yes`, then batch by batch with progress on stderr.
///
/// # Errors
///
/// No confirmation to be had (stdin not a terminal, no `--yes`), the database error (the batches
/// before it stay done).
async fn bulk(
    client: &Client<TokioPostgresDriver>,
    action: BulkAction,
    filter: BulkFilter,
    json: bool,
) -> Result<Output, CliError> {
    let (verb, done_verb) = verbs(action);
    if filter.is_empty() {
        return Err(CliError::new(format!(
            "give a job id, or a filter (--state, --queue, --kind) to {verb} every job it matches"
        )));
    }
    let yes = filter.yes;
    let mut params = list_params(filter.state, filter.queue, filter.kind, BULK_BATCH, None);
    let total = client.job_bulk_count(action, &params).await?;
    if total == 0 {
        return Ok(bulk_output(verb, done_verb, 0, 0, json));
    }
    let mut stderr = std::io::stderr();
    let _ = writeln!(stderr, "{total} job(s) to {verb}");
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(CliError::new(format!(
                "{total} job(s) match; pass --yes to {verb} them (no terminal to ask on)"
            )));
        }
        let _ = write!(stderr, "{verb} {total} job(s)? [y/N] ");
        let _ = stderr.flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            return Err(CliError::new(format!("nothing done: {verb} not confirmed")));
        }
    }
    let progress = stderr.is_terminal();
    let mut changed = 0;
    loop {
        let batch = client.job_bulk(action, &params).await?;
        changed += batch.changed;
        if progress {
            let _ = write!(stderr, "\r{done_verb} {changed}/{total}");
            let _ = stderr.flush();
        }
        match batch.next_cursor {
            Some(cursor) => params = params.after(cursor),
            None => break,
        }
    }
    if progress {
        let _ = writeln!(stderr);
    }
    Ok(bulk_output(verb, done_verb, total, changed, json))
}

fn bulk_output(verb: &str, done_verb: &str, matched: u64, changed: u64, json: bool) -> Output {
    if json {
        return Output::Json(json!({"action": verb, "matched": matched, "changed": changed}));
    }
    Output::Text(format!("{done_verb} {changed} job(s) of {matched} matched"))
}

/// The newest-first listing parameters from the command-line filters.
pub(crate) fn newest_params(
    states: Vec<JobState>,
    queues: Vec<String>,
    kinds: Vec<String>,
    limit: u32,
    before: Option<i64>,
) -> JobSummaryParams {
    let mut params = JobSummaryParams::new()
        .filter(job_filter(states, queues, kinds))
        .limit(limit as usize);
    params.before = before.map(JobId);
    params
}

fn newest_output(page: &JobSummaryPage, json: bool) -> Output {
    if json {
        let jobs: Vec<_> = page
            .jobs
            .iter()
            .map(|j| {
                json!({
                    "id": j.id.0,
                    "state": j.state.as_str(),
                    "queue": j.queue,
                    "kind": j.kind,
                    "args_preview": j.args_preview,
                    "args_truncated": j.args_truncated(),
                    "priority": j.priority,
                    "attempt": j.attempt,
                    "max_attempts": j.max_attempts,
                    "created_at": j.created_at.to_rfc3339(),
                    "scheduled_at": j.scheduled_at.to_rfc3339(),
                    "error_count": j.error_count,
                    "tags": j.tags,
                })
            })
            .collect();
        return Output::Json(json!({"jobs": jobs, "next_cursor": page.next_cursor.map(|c| c.0)}));
    }
    let mut table = jobs_table(page.jobs.iter().map(|j| JobLine {
        id: j.id,
        state: j.state,
        queue: &j.queue,
        kind: &j.kind,
        attempt: (j.attempt, j.max_attempts),
        created_at: j.created_at,
        scheduled_at: j.scheduled_at,
    }));
    match page.next_cursor {
        Some(cursor) => table.footer(format!("older jobs: --before {cursor}")),
        None if page.jobs.is_empty() => table.footer("no jobs"),
        None => {}
    }
    Output::Table(table)
}

/// `text`, cut to [`SHOWN_CHARS`] unless `full`, saying how much was left out.
fn shown(text: String, full: bool) -> String {
    let chars = text.chars().count();
    if full || chars <= SHOWN_CHARS {
        return text;
    }
    let cut: String = text.chars().take(SHOWN_CHARS).collect();
    format!("{cut}... ({chars} characters; --full shows all)")
}

/// The command-line filters; an empty list filters nothing.
fn job_filter(states: Vec<JobState>, queues: Vec<String>, kinds: Vec<String>) -> JobFilter {
    let mut filter = JobFilter::new();
    if !states.is_empty() {
        filter = filter.states(states);
    }
    if !queues.is_empty() {
        filter = filter.queues(queues);
    }
    if !kinds.is_empty() {
        filter = filter.kinds(kinds);
    }
    filter
}

/// The listing parameters from the command-line filters.
pub(crate) fn list_params(
    states: Vec<JobState>,
    queues: Vec<String>,
    kinds: Vec<String>,
    limit: u32,
    after: Option<i64>,
) -> JobListParams {
    let mut params = JobListParams::new()
        .filter(job_filter(states, queues, kinds))
        .limit(limit as usize);
    if let Some(after) = after {
        params = params.after(JobId(after));
    }
    params
}

fn not_found(id: i64) -> CliError {
    CliError::new(format!("job {id} not found"))
}

fn found(id: i64, job: Option<JobRow>) -> Result<JobRow, CliError> {
    job.ok_or_else(|| not_found(id))
}

/// The JSON of one job.
pub(crate) fn job_json(j: &JobRow) -> serde_json::Value {
    let errors: Vec<_> = j
        .errors
        .iter()
        .map(|e| json!({"attempt": e.attempt, "at": e.at.to_rfc3339(), "error": e.error, "panic": e.panic}))
        .collect();
    json!({
        "id": j.id.0,
        "state": j.state.as_str(),
        "queue": j.queue,
        "kind": j.kind,
        "args": j.args,
        "metadata": j.metadata,
        "priority": j.priority,
        "attempt": j.attempt,
        "max_attempts": j.max_attempts,
        "attempted_at": j.attempted_at.map(|t| t.to_rfc3339()),
        "attempted_by": j.attempted_by,
        "created_at": j.created_at.to_rfc3339(),
        "scheduled_at": j.scheduled_at.to_rfc3339(),
        "finalized_at": j.finalized_at.map(|t| t.to_rfc3339()),
        "errors": errors,
        "tags": j.tags,
    })
}

/// One line of a job listing, from either kind of page.
struct JobLine<'a> {
    id: JobId,
    state: JobState,
    queue: &'a str,
    kind: &'a str,
    attempt: (i16, i16),
    created_at: chrono::DateTime<chrono::Utc>,
    scheduled_at: chrono::DateTime<chrono::Utc>,
}

fn jobs_table<'a>(jobs: impl Iterator<Item = JobLine<'a>>) -> Table {
    let mut table = Table::new([
        "ID",
        "STATE",
        "QUEUE",
        "KIND",
        "ATTEMPT",
        "CREATED_AT",
        "SCHEDULED_AT",
    ])
    .right_align([0, 4]);
    for j in jobs {
        table.row([
            j.id.to_string(),
            j.state.to_string(),
            j.queue.to_owned(),
            j.kind.to_owned(),
            format!("{}/{}", j.attempt.0, j.attempt.1),
            time(j.created_at),
            time(j.scheduled_at),
        ]);
    }
    table
}

fn list_output(page: &JobListPage, json: bool) -> Output {
    if json {
        return Output::Json(json!({
            "jobs": page.jobs.iter().map(job_json).collect::<Vec<_>>(),
            "next_cursor": page.next_cursor.map(|c| c.0),
        }));
    }
    let mut table = jobs_table(page.jobs.iter().map(|j| JobLine {
        id: j.id,
        state: j.state,
        queue: &j.queue,
        kind: &j.kind,
        attempt: (j.attempt, j.max_attempts),
        created_at: j.created_at,
        scheduled_at: j.scheduled_at,
    }));
    match page.next_cursor {
        Some(cursor) => table.footer(format!("more jobs: --after {cursor}")),
        None if page.jobs.is_empty() => table.footer("no jobs"),
        None => {}
    }
    Output::Table(table)
}

fn detail_output(j: &JobRow, json: bool, full: bool) -> Output {
    if json {
        return Output::Json(job_json(j));
    }
    let opt = |t: Option<chrono::DateTime<chrono::Utc>>| t.map(time).unwrap_or_else(|| "-".into());
    let mut lines = vec![
        ("id", j.id.to_string()),
        ("state", j.state.to_string()),
        ("queue", j.queue.clone()),
        ("kind", j.kind.clone()),
        ("priority", j.priority.to_string()),
        ("attempt", format!("{} of {}", j.attempt, j.max_attempts)),
        ("created_at", time(j.created_at)),
        ("scheduled_at", time(j.scheduled_at)),
        ("attempted_at", opt(j.attempted_at)),
        ("attempted_by", j.attempted_by.join(", ")),
        ("finalized_at", opt(j.finalized_at)),
        ("tags", j.tags.join(", ")),
        ("args", shown(j.args.to_string(), full)),
        ("metadata", shown(j.metadata.to_string(), full)),
    ];
    for e in &j.errors {
        let panic = if e.panic { " (panic)" } else { "" };
        lines.push((
            "error",
            format!(
                "attempt {} at {}{panic}: {}",
                e.attempt,
                time(e.at),
                e.error
            ),
        ));
    }
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    let text = lines
        .iter()
        .map(|(k, v)| {
            format!("{:<width$} {v}", format!("{k}:"))
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n");
    Output::Text(text)
}

fn action_output(j: &JobRow, note: &str, json: bool) -> Output {
    if json {
        return Output::Json(job_json(j));
    }
    Output::Text(format!(
        "job {} ({}, queue {}): {note}; state {}",
        j.id, j.kind, j.queue, j.state
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_parse_by_name_and_unknown_ones_list_the_choices() {
        assert_eq!(parse_state("completed"), Ok(JobState::Completed));
        let err = parse_state("done").unwrap_err();
        assert!(
            err.contains("available") && err.contains("discarded"),
            "{err}"
        );
    }

    #[test]
    fn long_text_is_cut_unless_full() {
        let long = "x".repeat(SHOWN_CHARS + 10);
        let cut = shown(long.clone(), false);
        assert!(cut.starts_with(&"x".repeat(SHOWN_CHARS)));
        assert!(cut.ends_with(&format!(
            "... ({} characters; --full shows all)",
            SHOWN_CHARS + 10
        )));
        assert_eq!(shown(long.clone(), true), long);
        assert_eq!(shown("short".into(), false), "short");
    }

    #[test]
    fn empty_filters_are_left_out_of_the_listing() {
        let p = list_params(vec![], vec![], vec![], 10, None);
        assert_eq!(p, JobListParams::new().limit(10));
        let p = list_params(
            vec![JobState::Available],
            vec!["q".into()],
            vec!["k".into()],
            5,
            Some(7),
        );
        assert_eq!(p.filter.states, Some(vec![JobState::Available]));
        assert_eq!(p.filter.queues, Some(vec!["q".to_owned()]));
        assert_eq!(p.filter.kinds, Some(vec!["k".to_owned()]));
        assert_eq!((p.limit, p.after), (Some(5), Some(JobId(7))));
    }
}
