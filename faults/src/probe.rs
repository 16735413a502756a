//! The harness's own connection to the database under test: the clock, the fault log, the
//! top-up inserts and the checks, reconnecting across restarts and terminations.

use std::time::{Duration, Instant};

use pgmill::{InsertParams, Inserter, Migrator, Schema};
use pgmill_driver_tokio_postgres::TokioPostgresExecutor;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row};

use crate::attempt_log::create_script;
use crate::error::Error;
use crate::fault_worker::FaultJob;

/// How long a harness statement keeps being retried while the database is unreachable.
const RETRY_FOR: Duration = Duration::from_secs(90);

/// The harness's connection; reconnects when a statement fails.
pub(crate) struct Probe {
    url: String,
    schema: Schema,
    client: Option<Client>,
    inserter: Inserter,
    next_n: u64,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("schema", &self.schema)
            .field("inserted", &self.next_n)
            .finish_non_exhaustive()
    }
}

impl Probe {
    /// Connects, migrates `schema` and creates the side tables. With `durable_commits` (a
    /// private cluster, started with `synchronous_commit = off` like every test cluster), turns
    /// synchronous commit back on for the database: a crash restart loses the last commits made
    /// without it, acknowledged or not, and the checks would count those as lost work.
    pub(crate) async fn setup(
        url: &str,
        schema: Schema,
        durable_commits: bool,
    ) -> Result<Probe, Error> {
        let mut probe = Probe {
            url: url.to_owned(),
            inserter: Inserter::new(schema.clone()),
            schema,
            client: None,
            next_n: 0,
        };
        let schema = probe.schema.clone();
        let client = probe.connected().await?;
        if durable_commits {
            client
                .batch_execute(
                    "ALTER DATABASE postgres SET synchronous_commit = on; \
                     SET synchronous_commit = on",
                )
                .await?;
        }
        Migrator::new(schema.clone())
            .up(&mut TokioPostgresExecutor::new(&mut *client), None)
            .await?;
        client.batch_execute(&create_script(&schema)).await?;
        Ok(probe)
    }

    /// The jobs inserted so far (their `n` runs from 0 to this, exclusive).
    pub(crate) fn inserted(&self) -> u64 {
        self.next_n
    }

    async fn connected(&mut self) -> Result<&mut Client, Error> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            let (client, connection) = tokio_postgres::connect(&self.url, NoTls).await?;
            tokio::spawn(connection);
            self.client = Some(client);
        }
        Ok(self.client.as_mut().expect("connected above"))
    }

    /// Runs `sql` (rendered in the schema), retrying on a fresh connection for up to
    /// [`RETRY_FOR`] while it fails.
    pub(crate) async fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        let sql = self.schema.render(sql);
        let deadline = Instant::now() + RETRY_FOR;
        loop {
            let result = match self.connected().await {
                Ok(client) => client.query(&sql, params).await.map_err(Error::from),
                Err(e) => Err(e),
            };
            match result {
                Ok(rows) => return Ok(rows),
                Err(e) if Instant::now() < deadline => {
                    tracing::debug!(error = %e, "harness statement failed; retrying");
                    self.client = None;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One `bigint` from a one-row, one-column query.
    pub(crate) async fn count(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<i64, Error> {
        let rows = self.query(sql, params).await?;
        Ok(rows.first().map(|r| r.get(0)).unwrap_or(0))
    }

    /// Logs a fault of `kind` at the database's `now()`, with the running jobs `client_id`
    /// holds at that moment (the jobs whose rescue is measured).
    pub(crate) async fn record(
        &mut self,
        kind: &str,
        client_id: Option<&str>,
        bounded: bool,
    ) -> Result<(), Error> {
        self.query(
            "WITH ev AS (
                    INSERT INTO {schema}.fault_event (kind, client_id, at, bounded, leader_id)
                    VALUES ($1::text, $2::text, now(), $3::boolean, (
                        SELECT leader_id FROM {schema}.pgmill_leader WHERE expires_at > now()
                    ))
                    RETURNING id, at
                ), held AS (
                    INSERT INTO {schema}.fault_held (event_id, job_id)
                    SELECT ev.id, j.id FROM ev, {schema}.pgmill_job j
                    WHERE $2::text IS NOT NULL
                        AND j.state = 'running'
                        AND j.attempted_by[cardinality(j.attempted_by)] = $2::text
                    RETURNING job_id
                )
                SELECT ev.at AS at, (SELECT count(*) FROM held) AS held FROM ev",
            &[&kind, &client_id, &bounded],
        )
        .await?;
        Ok(())
    }

    /// The current leader's client id, if any holds an unexpired lease.
    pub(crate) async fn leader(&mut self) -> Result<Option<String>, Error> {
        let rows = self
            .query(
                "SELECT leader_id FROM {schema}.pgmill_leader WHERE expires_at > now()",
                &[],
            )
            .await?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    /// Terminates every backend of `application_name`; returns how many.
    pub(crate) async fn terminate_backends(
        &mut self,
        application_name: &str,
    ) -> Result<i64, Error> {
        self.count(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = $1::text",
            &[&application_name],
        )
        .await
    }

    /// Tops the available jobs up to `backlog` when fewer than half are left; returns how many
    /// it inserted.
    pub(crate) async fn top_up(&mut self, backlog: u64) -> Result<u64, Error> {
        let available = self
            .count(
                "SELECT count(*) FROM {schema}.pgmill_job WHERE state = 'available'",
                &[],
            )
            .await?;
        let available = u64::try_from(available).unwrap_or(0);
        if available * 2 >= backlog {
            return Ok(0);
        }
        let params = (self.next_n..self.next_n + backlog - available)
            .map(|n| InsertParams::from_args(&FaultJob { n }, None))
            .collect::<pgmill::Result<Vec<_>>>()?;
        self.connected().await?;
        let client = self.client.as_mut().expect("connected above");
        let result = self
            .inserter
            .insert_bulk(&mut TokioPostgresExecutor::new(&mut *client), &params)
            .await;
        match result {
            Ok(_) => {
                self.next_n += params.len() as u64;
                Ok(params.len() as u64)
            }
            Err(e) => {
                // The next top-up tries again on a fresh connection; an insert whose reply was
                // lost is told apart by `n` (its numbers are inserted again, not skipped).
                tracing::debug!(error = %e, "top-up failed");
                self.client = None;
                Ok(0)
            }
        }
    }
}
