-- Deletes, ahead of the ring's truncation, the history jobs of one final state whose queue keeps
-- them for less than the truncation waits: a queue's own retention rule, else the rule for every
-- queue ('*'), else the clients' retention ($2). Returns how many were deleted, and how many
-- queues had every row read past their retention (their next rows may be too: call again).
--
-- Each queue's oldest rows by id ($4 of them at most, along pgmill_job_done_state_queue_idx)
-- are read and those past the queue's retention deleted, so a call reads at most $4 rows per
-- queue however much history is kept. Ids follow the order jobs were inserted, close to the
-- order they finished: a job that ran or waited long sits ahead of younger ones and is deleted
-- when its own time comes. The queues are found by skipping through the same index, one probe
-- per queue.
-- $1: the final state, completed or cancelled
-- $2: the clients' retention of that state in microseconds, or NULL (kept)
-- $3: the retention the ring's truncation applies, in microseconds: queues kept at least this
--     long are left to it; NULL when nothing is truncated
-- $4: most rows read per queue
WITH RECURSIVE queues AS (
    (SELECT d.queue
    FROM {schema}.pgmill_job_done AS d
    WHERE d.state = $1::text::{schema}.pgmill_job_state
    ORDER BY d.queue
    LIMIT 1)
    UNION ALL
    SELECT (SELECT d.queue
        FROM {schema}.pgmill_job_done AS d
        WHERE d.state = $1::text::{schema}.pgmill_job_state AND d.queue > q.queue
        ORDER BY d.queue
        LIMIT 1)
    FROM queues AS q
    WHERE q.queue IS NOT NULL
),
kept AS (
    SELECT q.queue,
        CASE
            WHEN own.queue IS NOT NULL THEN own.keep_seconds * 1000000
            WHEN every.queue IS NOT NULL THEN every.keep_seconds * 1000000
            ELSE $2::bigint
        END AS keep_us
    FROM queues AS q
    LEFT JOIN {schema}.pgmill_retention AS own
        ON own.queue = q.queue AND own.state = $1::text::{schema}.pgmill_job_state
    LEFT JOIN {schema}.pgmill_retention AS every
        ON every.queue = '*' AND every.state = $1::text::{schema}.pgmill_job_state
    WHERE q.queue IS NOT NULL
),
probed AS MATERIALIZED (
    SELECT k.queue, x.slot, x.id,
        x.finalized_at < now() - k.keep_us * interval '1 microsecond' AS expired
    FROM kept AS k
    CROSS JOIN LATERAL (
        SELECT d.slot, d.id, d.finalized_at
        FROM {schema}.pgmill_job_done AS d
        WHERE d.state = $1::text::{schema}.pgmill_job_state AND d.queue = k.queue
        ORDER BY d.id
        LIMIT $4::bigint
    ) AS x
    WHERE k.keep_us IS NOT NULL AND ($3::bigint IS NULL OR k.keep_us < $3::bigint)
),
deleted AS (
    DELETE FROM {schema}.pgmill_job_done AS d
    USING probed AS p
    WHERE p.expired AND d.slot = p.slot AND d.id = p.id
    RETURNING d.id
)
SELECT (SELECT count(*) FROM deleted) AS num_deleted,
    (SELECT count(*) FROM (
        SELECT p.queue FROM probed AS p
        GROUP BY p.queue
        HAVING bool_and(p.expired) AND count(*) >= $4::bigint
    ) AS f) AS num_full
