-- Jobs waiting in a served queue that no live client working it can run: per queue that a live
-- client works, among the first $2 due available jobs in fetch order, those whose kind no live
-- client working that queue has a worker for, counted by kind, with when the longest-waiting of
-- them came due. Claims take only the kinds a client has workers for, so these jobs are never
-- attempted (and never retried to death): they keep their place at the head of their queue
-- until a client that knows their kind starts, and this is how an operator sees them. A queue no
-- live client works at all is reported as unserved instead (queue_overview.sql). A client that
-- does not advertise its kinds (an older version) is taken to know every kind.
-- The queues holding available jobs are found by skipping through pgmill_job_state_queue_idx
-- (state, queue, id), one probe per queue, and each queue's head is read along the fetch index,
-- so the cost follows the number of queues and $2, not the number of jobs.
-- $1: heartbeats at most this many microseconds old count as live
-- $2: most jobs read per queue
WITH RECURSIVE found AS (
    (SELECT j.queue AS queue
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'available'
    ORDER BY j.queue
    LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue
        FROM {schema}.pgmill_job AS j
        WHERE j.state = 'available' AND j.queue > f.queue
        ORDER BY j.queue
        LIMIT 1) AS queue
    FROM found AS f
    WHERE f.queue IS NOT NULL
),
live AS MATERIALIZED (
    SELECT
        CASE WHEN jsonb_typeof(c.metadata->'queues') = 'array'
            THEN c.metadata->'queues' ELSE '[]'::jsonb END AS queues,
        CASE WHEN jsonb_typeof(c.metadata->'kinds') = 'array'
            THEN c.metadata->'kinds' END AS kinds
    FROM {schema}.pgmill_client AS c
    WHERE c.heartbeat_at >= now() - $1::bigint * interval '1 microsecond'
),
head AS (
    SELECT f.queue AS queue, x.kind AS kind, x.scheduled_at AS scheduled_at
    FROM found AS f
    CROSS JOIN LATERAL (
        SELECT j.kind, j.scheduled_at
        FROM {schema}.pgmill_job AS j
        WHERE j.state = 'available' AND j.queue = f.queue AND j.scheduled_at <= now()
        ORDER BY j.priority, j.scheduled_at, j.id
        LIMIT $2::bigint
    ) AS x
    WHERE f.queue IS NOT NULL
        AND EXISTS (SELECT 1 FROM live AS l WHERE l.queues ? f.queue)
)
SELECT h.queue AS queue, h.kind AS kind, count(*) AS num_jobs, min(h.scheduled_at) AS due_since
FROM head AS h
WHERE NOT EXISTS (
    SELECT 1 FROM live AS l
    WHERE l.queues ? h.queue AND (l.kinds IS NULL OR l.kinds ? h.kind)
)
GROUP BY h.queue, h.kind
ORDER BY h.queue, h.kind
