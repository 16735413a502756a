-- Per queue: the jobs that reached a final state within the window, by outcome, and how long the
-- oldest due available job has waited (NULL when none is available). Finished jobs come from the
-- finalized index; the available queues are found by skipping through the fetch index and each
-- gives its oldest job per priority, so neither part reads the table's history.
-- $1: the window, in microseconds
WITH RECURSIVE finished AS (
    SELECT j.queue AS queue,
        count(*) FILTER (WHERE j.state = 'completed') AS completed,
        count(*) FILTER (WHERE j.state = 'discarded') AS discarded,
        count(*) FILTER (WHERE j.state = 'cancelled') AS cancelled
    FROM {schema}.pgmill_job AS j
    WHERE j.state IN ('completed', 'discarded', 'cancelled')
        AND j.finalized_at IS NOT NULL
        AND j.finalized_at >= now() - $1::bigint * interval '1 microsecond'
    GROUP BY j.queue
),
available_queue AS (
    SELECT (SELECT min(j.queue) FROM {schema}.pgmill_job AS j WHERE j.state = 'available') AS queue
    UNION ALL
    SELECT (SELECT min(j.queue) FROM {schema}.pgmill_job AS j
            WHERE j.state = 'available' AND j.queue > a.queue) AS queue
    FROM available_queue AS a
    WHERE a.queue IS NOT NULL
),
waiting AS (
    SELECT a.queue AS queue, min(o.scheduled_at) AS oldest
    FROM available_queue AS a
    CROSS JOIN generate_series(1, 4) AS p(priority)
    CROSS JOIN LATERAL (
        SELECT j.scheduled_at AS scheduled_at
        FROM {schema}.pgmill_job AS j
        WHERE j.state = 'available' AND j.queue = a.queue AND j.priority = p.priority
        ORDER BY j.scheduled_at
        LIMIT 1
    ) AS o
    WHERE a.queue IS NOT NULL
    GROUP BY a.queue
)
SELECT coalesce(f.queue, w.queue) AS queue,
    coalesce(f.completed, 0)::bigint AS completed,
    coalesce(f.discarded, 0)::bigint AS discarded,
    coalesce(f.cancelled, 0)::bigint AS cancelled,
    CASE WHEN w.oldest IS NOT NULL THEN greatest(now() - w.oldest, interval '0') END
        AS oldest_available_age
FROM finished AS f
FULL JOIN waiting AS w ON w.queue = f.queue
ORDER BY coalesce(f.queue, w.queue)
