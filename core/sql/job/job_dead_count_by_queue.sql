-- How many jobs each queue has in the dead-letter queue (queues with none are absent), and the
-- oldest one's age there, for the depth gauge.
SELECT x.queue AS queue, count(*) AS num_jobs,
    (extract(epoch FROM now() - min(x.dead_at)) * 1000000)::bigint AS oldest_age_us
FROM {schema}.pgmill_job_dead AS x
GROUP BY x.queue
ORDER BY x.queue
