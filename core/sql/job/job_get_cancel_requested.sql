-- Which of the given running jobs an operator asked to cancel (polled when there is no listener),
-- or cancelled already (a job claimed by advisory lock stays available in its row, so a cancel
-- finishes it at once).
-- $1: ids of jobs this client is running
SELECT id AS id
FROM {schema}.pgmill_job
WHERE id = ANY($1::bigint[])
    AND ((state = 'running' AND metadata ? 'cancel_attempted_at') OR state = 'cancelled')
