-- Empties the history ring's slots whose rows are all past their retention, waiting at most $3
-- milliseconds for each slot's lock (pgmill_job_done_truncate_expired); returns the slots
-- emptied. The slot being written (that of now() at the stored width) is never emptied.
-- $1: completed jobs finished before now() less this many microseconds may go, or NULL (kept)
-- $2: cancelled jobs finished before now() less this many microseconds may go, or NULL (kept)
-- $3: most milliseconds to wait for a slot's lock
SELECT t.slot AS slot
FROM {schema}.pgmill_job_done_truncate_expired(
    now() - $1::bigint * interval '1 microsecond',
    now() - $2::bigint * interval '1 microsecond',
    {schema}.pgmill_job_done_slot(now(), (SELECT s.done_slot_seconds
        FROM {schema}.pgmill_storage AS s WHERE s.name = 'default')),
    $3::integer
) AS t(slot)
