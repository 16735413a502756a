-- Registers a periodic job, or updates its schedule. A changed schedule (its text names its time
-- zone, so a changed zone is a changed schedule) takes the new first run time; an unchanged one
-- keeps its next run (so restarts never double-enqueue).
-- A zoned schedule's next run is written to zoned_next_run_at, where clients of schema version 8
-- do not look; the table's trigger keeps its next_run_at out of their reach (see migration 9).
-- $1: name
-- $2: schedule, as text
-- $3: first run time for a new or changed schedule
-- $4: run at once (run on start): the next run becomes now if it is later
-- $5: the IANA time zone of a zoned cron schedule, or NULL (UTC)
INSERT INTO {schema}.pgmill_periodic AS p (
    name, schedule, next_run_at, time_zone, zoned_schedule, zoned_next_run_at
)
VALUES (
    $1::text, $2::text, $3::timestamptz, $5::text,
    CASE WHEN $5::text IS NULL THEN NULL ELSE $2::text END,
    CASE WHEN $5::text IS NULL THEN NULL ELSE $3::timestamptz END
)
ON CONFLICT (name) DO UPDATE
SET schedule = EXCLUDED.schedule,
    time_zone = EXCLUDED.time_zone,
    zoned_schedule = EXCLUDED.zoned_schedule,
    next_run_at = CASE
        WHEN p.schedule <> EXCLUDED.schedule THEN $3::timestamptz
        WHEN $4::boolean THEN least(coalesce(p.zoned_next_run_at, p.next_run_at), now())
        ELSE coalesce(p.zoned_next_run_at, p.next_run_at)
    END,
    zoned_next_run_at = CASE
        WHEN EXCLUDED.time_zone IS NULL THEN NULL
        WHEN p.schedule <> EXCLUDED.schedule THEN $3::timestamptz
        WHEN $4::boolean THEN least(coalesce(p.zoned_next_run_at, p.next_run_at), now())
        ELSE coalesce(p.zoned_next_run_at, p.next_run_at)
    END,
    updated_at = now()
RETURNING p.name AS name, coalesce(p.zoned_next_run_at, p.next_run_at) AS next_run_at
