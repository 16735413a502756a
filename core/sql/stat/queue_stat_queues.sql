-- The queues with statistics whose bucket began within the window, in name order: the queues a
-- chart of that window can show. Reads the window's rows of pgmill_queue_stat through its bucket
-- index (a row per queue and bucket at most), never the job table.
-- $1: the window, in microseconds
-- $2: most queues to return
SELECT DISTINCT s.queue AS name
FROM {schema}.pgmill_queue_stat AS s
WHERE s.bucket >= now() - $1::bigint * interval '1 microsecond' AND s.queue <> '*'
ORDER BY s.queue
LIMIT $2::bigint
