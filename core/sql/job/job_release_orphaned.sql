-- Running jobs attributed to this client under a claim it neither runs nor is recording become
-- available again, their attempt given back and their fencing token cleared (so a late outcome of
-- that claim matches nothing), with the reason recorded; each keeps its scheduled time and
-- priority, so its place in its queue. They arise after a database restart or
-- failover that lost recent commits (an outcome lost), or a fetch whose claim committed but whose
-- reply was lost with the connection or came too late. Jobs claimed within the margin are left
-- alone: this client may still be registering a fetch that just committed (releasing one would
-- only cost a second run, never a wrong outcome).
-- $1: this client's id
-- $2: ids of the jobs this client still runs or has not yet recorded
-- $3: the fencing token of the claim it holds on each of them
-- $4: the margin: claims made within this many microseconds are left alone
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
RETURNING j.id AS id, j.state::text AS state, j.queue AS queue
