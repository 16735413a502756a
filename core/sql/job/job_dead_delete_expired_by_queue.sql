-- Deletes dead-letter jobs past the retention of their queue: the queue's own rule for
-- discarded jobs, else the rule for every queue ('*'), else the clients' retention ($1). Used
-- when some queue has a rule of its own (otherwise job_dead_delete_expired.sql reads only what
-- it deletes). Returns how many were deleted, and how many queues had every row read past their
-- retention (call again).
--
-- Each queue's oldest rows by id ($2 of them at most, along pgmill_job_dead_state_queue_idx) are
-- read and those past the queue's retention deleted, so a call reads at most $2 rows per queue
-- however long some queue keeps its jobs. The queues are found by skipping through the same
-- index, one probe per queue.
-- $1: the clients' retention of discarded jobs in microseconds, or NULL (kept)
-- $2: most rows read per queue
WITH RECURSIVE queues AS (
    (SELECT x.queue
    FROM {schema}.pgmill_job_dead AS x
    WHERE x.state = 'discarded'
    ORDER BY x.queue
    LIMIT 1)
    UNION ALL
    SELECT (SELECT x.queue
        FROM {schema}.pgmill_job_dead AS x
        WHERE x.state = 'discarded' AND x.queue > q.queue
        ORDER BY x.queue
        LIMIT 1)
    FROM queues AS q
    WHERE q.queue IS NOT NULL
),
kept AS (
    SELECT q.queue,
        CASE
            WHEN own.queue IS NOT NULL THEN own.keep_seconds * 1000000
            WHEN every.queue IS NOT NULL THEN every.keep_seconds * 1000000
            ELSE $1::bigint
        END AS keep_us
    FROM queues AS q
    LEFT JOIN {schema}.pgmill_retention AS own
        ON own.queue = q.queue AND own.state = 'discarded'
    LEFT JOIN {schema}.pgmill_retention AS every
        ON every.queue = '*' AND every.state = 'discarded'
    WHERE q.queue IS NOT NULL
),
probed AS MATERIALIZED (
    SELECT k.queue, x.id,
        x.dead_at < now() - k.keep_us * interval '1 microsecond' AS expired
    FROM kept AS k
    CROSS JOIN LATERAL (
        SELECT d.id, d.dead_at
        FROM {schema}.pgmill_job_dead AS d
        WHERE d.state = 'discarded' AND d.queue = k.queue
        ORDER BY d.id
        LIMIT $2::bigint
    ) AS x
    WHERE k.keep_us IS NOT NULL
),
doomed AS (
    SELECT d.id
    FROM {schema}.pgmill_job_dead AS d
    JOIN probed AS p ON p.id = d.id
    WHERE p.expired
    FOR UPDATE OF d SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.pgmill_job_dead AS d USING doomed WHERE d.id = doomed.id RETURNING d.id
)
SELECT (SELECT count(*) FROM deleted) AS num_deleted,
    (SELECT count(*) FROM (
        SELECT p.queue FROM probed AS p
        GROUP BY p.queue
        HAVING bool_and(p.expired) AND count(*) >= $2::bigint
    ) AS f) AS num_full
