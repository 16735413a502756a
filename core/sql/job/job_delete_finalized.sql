-- Deletes finalized jobs past their retention, at most $4 per call. A NULL retention keeps that
-- state forever.
-- $1: completed jobs older than this many microseconds go, or NULL
-- $2: cancelled jobs older than this many microseconds go, or NULL
-- $3: discarded jobs older than this many microseconds go, or NULL
-- $4: most jobs per call
WITH doomed AS (
    SELECT id
    FROM {schema}.pgmill_job
    WHERE (state = 'completed' AND $1::bigint IS NOT NULL
            AND finalized_at < now() - $1::bigint * interval '1 microsecond')
        OR (state = 'cancelled' AND $2::bigint IS NOT NULL
            AND finalized_at < now() - $2::bigint * interval '1 microsecond')
        OR (state = 'discarded' AND $3::bigint IS NOT NULL
            AND finalized_at < now() - $3::bigint * interval '1 microsecond')
    LIMIT $4::bigint
    FOR UPDATE SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.pgmill_job AS j USING doomed WHERE j.id = doomed.id RETURNING j.id
)
SELECT count(*) AS num_deleted FROM deleted
