-- Completes many attempts in one statement: the lean form of job_set_state_if_running_many for
-- batches of plain successes of non-periodic jobs. Fenced the same way: a row changes only while
-- it is still running the claim that completed (state compared as text so cached generic plans
-- look rows up by primary key, not through the partial running index).
-- $1: job ids
-- $2: the attempt each completion belongs to
-- $3: the fencing token of the claim each completion belongs to
UPDATE {schema}.pgmill_job AS j
SET state = 'completed', finalized_at = now(), claim_token = NULL
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS o(id, attempt, claim_token)
WHERE j.id = o.id AND j.state::text = 'running' AND j.attempt = o.attempt
    AND j.claim_token = o.claim_token
RETURNING j.id AS id, j.state::text AS state, j.attempt AS attempt,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at
