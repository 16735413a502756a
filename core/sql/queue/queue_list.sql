-- Queues in name order, with the number of their jobs in each live state (available, scheduled,
-- pending, running, retryable). Each count is a range of pgmill_job_state_queue_idx (state,
-- queue, id), read by an index-only scan: its cost follows the queue's depth, never the number of
-- finished jobs the table keeps. Finished jobs are not counted. Also the age of the queue's oldest
-- due available job, by the database clock: one probe of pgmill_job_fetch_idx per priority (1 to
-- 4), NULL when it has none.
-- $1: only this queue, or NULL for all
-- $2: most queues to return
SELECT q.name AS name, q.created_at AS created_at, q.updated_at AS updated_at,
    q.paused_at AS paused_at, q.metadata AS metadata,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'available' AND j.queue = q.name) AS available,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'scheduled' AND j.queue = q.name) AS scheduled,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'pending' AND j.queue = q.name) AS pending,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'running' AND j.queue = q.name) AS running,
    (SELECT count(*) FROM {schema}.pgmill_job AS j
        WHERE j.state = 'retryable' AND j.queue = q.name) AS retryable,
    (
        SELECT (extract(epoch FROM now() - min(o.scheduled_at)) * 1000000)::bigint
        FROM generate_series(1, 4) AS p(priority)
        CROSS JOIN LATERAL (
            SELECT j.scheduled_at
            FROM {schema}.pgmill_job AS j
            WHERE j.state = 'available' AND j.queue = q.name AND j.priority = p.priority
                AND j.scheduled_at <= now()
            ORDER BY j.scheduled_at
            LIMIT 1
        ) AS o
    ) AS oldest_available_age_us
FROM {schema}.pgmill_queue AS q
WHERE $1::text IS NULL OR q.name = $1::text
ORDER BY q.name
LIMIT $2::bigint
