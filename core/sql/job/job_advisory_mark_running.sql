-- Turns jobs claimed by advisory lock into claims recorded in their rows, in the transaction that
-- then records their outcomes with job_set_state_if_running_many (the advisory-lock claim mode,
-- for every outcome but a plain completion): running under the claim's fencing token, the attempt
-- counted, its start and its client recorded, as job_get_available would have at claim. Fenced
-- like job_advisory_complete_many: only rows still as the claim read them.
-- $1: job ids
-- $2: the attempt of each as the claim read it (before this attempt)
-- $3: the scheduled_at of each as the claim read it
-- $4: when each attempt started (the claim's now())
-- $5: the fencing token of each claim
-- $6: id of the client that ran them
UPDATE {schema}.pgmill_job AS j
SET state = 'running',
    attempt = j.attempt + 1,
    attempted_at = o.attempted_at,
    attempted_by = j.attempted_by[greatest(cardinality(j.attempted_by) - 8, 1):] || $6::text,
    claim_token = o.claim_token
FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::timestamptz[], $5::bigint[])
    AS o(id, attempt, scheduled_at, attempted_at, claim_token)
WHERE j.id = o.id AND j.state::text = 'available' AND j.attempt = o.attempt
    AND j.scheduled_at = o.scheduled_at
