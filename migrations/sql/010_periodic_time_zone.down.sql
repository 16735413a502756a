-- Reverts version 10: zoned schedules become plain rows again, due at their next run (the
-- instant their zone gave it), and their text still names the zone, so the first registration
-- by a version 9 leader, whose definition has no zone, replaces them with its own. Version 10
-- clients stop working.

DROP TRIGGER pgmill_periodic_zoned_row ON {schema}.pgmill_periodic;

DROP FUNCTION {schema}.pgmill_periodic_zoned_row();

UPDATE {schema}.pgmill_periodic
SET next_run_at = zoned_next_run_at
WHERE time_zone IS NOT NULL;

ALTER TABLE {schema}.pgmill_periodic
    DROP CONSTRAINT zoned_columns_together,
    DROP COLUMN time_zone,
    DROP COLUMN zoned_schedule,
    DROP COLUMN zoned_next_run_at;
