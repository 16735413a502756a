//! The analyzer: takes the job table's statistics again when the table has outgrown them.
//!
//! Every engine statement is prepared, and Postgres keeps a prepared statement's generic plan,
//! made from the table's statistics of the time, until those statistics change. A claim planned
//! while the table held a few rows finds its jobs' rows by a sequential scan, the cheapest way
//! at that size, and keeps doing so when a burst of inserts grows the table a thousandfold: a
//! 100-job claim from 20,000 queued took 18.7 ms instead of 2.2 ms. Statistics taken while a
//! large insert was still uncommitted are worse: they count none of its rows, and the planner
//! takes the full table for a nearly empty one (a 100-job claim from 200,000 queued: 502 ms).
//! Either lasts until autovacuum's next `ANALYZE`, up to `autovacuum_naptime` later (a minute by
//! default, longer on a busy server). Every interval the analyzer compares the table's rows (its
//! inserts less its deletes, from the statistics system's cumulative counters, which no
//! `ANALYZE` overwrites) with the rows of its statistics, and runs `ANALYZE` as soon as they are
//! several times as many, which makes every session replan its statements on the table.
//!
//! Cheap when nothing grew: one look at `pg_class` and the table's row counters.
//! Growth by a factor means a table that grows steadily is analyzed a handful of times over its
//! whole growth, and autovacuum, which analyzes after every 10 % of change, usually gets there
//! first. Counters that overstate the rows (after a `TRUNCATE` they keep the inserts) bring one
//! `ANALYZE`, not one a pass: the analyzer remembers by how much, from its last `ANALYZE`.
//!
//! The counters lag: a session reports its inserts to the statistics system up to a second
//! after its commit (ten when it then stays idle), and the leader looks once a second. A client
//! that has itself just committed a large insert ([`Client::insert_bulk`](crate::Client::insert_bulk),
//! [`Client::insert_many`](crate::Client::insert_many)) knows the rows are there: when they alone
//! are at least [`min_rows`](JobAnalyzerConfig::min_rows) and
//! [`growth`](JobAnalyzerConfig::growth) times the rows of the statistics its client's analyzer
//! last saw (if it looked in the last minute), it looks at once with its own count as the rows'
//! floor, and analyzes before it announces the jobs, so the producers it wakes claim them with
//! plans made for the table's new size.
//!
//! Its `ANALYZE` takes a small sample (a statistics target of 10, 3,000 rows): what the plans
//! need is the table's size and rough shares of the columns' values, and an insert that analyzes
//! before it returns pays milliseconds instead of the default sample's 100 ms per 100,000 jobs.
//! Autovacuum's next `ANALYZE` takes the statistics again at the server's target.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::connection_lease::ConnectionLease;
use crate::driver::{Driver, Executor};
use crate::error::{Error, Result};
use crate::query::{TableGrowthRow, job_analyze, job_table_growth};
use crate::schema::Schema;

/// Default [`JobAnalyzerConfig::interval`].
pub const DEFAULT_ANALYZER_INTERVAL: Duration = Duration::from_secs(1);
/// Default [`JobAnalyzerConfig::min_rows`]. Below about 500 jobs, a generic claim plan scans the
/// table for the claimed ids anyway; at 1,000 (20 pages) such a scan costs a claim about 0.5 ms.
pub const DEFAULT_ANALYZER_MIN_ROWS: u64 = 1_000;
/// Default [`JobAnalyzerConfig::growth`].
pub const DEFAULT_ANALYZER_GROWTH: u32 = 4;
/// How long the look at the table's rows may take.
const LOOK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the `ANALYZE` may take (it samples 3,000 rows at the statistics target it runs with,
/// whatever the table's size).
const ANALYZE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the statistics' rows seen at a look are relied on to leave a client's own smaller
/// inserts without a look of their own (the table may have been analyzed small since, by
/// autovacuum after a cleanup or by anyone's `ANALYZE`).
const SEEN_FOR: Duration = Duration::from_secs(60);

/// Settings of the [`JobAnalyzer`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobAnalyzerConfig {
    /// Time between looks at the table's rows. Default 1 s.
    pub interval: Duration,
    /// The table is analyzed only once it has at least this many rows, and a client's own insert
    /// of fewer jobs has the analyzer look for nothing. Default 1,000.
    pub min_rows: u64,
    /// The table is analyzed once its rows are at least this many times the rows its statistics
    /// were taken with (by autovacuum, by anyone's `ANALYZE` or `VACUUM`, or by this analyzer);
    /// a client's own insert has the analyzer look when its jobs alone are this many times the
    /// rows of the statistics last seen. Default 4, at most 1,000.
    pub growth: u32,
}

