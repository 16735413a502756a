-- Running jobs attributed to this client under a claim it neither runs nor is recording become
-- available again, their attempt given back and their fencing token cleared (so a late outcome of
-- that claim matches nothing), with the reason recorded; each keeps its scheduled time and
-- priority, so its place in its queue. They arise after a database restart or
-- failover that lost recent commits (an outcome lost), or a fetch whose claim committed but whose
-- reply was lost with the connection or came too late. Jobs claimed within the margin are left
-- alone: this client may still be registering a fetch that just committed (releasing one would
-- only cost a second run, never a wrong outcome).
-- The released jobs keep their place; each queue's earliest is announced on the rewind topic.
-- $1: this client's id
-- $2: ids of the jobs this client still runs or has not yet recorded
-- $3: the fencing token of the claim it holds on each of them
-- $4: the margin: claims made within this many microseconds are left alone
-- $5: the rewind channel, or NULL to announce nothing
WITH released AS (
    UPDATE {schema}.pgmill_job AS j
    SET state = 'available',
        attempt = greatest(j.attempt - 1, 0),
        claim_token = NULL,
        errors = array_append(j.errors, jsonb_build_object(
            'attempt', j.attempt, 'at', now(), 'panic', false,
            'error', 'released: this attempt was orphaned by a lost connection, restart or failover'))
    WHERE j.state = 'running'
        AND j.attempted_by[cardinality(j.attempted_by)] = $1::text
        AND NOT EXISTS (
            SELECT 1 FROM unnest($2::bigint[], $3::bigint[]) AS o(id, claim_token)
            WHERE o.id = j.id AND o.claim_token = j.claim_token
        )
        AND j.attempted_at < now() - $4::bigint * interval '1 microsecond'
    RETURNING j.id AS id, j.state::text AS state, j.queue AS queue, j.priority AS priority,
        j.scheduled_at AS scheduled_at
),
rewound AS (
    SELECT count(pg_notify($5::text, r.queue || E'\t' || r.priority || E'\t'
        || (extract(epoch FROM r.scheduled_at) * 1000000)::bigint || E'\t' || r.id))
        AS num_rewinds
    FROM (
        SELECT DISTINCT ON (m.queue) m.queue, m.priority, m.scheduled_at, m.id
        FROM released AS m
        ORDER BY m.queue, m.priority, m.scheduled_at, m.id
    ) AS r
    WHERE $5::text IS NOT NULL
)
SELECT r.id AS id, r.state AS state, r.queue AS queue
FROM released AS r
CROSS JOIN rewound
