-- Rescues running jobs whose client is dead: its heartbeat expired, or its row has been missing
-- (the caller passes the clients it has seen missing for longer than the grace period), or the
-- job ran past its hard deadline. Each becomes available again (or discarded when out of
-- attempts), with the reason recorded and its fencing token cleared, so the rescued claim's late
-- outcome matches nothing. A rescued job keeps its scheduled time and priority, so it keeps its
-- place in its queue instead of waiting behind the backlog. Returns what it did per job.
-- $1: heartbeats older than this many microseconds mean the client is dead
-- $2: ids of clients whose rows have been missing past the grace period
-- $3: running longer than this many microseconds is past the hard deadline
-- $4: most jobs per call
WITH stuck AS (
    SELECT j.id,
        CASE
            WHEN c.id IS NULL AND j.attempted_by[cardinality(j.attempted_by)] = ANY($2::text[])
                THEN 'its client stopped heartbeating (no client row)'
            WHEN c.heartbeat_at < now() - $1::bigint * interval '1 microsecond'
                THEN 'its client stopped heartbeating'
            ELSE 'it ran past its hard deadline'
        END AS reason
    FROM {schema}.pgmill_job AS j
    LEFT JOIN {schema}.pgmill_client AS c ON c.id = j.attempted_by[cardinality(j.attempted_by)]
    WHERE j.state = 'running'
        AND (
            (c.id IS NULL AND j.attempted_by[cardinality(j.attempted_by)] = ANY($2::text[]))
            OR c.heartbeat_at < now() - $1::bigint * interval '1 microsecond'
            OR j.attempted_at < now() - $3::bigint * interval '1 microsecond'
        )
    ORDER BY j.attempted_at, j.id
    LIMIT $4::bigint
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE {schema}.pgmill_job AS j
SET state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END::{schema}.pgmill_job_state,
    finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
    claim_token = NULL,
    errors = array_append(j.errors, jsonb_build_object(
        'attempt', j.attempt, 'at', now(), 'panic', false,
        'error', 'rescued: ' || stuck.reason))
FROM stuck
WHERE j.id = stuck.id
RETURNING j.id AS id, j.state::text AS state, j.queue AS queue