impl Default for JobAnalyzerConfig {
    fn default() -> Self {
        JobAnalyzerConfig {
            interval: DEFAULT_ANALYZER_INTERVAL,
            min_rows: DEFAULT_ANALYZER_MIN_ROWS,
            growth: DEFAULT_ANALYZER_GROWTH,
        }
    }
}

/// What one analyzer pass found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobAnalyzerRunOnceResult {
    /// The table's rows when its statistics were last taken, before this pass (0 before the
    /// first).
    pub stats_rows: i64,
    /// The table's rows now: its inserts less its deletes, as the statistics system counts them
    /// (once the writing sessions report them, within a second or, from an idle session, up to
    /// ten; rolled-back inserts and deletes count too), less what those counters overstated the
    /// rows by at this analyzer's last `ANALYZE`; after a client's own large insert, at least
    /// the rows it inserted.
    pub live_rows: i64,
    /// Whether this pass ran `ANALYZE` on the table.
    pub analyzed: bool,
}

/// Runs `ANALYZE` on the job table when it has outgrown the statistics its prepared statements'
/// plans were made from: at least [`min_rows`](JobAnalyzerConfig::min_rows) rows, and
/// [`growth`](JobAnalyzerConfig::growth) times the rows of its last statistics. Never while a
/// `VACUUM` or `ANALYZE` of the table is under way or a lock it would wait for is held, and
/// never when the client's role may not analyze the table (members of the database owner's role
/// may, and of the table owner's role, or since PostgreSQL 17 roles with the table's `MAINTAIN`
/// privilege: with another role the statistics stay autovacuum's); an `ANALYZE` that meets a
/// lock taken since fails after 100 ms and is tried again at the next pass.
#[derive(Debug, Clone)]
pub struct JobAnalyzer<D: Driver> {
    driver: D,
    schema: Schema,
    config: JobAnalyzerConfig,
    /// What this analyzer and its clones learnt at their passes.
    memory: Arc<Memory>,
}

/// What an analyzer learnt at its passes, shared by its clones.
#[derive(Debug, Default)]
struct Memory {
    /// How far the row counters overstated the table's rows at the last `ANALYZE`: they keep the
    /// inserts a `TRUNCATE` removed. 0 before.
    overstated: AtomicI64,
    /// What the last look saw.
    seen: Mutex<Option<Seen>>,
    /// Held through each pass, so that the leader's pass and a client's own insert's (one
    /// client's analyzer is the same for both) do not both find the table outgrown and both
    /// `ANALYZE` it (the second would wait on the first's lock and fail): the later looks once
    /// the earlier is done.
    passing: tokio::sync::Mutex<()>,
}

impl Memory {
    /// What the last look saw (a panic while it was held left nothing half-written: it is one
    /// assignment).
    fn seen(&self) -> MutexGuard<'_, Option<Seen>> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What a look saw.
#[derive(Debug, Clone, Copy)]
struct Seen {
    /// The rows of the table's statistics, after the pass's `ANALYZE` if it ran one.
    stats_rows: i64,
    /// Whether this role may analyze the table.
    permitted: bool,
    at: Instant,
}

impl<D: Driver> JobAnalyzer<D> {
    /// An analyzer of `schema`'s job table.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] for a zero interval or `min_rows`, or a growth outside 2..=1000.
    pub fn new(driver: D, schema: Schema, config: JobAnalyzerConfig) -> Result<Self> {
        if config.interval.is_zero() || config.min_rows == 0 || !(2..=1000).contains(&config.growth)
        {
            return Err(Error::InvalidConfig(
                "analyzer interval and min_rows must be positive and growth within 2..=1000".into(),
            ));
        }
        Ok(JobAnalyzer {
            driver,
            schema,
            config,
            memory: Arc::default(),
        })
    }

    /// One pass: a look at the table's rows, and `ANALYZE` when it has outgrown its statistics.
    ///
    /// # Errors
    ///
    /// The database error (a lock on the table held past 100 ms among them: the next pass looks
    /// again), [`Error::InvalidConfig`] when the schema has no job table, or [`Error::Timeout`].
    pub async fn run_once(&self) -> Result<JobAnalyzerRunOnceResult> {
        let mut conn = tokio::time::timeout(LOOK_TIMEOUT, ConnectionLease::acquire(&self.driver))
            .await
            .map_err(|_| Error::Timeout("job analyzer connection"))??;
        let _passing = self.memory.passing.lock().await;
        self.pass(&mut conn, 0).await
    }

    /// Whether a client's own insert of `inserted` jobs is to have the analyzer look: at least
    /// [`min_rows`](JobAnalyzerConfig::min_rows), and unless a look in the last minute saw
    /// statistics of more than 1/[`growth`](JobAnalyzerConfig::growth) of them, or a role that
    /// may not analyze the table.
    pub(crate) fn would_look(&self, inserted: u64) -> bool {
        if inserted < self.config.min_rows {
            return false;
        }
        match *self.memory.seen() {
            Some(seen) if seen.at.elapsed() < SEEN_FOR => {
                let needed = u64::try_from(seen.stats_rows)
                    .unwrap_or(0)
                    .saturating_mul(u64::from(self.config.growth));
                seen.permitted && inserted >= needed
            }
            _ => true,
        }
    }

