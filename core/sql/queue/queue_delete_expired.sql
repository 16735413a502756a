-- Deletes queue rows no producer refreshed within the retention, at most $2 per call.
-- $1: retention in microseconds
-- $2: most queues per call
WITH expired AS (
    SELECT name FROM {schema}.pgmill_queue
    WHERE updated_at < now() - $1::bigint * interval '1 microsecond'
    LIMIT $2::bigint
    FOR UPDATE SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.pgmill_queue AS q USING expired WHERE q.name = expired.name
    RETURNING q.name
)
SELECT count(*) AS num_deleted FROM deleted
