//! The side tables the fault workers and the harness write next to pgmill's own: every attempt a
//! worker starts and finishes, the faults injected, the jobs a process held when it was hit,
//! each worker's figures at a clean exit, and the trace of the run.
//!
//! The trace (`fault_trace`) is written by triggers this script installs on the test schema's job
//! tables and lease table (never by pgmill's migrations): every change of a job's state, attempt
//! or fencing token in the job table, every row written to or deleted from the job table, the
//! history or the dead-letter queue (a finished job's move out is one of each, by one statement),
//! and every change of the lease, numbered by one sequence (`fault_seq`) that also numbers the
//! workers' attempt starts and finishes. Changes of one row are serialised by its
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
    xact bigint,
    statement_at timestamptz,
    old_table text,
    old_state text,
    old_attempt integer,
    old_max_attempts integer,
    old_token bigint,
    old_owner text,
    old_attempted_at timestamptz,
    old_kept_in text[],
    old_errors integer,
    old_last_error text,
    new_table text,
    new_state text,
    new_attempt integer,
    new_max_attempts integer,
    new_token bigint,
    new_owner text,
    new_attempted_at timestamptz,
    new_kept_in text[],
    new_errors integer,
    new_last_error text,
    created_at timestamptz,
    old_leader text,
    old_elected_at timestamptz,
    old_expires_at timestamptz,
    new_leader text,
    new_elected_at timestamptz,
    new_expires_at timestamptz
);

-- The finished states a unique job's key stays taken in (NULL for a job without a unique key).
CREATE FUNCTION {schema}.fault_trace_kept_in(r jsonb) RETURNS text[] LANGUAGE SQL IMMUTABLE AS $$
    SELECT CASE WHEN r->>'unique_key' IS NULL OR r->>'unique_states' IS NULL THEN NULL
        ELSE ARRAY(
            SELECT s FROM unnest(ARRAY['completed', 'cancelled', 'discarded']) AS s
            WHERE {schema}.pgmill_job_state_in_bitmask((r->>'unique_states')::bit(8),
                s::{schema}.pgmill_job_state))
    END
$$;

-- A job row changed in place in the job table (`job`), or was deleted from (`left`) or written
-- to (`entered`) the job table, a slot of the history or the dead-letter queue, with the
-- transaction and the statement's start that tell the two halves of one move apart.
CREATE FUNCTION {schema}.fault_trace_job() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o jsonb := CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END;
    n jsonb := CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END;
BEGIN
    INSERT INTO {schema}.fault_trace (source, job_id, xact, statement_at,
        old_table, old_state, old_attempt, old_max_attempts, old_token, old_owner,
        old_attempted_at, old_kept_in, old_errors, old_last_error,
        new_table, new_state, new_attempt, new_max_attempts, new_token, new_owner,
        new_attempted_at, new_kept_in, new_errors, new_last_error,
        created_at)
    VALUES (CASE TG_OP WHEN 'UPDATE' THEN 'job' WHEN 'DELETE' THEN 'left' ELSE 'entered' END,
        (coalesce(n, o)->>'id')::bigint, txid_current(), statement_timestamp(),
        CASE WHEN o IS NOT NULL THEN TG_TABLE_NAME END, o->>'state', (o->>'attempt')::integer,
        (o->>'max_attempts')::integer, (o->>'claim_token')::bigint, o->'attempted_by'->>-1,
        (o->>'attempted_at')::timestamptz, {schema}.fault_trace_kept_in(o),
        jsonb_array_length(o->'errors'), o->'errors'->-1->>'error',
        CASE WHEN n IS NOT NULL THEN TG_TABLE_NAME END, n->>'state', (n->>'attempt')::integer,
        (n->>'max_attempts')::integer, (n->>'claim_token')::bigint, n->'attempted_by'->>-1,
        (n->>'attempted_at')::timestamptz, {schema}.fault_trace_kept_in(n),
        jsonb_array_length(n->'errors'), n->'errors'->-1->>'error',
        (coalesce(n, o)->>'created_at')::timestamptz);
    RETURN NULL;
END
$$;

CREATE TRIGGER fault_trace_job AFTER UPDATE ON {schema}.pgmill_job FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.attempt IS DISTINCT FROM NEW.attempt
        OR OLD.claim_token IS DISTINCT FROM NEW.claim_token)
    EXECUTE FUNCTION {schema}.fault_trace_job();
CREATE TRIGGER fault_trace_job_moves AFTER INSERT OR DELETE ON {schema}.pgmill_job
    FOR EACH ROW EXECUTE FUNCTION {schema}.fault_trace_job();
CREATE TRIGGER fault_trace_job_moves AFTER INSERT OR DELETE ON {schema}.pgmill_job_done
    FOR EACH ROW EXECUTE FUNCTION {schema}.fault_trace_job();
CREATE TRIGGER fault_trace_job_moves AFTER INSERT OR DELETE ON {schema}.pgmill_job_dead
    FOR EACH ROW EXECUTE FUNCTION {schema}.fault_trace_job();

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
