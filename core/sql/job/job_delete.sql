-- Deletes a job that is not running, wherever it is (the job table, the history, the
-- dead-letter queue); returns it if deleted.
-- $1: job id
WITH live AS (
    DELETE FROM {schema}.pgmill_job AS j
    WHERE j.id = $1::bigint AND j.state <> 'running'
    RETURNING j.*
),
done AS (
    DELETE FROM {schema}.pgmill_job_done AS d WHERE d.id = $1::bigint RETURNING d.*
),
dead AS (
    DELETE FROM {schema}.pgmill_job_dead AS x WHERE x.id = $1::bigint RETURNING x.*
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
    NULL::bigint AS claim_token
FROM done AS j
UNION ALL
SELECT j.id AS id, j.state::text AS state, j.queue AS queue, j.kind AS kind, j.args AS args,
    j.metadata AS metadata, j.priority AS priority, j.attempt AS attempt, j.max_attempts AS max_attempts,
    j.attempted_at AS attempted_at, j.attempted_by AS attempted_by, j.created_at AS created_at,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at, j.errors AS errors, j.tags AS tags,
    NULL::bigint AS claim_token
FROM dead AS j
