-- Resumes one queue, or every queue with '*'. Returns the queues resumed.
-- $1: queue name, or '*'
UPDATE {schema}.pgmill_queue AS q
SET paused_at = NULL, updated_at = now()
WHERE q.name = $1::text OR $1::text = '*'
RETURNING q.name AS name
