-- Makes a job that is not running available again now, giving it one more attempt if it used up
-- its attempts, wherever it is: one in the job table is updated in place; a finished one in the
-- history or the dead-letter queue moves back into the job table under its own id (so it keeps
-- its place, its errors and its attempts), and leaves where it was in the same statement. A
-- unique job whose key another job holds now fails with a unique violation, and stays where it
-- was. Returns the job afterwards (unchanged when running).
-- $1: job id
WITH live AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = CASE WHEN j.state = 'running' THEN j.state ELSE 'available' END,
        scheduled_at = CASE WHEN j.state = 'running' THEN j.scheduled_at ELSE now() END,
        finalized_at = CASE WHEN j.state = 'running' THEN j.finalized_at END,
        max_attempts = CASE
            WHEN j.state <> 'running' AND j.attempt >= j.max_attempts THEN j.attempt + 1
            ELSE j.max_attempts
        END
    WHERE j.id = $1::bigint
    RETURNING j.*
),
finished AS (
    SELECT id, state, queue, kind, args, metadata, priority, attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at, errors, tags, unique_key, unique_states, 'done' AS stored_in
    FROM {schema}.pgmill_job_done AS d
    WHERE d.id = $1::bigint
    UNION ALL
    SELECT id, state, queue, kind, args, metadata, priority, attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at, errors, tags, unique_key, unique_states, 'dead' AS stored_in
    FROM {schema}.pgmill_job_dead AS x
    WHERE x.id = $1::bigint
),
back AS (
    INSERT INTO {schema}.pgmill_job (id, state, queue, kind, args, metadata, priority, attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at, errors, tags, unique_key, unique_states)
    OVERRIDING SYSTEM VALUE
    SELECT f.id, 'available', f.queue, f.kind, f.args, f.metadata, f.priority, f.attempt,
        CASE WHEN f.attempt >= f.max_attempts THEN f.attempt + 1 ELSE f.max_attempts END,
        f.attempted_at, f.attempted_by, f.created_at, now(), NULL, f.errors, f.tags,
        f.unique_key, f.unique_states
    FROM finished AS f
    RETURNING *
),
left_done AS (
    DELETE FROM {schema}.pgmill_job_done AS d USING back AS b WHERE d.id = b.id
),
left_dead AS (
    DELETE FROM {schema}.pgmill_job_dead AS x USING back AS b WHERE x.id = b.id
)
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM live AS j
UNION ALL
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM back AS j
