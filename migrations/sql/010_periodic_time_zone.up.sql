-- pgmill schema version 10: cron schedules evaluated in a named time zone.
--
-- A zoned schedule keeps its IANA time zone in `time_zone` (NULL: UTC, as every schedule of
-- versions 1 to 9), its text in `zoned_schedule` and its next run in `zoned_next_run_at`. Clients
-- of version 10 read a schedule's next run as coalesce(zoned_next_run_at, next_run_at).
--
-- Safe while version 9 clients run, and they cannot misfire a zoned schedule. A version 9 leader
-- enqueues the due rows among the names it defines itself, computes their next run from its own
-- definition, which has no time zone, and at the start of each term writes its definition over
-- the row. Were a zoned schedule's next run in `next_run_at`, such a leader would enqueue it and
-- then advance it to the next tick in UTC, and its registration would turn it back into a UTC
-- schedule. So a zoned row is out of their reach:
--
-- - its `next_run_at` always holds 9999-12-31, which a version 9 leader never finds due (and which
--   its tools decode, unlike 'infinity': they show that date as the next run);
-- - its `schedule` always mirrors `zoned_schedule`, so a version 9 registration changes neither
--   the text nor the next run, both kept by the trigger below, which runs for every write of a
--   zoned row. Version 9 statements never name the three new columns, so they cannot unzone a row.
--
-- Pausing and resuming (the `paused` column) and the run statistics work alike for both versions.
-- Unzoned rows are written as before, by both. The new columns are nullable without a default
-- (no rewrite); the check reads the small table once.

ALTER TABLE {schema}.pgmill_periodic
    ADD COLUMN time_zone text,
    ADD COLUMN zoned_schedule text,
    ADD COLUMN zoned_next_run_at timestamptz;

ALTER TABLE {schema}.pgmill_periodic
    ADD CONSTRAINT zoned_columns_together CHECK (
        (time_zone IS NULL) = (zoned_schedule IS NULL)
        AND (time_zone IS NULL) = (zoned_next_run_at IS NULL)
    );

CREATE FUNCTION {schema}.pgmill_periodic_zoned_row() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.schedule := NEW.zoned_schedule;
    NEW.next_run_at := '9999-12-31 00:00:00+00'::timestamptz;
    RETURN NEW;
END
$$;

CREATE TRIGGER pgmill_periodic_zoned_row
    BEFORE INSERT OR UPDATE ON {schema}.pgmill_periodic
    FOR EACH ROW
    WHEN (NEW.time_zone IS NOT NULL)
    EXECUTE FUNCTION {schema}.pgmill_periodic_zoned_row();
