//! The database the benchmark runs on: a given URL or a throwaway cluster; fresh schemas; raw
//! connections for the floor; COPY; and the exactly-once checks in SQL.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use pgmill::driver::Driver;
use pgmill::{JobArgs, Migrator, Schema};
use pgmill_driver_tokio_postgres::TokioPostgresDriver;
use pgmill_testdb::Cluster;
use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls, Notification};

use crate::bench_error::BenchError;
use crate::bench_job::BenchJob;
use crate::progress::Progress;
use crate::stopwatch::{parent_pid, server_cpu_time};

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Connections of the pool that migrates and drops the benchmark's schemas.
const ADMIN_POOL_SIZE: u32 = 2;

/// Rows per chunk sent to a COPY.
const COPY_CHUNK: u64 = 10_000;

/// Kind of the completed rows preloaded before `w3_work`.
pub(crate) const PRELOAD_KIND: &str = "bench_preload";

/// The benchmark's database.
pub(crate) struct BenchDatabase {
    url: String,
    cluster: Option<Cluster>,
    migrations: TokioPostgresDriver,
    admin: Client,
    /// The server's postmaster, when it runs on this machine (its CPU time is then measured).
    postmaster: Option<i32>,
    next_schema: AtomicU32,
}

impl std::fmt::Debug for BenchDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BenchDatabase")
            .field("throwaway", &self.cluster.is_some())
            .finish_non_exhaustive()
    }
}

impl BenchDatabase {
    /// Opens `url`, or starts a throwaway cluster when there is none.
    ///
    /// # Errors
    ///
    /// The cluster cannot start, or the database cannot be reached.
    pub(crate) async fn open(url: Option<String>) -> Result<Self, BenchError> {
        let (url, cluster) = match url {
            Some(url) => (url, None),
            None => {
                let spinner = Progress::spinner("starting a throwaway PostgreSQL cluster");
                let cluster = tokio::task::spawn_blocking(Cluster::start_with_defaults)
                    .await
                    .map_err(|e| BenchError::context("starting the throwaway cluster", e))??;
                spinner.finish();
                (cluster.url(), Some(cluster))
            }
        };
        let migrations = tokio::time::timeout(
            CONNECT_TIMEOUT,
            TokioPostgresDriver::connect(&url, ADMIN_POOL_SIZE),
        )
        .await
        .map_err(|_| connect_timed_out())?
        .map_err(|e| BenchError::context("cannot connect to the database", BenchError::from(e)))?;
        let admin = raw_connect(&url).await?;
        let postmaster = postmaster_pid(&admin).await;
        Ok(BenchDatabase {
            url,
            cluster,
            migrations,
            admin,
            postmaster,
            next_schema: AtomicU32::new(0),
        })
    }

    /// The URL (with its password, for drivers to connect).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// One line describing the server and the settings that matter for the figures.
    ///
    /// # Errors
    ///
    /// The database error.
    pub(crate) async fn describe(&self) -> Result<String, BenchError> {
        let row = self
            .admin
            .query_one(
                "SELECT current_setting('server_version') AS version, \
                 current_setting('fsync') AS fsync, \
                 current_setting('synchronous_commit') AS synchronous_commit, \
                 current_setting('full_page_writes') AS full_page_writes, \
                 current_setting('shared_buffers') AS shared_buffers, \
                 current_setting('max_connections') AS max_connections",
                &[],
            )
            .await?;
        let get = |i: usize| row.get::<_, String>(i);
        let source = if self.cluster.is_some() {
            "throwaway cluster"
        } else {
            "given database"
        };
        Ok(format!(
            "PostgreSQL {} ({source}: fsync={}, synchronous_commit={}, full_page_writes={}, \
             shared_buffers={}, max_connections={})",
            get(0),
            get(1),
            get(2),
            get(3),
            get(4),
            get(5)
        ))
    }

    /// A new connection of its own (not from a pool), for the floor.
    ///
    /// # Errors
    ///
    /// The connection error.
    pub(crate) async fn connect(&self) -> Result<Client, BenchError> {
        raw_connect(&self.url).await
    }

