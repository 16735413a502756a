-- Per queue: the jobs that reached a final state within the window, by outcome, read from the
-- finalized index (state, finalized_at) so the cost follows the window's outcomes, not the
-- table's history. Queues with no outcome in the window are absent.
-- $1: the window, in microseconds
SELECT j.queue AS queue,
    count(*) FILTER (WHERE j.state = 'completed') AS completed,
    count(*) FILTER (WHERE j.state = 'discarded') AS discarded,
    count(*) FILTER (WHERE j.state = 'cancelled') AS cancelled
FROM {schema}.pgmill_job_all AS j
WHERE j.state IN ('completed', 'discarded', 'cancelled')
    AND j.finalized_at IS NOT NULL
    AND j.finalized_at >= now() - $1::bigint * interval '1 microsecond'
GROUP BY j.queue
ORDER BY j.queue
