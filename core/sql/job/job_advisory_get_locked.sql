-- The jobs the locker has just locked (job_advisory_claim) that are still due and available, read
-- in a statement of its own: its snapshot is taken after the locks, so a job another session
-- finished and unlocked between the claim's snapshot and its lock is left out here (the caller
-- unlocks it). Returns the columns of a claim (job_get_available), with the attempt as it is in
-- the table (not counted yet) and now() as the attempt's start.
-- $1: ids of the jobs locked
-- $2: their queue
SELECT id AS id, kind AS kind, args AS args, metadata AS metadata, priority AS priority,
    attempt AS attempt, max_attempts AS max_attempts, now() AS attempted_at,
    attempted_by AS attempted_by, created_at AS created_at, scheduled_at AS scheduled_at,
    errors AS errors, tags AS tags
FROM {schema}.pgmill_job
WHERE id = ANY($1::bigint[]) AND state = 'available' AND queue = $2::text
    AND scheduled_at <= now()
