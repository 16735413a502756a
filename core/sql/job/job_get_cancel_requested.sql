-- Which of the given running jobs an operator asked to cancel (polled when there is no listener).
-- $1: ids of jobs this client is running
SELECT id AS id
FROM {schema}.pgmill_job
WHERE id = ANY($1::bigint[]) AND state = 'running' AND metadata ? 'cancel_attempted_at'
