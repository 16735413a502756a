-- job_set_completed_many without its RETURNING, for a completer whose client has no event
-- subscribers and so needs only the count of rows completed: the server then forms and sends no
-- row, which pg_stat_statements shows as a cheaper statement. Fenced and compared exactly as
-- job_set_completed_many.
-- $1: job ids
-- $2: the fencing token of the claim each completion belongs to
UPDATE {schema}.pgmill_job AS j
SET state = 'completed', finalized_at = now(), claim_token = NULL
FROM unnest($1::bigint[], $2::bigint[]) AS o(id, claim_token)
WHERE j.id = o.id AND j.state::text = 'running' AND j.claim_token = o.claim_token
