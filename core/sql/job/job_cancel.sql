-- Cancels a job. One not running (available, scheduled, pending, retryable) is cancelled at once;
-- a running one is marked with metadata.cancel_attempted_at, and its client, told through the
-- control channel (or polling), stops the work; its outcome then ends it cancelled. Final jobs are
-- left alone. Returns the job afterwards.
-- $1: job id
-- $2: the error recorded with the cancellation (a JSON object; its "at" is set to now())
WITH target AS (
    SELECT id FROM {schema}.pgmill_job WHERE id = $1::bigint FOR UPDATE
),
updated AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = CASE WHEN j.state = 'running' THEN j.state ELSE 'cancelled' END,
        finalized_at = CASE WHEN j.state = 'running' THEN NULL ELSE now() END,
        errors = CASE
            WHEN j.state = 'running' THEN j.errors
            ELSE array_append(j.errors, $2::jsonb || jsonb_build_object('at', now()))
        END,
        metadata = CASE
            WHEN j.state = 'running'
                THEN j.metadata || jsonb_build_object('cancel_attempted_at', now())
            ELSE j.metadata
        END
    FROM target
    WHERE j.id = target.id
        AND j.state IN ('available', 'scheduled', 'pending', 'retryable', 'running')
    RETURNING j.*
)
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM updated AS j
UNION ALL
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM {schema}.pgmill_job AS j
WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM updated)
