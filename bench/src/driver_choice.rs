//! Which drivers to benchmark, and connecting each one for a run.

use std::sync::Arc;

use clap::ValueEnum;
use metrics_util::debugging::DebuggingRecorder;
use pgmill::middleware::MetricsConfig;
use pgmill_driver_diesel::DieselDriver;
use pgmill_driver_sqlx::SqlxDriver;
use pgmill_driver_tokio_postgres::TokioPostgresDriver;

use crate::bench_database::BenchDatabase;
use crate::bench_error::BenchError;
use crate::bench_result::Measurement;
use crate::contender::measure;
use crate::engine_bench::EngineBench;
use crate::host_insert::HostInsert;
use crate::workload::{BenchOptions, Scenario};

/// Connections in each driver's pool (sqlx's default).
pub(crate) const ENGINE_POOL_SIZE: u32 = 10;

/// Which drivers to benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DriverChoice {
    /// pgmill-driver-sqlx.
    Sqlx,
    /// pgmill-driver-tokio-postgres.
    TokioPostgres,
    /// pgmill-driver-diesel.
    Diesel,
    /// All three.
    All,
}

impl DriverChoice {
    /// The drivers chosen, in the order they run.
    pub(crate) fn drivers(self) -> Vec<BenchDriver> {
        match self {
            DriverChoice::Sqlx => vec![BenchDriver::Sqlx],
            DriverChoice::TokioPostgres => vec![BenchDriver::TokioPostgres],
            DriverChoice::Diesel => vec![BenchDriver::Diesel],
            DriverChoice::All => vec![
                BenchDriver::Sqlx,
                BenchDriver::TokioPostgres,
                BenchDriver::Diesel,
            ],
        }
    }
}

/// One driver to benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BenchDriver {
    /// pgmill-driver-sqlx.
    Sqlx,
    /// pgmill-driver-tokio-postgres.
    TokioPostgres,
    /// pgmill-driver-diesel.
    Diesel,
}

impl BenchDriver {
    /// The name in results.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BenchDriver::Sqlx => "sqlx",
            BenchDriver::TokioPostgres => "tokio-postgres",
            BenchDriver::Diesel => "diesel",
        }
    }

    /// The name in results of the hand-written reference on this driver's library.
    pub(crate) fn name_plain(self) -> &'static str {
        match self {
            BenchDriver::Sqlx => "sqlx_plain",
            BenchDriver::TokioPostgres => "tokio-postgres_plain",
            BenchDriver::Diesel => "diesel_plain",
        }
    }

    /// The name in results of this driver with pgmill's metrics on.
    pub(crate) fn name_with_metrics(self) -> &'static str {
        match self {
            BenchDriver::Sqlx => "sqlx+metrics",
            BenchDriver::TokioPostgres => "tokio-postgres+metrics",
            BenchDriver::Diesel => "diesel+metrics",
        }
    }
}

/// pgmill's metrics for a `+metrics` run: recorded into an in-process registry of atomics and
/// buckets, the work an exporter's recorder does, with the default sample interval.
fn metrics_config() -> MetricsConfig {
    MetricsConfig::new().recorder(Arc::new(DebuggingRecorder::new()))
}

/// Connects `driver`, measures `scenario` on it (with pgmill's metrics on when `metrics`), and
/// closes its pool.
pub(crate) async fn measure_driver(
    db: &BenchDatabase,
    driver: BenchDriver,
    variant: Variant,
    scenario: &Scenario,
    opts: &BenchOptions,
) -> Result<Measurement, BenchError> {
    let url = db.url();
    let connect_error = |e: pgmill::Error| {
        BenchError::context(
            format!("{} cannot connect to the database", driver.name()),
            BenchError::from(e),
        )
    };
    match driver {
        BenchDriver::Sqlx => {
            let d = SqlxDriver::connect(url, ENGINE_POOL_SIZE)
                .await
                .map_err(connect_error)?;
            let figure = measure(db, &engine(db, driver, variant, d.clone()), scenario, opts).await;
            d.pool().close().await;
            figure
        }
        BenchDriver::TokioPostgres => {
            let d = TokioPostgresDriver::connect(url, ENGINE_POOL_SIZE)
                .await
                .map_err(connect_error)?;
            let figure = measure(db, &engine(db, driver, variant, d.clone()), scenario, opts).await;
            d.pool().close();
            figure
        }
        BenchDriver::Diesel => {
            let d = DieselDriver::connect(url, ENGINE_POOL_SIZE)
                .await
                .map_err(connect_error)?;
            let figure = measure(db, &engine(db, driver, variant, d.clone()), scenario, opts).await;
            d.pool().close();
            figure
        }
    }
}

/// How a driver runs: pgmill, pgmill with its metrics on, or the hand-written reference on the
/// driver's library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Variant {
    /// pgmill with its defaults.
    Pgmill,
    /// pgmill with its metrics on (`--metrics`).
    Metrics,
    /// The hand-written reference on the library (w2_insert_tx).
    Plain,
}

fn engine<D: HostInsert>(
    db: &BenchDatabase,
    choice: BenchDriver,
    variant: Variant,
    driver: D,
) -> EngineBench<'_, D> {
    EngineBench {
        name: match variant {
            Variant::Pgmill => choice.name(),
            Variant::Metrics => choice.name_with_metrics(),
            Variant::Plain => choice.name_plain(),
        },
        driver,
        db,
        metrics: (variant == Variant::Metrics).then(metrics_config),
        host_plain: variant == Variant::Plain,
    }
}
