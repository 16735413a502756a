-- Cancels a job. One not running (available, scheduled, pending, retryable) is cancelled at once
-- and leaves the job table for the history (pgmill_job_done), unless its unique key is kept taken
-- in the cancelled state, when it stays cancelled in pgmill_job; a running one is marked with
-- metadata.cancel_attempted_at, and its client, told through the control channel (or polling),
-- stops the work; its outcome then ends it cancelled. Final jobs, wherever they are, are left
-- alone. Returns the job afterwards, wherever it is.
-- $1: job id
-- $2: the error recorded with the cancellation (a JSON object; its "at" is set to now())
WITH target AS (
    SELECT j.*,
        j.state <> 'running' AND NOT (j.unique_key IS NOT NULL AND j.unique_states IS NOT NULL
            AND {schema}.pgmill_job_state_in_bitmask(j.unique_states, 'cancelled')) AS leaves
    FROM {schema}.pgmill_job AS j
    WHERE j.id = $1::bigint
        AND j.state IN ('available', 'scheduled', 'pending', 'retryable', 'running')
    FOR UPDATE
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
    FROM target AS t
    WHERE j.id = t.id AND NOT t.leaves
    RETURNING j.*
),
gone AS (
    DELETE FROM {schema}.pgmill_job AS j
    USING target AS t
    WHERE j.id = t.id AND t.leaves
),
done AS (
    INSERT INTO {schema}.pgmill_job_done (id, state, queue, kind, args, metadata, priority,
        attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at,
        errors, tags, unique_key, unique_states, slot)
    SELECT t.id, 'cancelled', t.queue, t.kind, t.args, t.metadata, t.priority, t.attempt,
        t.max_attempts, t.attempted_at, t.attempted_by, t.created_at, t.scheduled_at, now(),
        array_append(t.errors, $2::jsonb || jsonb_build_object('at', now())), t.tags,
        t.unique_key, t.unique_states,
        {schema}.pgmill_job_done_slot(now(), (SELECT s.done_slot_seconds
            FROM {schema}.pgmill_storage AS s WHERE s.name = 'default'))
    FROM target AS t
    WHERE t.leaves
    RETURNING *
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
    NULL::bigint AS claim_token
FROM done AS j
UNION ALL
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    j.claim_token AS claim_token
FROM {schema}.pgmill_job_all AS j
WHERE j.id = $1::bigint AND NOT EXISTS (SELECT 1 FROM target)
