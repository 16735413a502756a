-- Queues in name order, with the number of their jobs in each live state (available, scheduled,
-- pending, running, retryable). Each count is a range of pgmill_job_state_queue_idx (state,
-- queue, id), read by an index-only scan: its cost follows the queue's depth, never the number of
-- finished jobs the table keeps. Finished jobs are not counted.
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
        WHERE j.state = 'retryable' AND j.queue = q.name) AS retryable
FROM {schema}.pgmill_queue AS q
WHERE $1::text IS NULL OR q.name = $1::text
ORDER BY q.name
LIMIT $2::bigint
