-- Pauses one queue (registering it if new, so a producer starting later starts paused), or every
-- queue with '*'. Returns the queues paused.
-- $1: queue name, or '*'
WITH named AS (
    INSERT INTO {schema}.pgmill_queue AS q (name, paused_at)
    SELECT $1::text, now() WHERE $1::text <> '*'
    ON CONFLICT (name) DO UPDATE SET paused_at = coalesce(q.paused_at, now()), updated_at = now()
    RETURNING q.name
),
every AS (
    UPDATE {schema}.pgmill_queue AS q
    SET paused_at = coalesce(q.paused_at, now()), updated_at = now()
    WHERE $1::text = '*'
    RETURNING q.name
)
SELECT name AS name FROM named
UNION ALL
SELECT name AS name FROM every
