-- Removes the retention rule of a queue ('*' for every queue) and final state: the next rule in
-- line applies again (the one for every queue, then the clients' configuration). Returns the
-- rule removed.
-- $1: queue, or '*'
-- $2: final state: completed, cancelled or discarded
DELETE FROM {schema}.pgmill_retention AS r
WHERE r.queue = $1::text AND r.state = $2::text::{schema}.pgmill_job_state
RETURNING r.queue AS queue, r.state::text AS state, r.keep_seconds AS keep_seconds,
    r.updated_at AS updated_at
