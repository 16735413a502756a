-- Makes a job that is not running available again now, giving it one more attempt if it used up
-- its attempts; returns the job (unchanged when running).
-- $1: job id
UPDATE {schema}.pgmill_job AS j
SET state = CASE WHEN j.state = 'running' THEN j.state ELSE 'available' END,
    scheduled_at = CASE WHEN j.state = 'running' THEN j.scheduled_at ELSE now() END,
    finalized_at = CASE WHEN j.state = 'running' THEN j.finalized_at END,
    max_attempts = CASE
        WHEN j.state <> 'running' AND j.attempt >= j.max_attempts THEN j.attempt + 1
        ELSE j.max_attempts
    END
WHERE j.id = $1::bigint
RETURNING j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
