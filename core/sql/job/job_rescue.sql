-- Rescues running jobs whose client is dead: its heartbeat expired, or its row has been missing
-- (the caller passes the clients it has seen missing for longer than the grace period), or the
-- job ran past its hard deadline. Each becomes available again (or discarded when out of
-- attempts, leaving for the dead-letter queue with the reason `rescued`, unless its unique key is
-- kept taken when discarded), with the reason recorded and its fencing token cleared, so the
-- rescued claim's late outcome matches nothing. A rescued job keeps its scheduled time and priority, so it keeps its
-- place in its queue instead of waiting behind the backlog. Returns what it did per job.
-- $1: heartbeats older than this many microseconds mean the client is dead
-- $2: ids of clients whose rows have been missing past the grace period
-- $3: running longer than this many microseconds is past the hard deadline
-- $4: most jobs per call
WITH stuck AS (
    SELECT j.*,
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
),
placed AS (
    SELECT s.*,
        s.attempt >= s.max_attempts AS out_of_attempts,
        s.attempt >= s.max_attempts
            AND NOT (s.unique_key IS NOT NULL AND s.unique_states IS NOT NULL
                AND {schema}.pgmill_job_state_in_bitmask(s.unique_states, 'discarded'))
            AS leaves,
        array_append(s.errors, jsonb_build_object(
            'attempt', s.attempt, 'at', now(), 'panic', false,
            'error', 'rescued: ' || s.reason)) AS new_errors
    FROM stuck AS s
),
kept AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = CASE WHEN p.out_of_attempts THEN 'discarded' ELSE 'available' END::{schema}.pgmill_job_state,
        finalized_at = CASE WHEN p.out_of_attempts THEN now() END,
        claim_token = NULL,
        errors = p.new_errors
    FROM placed AS p
    WHERE j.id = p.id AND NOT p.leaves
    RETURNING j.id AS id, j.state::text AS state, j.queue AS queue
),
gone AS (
    DELETE FROM {schema}.pgmill_job AS j
    USING placed AS p
    WHERE j.id = p.id AND p.leaves
),
dead AS (
    INSERT INTO {schema}.pgmill_job_dead (id, state, queue, kind, args, metadata, priority,
        attempt, max_attempts, attempted_at, attempted_by, created_at, scheduled_at, finalized_at,
        errors, tags, unique_key, unique_states, dead_reason)
    SELECT p.id, 'discarded', p.queue, p.kind, p.args, p.metadata, p.priority, p.attempt,
        p.max_attempts, p.attempted_at, p.attempted_by, p.created_at, p.scheduled_at, now(),
        p.new_errors, p.tags, p.unique_key, p.unique_states, 'rescued'
    FROM placed AS p
    WHERE p.leaves
    RETURNING id AS id, state::text AS state, queue AS queue
)
SELECT id, state, queue FROM kept
UNION ALL
SELECT id, state, queue FROM dead
