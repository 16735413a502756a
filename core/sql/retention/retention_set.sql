-- Sets the retention rule of a queue ('*' for every queue) and final state: how long finished
-- jobs are kept, NULL for forever. Returns the rule as stored.
-- $1: queue, or '*'
-- $2: final state: completed, cancelled or discarded
-- $3: seconds kept, or NULL for forever
INSERT INTO {schema}.pgmill_retention AS r (queue, state, keep_seconds)
VALUES ($1::text, $2::text::{schema}.pgmill_job_state, $3::bigint)
ON CONFLICT (queue, state) DO UPDATE
SET keep_seconds = excluded.keep_seconds, updated_at = now()
RETURNING r.queue AS queue, r.state::text AS state, r.keep_seconds AS keep_seconds,
    r.updated_at AS updated_at
