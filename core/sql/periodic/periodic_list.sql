-- Periodic jobs with their statistics, by name. A zoned schedule's next run is zoned_next_run_at.
-- $1: only this one, or NULL for all
SELECT p.name AS name, p.schedule AS schedule, p.time_zone AS time_zone,
    coalesce(p.zoned_next_run_at, p.next_run_at) AS next_run_at, p.paused AS paused,
    p.last_run_at AS last_run_at, p.last_job_id AS last_job_id,
    p.last_success_at AS last_success_at, p.last_failure_at AS last_failure_at,
    p.run_count AS run_count, p.success_count AS success_count,
    p.failure_count AS failure_count, p.consecutive_failures::bigint AS consecutive_failures
FROM {schema}.pgmill_periodic AS p
WHERE $1::text IS NULL OR p.name = $1::text
ORDER BY p.name
