-- Rescues running jobs whose client is dead: its heartbeat expired, or its row has been missing
-- (the caller passes the clients it has seen missing for longer than the grace period), or the
-- job ran past its hard deadline. Each becomes available again (or discarded when out of
-- attempts, leaving for the dead-letter queue with the reason `rescued`, unless its unique key is
-- kept taken when discarded), with the reason recorded and its fencing token cleared, so the
-- rescued claim's late outcome matches nothing. A rescued job keeps its scheduled time and priority, so it keeps its
-- place in its queue instead of waiting behind the backlog. Returns what it did per job.
-- The jobs of dead clients are looked for only while some client is dead, which is rare: that
-- scan reads every running entry of the index, and under a snapshot held open elsewhere the
-- entries of every job that ran since. Jobs past the hard deadline are looked for in a band of
-- attempt times, from where the rescuer's last pass went ($5, less a margin for claims that
-- committed late), so a pass reads the entries of the jobs that crossed the deadline since, not
-- of every job since the snapshot. Each queue's earliest rescued job is announced on the rewind
-- topic ($6): it keeps its place, behind where producers claim from.
-- $1: heartbeats older than this many microseconds mean the client is dead
-- $2: ids of clients whose rows have been missing past the grace period
-- $3: running longer than this many microseconds is past the hard deadline
-- $4: most jobs per call
-- $5: only jobs attempted at or after this time can be past the hard deadline, or NULL for all
-- $6: the rewind channel, or NULL to announce nothing
WITH dead_client AS (
    SELECT c.id
    FROM {schema}.pgmill_client AS c
    WHERE c.heartbeat_at < now() - $1::bigint * interval '1 microsecond'
    UNION ALL
    SELECT m.id FROM unnest($2::text[]) AS m(id)
),
candidate AS (
    SELECT j.id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'running'
        AND EXISTS (SELECT 1 FROM dead_client)
        AND j.attempted_by[cardinality(j.attempted_by)] IN (SELECT d.id FROM dead_client AS d)
    UNION
    SELECT j.id
    FROM {schema}.pgmill_job AS j
    WHERE j.state = 'running'
        AND j.attempted_at < now() - $3::bigint * interval '1 microsecond'
        AND j.attempted_at >= coalesce($5::timestamptz, '-infinity'::timestamptz)
),
stuck AS (
    SELECT j.*,
        CASE
            WHEN c.id IS NULL AND j.attempted_by[cardinality(j.attempted_by)] = ANY($2::text[])
                THEN 'its client stopped heartbeating (no client row)'
            WHEN c.heartbeat_at < now() - $1::bigint * interval '1 microsecond'
                THEN 'its client stopped heartbeating'
            ELSE 'it ran past its hard deadline'
        END AS reason
    FROM {schema}.pgmill_job AS j
    JOIN candidate AS k ON k.id = j.id
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
    RETURNING j.id AS id, j.state::text AS state, j.queue AS queue, j.priority AS priority,
        j.scheduled_at AS scheduled_at
),
rewound AS (
    SELECT count(pg_notify($6::text, r.queue || E'\t' || r.priority || E'\t'
        || (extract(epoch FROM r.scheduled_at) * 1000000)::bigint || E'\t' || r.id))
        AS num_rewinds
    FROM (
        SELECT DISTINCT ON (m.queue) m.queue, m.priority, m.scheduled_at, m.id
        FROM kept AS m
        WHERE m.state = 'available'
        ORDER BY m.queue, m.priority, m.scheduled_at, m.id
    ) AS r
    WHERE $6::text IS NOT NULL
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
SELECT k.id, k.state, k.queue FROM kept AS k CROSS JOIN rewound
UNION ALL
SELECT d.id, d.state, d.queue FROM dead AS d
