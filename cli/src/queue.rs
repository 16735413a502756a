//! `pgmill queue`: list queues with their job counts, pause and resume them everywhere.

use clap::Subcommand;
use pgmill::JobState;
use pgmill::admin::QueueRow;
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table};

/// The `queue` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum QueueCommand {
    /// Lists the queues producers registered, with their jobs counted by state.
    List,
    /// Pauses a queue in every process (`*`: every queue); running jobs finish.
    Pause {
        /// The queue, or `*`.
        name: String,
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
        QueueCommand::List => Ok(list_output(&client.queue_list().await?, ctx.json)),
        QueueCommand::Pause { name } => {
            let names = client.queue_pause(&name).await?;
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

fn list_output(queues: &[QueueRow], json: bool) -> Output {
    if json {
        return Output::Json(json!(queues.iter().map(queue_json).collect::<Vec<_>>()));
    }
    let mut headers = vec!["QUEUE".to_owned(), "PAUSED".to_owned()];
    headers.extend(COUNTED.iter().map(|s| s.as_str().to_uppercase()));
    let mut table = Table::new(headers).right_align(2..=COUNTED.len() + 1);
    for q in queues {
        let mut row = vec![
            q.name.clone(),
            if q.paused_at.is_some() { "yes" } else { "no" }.to_owned(),
        ];
        let count = |s: JobState| q.counts.get(&s).copied().unwrap_or(0).to_string();
        row.extend(COUNTED.iter().map(|s| count(*s)));
        table.row(row);
    }
    if table.is_empty() {
        table.footer("no queue registered yet (a working client registers its queues)");
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
