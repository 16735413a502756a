-- Deletes the rows of clients whose last heartbeat is older than the retention and that are no
-- running job's current attempter (their jobs were rescued or finished), at most $2 per call.
-- A client whose heartbeat lands first keeps its row: the locked row is checked again. A client
-- that was only frozen re-registers at its next heartbeat, as after a crash restart.
-- $1: retention in microseconds
-- $2: most rows per call
WITH expired AS (
    SELECT c.id FROM {schema}.pgmill_client AS c
    WHERE c.heartbeat_at < now() - $1::bigint * interval '1 microsecond'
        AND NOT EXISTS (
            SELECT 1 FROM {schema}.pgmill_job AS j
            WHERE j.state = 'running' AND j.attempted_by[cardinality(j.attempted_by)] = c.id
        )
    LIMIT $2::bigint
    FOR UPDATE OF c SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.pgmill_client AS c USING expired WHERE c.id = expired.id
    RETURNING c.id
)
SELECT count(*) AS num_deleted FROM deleted
