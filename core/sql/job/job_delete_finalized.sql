-- Deletes finalized jobs past their retention, at most $4 per call. A NULL retention keeps that
-- state forever.
-- Each state is its own range of pgmill_job_finalized_idx (state, finalized_at, id), oldest
-- first, so a call reads only the rows it deletes, however many finished jobs are still retained
-- and whatever the statistics say. (One scan with the three states OR-ed together let the planner
-- walk the whole index and filter, every retained row read on every call, when the statistics
-- predated the finished rows.)
-- The candidates are locked by a join on (id, state, finalized_at), so a row that changed after
-- it was read (retried, say) is rechecked on its new version and left alone.
-- $1: completed jobs older than this many microseconds go, or NULL
-- $2: cancelled jobs older than this many microseconds go, or NULL
-- $3: discarded jobs older than this many microseconds go, or NULL
-- $4: most jobs per call
WITH candidates AS (
    (SELECT id, state, finalized_at
    FROM {schema}.pgmill_job
    WHERE state = 'completed' AND $1::bigint IS NOT NULL
        AND finalized_at < now() - $1::bigint * interval '1 microsecond'
    ORDER BY finalized_at
    LIMIT $4::bigint)
    UNION ALL
    (SELECT id, state, finalized_at
    FROM {schema}.pgmill_job
    WHERE state = 'cancelled' AND $2::bigint IS NOT NULL
        AND finalized_at < now() - $2::bigint * interval '1 microsecond'
    ORDER BY finalized_at
    LIMIT $4::bigint)
    UNION ALL
    (SELECT id, state, finalized_at
    FROM {schema}.pgmill_job
    WHERE state = 'discarded' AND $3::bigint IS NOT NULL
        AND finalized_at < now() - $3::bigint * interval '1 microsecond'
    ORDER BY finalized_at
    LIMIT $4::bigint)
    LIMIT $4::bigint
),
doomed AS (
    SELECT j.id
    FROM candidates AS c
    JOIN {schema}.pgmill_job AS j
        ON j.id = c.id AND j.state = c.state AND j.finalized_at = c.finalized_at
    FOR UPDATE OF j SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.pgmill_job AS j USING doomed WHERE j.id = doomed.id RETURNING j.id
)
SELECT count(*) AS num_deleted FROM deleted
