//! `pgmill queue`: list queues with their job counts (and the unserved ones, whose jobs no live
//! client works), pause and resume them everywhere.

use clap::Subcommand;
use pgmill::JobState;
use pgmill::admin::{QueueRow, UnknownKindJobs, UnservedQueue};
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table};

/// The `queue` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum QueueCommand {
    /// Lists the queues producers registered, with their jobs counted by state.
    List,
    /// Lists the queues holding live jobs that no live client works (a typo, a queue whose
    /// workers are gone, rows inserted by hand), with their jobs counted by state.
    Unserved,
    /// Lists jobs waiting in queues that live clients work whose kind none of those clients has
    /// a worker for (never claimed: they wait for a client that knows the kind), by queue and
    /// kind, among the first thousand due jobs of each queue.
    UnknownKinds,
    /// Pauses a queue in every process (`*`: every queue); running jobs finish.
    Pause {
        /// The queue, or `*`.
        name: String,
        /// Register the queue paused if it does not exist yet (no client registered it and it
        /// holds no live jobs), so its producers start paused.
        #[arg(long)]
        create: bool,
    },
    /// Resumes a paused queue in every process (`*`: every queue).
    Resume {
        /// The queue, or `*`.
        name: String,
    },
}

/// The states shown as columns of `queue list`, in order.
const COUNTED: [JobState; 5] = [
    JobState::Available,
    JobState::Scheduled,
    JobState::Pending,
    JobState::Running,
    JobState::Retryable,
];

/// Runs one `queue` subcommand.
///
/// # Errors
///
/// An invalid queue name, the connection error, or the database error.
pub(crate) async fn run(command: QueueCommand, ctx: &CommandContext) -> Result<Output, CliError> {
    let client = ctx.client().await?;
    match command {
        QueueCommand::List => {
            let queues = client.queue_list().await?;
            let unserved = client.queue_list_unserved().await?;
            Ok(list_output(&queues, &unserved, ctx.json))
        }
        QueueCommand::UnknownKinds => Ok(unknown_kinds_output(
            &client.queue_unknown_kinds().await?,
            ctx.json,
        )),
        QueueCommand::Unserved => Ok(unserved_output(
            &client.queue_list_unserved().await?,
            ctx.json,
        )),
        QueueCommand::Pause { name, create } => {
            let names = if create {
                client.queue_pause_or_create(&name).await?
            } else {
                client.queue_pause(&name).await.map_err(|e| match e {
                    pgmill::Error::UnknownQueue(q) => CliError::new(format!(
                        "no queue {q:?}: no client registered it and it holds no live jobs \
                         (pass --create to register it paused)"
                    )),
                    e => e.into(),
                })?
            };
            Ok(control_output("paused", &name, &names, ctx.json))
        }
        QueueCommand::Resume { name } => {
            let names = client.queue_resume(&name).await?;
            Ok(control_output("resumed", &name, &names, ctx.json))
        }
    }
}

/// The JSON of one queue.
pub(crate) fn queue_json(q: &QueueRow) -> serde_json::Value {
    let counts: serde_json::Map<String, serde_json::Value> = q
        .counts
        .iter()
        .map(|(state, n)| (state.as_str().to_owned(), json!(n)))
        .collect();
    json!({
        "name": q.name,
        "paused": q.paused_at.is_some(),
        "paused_at": q.paused_at.map(|t| t.to_rfc3339()),
        "created_at": q.created_at.to_rfc3339(),
        "updated_at": q.updated_at.to_rfc3339(),
        "metadata": q.metadata,
        "counts": counts,
    })
}

fn unknown_kinds_output(rows: &[UnknownKindJobs], json: bool) -> Output {
    if json {
        return Output::Json(json!(
            rows.iter()
                .map(|u| json!({
                    "queue": u.queue,
                    "kind": u.kind,
                    "num_jobs": u.num_jobs,
                    "due_since": u.due_since.to_rfc3339(),
                }))
                .collect::<Vec<_>>()
        ));
    }
    let mut table = Table::new(["QUEUE", "KIND", "JOBS", "DUE_SINCE"]).right_align([2]);
    for u in rows {
        table.row([
            u.queue.clone(),
            u.kind.clone(),
            u.num_jobs.to_string(),
            crate::output::time(u.due_since),
        ]);
    }
    if rows.is_empty() {
        table.footer("every due job has a live client that knows its kind");
    }
    Output::Table(table)
}

