-- Deletes dead-letter jobs that entered the queue more than the retention ago, oldest first, at
-- most $2 per call, along the (dead_at, id) index, so a call reads only what it deletes.
-- $1: the retention, in microseconds
-- $2: most jobs per call
WITH doomed AS (
    SELECT x.id
    FROM {schema}.pgmill_job_dead AS x
    WHERE x.dead_at < now() - $1::bigint * interval '1 microsecond'
    ORDER BY x.dead_at, x.id
    LIMIT $2::bigint
    FOR UPDATE SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.pgmill_job_dead AS x USING doomed AS d WHERE x.id = d.id RETURNING x.id
)
SELECT count(*) AS num_deleted FROM deleted
