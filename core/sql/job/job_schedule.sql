-- Makes due scheduled and retryable jobs available, at most $2 per call, and says how many per
-- queue. Jobs due within the look-ahead become available early and keep their scheduled_at: the
-- fetch still waits for it, so they start on time without waiting for the next scheduler run.
-- $1: look-ahead in microseconds
-- $2: most jobs per call
WITH due AS (
    SELECT id
    FROM {schema}.pgmill_job
    WHERE state IN ('scheduled', 'retryable')
        AND scheduled_at <= now() + $1::bigint * interval '1 microsecond'
    ORDER BY scheduled_at, id
    LIMIT $2::bigint
    FOR UPDATE SKIP LOCKED
),
updated AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = 'available'
    FROM due
    WHERE j.id = due.id
    RETURNING j.queue AS queue
)
SELECT queue, count(*) AS num_jobs
FROM updated
GROUP BY queue
