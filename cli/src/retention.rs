//! `pgmill retention`: how long finished jobs are kept, per final state and per queue (or for
//! every queue), stored in the database and applied by the leading client's cleaner.

use std::time::Duration;

use clap::Subcommand;
use pgmill::JobState;
use pgmill::admin::RetentionRule;
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table, time};

/// The `retention` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum RetentionCommand {
    /// Lists the stored rules, by queue (`*`: every queue) and state.
    List,
    /// Keeps a queue's finished jobs of one state for a time (e.g. `90m`, `1h`, `30d`), or
    /// `forever`; `*` for every queue without a rule of its own. The rule wins over the clients'
    /// configuration from the cleaner's next pass.
    Set {
        /// The queue, or `*` for every queue.
        queue: String,
        /// The final state: completed, cancelled or discarded (dead letters).
        #[arg(value_parser = parse_state)]
        state: JobState,
        /// How long: a number with a unit (s, m, h, d), or `forever`.
        #[arg(value_parser = parse_keep)]
        keep: Keep,
    },
    /// Removes a rule: the rule for every queue, then the clients' configuration applies again.
    Clear {
        /// The queue, or `*` for the rule for every queue.
        queue: String,
        /// The final state: completed, cancelled or discarded.
        #[arg(value_parser = parse_state)]
        state: JobState,
    },
}

/// A retention given on the command line: a time, or forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Keep(Option<Duration>);

fn parse_state(s: &str) -> Result<JobState, String> {
    s.parse::<JobState>()
        .map_err(|_| format!("unknown job state {s:?}"))
}

fn parse_keep(s: &str) -> Result<Keep, String> {
    if s == "forever" {
        return Ok(Keep(None));
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a number with a unit (s, m, h, d) or `forever`"))?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(format!("{s:?} has no unit: use s, m, h or d (e.g. 1h)")),
    };
    n.checked_mul(seconds)
        .map(|secs| Keep(Some(Duration::from_secs(secs))))
        .ok_or_else(|| format!("{s:?} is too long"))
}

/// Runs one `retention` subcommand.
///
/// # Errors
///
/// A state that is not final, a retention under a second, a bad queue name, the connection or
/// database error.
pub(crate) async fn run(
    command: RetentionCommand,
    ctx: &CommandContext,
) -> Result<Output, CliError> {
    let client = ctx.client().await?;
    match command {
        RetentionCommand::List => Ok(list_output(&client.retention_rules().await?, ctx.json)),
        RetentionCommand::Set { queue, state, keep } => {
            let rule = client.retention_set(&queue, state, keep.0).await?;
            Ok(list_output(&[rule], ctx.json))
        }
        RetentionCommand::Clear { queue, state } => {
            let removed = client.retention_clear(&queue, state).await?;
            Ok(if ctx.json {
                Output::Json(json!({ "removed": removed.is_some() }))
            } else if removed.is_some() {
                Output::Text(format!("removed the rule of {queue} for {state} jobs"))
            } else {
                Output::Text(format!("{queue} had no rule for {state} jobs"))
            })
        }
    }
}

fn keep_text(keep: Option<Duration>) -> String {
    let Some(keep) = keep else {
        return "forever".into();
    };
    let s = keep.as_secs();
    match s {
        _ if s % 86_400 == 0 => format!("{}d", s / 86_400),
        _ if s % 3_600 == 0 => format!("{}h", s / 3_600),
        _ if s % 60 == 0 => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

fn list_output(rules: &[RetentionRule], json: bool) -> Output {
    if json {
        return Output::Json(json!(
            rules
                .iter()
                .map(|r| json!({
                    "queue": r.queue,
                    "state": r.state.as_str(),
                    "keep_s": r.keep.map(|k| k.as_secs()),
                    "updated_at": r.updated_at.to_rfc3339(),
                }))
                .collect::<Vec<_>>()
        ));
    }
    let mut table = Table::new(["QUEUE", "STATE", "KEEP", "UPDATED_AT"]);
    for r in rules {
        table.row([
            r.queue.clone(),
            r.state.as_str().to_owned(),
            keep_text(r.keep),
            time(r.updated_at),
        ]);
    }
    if rules.is_empty() {
        table.footer("no retention rules: the clients' configuration applies");
    }
    Output::Table(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retentions_parse_with_their_unit_or_forever() {
        assert_eq!(
            parse_keep("90m"),
            Ok(Keep(Some(Duration::from_secs(5_400))))
        );
        assert_eq!(
            parse_keep("30d"),
            Ok(Keep(Some(Duration::from_secs(2_592_000))))
        );
        assert_eq!(parse_keep("forever"), Ok(Keep(None)));
        for bad in ["", "h", "10", "10w", "-1h", "1.5h"] {
            assert!(parse_keep(bad).is_err(), "{bad:?}");
        }
        assert_eq!(keep_text(Some(Duration::from_secs(5_400))), "90m");
        assert_eq!(keep_text(Some(Duration::from_secs(7 * 86_400))), "7d");
        assert_eq!(keep_text(None), "forever");
    }
}
