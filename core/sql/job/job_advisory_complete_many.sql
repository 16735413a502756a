-- Completes many jobs claimed by advisory lock (the advisory-lock claim mode), in one statement:
-- the claim wrote nothing, so this counts the attempt, records its start and its client, and
-- finishes the job. Fenced on the row as the claim read it: still available, same attempt, same
-- scheduled time, so a job that anyone else changed meanwhile (an operator's cancel, another
-- client's recorded outcome) is left alone (its id is missing from the result).
-- $1: job ids
-- $2: the attempt of each as the claim read it (before this attempt)
-- $3: the scheduled_at of each as the claim read it
-- $4: when each attempt started (the claim's now())
-- $5: id of the client that ran them
UPDATE {schema}.pgmill_job AS j
SET state = 'completed',
    attempt = j.attempt + 1,
    attempted_at = o.attempted_at,
    attempted_by = j.attempted_by[greatest(cardinality(j.attempted_by) - 8, 1):] || $5::text,
    finalized_at = now()
FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::timestamptz[])
    AS o(id, attempt, scheduled_at, attempted_at)
WHERE j.id = o.id AND j.state::text = 'available' AND j.attempt = o.attempt
    AND j.scheduled_at = o.scheduled_at
RETURNING j.id AS id, j.state::text AS state, j.attempt AS attempt,
    j.scheduled_at AS scheduled_at, j.finalized_at AS finalized_at
