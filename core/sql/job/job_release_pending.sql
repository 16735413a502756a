-- Moves a pending job to available (or scheduled, when given a future time); other states are
-- left alone. Returns the job either way, wherever it is.
-- $1: job id
-- $2: when it may run, or NULL for now
WITH released AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = CASE
            WHEN j.state <> 'pending' THEN j.state
            WHEN coalesce($2::timestamptz, now()) > now() THEN 'scheduled'
            ELSE 'available'
        END,
        scheduled_at = CASE
            WHEN j.state = 'pending' THEN coalesce($2::timestamptz, now())
            ELSE j.scheduled_at
        END
    WHERE j.id = $1::bigint
    RETURNING j.*
)
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM released AS j
UNION ALL
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM {schema}.pgmill_job_all AS j
WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM released)
