-- Completes many attempts in one statement: the lean form of job_set_state_if_running_many for
-- batches of plain successes of non-periodic jobs. Fenced on the claim: a row changes only while
-- it is still running the claim that completed (its fencing token, which no other claim ever
-- carries; the attempt need not be compared, since a row carries a claim's token only at that
-- claim's attempt). State is compared as text so cached generic plans look rows up by primary
-- key, not through the partial running index. Returns only what the completion decided: every
-- row returned is completed, at the attempt and with the schedule its claim ran.
-- $1: job ids
-- $2: the fencing token of the claim each completion belongs to
UPDATE {schema}.pgmill_job AS j
SET state = 'completed', finalized_at = now(), claim_token = NULL
FROM unnest($1::bigint[], $2::bigint[]) AS o(id, claim_token)
WHERE j.id = o.id AND j.state::text = 'running' AND j.claim_token = o.claim_token
RETURNING j.id AS id, j.finalized_at AS finalized_at
