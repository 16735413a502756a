-- The jobs the locker has just locked (job_advisory_claim) that are still due and available, read
-- in a statement of its own: its snapshot is taken after the locks, so a job another session
-- finished and unlocked between the claim's snapshot and its lock is left out here (the caller
-- unlocks it). Returns the columns of a claim (job_get_available), with the attempt as it is in
-- the table (not counted yet) and now() as the attempt's start.
-- The rows are looked up by id alone, in a subquery the planner cannot merge with the outer
-- filter (OFFSET 0): with the state, queue and schedule conditions next to the ids, a prepared
-- (generic) plan on a table without fresh statistics walks the whole fetch index and filters
-- on the ids (milliseconds per claim at 20,000 queued, growing with the queue), where the
-- primary key finds the rows in microseconds.
-- $1: ids of the jobs locked
-- $2: their queue
SELECT j.id AS id, j.kind AS kind, j.args AS args, j.metadata AS metadata,
    j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    now() AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.errors AS errors, j.tags AS tags
FROM (
    SELECT id, kind, args, metadata, priority, attempt, max_attempts, attempted_by, created_at,
        scheduled_at, errors, tags, state, queue
    FROM {schema}.pgmill_job
    WHERE id = ANY($1::bigint[])
    OFFSET 0
) AS j
WHERE j.state = 'available' AND j.queue = $2::text AND j.scheduled_at <= now()
