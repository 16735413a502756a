-- Pauses one queue, or every queue with '*'. A queue not registered yet is registered paused (so a
-- producer starting later starts paused) when $2 asks for it, when it holds live jobs (an
-- unserved queue) or when a client advertises it (a producer about to register it); otherwise
-- nothing is paused. Returns the queues paused.
-- $1: queue name, or '*'
-- $2: register the queue even when it is unknown (neither registered nor holding live jobs)
WITH named AS (
    INSERT INTO {schema}.pgmill_queue AS q (name, paused_at)
    SELECT $1::text, now()
    WHERE $1::text <> '*'
        AND (
            $2::boolean
            OR EXISTS (SELECT 1 FROM {schema}.pgmill_queue AS r WHERE r.name = $1::text)
            OR EXISTS (
                SELECT 1
                FROM {schema}.pgmill_client AS c
                WHERE c.metadata -> 'queues' @> jsonb_build_array($1::text)
            )
            OR EXISTS (
                SELECT 1
                FROM {schema}.pgmill_job AS j
                WHERE j.queue = $1::text
                    AND j.state IN ('available', 'scheduled', 'pending', 'running', 'retryable')
            )
        )
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