    /// A new connection whose notifications arrive on the returned channel.
    ///
    /// # Errors
    ///
    /// The connection error.
    pub(crate) async fn connect_listening(
        &self,
    ) -> Result<(Client, mpsc::UnboundedReceiver<Notification>), BenchError> {
        let connect = tokio_postgres::connect(&self.url, NoTls);
        let (client, mut connection) = tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .map_err(|_| connect_timed_out())?
            .map_err(connect_error)?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(message)) = messages.next().await {
                if let AsyncMessage::Notification(n) = message
                    && tx.send(n).is_err()
                {
                    break;
                }
            }
        });
        Ok((client, rx))
    }

    /// Creates a schema no other run uses and migrates it to the latest version.
    ///
    /// # Errors
    ///
    /// The migration error.
    pub(crate) async fn fresh_schema(&self) -> Result<Schema, BenchError> {
        let k = self.next_schema.fetch_add(1, Ordering::Relaxed);
        let schema = Schema::new(&format!("pgmill_bench_{}_{k}", std::process::id()))?;
        self.drop_schema(&schema).await?;
        let mut conn = self.migrations.acquire().await?;
        Migrator::new(schema.clone()).up(&mut conn, None).await?;
        Ok(schema)
    }

    /// Drops a schema and everything in it.
    ///
    /// # Errors
    ///
    /// The database error.
    pub(crate) async fn drop_schema(&self, schema: &Schema) -> Result<(), BenchError> {
        self.admin
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {} CASCADE",
                schema.quoted()
            ))
            .await?;
        Ok(())
    }

    /// Puts `n` completed jobs in the table by COPY, then vacuums and analyzes it, as a table
    /// that has been in use for a while would be.
    ///
    /// # Errors
    ///
    /// The database error.
    pub(crate) async fn preload_completed(
        &self,
        schema: &Schema,
        n: u64,
    ) -> Result<(), BenchError> {
        let progress = Progress::bar(n, "preloading completed jobs");
        let at = (chrono::Utc::now() - chrono::TimeDelta::hours(1)).to_rfc3339();
        let sql = format!(
            "COPY {}.pgmill_job (state, kind, args, attempt, attempted_at, finalized_at) FROM STDIN",
            schema.quoted()
        );
        copy_rows(&self.admin, &sql, n, &progress, |i, buf| {
            buf.extend_from_slice(
                format!("completed\t{PRELOAD_KIND}\t{{\"i\":{i}}}\t1\t{at}\t{at}\n").as_bytes(),
            );
        })
        .await?;
        progress.finish();
        let spinner = Progress::spinner("vacuuming the preloaded table");
        self.vacuum(schema).await?;
        spinner.finish();
        Ok(())
    }

    /// The database's WAL insert position and transaction id counter now. Reading the counter
    /// takes a transaction id of its own, which [`DbCost::between`](crate::bench_result::DbCost)
    /// leaves out.
    ///
    /// # Errors
    ///
    /// The database error.
    pub(crate) async fn mark(&self) -> Result<DbMark, BenchError> {
        let row = self
            .admin
            .query_one(
                "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint AS wal, \
                 txid_current() AS xid",
                &[],
            )
            .await?;
        Ok(DbMark {
            wal_bytes: row.try_get(0)?,
            xid: row.try_get(1)?,
            server_cpu: self.postmaster.and_then(server_cpu_time),
        })
    }

    /// Settles a freshly queued backlog before a timed work-through, the same way for every
    /// contender: `VACUUM (ANALYZE)` of the job table (without it the autovacuum the COPY's
    /// inserts trigger starts within a minute, inside one contender's timed run and not the
    /// next's: `pg_stat_statements` showed every statement of such a run 2-4 µs per row slower)
    /// and a checkpoint (the COPY's WAL). Vacuum does not touch the backlog: every queued job
    /// stays available.
    ///
    /// # Errors
    ///
    /// The database error of the vacuum.
    pub(crate) async fn settle(&self, schema: &Schema) -> Result<(), BenchError> {
        self.vacuum(schema).await?;
        self.checkpoint().await;
        Ok(())
    }

    /// `VACUUM (ANALYZE)` of the schema's job table.
    async fn vacuum(&self, schema: &Schema) -> Result<(), BenchError> {
        self.admin
            .batch_execute(&format!("VACUUM (ANALYZE) {}.pgmill_job", schema.quoted()))
            .await?;
        Ok(())
    }

    /// Forces a checkpoint, so that no checkpoint triggered by earlier runs' WAL (a 1,000,000-row
    /// preload writes several hundred MB) writes and syncs in the background of the next measured
    /// run. Without the privilege (superuser or `pg_checkpoint`) this does nothing.
    pub(crate) async fn checkpoint(&self) {
        let _ = self.admin.batch_execute("CHECKPOINT").await;
    }

    /// Checks that exactly the jobs `0..n` were inserted, once each, and are all available.
    ///
    /// # Errors
    ///
    /// A message saying what is off.
    pub(crate) async fn verify_inserted(&self, schema: &Schema, n: u64) -> Result<(), BenchError> {
        let c = self.job_counts(schema, n).await?;
        if c.total == n && c.distinct == n && c.in_range == n && c.available == n {
            return Ok(());
        }
        Err(BenchError::new(format!(
            "expected {n} available jobs numbered 0 to {}, found {} rows ({} distinct, {} in \
             range, {} available)",
            n.saturating_sub(1),
            c.total,
            c.distinct,
            c.in_range,
            c.available
        )))
    }

    /// Checks that exactly the jobs `0..n` exist, once each, all completed in their first
    /// attempt.
    ///
    /// # Errors
    ///
    /// A message saying what is off.
    pub(crate) async fn verify_completed(&self, schema: &Schema, n: u64) -> Result<(), BenchError> {
        let c = self.job_counts(schema, n).await?;
        if c.total == n
            && c.distinct == n
            && c.in_range == n
            && c.completed == n
            && c.first_attempt == n
        {
            return Ok(());
        }
        Err(BenchError::new(format!(
            "expected {n} jobs each completed in exactly one attempt, found {} rows ({} distinct, \
             {} completed, {} with attempt = 1)",
            c.total, c.distinct, c.completed, c.first_attempt
        )))
    }

    async fn job_counts(&self, schema: &Schema, n: u64) -> Result<JobCounts, BenchError> {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let row = self
            .admin
            .query_one(
                &format!(
                    "SELECT count(*) AS total, \
                       count(DISTINCT args->>'i') AS distinct_i, \
                       count(*) FILTER (WHERE (args->>'i')::bigint BETWEEN 0 AND $2::bigint - 1) \
                         AS in_range, \
                       count(*) FILTER (WHERE state = 'available') AS available, \
                       count(*) FILTER (WHERE state = 'completed') AS completed, \
                       count(*) FILTER (WHERE attempt = 1) AS first_attempt \
                     FROM {}.pgmill_job_all WHERE kind = $1::text",
                    schema.quoted()
                ),
                &[&BenchJob::KIND, &n],
            )
            .await?;
        let get = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
        Ok(JobCounts {
            total: get(0),
            distinct: get(1),
            in_range: get(2),
            available: get(3),
            completed: get(4),
            first_attempt: get(5),
        })
    }
}

