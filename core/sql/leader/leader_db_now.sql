-- The database clock, which the leader's services (the periodic enqueuer, the scheduler, the
-- rescuer) compute their schedules and bands from.
SELECT now() AS now