/// The JSON of one unserved queue.
fn unserved_json(q: &UnservedQueue) -> serde_json::Value {
    let counts: serde_json::Map<String, serde_json::Value> = q
        .counts
        .iter()
        .map(|(state, n)| (state.as_str().to_owned(), json!(n)))
        .collect();
    json!({
        "name": q.name,
        "registered": q.registered,
        "paused": q.paused_at.is_some(),
        "oldest_available_age_secs": q.oldest_available_age.map(|d| d.as_secs_f64()),
        "counts": counts,
    })
}

/// A table whose first columns are `first` and then one count column per [`COUNTED`] state.
fn counts_table(first: &[&str]) -> Table {
    let mut headers: Vec<String> = first.iter().map(|h| (*h).to_owned()).collect();
    headers.extend(COUNTED.iter().map(|s| s.as_str().to_uppercase()));
    Table::new(headers).right_align(first.len()..first.len() + COUNTED.len())
}

/// `cells` followed by the counts of `counts` in [`COUNTED`] order.
fn counts_row(
    cells: Vec<String>,
    counts: &std::collections::BTreeMap<JobState, i64>,
) -> Vec<String> {
    let mut row = cells;
    row.extend(
        COUNTED
            .iter()
            .map(|s| counts.get(s).copied().unwrap_or(0).to_string()),
    );
    row
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

fn list_output(queues: &[QueueRow], unserved: &[UnservedQueue], json: bool) -> Output {
    if json {
        return Output::Json(json!(queues.iter().map(queue_json).collect::<Vec<_>>()));
    }
    let mut table = counts_table(&["QUEUE", "PAUSED", "SERVED"]);
    for q in queues {
        let served = !unserved.iter().any(|u| u.name == q.name);
        table.row(counts_row(
            vec![
                q.name.clone(),
                yes_no(q.paused_at.is_some()),
                yes_no(served),
            ],
            &q.counts,
        ));
    }
    let unregistered = unserved.iter().filter(|u| !u.registered).count();
    if unregistered > 0 {
        table.footer(format!(
            "{unregistered} more queue(s) hold live jobs no client works: `pgmill queue unserved`"
        ));
    } else if table.is_empty() {
        table.footer("no queue registered yet (a working client registers its queues)");
    }
    Output::Table(table)
}

fn unserved_output(queues: &[UnservedQueue], json: bool) -> Output {
    if json {
        return Output::Json(json!(queues.iter().map(unserved_json).collect::<Vec<_>>()));
    }
    let mut table = counts_table(&["QUEUE", "REGISTERED", "PAUSED"]);
    for q in queues {
        table.row(counts_row(
            vec![
                q.name.clone(),
                yes_no(q.registered),
                yes_no(q.paused_at.is_some()),
            ],
            &q.counts,
        ));
    }
    if table.is_empty() {
        table.footer("every queue holding live jobs has a live client working it");
    } else {
        table.footer(
            "these jobs wait until a client working their queue starts \
             (check the queue names your code inserts into)",
        );
    }
    Output::Table(table)
}

fn control_output(verb: &str, asked: &str, names: &[String], json: bool) -> Output {
    if json {
        return Output::Json(json!({ verb: names }));
    }
    if names.is_empty() {
        Output::Text(format!("no queue {asked:?} is registered; nothing {verb}"))
    } else {
        Output::Text(format!("{verb}: {}", names.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_output_names_what_changed() {
        let out = control_output("paused", "mail", &["mail".to_owned()], false);
        assert_eq!(out, Output::Text("paused: mail".into()));
        let out = control_output("resumed", "x", &[], false);
        assert!(matches!(out, Output::Text(t) if t.contains("nothing resumed")));
        let out = control_output("paused", "*", &["a".into(), "b".into()], true);
        assert_eq!(out, Output::Json(json!({"paused": ["a", "b"]})));
    }
}
