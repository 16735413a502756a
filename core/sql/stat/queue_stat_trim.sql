-- Deletes queue statistics past their retention, oldest first, at most $2 rows per call, through
-- pgmill_queue_stat_bucket_idx: a call reads only the rows it deletes.
-- $1: rows whose bucket began more than this many microseconds ago go
-- $2: most rows per call
WITH doomed AS (
    SELECT s.queue AS queue, s.bucket AS bucket
    FROM {schema}.pgmill_queue_stat AS s
    WHERE s.bucket < now() - $1::bigint * interval '1 microsecond'
    ORDER BY s.bucket
    LIMIT $2::bigint
),
deleted AS (
    DELETE FROM {schema}.pgmill_queue_stat AS s
    USING doomed AS d
    WHERE s.queue = d.queue AND s.bucket = d.bucket
    RETURNING s.queue
)
SELECT count(*) AS num_deleted FROM deleted
