-- Locks the due, unpaused periodic jobs among the given names (others' locks are skipped), with
-- the database time to compute their next runs from. Run inside the enqueuing transaction.
-- A zoned schedule's next run is zoned_next_run_at (its next_run_at is a date far in the future,
-- for clients of schema version 8, which cannot evaluate time zones, to leave it alone).
-- $1: names of the periodic jobs this client knows
SELECT p.name AS name, coalesce(p.zoned_next_run_at, p.next_run_at) AS next_run_at,
    now() AS db_now
FROM {schema}.pgmill_periodic AS p
WHERE p.name = ANY($1::text[]) AND NOT p.paused
    AND coalesce(p.zoned_next_run_at, p.next_run_at) <= now()
ORDER BY coalesce(p.zoned_next_run_at, p.next_run_at)
FOR UPDATE SKIP LOCKED
