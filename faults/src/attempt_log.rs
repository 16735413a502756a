//! The side tables the fault workers and the harness write next to pgmill's own: every attempt a
//! worker starts and finishes, the faults injected, the jobs a process held when it was hit, and
//! each worker's figures at a clean exit.

use chrono::{DateTime, Utc};
use pgmill::Schema;
use pgmill::driver::Statement;

/// The tables, created in the test's schema after pgmill's migrations.
const CREATE: &str = "
CREATE TABLE {schema}.fault_attempt (
    run_id text PRIMARY KEY,
    job_id bigint NOT NULL,
    attempt smallint NOT NULL,
    claim_token bigint,
    attempted_at timestamptz,
    client_id text NOT NULL,
    pid integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX fault_attempt_job_idx ON {schema}.fault_attempt (job_id, attempted_at);

CREATE TABLE {schema}.fault_event (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind text NOT NULL,
    client_id text,
    at timestamptz NOT NULL,
    bounded boolean NOT NULL DEFAULT true,
    leader_id text
);

CREATE TABLE {schema}.fault_held (
    event_id bigint NOT NULL,
    job_id bigint NOT NULL,
    PRIMARY KEY (event_id, job_id)
);

CREATE TABLE {schema}.fault_exit (
    client_id text PRIMARY KEY,
    recorded_outcomes bigint NOT NULL,
    superseded_results bigint NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
);
";

/// The SQL script creating the side tables in `schema`.
pub fn create_script(schema: &Schema) -> String {
    schema.render(CREATE)
}

/// One attempt as a worker saw it when it started.
#[derive(Debug, Clone)]
pub struct AttemptStart {
    /// Unique per run of `Worker::work`, so a retried insert is recorded once.
    pub run_id: String,
    /// The job's id.
    pub job_id: i64,
    /// The attempt number the job row showed.
    pub attempt: i16,
    /// The claim's fencing token.
    pub claim_token: Option<i64>,
    /// When the claim was made, by the database clock (the row's `attempted_at`).
    pub attempted_at: Option<DateTime<Utc>>,
    /// The client running it.
    pub client_id: String,
    /// The worker process's id.
    pub pid: i32,
}

impl AttemptStart {
    /// The statement recording this start (idempotent: a retry after a lost reply records
    /// nothing more).
    pub fn statement(&self, schema: &Schema) -> Statement {
        Statement::new(schema.render(
            "INSERT INTO {schema}.fault_attempt \
             (run_id, job_id, attempt, claim_token, attempted_at, client_id, pid) \
             VALUES ($1::text, $2::bigint, $3::smallint, $4::bigint, $5::timestamptz, $6::text, \
             $7::integer) ON CONFLICT (run_id) DO NOTHING",
        ))
        .bind(self.run_id.clone())
        .bind(self.job_id)
        .bind(self.attempt)
        .bind(self.claim_token)
        .bind(self.attempted_at)
        .bind(self.client_id.clone())
        .bind(self.pid)
    }
}

/// The statement recording that run `run_id` finished its work (before its outcome is sent).
pub fn finished(schema: &Schema, run_id: &str) -> Statement {
    Statement::new(schema.render(
        "UPDATE {schema}.fault_attempt SET finished_at = now() \
         WHERE run_id = $1::text AND finished_at IS NULL",
    ))
    .bind(run_id)
}

/// The statement recording a worker's figures as it exits after a soft stop.
pub fn exited(
    schema: &Schema,
    client_id: &str,
    recorded_outcomes: u64,
    superseded_results: u64,
) -> Statement {
    Statement::new(schema.render(
        "INSERT INTO {schema}.fault_exit (client_id, recorded_outcomes, superseded_results) \
         VALUES ($1::text, $2::bigint, $3::bigint) ON CONFLICT (client_id) DO NOTHING",
    ))
    .bind(client_id)
    .bind(i64::try_from(recorded_outcomes).unwrap_or(i64::MAX))
    .bind(i64::try_from(superseded_results).unwrap_or(i64::MAX))
}
