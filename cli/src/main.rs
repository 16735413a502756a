//! The `pgmill` command-line tool: schema migrations, queue and job administration.
//!
//! ```text
//! pgmill migrate up|down|status|sql    versioned schema migrations
//! pgmill queue list|pause|resume       queues and their job counts
//! pgmill job get|list|cancel|retry|delete   one job, or every job a filter matches
//! pgmill periodic list|pause|resume   periodic schedules
//! pgmill clients                       live clients, their heartbeat, the leader
//! pgmill serve --listen 127.0.0.1:8080  the web dashboard
//! ```
//!
//! The database is `--database-url`, else `DATABASE_URL`, else the libpq `PG*` variables; the
//! admin commands talk to it through pgmill's tokio-postgres driver. Output is a table for people,
//! or JSON with `--json`. A failure prints one line, `pgmill: <why>`, on stderr and exits 1; no
//! connection string is ever printed with its password.

mod cli_error;
mod clients;
mod command_context;
mod database_url;
mod dead;
mod job;
mod migrate;
mod output;
mod periodic;
mod queue;
mod retention;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::dead::DeadCommand;
use crate::job::JobCommand;
use crate::migrate::MigrateCommand;
use crate::output::Output;
use crate::periodic::PeriodicCommand;
use crate::queue::QueueCommand;
use crate::retention::RetentionCommand;
use crate::serve::ServeArgs;

/// pgmill: a Postgres-backed job queue.
#[derive(Debug, Parser)]
#[command(name = "pgmill", version, about)]
struct Cli {
    /// Postgres URL; default DATABASE_URL, else the PG* variables (PGHOST, PGPORT, PGUSER,
    /// PGPASSWORD, PGDATABASE).
    #[arg(long, global = true, value_name = "URL")]
    database_url: Option<String>,
    /// Schema holding pgmill's tables.
    #[arg(long, global = true, default_value = "public")]
    schema: String,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

/// The command groups.
#[derive(Debug, Subcommand)]
enum Command {
    /// Schema migrations.
    Migrate {
        #[command(subcommand)]
        command: MigrateCommand,
    },
    /// Queues: list, pause, resume.
    Queue {
        #[command(subcommand)]
        command: QueueCommand,
    },
    /// Jobs: get, list, cancel, retry, delete.
    Job {
        #[command(subcommand)]
        command: JobCommand,
    },
    /// Periodic schedules: list, pause, resume.
    Periodic {
        #[command(subcommand)]
        command: PeriodicCommand,
    },
    /// The dead-letter queue: list, redrive, purge; what holds vacuum back.
    Dead {
        #[command(subcommand)]
        command: DeadCommand,
    },
    /// Retention rules: how long finished jobs are kept, per queue and state.
    Retention {
        #[command(subcommand)]
        command: RetentionCommand,
    },
    /// The clients registered in the schema: heartbeat age, liveness, the leader.
    Clients,
    /// The web dashboard: queues, jobs, periodic schedules, clients and the leader.
    Serve(ServeArgs),
}

/// Runs the parsed command line.
async fn run(cli: Cli) -> Result<Output, CliError> {
    let ctx = CommandContext {
        database_url: cli.database_url,
        schema: cli.schema,
        json: cli.json,
    };
    match cli.command {
        Command::Migrate { command } => migrate::run(command, &ctx).await,
        Command::Queue { command } => queue::run(command, &ctx).await,
        Command::Job { command } => job::run(command, &ctx).await,
        Command::Periodic { command } => periodic::run(command, &ctx).await,
        Command::Dead { command } => dead::run(command, &ctx).await,
        Command::Retention { command } => retention::run(command, &ctx).await,
        Command::Clients => clients::run(&ctx).await,
        Command::Serve(args) => serve::run(args, &ctx).await,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pgmill: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // Background tasks (pool connections) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(out) => {
            output::print(&out);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pgmill: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("pgmill").chain(args.iter().copied()))
    }

    #[test]
    fn global_options_go_before_or_after_the_subcommand() {
        let cli = parse(&["--json", "queue", "list", "--schema", "jobs"]).unwrap();
        assert!(cli.json);
        assert_eq!(cli.schema, "jobs");
        assert!(matches!(
            cli.command,
            Command::Queue {
                command: QueueCommand::List
            }
        ));
        let cli = parse(&["migrate", "status", "--database-url", "postgres://h/d"]).unwrap();
        assert_eq!(cli.database_url.as_deref(), Some("postgres://h/d"));
        assert_eq!(cli.schema, "public");
    }

    #[test]
    fn migrate_subcommands_take_their_target() {
        let cli = parse(&["migrate", "up", "--target", "1"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Migrate {
                command: MigrateCommand::Up { target: Some(1) }
            }
        ));
        let cli = parse(&["migrate", "down"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Migrate {
                command: MigrateCommand::Down { target: None }
            }
        ));
        let cli = parse(&["migrate", "sql", "--direction", "down", "--version", "1"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Migrate {
                command: MigrateCommand::Sql {
                    version: Some(1),
                    direction: migrate::Way::Down
                }
            }
        ));
    }

    #[test]
    fn job_list_filters_accept_lists_and_reject_unknown_states() {
        let cli = parse(&[
            "job",
            "list",
            "--state",
            "available,running",
            "--state",
            "completed",
            "--queue",
            "a",
            "--kind",
            "k1,k2",
            "--limit",
            "5",
            "--after",
            "10",
        ])
        .unwrap();
        let Command::Job {
            command:
                JobCommand::List {
                    state,
                    queue,
                    kind,
                    limit,
                    after,
                    ..
                },
        } = cli.command
        else {
            panic!("not job list: {:?}", cli.command);
        };
        use pgmill::JobState::*;
        assert_eq!(state, vec![Available, Running, Completed]);
        assert_eq!(queue, vec!["a"]);
        assert_eq!(kind, vec!["k1", "k2"]);
        assert_eq!((limit, after), (5, Some(10)));
        assert!(parse(&["job", "list", "--state", "done"]).is_err());
        assert!(parse(&["job", "list", "--limit", "0"]).is_err());
        assert!(parse(&["job", "get", "abc"]).is_err());
    }

    #[test]
    fn queue_and_job_actions_take_their_argument() {
        assert!(matches!(
            parse(&["queue", "pause", "mail"]).unwrap().command,
            Command::Queue { command: QueueCommand::Pause { name, .. } } if name == "mail"
        ));
        for action in ["get", "cancel", "retry", "delete"] {
            let cli = parse(&["job", action, "42"]).unwrap();
            assert!(matches!(cli.command, Command::Job { .. }), "{action}");
        }
        assert!(parse(&["queue", "resume"]).is_err());
    }

    #[test]
    fn migrate_sql_needs_no_database() {
        let cli = parse(&["migrate", "sql", "--schema", "jobs"]).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let out = rt.block_on(run(cli)).unwrap();
        assert!(matches!(out, Output::Text(t) if t.contains("CREATE TABLE \"jobs\".pgmill_job")));
        let cli = parse(&["migrate", "sql", "--schema", "bad name"]).unwrap();
        let err = rt.block_on(run(cli)).unwrap_err();
        assert!(err.to_string().contains("invalid schema name"), "{err}");
    }
}
