//! `pgmill dead`: the dead-letter queue: list it, redrive jobs back into their queues, purge them,
//! and name what holds vacuum back.

use clap::{Args, Subcommand};
use pgmill::JobId;
use pgmill::admin::{DeadFilter, DeadJob, DeadListParams, RedriveReport, VacuumHorizon};
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table, time};

/// The `dead` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum DeadCommand {
    /// Lists the dead-letter queue, newest first.
    List {
        #[command(flatten)]
        filter: FilterArgs,
        /// Most jobs listed.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Puts dead jobs back in their queues under their own ids, available now with one more
    /// attempt; unique jobs whose key another job holds now stay and are reported.
    Redrive {
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// Deletes dead jobs for good.
    Purge {
        #[command(flatten)]
        filter: FilterArgs,
    },
    /// What holds vacuum back on the database (sessions, replication slots, prepared
    /// transactions holding an old snapshot), oldest first.
    Horizon,
}

/// Which dead jobs: by id, queue and kind; redrive and purge need one of these or `--all`.
#[derive(Debug, Args)]
pub(crate) struct FilterArgs {
    /// Only these jobs.
    #[arg(long = "id", value_name = "ID")]
    ids: Vec<i64>,
    /// Only jobs of these queues.
    #[arg(long = "queue", value_name = "QUEUE")]
    queues: Vec<String>,
    /// Only jobs of these kinds.
    #[arg(long = "kind", value_name = "KIND")]
    kinds: Vec<String>,
    /// Every dead job (redrive and purge refuse to run without a filter otherwise).
    #[arg(long)]
    all: bool,
}

impl FilterArgs {
    fn dead_filter(&self) -> DeadFilter {
        let mut f = if self.all {
            DeadFilter::all()
        } else {
            DeadFilter::new()
        };
        if !self.ids.is_empty() {
            f = f.ids(self.ids.iter().copied().map(JobId));
        }
        if !self.queues.is_empty() {
            f = f.queues(self.queues.clone());
        }
        if !self.kinds.is_empty() {
            f = f.kinds(self.kinds.clone());
        }
        f
    }
}

/// Runs one `dead` subcommand.
///
/// # Errors
///
/// A redrive or purge without a filter or `--all`, the connection or database error.
pub(crate) async fn run(command: DeadCommand, ctx: &CommandContext) -> Result<Output, CliError> {
    let client = ctx.client().await?;
    match command {
        DeadCommand::List { filter, limit } => {
            let params = DeadListParams::new()
                .filter(filter.dead_filter())
                .limit(limit as usize);
            let page = client.dead_list(&params).await?;
            Ok(list_output(&page.jobs, ctx.json))
        }
        DeadCommand::Redrive { filter } => {
            let report = client.dead_redrive(&filter.dead_filter()).await?;
            Ok(redrive_output(&report, ctx.json))
        }
        DeadCommand::Purge { filter } => {
            let purged = client.dead_purge(&filter.dead_filter()).await?;
            Ok(if ctx.json {
                Output::Json(json!({ "purged": purged }))
            } else {
                Output::Text(format!("purged {purged} dead job(s)"))
            })
        }
        DeadCommand::Horizon => Ok(horizon_output(&client.vacuum_horizon().await?, ctx.json)),
    }
}

fn list_output(jobs: &[DeadJob], json: bool) -> Output {
    if json {
        return Output::Json(json!(
            jobs.iter()
                .map(|d| json!({
                    "id": d.job.id.0,
                    "queue": d.job.queue,
                    "kind": d.job.kind,
                    "reason": d.reason.as_str(),
                    "dead_at": d.dead_at.to_rfc3339(),
                    "attempt": d.job.attempt,
                    "max_attempts": d.job.max_attempts,
                    "redrive_count": d.redrive_count,
                    "last_error": d.job.errors.last().map(|e| e.error.clone()),
                }))
                .collect::<Vec<_>>()
        ));
    }
    let mut table = Table::new([
        "ID", "QUEUE", "KIND", "REASON", "DEAD_AT", "ATTEMPTS", "REDRIVEN",
    ])
    .right_align([0, 5, 6]);
    for d in jobs {
        table.row([
            d.job.id.0.to_string(),
            d.job.queue.clone(),
            d.job.kind.clone(),
            d.reason.as_str().to_owned(),
            time(d.dead_at),
            format!("{}/{}", d.job.attempt, d.job.max_attempts),
            d.redrive_count.to_string(),
        ]);
    }
    if jobs.is_empty() {
        table.footer("no dead jobs");
    }
    Output::Table(table)
}

fn redrive_output(report: &RedriveReport, json: bool) -> Output {
    let ids = |v: &[JobId]| v.iter().map(|i| i.0).collect::<Vec<_>>();
    if json {
        return Output::Json(json!({
            "redriven": ids(&report.redriven),
            "conflicts": ids(&report.conflicts),
        }));
    }
    let mut text = format!("redrove {} job(s)", report.redriven.len());
    if !report.conflicts.is_empty() {
        text.push_str(&format!(
            "; left {} whose unique key another job holds now: {:?}",
            report.conflicts.len(),
            ids(&report.conflicts)
        ));
    }
    Output::Text(text)
}

fn horizon_output(horizon: &VacuumHorizon, json: bool) -> Output {
    if json {
        return Output::Json(json!({
            "hidden_holders": horizon.has_hidden_holders(),
            "holders": horizon.holders.iter().map(|h| json!({
                "kind": h.kind.as_str(),
                "holder": h.holder,
                "role": h.role,
                "application_name": h.application_name,
                "state": h.state,
                "held_for_s": h.held_for.map(|d| d.as_secs_f64()),
                "xmin_age": h.xmin_age,
                "visible": h.visible,
            })).collect::<Vec<_>>(),
        }));
    }
    let mut table = Table::new([
        "KIND",
        "HOLDER",
        "ROLE",
        "APPLICATION",
        "STATE",
        "HELD_FOR",
        "XMIN_AGE",
    ])
    .right_align([5, 6]);
    for h in &horizon.holders {
        table.row([
            h.kind.as_str().to_owned(),
            h.holder.clone(),
            h.role.clone().unwrap_or_else(|| "-".into()),
            h.application_name.clone().unwrap_or_else(|| "-".into()),
            h.state
                .clone()
                .unwrap_or_else(|| if h.visible { "-" } else { "hidden" }.into()),
            h.held_for
                .map(|d| format!("{:.0}s", d.as_secs_f64()))
                .unwrap_or_else(|| "-".into()),
            h.xmin_age.to_string(),
        ]);
    }
    if horizon.holders.is_empty() {
        table.footer("nothing holds vacuum back");
    } else if horizon.has_hidden_holders() {
        table.footer("some sessions belong to other roles: without pg_read_all_stats, their start and state are hidden");
    }
    Output::Table(table)
}
