-- Completes many attempts in one statement: the lean form of job_set_state_if_running_many for
-- batches of plain successes of jobs that are not periodic. Fenced on the claim: a row changes
-- only while it is still running the claim that completed (its fencing token, which no other
-- claim ever carries; the attempt need not be compared, since a row carries a claim's token only
-- at that claim's attempt). State is compared as text so cached generic plans look rows up by
-- primary key, not through the partial running index.
-- A job whose completion must do more than this is left running, for the completer to record
-- with job_set_state_if_running_many (it compares the count it gets back with its batch): a
-- unique job whose key its completed state keeps taken, which stays in pgmill_job.
-- A completed job leaves the job table: the rows are locked, then deleted from pgmill_job and
-- written to the history (pgmill_job_done) in the ring slot of this statement's now(), both from
-- the same locked rows in the one statement, so a job is in exactly one of the two at every
-- moment.
-- Returns only what the completion decided: every row returned is completed, at the attempt and
-- with the schedule its claim ran.
-- $1: job ids
-- $2: the fencing token of the claim each completion belongs to
WITH finished AS (
    SELECT j.*
    FROM {schema}.pgmill_job AS j
    JOIN unnest($1::bigint[], $2::bigint[]) AS o(id, claim_token) ON j.id = o.id
    WHERE j.state::text = 'running' AND j.claim_token = o.claim_token
        AND (j.unique_key IS NULL OR j.unique_states IS NULL
            OR NOT {schema}.pgmill_job_state_in_bitmask(j.unique_states, 'completed'))
    FOR UPDATE OF j
),
gone AS (
    DELETE FROM {schema}.pgmill_job AS j
    USING finished AS f
    WHERE j.id = f.id
)
INSERT INTO {schema}.pgmill_job_done (id, state, queue, kind, args, metadata, priority, attempt,
    max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at, errors, tags,
    unique_key, unique_states, slot)
SELECT f.id, 'completed', f.queue, f.kind, f.args, f.metadata, f.priority, f.attempt,
    f.max_attempts, f.attempted_at, f.attempted_by, f.created_at, f.scheduled_at, now(), f.errors,
    f.tags, f.unique_key, f.unique_states,
    {schema}.pgmill_job_done_slot(now(), (SELECT s.done_slot_seconds
        FROM {schema}.pgmill_storage AS s WHERE s.name = 'default'))
FROM finished AS f
RETURNING id AS id, finalized_at AS finalized_at
