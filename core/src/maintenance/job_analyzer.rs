//! The analyzer: takes the job table's statistics again when the table has outgrown them.
//!
//! Every engine statement is prepared, and Postgres keeps a prepared statement's generic plan,
//! made from the table's statistics of the time, until those statistics change. A claim planned
//! while the table held a few pages finds its jobs' rows by a sequential scan, the cheapest way
//! at that size, and keeps doing so when a burst of inserts grows the table a thousandfold: a
//! 100-job claim from 20,000 queued took 18.7 ms instead of 2.2 ms, until autovacuum's next
//! `ANALYZE` (up to `autovacuum_naptime` later, a minute by default, and longer on a busy
//! server). The analyzer looks at the table's size every interval and runs `ANALYZE` as soon as
//! the table is several times the size its statistics were taken at, which makes every session
//! replan its statements on the table.
//!
//! Cheap when nothing grew: one look at `pg_class` and the table's size. Growth by a factor
//! means a table that grows steadily is analyzed a handful of times over its whole growth, and
//! autovacuum, which analyzes after every 10 % of change, usually gets there first.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::query::{TableGrowthRow, job_analyze, job_table_growth};
use crate::schema::Schema;

/// Default [`JobAnalyzerConfig::interval`].
pub const DEFAULT_ANALYZER_INTERVAL: Duration = Duration::from_secs(1);
/// Default [`JobAnalyzerConfig::min_pages`]: 256 kB. A plan made for a table of a few pages that
/// scans it whole for each claim costs a claim about 1.5 ms more at this size.
pub const DEFAULT_ANALYZER_MIN_PAGES: u32 = 32;
/// Default [`JobAnalyzerConfig::growth`].
pub const DEFAULT_ANALYZER_GROWTH: u32 = 4;
/// How long the look at the table's size may take.
const LOOK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the `ANALYZE` may take (it samples at most 30,000 rows at the default statistics
/// target, whatever the table's size).
const ANALYZE_TIMEOUT: Duration = Duration::from_secs(300);

/// Settings of the [`JobAnalyzer`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobAnalyzerConfig {
    /// Time between looks at the table's size. Default 1 s.
    pub interval: Duration,
    /// The table is analyzed only once it has at least this many pages (of the server's block
    /// size, 8 kB by default). Default 32.
    pub min_pages: u32,
    /// The table is analyzed once it is at least this many times the size its statistics were
    /// taken at (by autovacuum, by anyone's `ANALYZE` or `VACUUM`, or by this analyzer).
    /// Default 4.
    pub growth: u32,
}

impl Default for JobAnalyzerConfig {
    fn default() -> Self {
        JobAnalyzerConfig {
            interval: DEFAULT_ANALYZER_INTERVAL,
            min_pages: DEFAULT_ANALYZER_MIN_PAGES,
            growth: DEFAULT_ANALYZER_GROWTH,
        }
    }
}

/// What one analyzer pass found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobAnalyzerRunOnceResult {
    /// The table's pages when its statistics were last taken, before this pass.
    pub stats_pages: i64,
    /// The table's pages now.
    pub pages: i64,
    /// Whether this pass ran `ANALYZE` on the table.
    pub analyzed: bool,
}

/// Runs `ANALYZE` on the job table when it has outgrown the statistics its prepared statements'
/// plans were made from: at least [`min_pages`](JobAnalyzerConfig::min_pages) pages, and
/// [`growth`](JobAnalyzerConfig::growth) times the size at the last statistics. Never while a
/// `VACUUM` or `ANALYZE` of the table is under way, and never when the client's role may not
/// analyze the table (only the owner's role's members may), so it never waits on a lock and
/// never fills the server's log with warnings.
#[derive(Debug, Clone)]
pub struct JobAnalyzer<D: Driver> {
    driver: D,
    schema: Schema,
    config: JobAnalyzerConfig,
}

impl<D: Driver> JobAnalyzer<D> {
    /// An analyzer of `schema`'s job table.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval or a growth below 2.
    pub fn new(driver: D, schema: Schema, config: JobAnalyzerConfig) -> Result<Self> {
        if config.interval.is_zero() || config.growth < 2 {
            return Err(Error::InvalidConfig(
                "analyzer interval must be positive and growth at least 2".into(),
            ));
        }
        Ok(JobAnalyzer {
            driver,
            schema,
            config,
        })
    }

    /// One pass: a look at the table's size, and `ANALYZE` when it has outgrown its statistics.
    ///
    /// # Errors
    ///
    /// The database error (also when the schema has no job table), or [`Error::Timeout`].
    pub async fn run_once(&self) -> Result<JobAnalyzerRunOnceResult> {
        let mut conn = tokio::time::timeout(LOOK_TIMEOUT, ConnectionLease::acquire(&self.driver))
            .await
            .map_err(|_| Error::Timeout("job analyzer connection"))??;
        let look = job_table_growth(
            &self.schema,
            i64::from(self.config.min_pages),
            i64::from(self.config.growth),
        );
        let growth: Vec<TableGrowthRow> = tokio::time::timeout(LOOK_TIMEOUT, conn.query_as(&look))
            .await
            .map_err(|_| Error::Timeout("job analyzer look"))??;
        let Some(growth) = growth.first().copied() else {
            return Err(Error::InvalidConfig(format!(
                "schema {} has no job table; run its migrations",
                self.schema.name()
            )));
        };
        let mut result = JobAnalyzerRunOnceResult {
            stats_pages: growth.stats_pages,
            pages: growth.pages,
            analyzed: false,
        };
        if growth.outgrown {
            tokio::time::timeout(ANALYZE_TIMEOUT, conn.execute(&job_analyze(&self.schema)))
                .await
                .map_err(|_| Error::Timeout("job analyzer ANALYZE"))??;
            result.analyzed = true;
        }
        Ok(result)
    }

    /// Runs passes every interval until `stop`.
    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) if r.analyzed => info!(
                        stats_pages = r.stats_pages,
                        pages = r.pages,
                        "analyzed the job table: it outgrew the statistics its plans were made from"
                    ),
                    Ok(_) => {}
                    Err(e) => warn!(error = %e, "job analyzer pass failed"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(self.config.interval) => {}
                }
            }
        }
        .instrument(info_span!("job_analyzer"))
        .await
    }
}
