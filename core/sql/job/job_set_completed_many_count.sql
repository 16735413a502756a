-- job_set_completed_many without its RETURNING, for a completer whose client has no event
-- subscribers and so needs only the count of rows completed: the server then forms and sends no
-- row, which pg_stat_statements shows as a cheaper statement. Fenced, compared and moved exactly
-- as job_set_completed_many.
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