/// Where the database's WAL and transaction counter stood at one moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DbMark {
    /// Bytes of WAL inserted since the cluster began.
    pub(crate) wal_bytes: i64,
    /// The next transaction id (`txid_current()` of a fresh transaction).
    pub(crate) xid: i64,
    /// CPU time of every server process so far, when the server runs on this machine.
    pub(crate) server_cpu: Option<Duration>,
}

/// Counts of the benchmark jobs in a schema.
#[derive(Debug, Clone, Copy)]
struct JobCounts {
    total: u64,
    distinct: u64,
    in_range: u64,
    available: u64,
    completed: u64,
    first_attempt: u64,
}

/// The postmaster of the server `client` is connected to: its backend's parent, when that
/// backend is a process of this machine (the same server: a backend on another machine has no
/// `/proc` entry here, or one of an unrelated process whose parent is not a postgres).
async fn postmaster_pid(client: &Client) -> Option<i32> {
    let row = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .ok()?;
    let backend: i32 = row.try_get(0).ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{backend}/comm")).ok()?;
    if !comm.starts_with("postgres") {
        return None;
    }
    parent_pid(backend)
}

/// Connects one tokio-postgres client and drives its connection in the background.
async fn raw_connect(url: &str) -> Result<Client, BenchError> {
    let connect = tokio_postgres::connect(url, NoTls);
    let (client, connection) = tokio::time::timeout(CONNECT_TIMEOUT, connect)
        .await
        .map_err(|_| connect_timed_out())?
        .map_err(connect_error)?;
    tokio::spawn(async move {
        // Ends when the client is dropped or the server goes away; errors surface on the client.
        let _ = connection.await;
    });
    Ok(client)
}

/// Streams rows `0..n` into a text-format COPY, `write_row(i, buf)` appending each line; returns
/// the number of rows copied.
///
/// # Errors
///
/// The database error.
pub(crate) async fn copy_rows(
    client: &Client,
    sql: &str,
    n: u64,
    progress: &Progress,
    mut write_row: impl FnMut(u64, &mut BytesMut),
) -> Result<u64, BenchError> {
    let sink = client.copy_in::<_, Bytes>(sql).await?;
    let mut sink = std::pin::pin!(sink);
    let mut start = 0;
    while start < n {
        let end = (start + COPY_CHUNK).min(n);
        let mut buf = BytesMut::with_capacity(((end - start) * 32) as usize);
        for i in start..end {
            write_row(i, &mut buf);
        }
        sink.send(buf.freeze()).await?;
        progress.inc(end - start);
        start = end;
    }
    Ok(sink.finish().await?)
}

fn connect_error(e: tokio_postgres::Error) -> BenchError {
    BenchError::context("cannot connect to the database", BenchError::from(e))
}

fn connect_timed_out() -> BenchError {
    BenchError::new(format!(
        "cannot connect to the database: no answer within {} s",
        CONNECT_TIMEOUT.as_secs()
    ))
}