    /// After a client's own insert of `inserted` jobs has committed: a pass on `conn` with the
    /// jobs as the floor of the table's rows, when [`JobAnalyzer::would_look`]; `None` without
    /// a look otherwise, which is what inserts of a few jobs into a large table get. Waits for
    /// a pass of this analyzer's (the leader's, another insert's) under way, and looks only if
    /// what that pass saw still leaves it to.
    ///
    /// # Errors
    ///
    /// As [`JobAnalyzer::run_once`].
    pub(crate) async fn after_insert(
        &self,
        conn: &mut ConnectionLease<D>,
        inserted: u64,
    ) -> Result<Option<JobAnalyzerRunOnceResult>> {
        if !self.would_look(inserted) {
            return Ok(None);
        }
        let _passing = self.memory.passing.lock().await;
        if !self.would_look(inserted) {
            return Ok(None);
        }
        let inserted = i64::try_from(inserted).unwrap_or(i64::MAX);
        self.pass(conn, inserted).await.map(Some)
    }

    /// A look at the table's rows (at least `inserted`), and `ANALYZE` when it has outgrown its
    /// statistics. The caller holds `memory.passing`.
    async fn pass(
        &self,
        conn: &mut ConnectionLease<D>,
        inserted: i64,
    ) -> Result<JobAnalyzerRunOnceResult> {
        let memory = &self.memory;
        let before = self
            .look(conn, memory.overstated.load(Ordering::Relaxed), inserted)
            .await?;
        // Said once, when a look first finds it (again).
        let was_permitted = memory.seen().is_none_or(|seen| seen.permitted);
        if !before.permitted && was_permitted {
            info!(
                schema = self.schema.name(),
                "this role may not analyze the job table (only the database's owner, the \
                 table's owner and, from PostgreSQL 17, roles with MAINTAIN on it may): its \
                 statistics are left to autovacuum"
            );
        }
        let mut result = JobAnalyzerRunOnceResult {
            stats_rows: before.stats_rows,
            live_rows: before.live_rows,
            analyzed: false,
        };
        let mut stats_rows = before.stats_rows;
        if before.outgrown {
            let analyze = job_analyze(&self.schema);
            tokio::time::timeout(ANALYZE_TIMEOUT, conn.execute_script(analyze.sql()))
                .await
                .map_err(|_| Error::Timeout("job analyzer ANALYZE"))??;
            // The counters against the rows just counted: what they overstate by from now on.
            // Right after a client's own insert the counters may not hold its rows yet, and
            // this comes out lower than it is by as many: the rows then look that many more
            // than they are, which can bring one ANALYZE early, never one missed.
            let after = self.look(conn, 0, 0).await?;
            memory.overstated.store(
                (after.live_rows - after.stats_rows).max(0),
                Ordering::Relaxed,
            );
            stats_rows = after.stats_rows;
            result.analyzed = true;
        }
        *memory.seen() = Some(Seen {
            stats_rows,
            permitted: before.permitted,
            at: Instant::now(),
        });
        Ok(result)
    }

    /// The table's rows against its statistics, the counters taken as overstating by
    /// `overstated` and the rows as at least `inserted`.
    async fn look(
        &self,
        conn: &mut ConnectionLease<D>,
        overstated: i64,
        inserted: i64,
    ) -> Result<TableGrowthRow> {
        let look = job_table_growth(
            &self.schema,
            i64::try_from(self.config.min_rows).unwrap_or(i64::MAX),
            i64::from(self.config.growth),
            overstated,
            inserted,
        );
        let rows: Vec<TableGrowthRow> = tokio::time::timeout(LOOK_TIMEOUT, conn.query_as(&look))
            .await
            .map_err(|_| Error::Timeout("job analyzer look"))??;
        rows.first().copied().ok_or_else(|| {
            Error::InvalidConfig(format!(
                "schema {} has no job table; run its migrations",
                self.schema.name()
            ))
        })
    }

    /// Runs passes every interval until `stop`.
    pub(crate) async fn run(self, stop: CancellationToken) {
        async move {
            loop {
                match self.run_once().await {
                    Ok(r) if r.analyzed => info!(
                        stats_rows = r.stats_rows,
                        live_rows = r.live_rows,
                        "analyzed the job table: it outgrew the statistics its plans were made from"
                    ),
                    Ok(_) => {}
                    Err(e) if e.is_lock_not_available() => {
                        debug!(error = %e, "job analyzer pass met a lock; looks again");
                    }
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
