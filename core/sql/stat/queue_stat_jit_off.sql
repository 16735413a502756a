-- Turns just-in-time compilation off for the rest of the transaction, which then runs
-- queue_stat_rollup.sql. That statement is long and, with deep queues, estimated costly enough for
-- Postgres to compile it first, which takes seconds while running it takes milliseconds; it runs
-- once per bucket, so compiling never pays off.
SELECT set_config('jit', 'off', true) AS jit
