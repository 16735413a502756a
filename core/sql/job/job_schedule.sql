-- Makes due scheduled and retryable jobs available, at most $2 per call, and says how many per
-- queue. Jobs due within the look-ahead become available early and keep their scheduled_at: the
-- fetch still waits for it, so they start on time without waiting for the next scheduler run.
-- Only jobs due from $3 on are looked at: the scheduler passes how far its last pass went (less
-- a margin for transactions that committed late), so under a snapshot held open elsewhere a pass
-- does not walk the index entries of every job it made available since then.
-- Each queue's earliest job made available is announced on the rewind topic ($4), delivered
-- at commit: a producer whose claims start past it starts its next claim there.
-- $1: look-ahead in microseconds
-- $2: most jobs per call
-- $3: only jobs due at or after this time, or NULL for every due job
-- $4: the rewind channel, or NULL to announce nothing
WITH due AS (
    SELECT id
    FROM {schema}.pgmill_job
    WHERE state IN ('scheduled', 'retryable')
        AND scheduled_at <= now() + $1::bigint * interval '1 microsecond'
        AND scheduled_at >= coalesce($3::timestamptz, '-infinity'::timestamptz)
    ORDER BY scheduled_at, id
    LIMIT $2::bigint
    FOR UPDATE SKIP LOCKED
),
updated AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = 'available'
    FROM due
    WHERE j.id = due.id
    RETURNING j.queue AS queue, j.priority AS priority, j.scheduled_at AS scheduled_at,
        j.id AS id
),
rewound AS (
    SELECT count(pg_notify($4::text, r.queue || E'\t' || r.priority || E'\t'
        || (extract(epoch FROM r.scheduled_at) * 1000000)::bigint || E'\t' || r.id))
        AS num_rewinds
    FROM (
        SELECT DISTINCT ON (m.queue) m.queue, m.priority, m.scheduled_at, m.id
        FROM updated AS m
        ORDER BY m.queue, m.priority, m.scheduled_at, m.id
    ) AS r
    WHERE $4::text IS NOT NULL
)
SELECT u.queue AS queue, count(*) AS num_jobs
FROM updated AS u
CROSS JOIN rewound
GROUP BY u.queue
