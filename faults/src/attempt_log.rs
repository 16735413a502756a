//! The side tables the fault workers and the harness write next to pgmill's own: every attempt a
//! worker starts and finishes, the faults injected, the jobs a process held when it was hit,
//! each worker's figures at a clean exit, and the trace of the run.
//!
//! The trace (`fault_trace`) is written by triggers this script installs on the test schema's job
//! and lease tables (never by pgmill's migrations): every change of a job's state, attempt or
//! fencing token, and every change of the lease, numbered by one sequence (`fault_seq`) that also
//! numbers the workers' attempt starts and finishes. Changes of one row are serialised by its
//! row lock, so their numbers follow their commit order. [`crate::Report`] replays the trace
//! through the models' statement functions (`pgmill_models::trace`).

use chrono::{DateTime, Utc};
use pgmill::Schema;
use pgmill::driver::Statement;

/// The tables, created in the test's schema after pgmill's migrations.
const CREATE: &str = "
CREATE SEQUENCE {schema}.fault_seq;

CREATE TABLE {schema}.fault_attempt (
    run_id text PRIMARY KEY,
    job_id bigint NOT NULL,
    attempt smallint NOT NULL,
    claim_token bigint,
    attempted_at timestamptz,
    client_id text NOT NULL,
    pid integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    start_seq bigint NOT NULL DEFAULT nextval('{schema}.fault_seq'),
    finish_seq bigint
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

CREATE TABLE {schema}.fault_trace (
    seq bigint PRIMARY KEY DEFAULT nextval('{schema}.fault_seq'),
    at timestamptz NOT NULL DEFAULT now(),
    source text NOT NULL,
    job_id bigint,
    old_state text,
    old_attempt integer,
    old_max_attempts integer,
    old_token bigint,
    old_owner text,
    old_attempted_at timestamptz,
    new_state text,
    new_attempt integer,
    new_max_attempts integer,
    new_token bigint,
    new_owner text,
    new_attempted_at timestamptz,
    created_at timestamptz,
    reason text,
    old_leader text,
    old_elected_at timestamptz,
    old_expires_at timestamptz,
    new_leader text,
    new_elected_at timestamptz,
    new_expires_at timestamptz
);

CREATE FUNCTION {schema}.fault_trace_job() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.fault_trace (source, job_id,
        old_state, old_attempt, old_max_attempts, old_token, old_owner, old_attempted_at,
        new_state, new_attempt, new_max_attempts, new_token, new_owner, new_attempted_at,
        created_at, reason)
    VALUES ('job', NEW.id,
        OLD.state::text, OLD.attempt, OLD.max_attempts, OLD.claim_token,
        OLD.attempted_by[cardinality(OLD.attempted_by)], OLD.attempted_at,
        NEW.state::text, NEW.attempt, NEW.max_attempts, NEW.claim_token,
        NEW.attempted_by[cardinality(NEW.attempted_by)], NEW.attempted_at,
        NEW.created_at,
        CASE WHEN cardinality(NEW.errors) > cardinality(OLD.errors)
            THEN NEW.errors[cardinality(NEW.errors)]->>'error' END);
    RETURN NULL;
END
$$;

CREATE TRIGGER fault_trace_job AFTER UPDATE ON {schema}.pgmill_job FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.attempt IS DISTINCT FROM NEW.attempt
        OR OLD.claim_token IS DISTINCT FROM NEW.claim_token)
    EXECUTE FUNCTION {schema}.fault_trace_job();

CREATE FUNCTION {schema}.fault_trace_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {schema}.fault_trace (source, new_leader, new_elected_at, new_expires_at)
        VALUES ('lease', NEW.leader_id, NEW.elected_at, NEW.expires_at);
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO {schema}.fault_trace (source, old_leader, old_elected_at, old_expires_at,
            new_leader, new_elected_at, new_expires_at)
        VALUES ('lease', OLD.leader_id, OLD.elected_at, OLD.expires_at,
            NEW.leader_id, NEW.elected_at, NEW.expires_at);
    ELSE
        INSERT INTO {schema}.fault_trace (source, old_leader, old_elected_at, old_expires_at)
        VALUES ('lease', OLD.leader_id, OLD.elected_at, OLD.expires_at);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER fault_trace_lease AFTER INSERT OR UPDATE OR DELETE ON {schema}.pgmill_leader
    FOR EACH ROW EXECUTE FUNCTION {schema}.fault_trace_lease();

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
        "UPDATE {schema}.fault_attempt \
         SET finished_at = now(), finish_seq = nextval('{schema}.fault_seq') \
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
