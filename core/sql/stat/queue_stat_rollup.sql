-- Writes the queue statistics of the buckets in [$1, $2): per bucket, one row for all queues
-- together (queue '*') and one per queue with something to report; each bucket at most once.
--
-- This is the one statement that reads jobs for the statistics: pointing the rollup at another
-- place where finished jobs are kept means changing this file only.
--
-- What a bucket [bucket, bucket_end) counts, per queue:
-- - completed, discarded, cancelled: jobs whose finalized_at falls in it;
-- - retried: errors recorded in it (their "at") that did not finalize their job (a discard's
--   or a cancel's own error carries the job's finalized_at; any other error is an attempt that
--   failed and runs again); a rescue is counted with them. The jobs holding such errors are
--   found where a job that failed since $1 can be by now: finalized since $1, running since $1
--   (claimed again), retryable, or available and due since $1 (retried with a short delay). Two
--   kinds are missed: a job rescued into its old place in the queue and not claimed again yet
--   (its scheduled_at is before $1), and one that failed, ran again and was snoozed before this
--   pass;
-- - pickup_count, pickup_p95_us: attempts claimed in it (attempted_at), among the jobs running
--   now and the jobs finalized since $1 (an attempt that failed and runs again has a new
--   scheduled_at, so it is left out), and the 95th percentile of their wait since scheduled_at;
-- - sampled_at, depth, oldest_available_us (only when $4, on the last bucket): the queue now,
--   live jobs by state (every state of the job state type but completed, cancelled and
--   discarded, so a state added later is counted without changing this file) and the age of its
--   oldest due available job.
--
-- Cost: the jobs finalized since $1, the running jobs, the retryable jobs, the available jobs
-- due since $1, and (with $4) one index range per queue and live state, as queue_list.sql counts
-- them. Jobs finalized before $1 (the history) and the backlog of available jobs due before $1
-- are never read. Finished jobs are read where they are: completed and cancelled ones in
-- pgmill_job_done through its BRIN index on finalized_at (the block ranges holding rows that
-- finished since $1: rows arrive there in finalized_at order, and each slot's index summarizes
-- its new ranges as they fill), discarded ones in pgmill_job_dead through
-- pgmill_job_dead_dead_at_idx, and those still in the job table per state through
-- pgmill_job_finalized_idx (state, finalized_at, id); running ones through
-- pgmill_job_running_idx (attempted_at), retryable ones through pgmill_job_state_queue_idx, and
-- available ones through pgmill_job_fetch_idx, one range per queue and priority. A job is in one
-- of the three tables at every moment and keeps its finalized_at when it moves, so this
-- statement's snapshot counts it once, and only in the bucket of its finalized_at.
--
-- Written once: the '*' rows are inserted first, ON CONFLICT DO NOTHING (on the primary key and
-- on the constraint that keeps '*' buckets from overlapping), and a bucket's queue rows only when
-- its '*' row was inserted by this statement. A concurrent pass computing the same bucket waits
-- for this one's '*' row, then inserts nothing for it.
--
-- $1: the start of the first bucket (the end of the last bucket written)
-- $2: the end of the last bucket, a multiple of the width from 2000-01-01 UTC
-- $3: the width of a bucket, in microseconds
-- $4: true to sample depth and wait into the last bucket ($2 is the newest bucket's end)
WITH RECURSIVE buckets AS (
    SELECT greatest(g, $1::timestamptz) AS bucket,
        g + $3::bigint * interval '1 microsecond' AS bucket_end
    FROM generate_series(
        date_bin($3::bigint * interval '1 microsecond', $1::timestamptz,
            timestamptz '2000-01-01 00:00:00+00'),
        $2::timestamptz - $3::bigint * interval '1 microsecond',
        $3::bigint * interval '1 microsecond') AS g
),
live_state AS (
    SELECT s AS state
    FROM unnest(enum_range(NULL::{schema}.pgmill_job_state)) AS s
    WHERE s::text NOT IN ('completed', 'cancelled', 'discarded')
),
-- Each queue holding jobs in each live state, by skipping through pgmill_job_state_queue_idx.
found_queue AS (
    SELECT w.state AS state,
        (SELECT min(j.queue) FROM {schema}.pgmill_job AS j WHERE j.state = w.state) AS queue
    FROM live_state AS w
    UNION ALL
    SELECT f.state AS state,
        (SELECT min(j.queue) FROM {schema}.pgmill_job AS j
         WHERE j.state = f.state AND j.queue > f.queue) AS queue
    FROM found_queue AS f
    WHERE f.queue IS NOT NULL
),
finished AS (
    -- Finished jobs still in the job table: a unique job whose final state keeps its key, or a
    -- job a client of an earlier schema version finished in place.
    (SELECT j.queue, j.state::text AS state, j.finalized_at, j.attempted_at, j.scheduled_at,
        j.errors
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'completed' AND j.finalized_at >= $1::timestamptz)
    UNION ALL
    (SELECT j.queue, j.state::text, j.finalized_at, j.attempted_at, j.scheduled_at, j.errors
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'discarded' AND j.finalized_at >= $1::timestamptz)
    UNION ALL
    (SELECT j.queue, j.state::text, j.finalized_at, j.attempted_at, j.scheduled_at, j.errors
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'cancelled' AND j.finalized_at >= $1::timestamptz)
    UNION ALL
    -- Completed and cancelled jobs in the history.
    (SELECT d.queue, d.state::text, d.finalized_at, d.attempted_at, d.scheduled_at, d.errors
    FROM {schema}.pgmill_job_done AS d
    WHERE d.finalized_at >= $1::timestamptz)
    UNION ALL
    -- Discarded jobs in the dead-letter queue: a job enters it when it is discarded or later
    -- (dead_at >= finalized_at), so the dead_at range holds every one discarded since $1.
    (SELECT x.queue, x.state::text, x.finalized_at, x.attempted_at, x.scheduled_at, x.errors
    FROM {schema}.pgmill_job_dead AS x
    WHERE x.dead_at >= $1::timestamptz AND x.finalized_at >= $1::timestamptz)
),
running AS (
    SELECT j.queue, j.attempted_at, j.scheduled_at, j.errors
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'running' AND j.attempted_at >= $1::timestamptz
),
waiting_retry AS (
    SELECT j.queue, j.errors
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'retryable'
    UNION ALL
    SELECT a.queue, a.errors
    FROM found_queue AS f
    CROSS JOIN generate_series(1, 4) AS p(priority)
    CROSS JOIN LATERAL (
        SELECT j.queue, j.errors
        FROM {schema}.pgmill_job AS j
        WHERE j.state = 'available' AND j.queue = f.queue AND j.priority = p.priority
            AND j.scheduled_at >= $1::timestamptz AND j.attempt > 0
    ) AS a
    WHERE f.state = 'available' AND f.queue IS NOT NULL
),
failure AS (
    SELECT x.queue AS queue, x.finalized_at AS finalized_at,
        CASE WHEN jsonb_typeof(e.error->'at') = 'string'
                AND e.error->>'at' ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}'
            THEN (e.error->>'at')::timestamptz END AS at
    FROM (
        SELECT queue, errors, finalized_at FROM finished WHERE cardinality(errors) > 0
        UNION ALL
        SELECT queue, errors, NULL FROM running WHERE cardinality(errors) > 0
        UNION ALL
        SELECT queue, errors, NULL FROM waiting_retry WHERE cardinality(errors) > 0
    ) AS x
    CROSS JOIN LATERAL unnest(x.errors) AS e(error)
),
-- Each event of [$1, $2) with its bucket (the multiple of the width at or before its time, or $1
-- for a first bucket that starts between two multiples), counted per bucket and queue: outcomes
-- and retries by hashing; pickups, whose percentile needs their waits in order, by one sort
-- (grouped per queue, then per bucket for all queues from the same order).
counted AS (
    SELECT greatest(date_bin($3::bigint * interval '1 microsecond', e.at,
            timestamptz '2000-01-01 00:00:00+00'), $1::timestamptz) AS bucket,
        e.queue AS queue,
        count(*) FILTER (WHERE e.kind = 'completed') AS completed,
        count(*) FILTER (WHERE e.kind = 'discarded') AS discarded,
        count(*) FILTER (WHERE e.kind = 'cancelled') AS cancelled,
        count(*) FILTER (WHERE e.kind = 'retried') AS retried
    FROM (
        SELECT f.queue AS queue, f.state AS kind, f.finalized_at AS at
        FROM finished AS f
        WHERE f.finalized_at < $2::timestamptz
        UNION ALL
        SELECT f.queue, 'retried', f.at
        FROM failure AS f
        WHERE f.at >= $1::timestamptz AND f.at < $2::timestamptz
            AND f.at IS DISTINCT FROM f.finalized_at
    ) AS e
    GROUP BY 1, 2
),
pickup AS (
    SELECT greatest(date_bin($3::bigint * interval '1 microsecond', p.attempted_at,
            timestamptz '2000-01-01 00:00:00+00'), $1::timestamptz) AS bucket,
        p.queue AS queue, p.attempted_at - p.scheduled_at AS wait
    FROM (
        SELECT queue, attempted_at, scheduled_at FROM finished
        UNION ALL
        SELECT queue, attempted_at, scheduled_at FROM running
    ) AS p
    WHERE p.attempted_at >= $1::timestamptz AND p.attempted_at < $2::timestamptz
        AND p.scheduled_at <= p.attempted_at
),
pickup_stat AS (
    SELECT p.bucket AS bucket, coalesce(p.queue, '*') AS queue, count(*) AS n,
        (extract(epoch FROM percentile_cont(0.95) WITHIN GROUP (ORDER BY p.wait))
            * 1000000)::bigint AS p95_us
    FROM pickup AS p
    GROUP BY GROUPING SETS ((p.bucket, p.queue), (p.bucket))
),
pickup_count AS (
    SELECT s.bucket AS bucket, s.queue AS queue, s.n AS n
    FROM pickup_stat AS s
    WHERE s.queue <> '*'
),
pickup_p95 AS (
    SELECT s.bucket AS bucket, s.queue AS queue, s.p95_us AS p95_us FROM pickup_stat AS s
),
-- Per bucket and queue, and per bucket for all queues ('*').
tally_by_queue AS (
    SELECT coalesce(c.bucket, n.bucket) AS bucket, coalesce(c.queue, n.queue) AS queue,
        coalesce(c.completed, 0) AS completed, coalesce(c.discarded, 0) AS discarded,
        coalesce(c.cancelled, 0) AS cancelled, coalesce(c.retried, 0) AS retried,
        coalesce(n.n, 0) AS pickup_count
    FROM counted AS c
    FULL JOIN pickup_count AS n ON n.bucket = c.bucket AND n.queue = c.queue
),
tally AS (
    SELECT t.bucket AS bucket, t.queue AS queue, t.completed AS completed,
        t.discarded AS discarded, t.cancelled AS cancelled, t.retried AS retried,
        t.pickup_count AS pickup_count, p.p95_us AS pickup_p95_us
    FROM tally_by_queue AS t
    LEFT JOIN pickup_p95 AS p ON p.bucket = t.bucket AND p.queue = t.queue
    UNION ALL
    SELECT t.bucket, '*', sum(t.completed)::bigint, sum(t.discarded)::bigint,
        sum(t.cancelled)::bigint, sum(t.retried)::bigint, sum(t.pickup_count)::bigint,
        max(p.p95_us)
    FROM tally_by_queue AS t
    LEFT JOIN pickup_p95 AS p ON p.bucket = t.bucket AND p.queue = '*'
    GROUP BY t.bucket
),
depth_by_state AS (
    SELECT f.queue AS queue, f.state::text AS state,
        (SELECT count(*) FROM {schema}.pgmill_job AS j
         WHERE j.state = f.state AND j.queue = f.queue) AS n
    FROM found_queue AS f
    WHERE $4::boolean AND f.queue IS NOT NULL
),
depth AS (
    SELECT d.queue AS queue, jsonb_object_agg(d.state, d.n) AS depth
    FROM depth_by_state AS d
    GROUP BY d.queue
    UNION ALL
    SELECT '*', coalesce(jsonb_object_agg(t.state, t.n), '{}'::jsonb)
    FROM (SELECT d.state AS state, sum(d.n)::bigint AS n
          FROM depth_by_state AS d GROUP BY d.state) AS t
    HAVING $4::boolean
),
oldest AS (
    SELECT f.queue AS queue,
        (
            SELECT (extract(epoch FROM now() - min(o.scheduled_at)) * 1000000)::bigint
            FROM generate_series(1, 4) AS p(priority)
            CROSS JOIN LATERAL (
                SELECT j.scheduled_at
                FROM {schema}.pgmill_job AS j
                WHERE j.state = 'available' AND j.queue = f.queue AND j.priority = p.priority
                    AND j.scheduled_at <= now()
                ORDER BY j.scheduled_at
                LIMIT 1
            ) AS o
        ) AS oldest_available_us
    FROM found_queue AS f
    WHERE $4::boolean AND f.state = 'available' AND f.queue IS NOT NULL
),
oldest_all AS (
    SELECT o.queue AS queue, o.oldest_available_us AS oldest_available_us FROM oldest AS o
    UNION ALL
    SELECT '*', max(o.oldest_available_us) FROM oldest AS o HAVING $4::boolean
),
last_bucket AS (
    SELECT max(b.bucket) AS bucket FROM buckets AS b
),
cell AS (
    SELECT b.bucket AS bucket, '*' AS queue FROM buckets AS b
    UNION
    SELECT t.bucket, t.queue FROM tally AS t
    UNION
    SELECT l.bucket, d.queue FROM depth AS d CROSS JOIN last_bucket AS l
),
stat AS (
    SELECT c.queue AS queue, c.bucket AS bucket, b.bucket_end AS bucket_end,
        coalesce(t.completed, 0) AS completed, coalesce(t.discarded, 0) AS discarded,
        coalesce(t.cancelled, 0) AS cancelled, coalesce(t.retried, 0) AS retried,
        coalesce(t.pickup_count, 0) AS pickup_count, t.pickup_p95_us AS pickup_p95_us,
        CASE WHEN $4::boolean AND c.bucket = l.bucket THEN now() END AS sampled_at,
        CASE WHEN $4::boolean AND c.bucket = l.bucket
            THEN coalesce(d.depth, '{}'::jsonb) END AS depth,
        CASE WHEN $4::boolean AND c.bucket = l.bucket
            THEN oa.oldest_available_us END AS oldest_available_us
    FROM cell AS c
    JOIN buckets AS b ON b.bucket = c.bucket
    CROSS JOIN last_bucket AS l
    LEFT JOIN tally AS t ON t.bucket = c.bucket AND t.queue = c.queue
    LEFT JOIN depth AS d ON d.queue = c.queue
    LEFT JOIN oldest_all AS oa ON oa.queue = c.queue
),
inserted_all AS (
    INSERT INTO {schema}.pgmill_queue_stat AS t (queue, bucket, bucket_end, completed, discarded,
        cancelled, retried, pickup_count, pickup_p95_us, sampled_at, depth, oldest_available_us)
    SELECT s.queue, s.bucket, s.bucket_end, s.completed, s.discarded, s.cancelled, s.retried,
        s.pickup_count, s.pickup_p95_us, s.sampled_at, s.depth, s.oldest_available_us
    FROM stat AS s
    WHERE s.queue = '*'
    ON CONFLICT DO NOTHING
    RETURNING t.bucket
),
inserted_queue AS (
    INSERT INTO {schema}.pgmill_queue_stat AS t (queue, bucket, bucket_end, completed, discarded,
        cancelled, retried, pickup_count, pickup_p95_us, sampled_at, depth, oldest_available_us)
    SELECT s.queue, s.bucket, s.bucket_end, s.completed, s.discarded, s.cancelled, s.retried,
        s.pickup_count, s.pickup_p95_us, s.sampled_at, s.depth, s.oldest_available_us
    FROM stat AS s
    WHERE s.queue <> '*' AND s.bucket IN (SELECT i.bucket FROM inserted_all AS i)
    ON CONFLICT DO NOTHING
    RETURNING t.queue
)
SELECT (SELECT count(*) FROM inserted_all) AS num_buckets,
    (SELECT count(*) FROM inserted_queue) AS num_queue_rows
