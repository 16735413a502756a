-- Running jobs attributed to this client that it neither runs nor is recording become available
-- again, their attempt given back, with the reason recorded. They arise after a database restart
-- or failover that lost recent commits (an outcome lost), or a fetch whose claim committed but
-- whose reply was lost with the connection. Jobs attempted within the
-- last second are left alone: this client may still be registering a fetch that just committed.
-- $1: this client's id
-- $2: ids of the jobs this client still runs or has not yet recorded
UPDATE {schema}.pgmill_job AS j
SET state = 'available',
    attempt = greatest(j.attempt - 1, 0),
    scheduled_at = now(),
    errors = array_append(j.errors, jsonb_build_object(
        'attempt', j.attempt, 'at', now(), 'panic', false,
        'error', 'released: this attempt was orphaned by a lost connection, restart or failover'))
WHERE j.state = 'running'
    AND j.attempted_by[cardinality(j.attempted_by)] = $1::text
    AND NOT (j.id = ANY($2::bigint[]))
    AND j.attempted_at < now() - interval '1 second'
RETURNING j.id AS id, j.state::text AS state, j.queue AS queue
