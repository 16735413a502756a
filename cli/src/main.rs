//! The `pgmill` command-line tool.
//!
//! Today it prints the SQL of each schema version for users of other migration tools; the
//! database commands (`migrate up|down|status`, `queue`, `job`, `bench`) follow.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use pgmill::{Direction, Migrator, Schema};

/// pgmill: a Postgres-backed job queue.
#[derive(Debug, Parser)]
#[command(name = "pgmill", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Schema migrations.
    Migrate {
        #[command(subcommand)]
        command: MigrateCommand,
    },
}

#[derive(Debug, Subcommand)]
enum MigrateCommand {
    /// Prints the SQL of one version (or every version) rendered into a schema.
    Sql {
        /// Schema holding pgmill's tables.
        #[arg(long, default_value = "public")]
        schema: String,
        /// Version to print; every version, in order, when omitted.
        #[arg(long)]
        version: Option<u32>,
        /// Direction of the script.
        #[arg(long, value_enum, default_value_t = Way::Up)]
        direction: Way,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Way {
    Up,
    Down,
}

fn run(cli: Cli) -> pgmill::Result<String> {
    match cli.command {
        Command::Migrate {
            command:
                MigrateCommand::Sql {
                    schema,
                    version,
                    direction,
                },
        } => {
            let migrator = Migrator::new(Schema::new(&schema)?);
            let direction = match direction {
                Way::Up => Direction::Up,
                Way::Down => Direction::Down,
            };
            let mut versions: Vec<u32> = match version {
                Some(v) => vec![v],
                None => (1..=Migrator::latest_version()).collect(),
            };
            if direction == Direction::Down {
                versions.reverse();
            }
            let mut out = String::new();
            for v in versions {
                out.push_str(&format!("-- pgmill schema version {v} ({direction:?})\n"));
                out.push_str(&migrator.sql(v, direction)?);
            }
            Ok(out)
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(out) => {
            #[allow(clippy::print_stdout)]
            {
                print!("{out}");
            }
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

    fn cli(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("pgmill").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn migrate_sql_renders_into_the_schema() {
        let out = run(cli(&["migrate", "sql", "--schema", "jobs"])).unwrap();
        assert!(out.contains("CREATE TABLE \"jobs\".pgmill_job"));
        let down = run(cli(&[
            "migrate",
            "sql",
            "--direction",
            "down",
            "--version",
            "1",
        ]))
        .unwrap();
        assert!(down.contains("DROP TABLE \"public\".pgmill_job"));
    }

    #[test]
    fn bad_schema_and_version_are_clear_errors() {
        let err = run(cli(&["migrate", "sql", "--schema", "bad name"])).unwrap_err();
        assert!(err.to_string().contains("invalid schema name"), "{err}");
        let err = run(cli(&["migrate", "sql", "--version", "99"])).unwrap_err();
        assert!(err.to_string().contains("unknown version 99"), "{err}");
    }
}
