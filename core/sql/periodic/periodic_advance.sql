-- Moves a periodic job to its next run, recording the jobs enqueued for this tick (if any), in the
-- transaction that enqueued them. Guarded by the tick being advanced, so a tick advances once.
-- A zoned schedule's next run goes to zoned_next_run_at (the table's trigger keeps its
-- next_run_at out of reach of clients of schema version 8).
-- $1: name
-- $2: the next run being consumed
-- $3: the next run time
-- $4: the last job enqueued, or NULL when the tick was skipped
-- $5: how many jobs were enqueued (more than one when missed ticks are caught up one by one)
UPDATE {schema}.pgmill_periodic AS p
SET next_run_at = $3::timestamptz,
    zoned_next_run_at = CASE WHEN p.time_zone IS NULL THEN NULL ELSE $3::timestamptz END,
    last_run_at = CASE WHEN $4::bigint IS NULL THEN p.last_run_at ELSE now() END,
    last_job_id = coalesce($4::bigint, p.last_job_id),
    run_count = p.run_count + $5::bigint,
    updated_at = now()
WHERE p.name = $1::text AND coalesce(p.zoned_next_run_at, p.next_run_at) = $2::timestamptz
