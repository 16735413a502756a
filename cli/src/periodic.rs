//! `pgmill periodic`: list the periodic schedules, pause and resume one.

use clap::Subcommand;
use pgmill::admin::PeriodicRow;
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table, time};

/// The `periodic` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum PeriodicCommand {
    /// Lists the periodic schedules with their next run and their record.
    List,
    /// Pauses a schedule: no job is enqueued for it until it is resumed.
    Pause {
        /// The schedule's name.
        name: String,
    },
    /// Resumes a paused schedule.
    Resume {
        /// The schedule's name.
        name: String,
    },
}

/// Runs one `periodic` subcommand.
///
/// # Errors
///
/// An unknown schedule, the connection or database error.
pub(crate) async fn run(
    command: PeriodicCommand,
    ctx: &CommandContext,
) -> Result<Output, CliError> {
    let client = ctx.client().await?;
    match command {
        PeriodicCommand::List => Ok(list_output(&client.periodic_list().await?, ctx.json)),
        PeriodicCommand::Pause { name } => {
            if !client.periodic_pause(&name).await? {
                return Err(unknown(&name));
            }
            Ok(action_output(&name, "paused", ctx.json))
        }
        PeriodicCommand::Resume { name } => {
            if !client.periodic_resume(&name).await? {
                return Err(unknown(&name));
            }
            Ok(action_output(&name, "resumed", ctx.json))
        }
    }
}

fn unknown(name: &str) -> CliError {
    CliError::new(format!(
        "no periodic schedule named {name:?} (schedules are registered by the clients that define them)"
    ))
}

fn action_output(name: &str, done: &str, json: bool) -> Output {
    if json {
        return Output::Json(json!({ done: [name] }));
    }
    Output::Text(format!("{done}: {name}"))
}

fn row_json(p: &PeriodicRow) -> serde_json::Value {
    json!({
        "name": p.name,
        "schedule": p.schedule,
        "time_zone": p.time_zone,
        "paused": p.paused,
        "next_run_at": p.next_run_at.to_rfc3339(),
        "next_run_local": p.next_run_local().to_rfc3339(),
        "last_run_at": p.last_run_at.map(|t| t.to_rfc3339()),
        "last_job_id": p.last_job_id.map(|id| id.0),
        "last_success_at": p.last_success_at.map(|t| t.to_rfc3339()),
        "last_failure_at": p.last_failure_at.map(|t| t.to_rfc3339()),
        "run_count": p.run_count,
        "success_count": p.success_count,
    })
}

/// The next run on the wall clock of the schedule's zone, with the zone's abbreviation at that
/// moment: `2026-03-09 02:30:00 EDT`, `2026-03-09 06:30:00 UTC`.
fn next_run(p: &PeriodicRow) -> String {
    format!(
        "{} {}",
        p.next_run_local().format("%Y-%m-%d %H:%M:%S"),
        p.next_run_zone_abbreviation()
    )
}

fn list_output(rows: &[PeriodicRow], json: bool) -> Output {
    if json {
        return Output::Json(json!(rows.iter().map(row_json).collect::<Vec<_>>()));
    }
    let mut table = Table::new([
        "NAME",
        "SCHEDULE",
        "PAUSED",
        "NEXT_RUN",
        "LAST_RUN_AT",
        "RUNS",
        "OK",
    ])
    .right_align([5, 6]);
    for p in rows {
        table.row([
            p.name.clone(),
            p.schedule.clone(),
            if p.paused { "yes" } else { "no" }.to_owned(),
            next_run(p),
            p.last_run_at.map(time).unwrap_or_else(|| "-".into()),
            p.run_count.to_string(),
            p.success_count.to_string(),
        ]);
    }
    if rows.is_empty() {
        table.footer("no periodic schedules");
    }
    Output::Table(table)
}
