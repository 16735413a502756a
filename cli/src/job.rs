//! `pgmill job`: look at jobs and act on one (cancel, retry, delete).

use clap::Subcommand;
use pgmill::admin::{JobListPage, JobListParams};
use pgmill::{JobId, JobRow, JobState};
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table};

/// The `job` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum JobCommand {
    /// Shows one job in full.
    Get {
        /// The job's id.
        id: i64,
    },
    /// Lists jobs in id order, filtered, one page at a time.
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
        /// Only jobs after this id: the cursor printed under the previous page.
        #[arg(long)]
        after: Option<i64>,
    },
    /// Cancels a job: at once when not running; a running job is told to stop.
    Cancel {
        /// The job's id.
        id: i64,
    },
    /// Makes a job that is not running available now (with one more attempt if it used them up).
    Retry {
        /// The job's id.
        id: i64,
    },
    /// Deletes a job that is not running.
    Delete {
        /// The job's id.
        id: i64,
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
        JobCommand::Get { id } => {
            let job = found(id, client.job_get(JobId(id)).await?)?;
            Ok(detail_output(&job, json))
        }
        JobCommand::List {
            state,
            queue,
            kind,
            limit,
            after,
        } => {
            let params = list_params(state, queue, kind, limit, after);
            Ok(list_output(&client.job_list(&params).await?, json))
        }
        JobCommand::Cancel { id } => {
            let job = found(id, client.job_cancel(JobId(id)).await?)?;
            let note = match job.state {
                JobState::Cancelled => "cancelled",
                JobState::Running => "running; its client was told to cancel it",
                _ => "already finished; left alone",
            };
            Ok(action_output(&job, note, json))
        }
        JobCommand::Retry { id } => {
            let job = found(id, client.job_retry(JobId(id)).await?)?;
            if job.state == JobState::Running {
                return Err(CliError::new(format!(
                    "job {id} is running; it cannot be retried until its attempt ends"
                )));
            }
            Ok(action_output(&job, "available again", json))
        }
        JobCommand::Delete { id } => match client.job_delete(JobId(id)).await? {
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

/// The listing parameters from the command-line filters.
pub(crate) fn list_params(
    states: Vec<JobState>,
    queues: Vec<String>,
    kinds: Vec<String>,
    limit: u32,
    after: Option<i64>,
) -> JobListParams {
    let mut params = JobListParams::new().limit(limit as usize);
    if !states.is_empty() {
        params = params.states(states);
    }
    if !queues.is_empty() {
        params = params.queues(queues);
    }
    if !kinds.is_empty() {
        params = params.kinds(kinds);
    }
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

fn time(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S").to_string()
}

fn list_output(page: &JobListPage, json: bool) -> Output {
    if json {
        return Output::Json(json!({
            "jobs": page.jobs.iter().map(job_json).collect::<Vec<_>>(),
            "next_cursor": page.next_cursor.map(|c| c.0),
        }));
    }
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
    for j in &page.jobs {
        table.row([
            j.id.to_string(),
            j.state.to_string(),
            j.queue.clone(),
            j.kind.clone(),
            format!("{}/{}", j.attempt, j.max_attempts),
            time(j.created_at),
            time(j.scheduled_at),
        ]);
    }
    match page.next_cursor {
        Some(cursor) => table.footer(format!("more jobs: --after {cursor}")),
        None if page.jobs.is_empty() => table.footer("no jobs"),
        None => {}
    }
    Output::Table(table)
}

fn detail_output(j: &JobRow, json: bool) -> Output {
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
        ("args", j.args.to_string()),
        ("metadata", j.metadata.to_string()),
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
        assert_eq!(p.states, Some(vec![JobState::Available]));
        assert_eq!(p.queues, Some(vec!["q".to_owned()]));
        assert_eq!(p.kinds, Some(vec!["k".to_owned()]));
        assert_eq!((p.limit, p.after), (Some(5), Some(JobId(7))));
    }
}
