-- Locks the due, unpaused periodic jobs among the given names (others' locks are skipped), with
-- the database time to compute their next runs from. Run inside the enqueuing transaction.
-- $1: names of the periodic jobs this client knows
SELECT p.name AS name, p.next_run_at AS next_run_at, now() AS db_now
FROM {schema}.pgmill_periodic AS p
WHERE p.name = ANY($1::text[]) AND NOT p.paused AND p.next_run_at <= now()
ORDER BY p.next_run_at
FOR UPDATE SKIP LOCKED
