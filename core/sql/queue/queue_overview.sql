-- Every queue an operator should see, in name order: each registered in pgmill_queue, and each name
-- that holds live jobs (available, scheduled, pending, running, retryable) without being
-- registered (a typo, or rows written by hand). Each with its live counts, whether it is
-- registered, its pause state, the age of its oldest due available job (as queue_list.sql gives
-- them) and whether a live client works it: a queue with live jobs that no live client works is
-- unserved, its jobs wait until one starts. One statement for all of a dashboard's live counts.
-- The queues holding live jobs are found by skipping through pgmill_job_state_queue_idx
-- (state, queue, id), one probe per queue and state, so the cost follows the number of queues,
-- not of jobs. A client works the queues listed in its metadata.queues; it is live while its
-- heartbeat is within the timeout (database clock).
-- $1: heartbeats at most this many microseconds old count as live
WITH RECURSIVE live_state AS (
    SELECT s::{schema}.pgmill_job_state AS state
    FROM unnest(ARRAY['available', 'scheduled', 'pending', 'running', 'retryable']) AS s
),
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
with_jobs AS (
    SELECT DISTINCT f.queue AS name FROM found_queue AS f WHERE f.queue IS NOT NULL
),
named AS (
    SELECT w.name AS name FROM with_jobs AS w
    UNION
    SELECT q.name AS name FROM {schema}.pgmill_queue AS q
),
served AS (
    SELECT DISTINCT q.name AS name
    FROM {schema}.pgmill_client AS c
    CROSS JOIN LATERAL jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(c.metadata->'queues') = 'array'
            THEN c.metadata->'queues' ELSE '[]'::jsonb END) AS q(name)
    WHERE c.heartbeat_at >= now() - $1::bigint * interval '1 microsecond'
)
SELECT w.name AS name, r.name IS NOT NULL AS registered, r.paused_at AS paused_at,
    EXISTS (SELECT 1 FROM served AS s WHERE s.name = w.name) AS served,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'available' AND j.queue = w.name) AS available,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'scheduled' AND j.queue = w.name) AS scheduled,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'pending' AND j.queue = w.name) AS pending,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'running' AND j.queue = w.name) AS running,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'retryable' AND j.queue = w.name) AS retryable,
    (
        SELECT (extract(epoch FROM now() - min(o.scheduled_at)) * 1000000)::bigint
        FROM generate_series(1, 4) AS p(priority)
        CROSS JOIN LATERAL (
            SELECT j.scheduled_at
            FROM {schema}.pgmill_job AS j
            WHERE j.state = 'available' AND j.queue = w.name AND j.priority = p.priority
                AND j.scheduled_at <= now()
            ORDER BY j.scheduled_at
            LIMIT 1
        ) AS o
    ) AS oldest_available_age_us
FROM named AS w
LEFT JOIN {schema}.pgmill_queue AS r ON r.name = w.name
ORDER BY w.name
