-- Queues in name order, with their job counts by state.
-- $1: only this queue, or NULL for all
-- $2: most queues to return
SELECT q.name AS name, q.created_at AS created_at, q.updated_at AS updated_at,
    q.paused_at AS paused_at, q.metadata AS metadata,
    coalesce((
        SELECT jsonb_object_agg(c.state, c.n)
        FROM (
            SELECT j.state::text AS state, count(*) AS n
            FROM {schema}.pgmill_job AS j
            WHERE j.queue = q.name
            GROUP BY j.state
        ) AS c
    ), '{}'::jsonb) AS counts
FROM {schema}.pgmill_queue AS q
WHERE $1::text IS NULL OR q.name = $1::text
ORDER BY q.name
LIMIT $2::bigint
