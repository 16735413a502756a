-- Registers a queue (or refreshes its updated_at) and returns whether it is paused.
-- $1: queue name
INSERT INTO {schema}.pgmill_queue AS q (name) VALUES ($1::text)
ON CONFLICT (name) DO UPDATE SET updated_at = now()
RETURNING q.name AS name, q.paused_at AS paused_at
