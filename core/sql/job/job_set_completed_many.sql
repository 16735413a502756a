-- Completes many attempts in one statement: the lean form of job_set_state_if_running_many for
-- batches of plain successes of non-periodic jobs. Fenced the same way: a row changes only while
-- it is still running the attempt that completed (state compared as text so cached generic plans
-- look rows up by primary key, not through the partial running index).
-- $1: job ids
-- $2: the attempt each completion belongs to
UPDATE {schema}.pgmill_job AS j
SET state = 'completed', finalized_at = now()
FROM unnest($1::bigint[], $2::bigint[]) AS o(id, attempt)
WHERE j.id = o.id AND j.state::text = 'running' AND j.attempt = o.attempt
RETURNING j.id AS id, j.state::text AS state, j.attempt AS attempt,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at
