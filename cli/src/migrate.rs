//! `pgmill migrate`: apply, revert and inspect schema versions, or print their SQL.

use clap::{Subcommand, ValueEnum};
use pgmill::driver::Driver;
use pgmill::{Direction, MigrateReport, MigrationStatus, Migrator, Schema};
use pgmill_driver_tokio_postgres::TokioPostgresDriver;
use serde_json::json;

use crate::cli_error::CliError;
use crate::command_context::CommandContext;
use crate::output::{Output, Table};

/// The `migrate` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum MigrateCommand {
    /// Applies every version up to --target (default: the latest) not applied yet.
    Up {
        /// Version to migrate up to.
        #[arg(long)]
        target: Option<u32>,
    },
    /// Reverts applied versions above --target (default: the latest applied one only); --target
    /// 0 removes pgmill's tables.
    Down {
        /// Version to migrate down to.
        #[arg(long)]
        target: Option<u32>,
    },
    /// Shows applied and pending versions.
    Status,
    /// Prints the SQL of one version (or every version) rendered into the schema; needs no
    /// database.
    Sql {
        /// Version to print; every version, in order, when omitted.
        #[arg(long, alias = "target")]
        version: Option<u32>,
        /// Direction of the script.
        #[arg(long, value_enum, default_value_t = Way::Up)]
        direction: Way,
    },
}

/// A direction on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Way {
    /// Apply.
    Up,
    /// Revert.
    Down,
}

impl From<Way> for Direction {
    fn from(way: Way) -> Self {
        match way {
            Way::Up => Direction::Up,
            Way::Down => Direction::Down,
        }
    }
}

/// Runs one `migrate` subcommand.
///
/// # Errors
///
/// An unknown version, the connection error, or a failed migration.
pub(crate) async fn run(command: MigrateCommand, ctx: &CommandContext) -> Result<Output, CliError> {
    let schema = ctx.schema()?;
    let migrator = Migrator::new(schema.clone());
    match command {
        MigrateCommand::Sql { version, direction } => {
            sql(&schema, version, direction.into()).map(Output::Text)
        }
        MigrateCommand::Up { target } => {
            let mut conn = connection(ctx).await?;
            let report = migrator.up(&mut conn, target).await?;
            Ok(report_output(&report, &schema, ctx.json))
        }
        MigrateCommand::Down { target } => {
            let mut conn = connection(ctx).await?;
            let target = match target {
                Some(t) => t,
                None => migrator
                    .status(&mut conn)
                    .await?
                    .current()
                    .saturating_sub(1),
            };
            let report = migrator.down(&mut conn, target).await?;
            Ok(report_output(&report, &schema, ctx.json))
        }
        MigrateCommand::Status => {
            let mut conn = connection(ctx).await?;
            let status = migrator.status(&mut conn).await?;
            Ok(status_output(&status, &schema, ctx.json))
        }
    }
}

/// One connection of the admin driver.
async fn connection(
    ctx: &CommandContext,
) -> Result<<TokioPostgresDriver as Driver>::Connection, CliError> {
    Ok(ctx.driver().await?.acquire().await?)
}

/// The SQL of one version, or of every version in the order they would run.
///
/// # Errors
///
/// An unknown version.
pub(crate) fn sql(
    schema: &Schema,
    version: Option<u32>,
    direction: Direction,
) -> Result<String, CliError> {
    let migrator = Migrator::new(schema.clone());
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

fn direction_name(direction: Direction) -> &'static str {
    match direction {
        Direction::Up => "up",
        Direction::Down => "down",
    }
}

fn report_output(report: &MigrateReport, schema: &Schema, json: bool) -> Output {
    let direction = direction_name(report.direction);
    if json {
        return Output::Json(json!({
            "schema": schema.name(),
            "direction": direction,
            "versions": report.versions,
        }));
    }
    if report.versions.is_empty() {
        return Output::Text(format!(
            "schema {}: nothing to migrate {direction}",
            schema.name()
        ));
    }
    let versions: Vec<String> = report.versions.iter().map(u32::to_string).collect();
    let verb = match report.direction {
        Direction::Up => "applied",
        Direction::Down => "reverted",
    };
    Output::Text(format!(
        "schema {}: {verb} version{} {}",
        schema.name(),
        if versions.len() == 1 { "" } else { "s" },
        versions.join(", ")
    ))
}

fn status_output(status: &MigrationStatus, schema: &Schema, json: bool) -> Output {
    if json {
        let applied: Vec<_> = status
            .applied
            .iter()
            .map(|m| json!({"version": m.version, "applied_at": m.created_at.to_rfc3339()}))
            .collect();
        return Output::Json(json!({
            "schema": schema.name(),
            "current": status.current(),
            "latest": status.latest,
            "up_to_date": status.is_up_to_date(),
            "applied": applied,
            "pending": status.pending,
        }));
    }
    let mut table = Table::new(["VERSION", "STATE", "APPLIED_AT"]).right_align([0]);
    for m in &status.applied {
        table.row([
            m.version.to_string(),
            "applied".to_owned(),
            m.created_at.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        ]);
    }
    for v in &status.pending {
        table.row([v.to_string(), "pending".to_owned(), String::new()]);
    }
    table.footer(format!(
        "schema {}: version {} of {}{}",
        schema.name(),
        status.current(),
        status.latest,
        if status.is_up_to_date() {
            " (up to date)"
        } else {
            " (run `pgmill migrate up`)"
        }
    ));
    Output::Table(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_renders_every_version_into_the_schema() {
        let out = sql(&Schema::new("jobs").unwrap(), None, Direction::Up).unwrap();
        assert!(out.starts_with("-- pgmill schema version 1 (Up)"));
        assert!(out.contains("CREATE TABLE \"jobs\".pgmill_job"));
        let down = sql(&Schema::public(), Some(1), Direction::Down).unwrap();
        assert!(down.contains("DROP TABLE \"public\".pgmill_job"));
    }

    #[test]
    fn an_unknown_version_is_a_clear_error() {
        let err = sql(&Schema::public(), Some(99), Direction::Up).unwrap_err();
        assert!(err.to_string().contains("unknown version 99"), "{err}");
    }
}
