-- Announces jobs inserted by transactions whose own insert notification was debounced, once
-- those transactions have committed: the given jobs visible now are committed, and each of their
-- queues is notified once. Run on its own (autocommit), so the notifications are delivered after
-- the commits they announce. Jobs not visible yet are still in an open transaction, or rolled back.
-- $1: the insert channel, '<schema>.pgmill_insert'
-- $2: ids of the jobs to look for
WITH committed AS (
    SELECT id, queue
    FROM {schema}.pgmill_job
    WHERE id = ANY($2::bigint[])
)
SELECT c.id AS id
FROM committed AS c
CROSS JOIN (
    SELECT count(pg_notify($1::text, q.queue)) AS num_notified
    FROM (SELECT DISTINCT queue FROM committed) AS q
) AS n
