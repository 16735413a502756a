-- The database clock, which periodic schedules are computed from.
SELECT now() AS now
