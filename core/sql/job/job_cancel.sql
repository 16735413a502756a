-- Cancels a job that is not running and not already finalized; returns the job either way
-- (unchanged when it could not be cancelled).
-- $1: job id
-- $2: the error recorded with the cancellation (a JSON object; its "at" is set to now())
WITH target AS (
    SELECT id FROM {schema}.pgmill_job WHERE id = $1::bigint FOR UPDATE
),
updated AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = 'cancelled',
        finalized_at = now(),
        errors = array_append(j.errors, $2::jsonb || jsonb_build_object('at', now()))
    FROM target
    WHERE j.id = target.id AND j.state IN ('available', 'scheduled', 'pending', 'retryable')
    RETURNING j.*
)
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags
FROM updated AS j
UNION ALL
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags
FROM {schema}.pgmill_job AS j
WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM updated)
