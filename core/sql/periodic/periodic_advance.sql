-- Moves a periodic job to its next run, recording the job enqueued for this tick (if any), in the
-- transaction that enqueued it. Guarded by the tick being advanced, so a tick advances once.
-- $1: name
-- $2: the next_run_at being consumed
-- $3: the next run time
-- $4: the job enqueued, or NULL when the tick was skipped
UPDATE {schema}.pgmill_periodic AS p
SET next_run_at = $3::timestamptz,
    last_run_at = CASE WHEN $4::bigint IS NULL THEN p.last_run_at ELSE now() END,
    last_job_id = coalesce($4::bigint, p.last_job_id),
    run_count = p.run_count + CASE WHEN $4::bigint IS NULL THEN 0 ELSE 1 END,
    updated_at = now()
WHERE p.name = $1::text AND p.next_run_at = $2::timestamptz
