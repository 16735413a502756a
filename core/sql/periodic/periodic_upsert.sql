-- Registers a periodic job, or updates its schedule. A changed schedule takes the new first run
-- time; an unchanged one keeps its next run (so restarts never double-enqueue).
-- $1: name
-- $2: schedule, as text
-- $3: first run time for a new or changed schedule
-- $4: run at once (run on start): the next run becomes now if it is later
INSERT INTO {schema}.pgmill_periodic AS p (name, schedule, next_run_at)
VALUES ($1::text, $2::text, $3::timestamptz)
ON CONFLICT (name) DO UPDATE
SET schedule = EXCLUDED.schedule,
    next_run_at = CASE
        WHEN p.schedule <> EXCLUDED.schedule THEN EXCLUDED.next_run_at
        WHEN $4::boolean THEN least(p.next_run_at, now())
        ELSE p.next_run_at
    END,
    updated_at = now()
RETURNING p.name AS name, p.next_run_at AS next_run_at
